package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tenantguard/tenantguard/generator"
	"github.com/tenantguard/tenantguard/internal/auditloop"
	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/informers"
	"github.com/tenantguard/tenantguard/internal/memlimit"
	"github.com/tenantguard/tenantguard/internal/metrics"
	"github.com/tenantguard/tenantguard/internal/policydir"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/reconcile"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/reports"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/internal/watch"
	"github.com/tenantguard/tenantguard/webhook"
	"github.com/tenantguard/tenantguard/webhook/certrotate"
	"github.com/tenantguard/tenantguard/webhook/configuration"
)

type serveOptions struct {
	server            webhook.Options
	kubeconfig        string
	registryConfigMap string
	policyDir         string
	policyOverlay     string
	pollInterval      time.Duration
	// webhookTenantLabel is --webhook-tenant-label
	webhookTenantLabel string
	// memoryLimit is --memory-limit (memlimit.Resolve's setting)
	memoryLimit string
	// gcPercent is --gc-percent (memlimit.GCPercent's flag)
	gcPercent        int
	managers         []string
	logLevel         string
	quotaSyncTimeout time.Duration
	generator        bool
	leaderElection   bool
	leaderNamespace  string
	tlsSecret        string
	rotation         certrotate.Options
	quotaMode        string
	reservationTTL   time.Duration
	// webhookCheckInterval is how often the webhook configurations' rules
	// are checked.
	webhookCheckInterval time.Duration
	// evaluators is --evaluators (engine.NewPool's size: 0 is GOMAXPROCS)
	evaluators int
	// evaluator is --evaluator (engine.Options.Evaluator)
	evaluator string
	// instance is --instance (generator.NewInstance's name)
	instance string
	// auditInterval is --audit-interval (0: no background audit)
	auditInterval time.Duration
	// auditFormat is --audit-report-format (reports.FormatNamed)
	auditFormat string
}

// The quota modes of serve --quota-mode.
const (
	quotaLocal  = "local"
	quotaStrict = "strict"
)

func newServeCommand() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the admission server: /validate, /mutate, /healthz, /readyz and /metrics over HTTPS",
		Example: `  # in a cluster, with the built-in certificate rotation (what the Helm chart runs)
  tenantguard serve --tls-secret tenantguard-system/tenantguard-tls \
    --tls-dns-name tenantguard.tenantguard-system.svc --webhook-configuration tenantguard \
    --metrics-addr :8080

  # outside a cluster, with certificate files and a kubeconfig
  tenantguard serve --kubeconfig ~/.kube/config --tls-cert-file tls.crt --tls-private-key-file tls.key`,
		Long: `Run the admission server. It reads the tenant registry ConfigMap and the
cluster state through informers, answers AdmissionReview v1 on /validate and
/mutate, and follows changes: a new registry, --policy-dir or TLS certificate
takes effect within a second, and one that does not load is refused while the
last good one stays in force. Logs are JSON lines on stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.server.Addr, "addr", ":9443", "HTTPS listen address")
	f.StringVar(&o.server.MetricsAddr, "metrics-addr", "", "plain HTTP listen address of /metrics, e.g. :8080, apart from the webhook (the chart sets it); empty serves /metrics on --addr")
	f.StringVar(&o.server.CertFile, "tls-cert-file", "", "serving certificate (PEM), reloaded when it changes (or --tls-secret)")
	f.StringVar(&o.server.KeyFile, "tls-private-key-file", "", "serving certificate's private key (PEM)")
	f.StringVar(&o.server.ClientCAFile, "client-ca-file", "", "CA bundle (PEM): /validate and /mutate answer only callers with a client certificate it signed, i.e. the API server given one in its AdmissionConfiguration (probes and metrics stay open)")
	f.StringVar(&o.tlsSecret, "tls-secret", "", "NAMESPACE/NAME of a Secret where the replicas keep a private CA and the serving certificate, renewed before they expire (built-in rotation; instead of the files)")
	f.StringSliceVar(&o.rotation.Hosts, "tls-dns-name", nil, "DNS name or IP address of the built-in rotation's serving certificate, e.g. SERVICE.NAMESPACE.svc (repeatable)")
	f.StringVar(&o.rotation.WebhookConfiguration, "webhook-configuration", "", "name of the Validating- and MutatingWebhookConfiguration whose caBundle the built-in rotation keeps current, and whose rules are checked against what the rules in force judge (a warning and tenantguard_webhook_unrouted_requests when they leave some out)")
	f.DurationVar(&o.webhookCheckInterval, "webhook-check-interval", time.Minute, "how often the --webhook-configuration rules are checked, besides after each registry or policy change")
	f.DurationVar(&o.rotation.Validity.CA, "tls-ca-validity", certrotate.DefaultCAValidity, "lifetime of the built-in rotation's CA; a successor joins the bundle with a third left and signs with a sixth left")
	f.DurationVar(&o.rotation.Validity.Cert, "tls-cert-validity", certrotate.DefaultCertValidity, "lifetime of the built-in rotation's serving certificate, renewed with a third left")
	f.DurationVar(&o.rotation.CheckInterval, "tls-check-interval", certrotate.DefaultCheckInterval, "how often the built-in rotation checks the Secret and the caBundles")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; $KUBECONFIG, else in-cluster configuration, else ~/.kube/config when empty")
	f.StringVar(&o.registryConfigMap, "registry-configmap", "tenantguard-system/tenantguard-registry", "NAMESPACE/NAME of the tenant registry ConfigMap (key "+registry.DataKey+")")
	f.StringVar(&o.memoryLimit, "memory-limit", memlimit.Auto, "soft memory limit of the Go runtime: auto (90% of the container's cgroup limit, leaving at least 32 MiB or half, unless GOMEMLIMIT is set), 0 (none) or a size such as 144Mi")
	f.IntVar(&o.gcPercent, "gc-percent", memlimit.DefaultGCPercent, "the garbage collector's target, as GOGC: how far, in percent of the live heap, the heap grows between collections (-1: off, only with a memory limit); twice that while the background audit runs, under a memory limit. GOGC wins when this flag is not given")
	f.StringVar(&o.evaluator, "evaluator", engine.EvaluatorAuto, "how the rules run: auto (OPA's plan of the rules when tenantguard's plan evaluator accepts the policy, else topdown), plan (refuse a policy it cannot run) or topdown (OPA's own evaluator)")
	f.IntVar(&o.evaluators, "evaluators", 0, "topdown evaluations run at once; more wait their turn in arrival order (0: GOMAXPROCS, which Go sets from the container's CPU limit, or else the node's CPU count); the plan evaluator runs each on its request's goroutine")
	f.StringVar(&o.webhookTenantLabel, "webhook-tenant-label", "", "the label the installed workload webhooks select tenant namespaces by; a registry with another settings.tenantLabel is refused (the chart sets it)")
	f.StringVar(&o.policyDir, "policy-dir", "", "directory of a rule library (Rego, its tests, CEL) that replaces the embedded one, reloaded when it changes; its tests must pass on the evaluator that serves it")
	f.StringVar(&o.policyOverlay, "policy-overlay", "", "directory of rule families (Rego, their tests, CEL) added to the embedded library (or to --policy-dir's), in packages of their own, reloaded when it changes; the whole library's tests must pass")
	f.DurationVar(&o.pollInterval, "poll-interval", time.Second, "how often --policy-dir, --policy-overlay and the TLS files are read for changes (the TLS files are also watched for file events)")
	f.StringSliceVar(&o.managers, "manager", []string{engine.DefaultManager}, "user names of tenantguard itself, allowed to change the companion resources")
	f.DurationVar(&o.server.ShutdownDelay, "shutdown-delay", 5*time.Second, "how long /readyz fails before the listener closes on SIGTERM, so endpoints drop the pod first")
	f.DurationVar(&o.server.ShutdownTimeout, "shutdown-timeout", 20*time.Second, "how long in-flight requests get to finish on SIGTERM")
	f.Int64Var(&o.server.MaxBodyBytes, "max-body-bytes", webhook.DefaultMaxBodyBytes, "largest AdmissionReview accepted")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.DurationVar(&o.quotaSyncTimeout, "quota-sync-timeout", 30*time.Second, "how long a registry that counts a new resource waits for its informer before it is refused")
	f.StringVar(&o.quotaMode, "quota-mode", quotaLocal, "how creates counted against tenant quotas, and the hosts of Ingresses and routes (hostname-collision), are reserved while decided: local (in this replica's memory; exact within a replica, a burst spread over R replicas faster than the informers can overshoot by up to R-1 times the room left, or admit one host up to R times) or strict (a per-tenant ledger ConfigMap, and one of hosts, in the registry's namespace, written with optimistic concurrency; exact across replicas, two API calls per counted create and per Ingress or route request)")
	f.DurationVar(&o.reservationTTL, "quota-reservation-ttl", quota.DefaultReservationTTL, "how long an admitted create holds its place in its tenant's count until the informer sees it")
	f.BoolVar(&o.generator, "generator", true, "keep the companion resources of tenant namespaces in place")
	f.BoolVar(&o.leaderElection, "leader-election", true, "elect one replica to run the companion reconciler and the background audit")
	f.StringVar(&o.leaderNamespace, "leader-election-namespace", "", "namespace of the leader-election Lease; the registry ConfigMap's when empty")
	f.DurationVar(&o.auditInterval, "audit-interval", auditloop.DefaultInterval, "how often the leader audits the existing objects against the registry and rules and writes the policy reports (also shortly after each registry or policy change); 0 turns the background audit off")
	f.StringVar(&o.auditFormat, "audit-report-format", reports.OpenReports.Name, "the background audit's reports: openreports (openreports.io/v1alpha1 Report and ClusterReport) or wgpolicyk8s (wgpolicyk8s.io/v1alpha2 PolicyReport and ClusterPolicyReport); the CRD must be installed")
	f.StringVar(&o.instance, "instance", generator.DefaultInstance, "name of this server among those sharing the cluster (the chart passes the release's fullname): the companions, the owners' ClusterRoleBinding, the field manager, the leader-election Lease and the strict quota ledgers are named from it, so that two instances neither overwrite nor prune each other's")
	return cmd
}

func (o *serveOptions) run(cmd *cobra.Command) error {
	files := o.server.CertFile != "" || o.server.KeyFile != ""
	switch {
	case files && o.tlsSecret != "":
		return usageErrorf("--tls-secret and --tls-cert-file/--tls-private-key-file are exclusive")
	case o.tlsSecret == "" && (o.server.CertFile == "" || o.server.KeyFile == ""):
		return usageErrorf("--tls-cert-file and --tls-private-key-file are required, or --tls-secret for the built-in rotation")
	case o.tlsSecret != "":
		var ok bool
		if o.rotation.Namespace, o.rotation.Name, ok = strings.Cut(o.tlsSecret, "/"); !ok || o.rotation.Namespace == "" || o.rotation.Name == "" {
			return usageErrorf("--tls-secret must be NAMESPACE/NAME, got %q", o.tlsSecret)
		}
		if len(o.rotation.Hosts) == 0 {
			return usageErrorf("--tls-secret needs at least one --tls-dns-name")
		}
		if err := o.rotation.Validity.Check(); err != nil {
			return usageErrorf("--tls-ca-validity, --tls-cert-validity: %v", err)
		}
	}
	if o.quotaMode != quotaLocal && o.quotaMode != quotaStrict {
		return usageErrorf("--quota-mode must be %s or %s, got %q", quotaLocal, quotaStrict, o.quotaMode)
	}
	if !slices.Contains(engine.Evaluators, o.evaluator) {
		return usageErrorf("--evaluator must be one of %s, got %q", strings.Join(engine.Evaluators, ", "), o.evaluator)
	}
	if o.evaluators < 0 {
		return usageErrorf("--evaluators must be 0 (one per CPU) or more, got %d", o.evaluators)
	}
	if o.webhookCheckInterval <= 0 {
		return usageErrorf("--webhook-check-interval must be positive, got %s", o.webhookCheckInterval)
	}
	if o.reservationTTL < 30*time.Second {
		return usageErrorf("--quota-reservation-ttl must be at least 30s (the longest a decision can take), got %s", o.reservationTTL)
	}
	if o.auditInterval < 0 {
		return usageErrorf("--audit-interval must be 0 (off) or more, got %s", o.auditInterval)
	}
	format, err := reports.FormatNamed(o.auditFormat)
	if err != nil {
		return usageErrorf("--audit-report-format: %v", err)
	}
	instance, err := generator.NewInstance(o.instance)
	if err != nil {
		return usageErrorf("--instance: %v", err)
	}
	namespace, name, ok := strings.Cut(o.registryConfigMap, "/")
	if !ok || namespace == "" || name == "" {
		return usageErrorf("--registry-configmap must be NAMESPACE/NAME, got %q", o.registryConfigMap)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return usageErrorf("--log-level: %v", err)
	}
	log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	info := buildInfo()
	log.Info("tenantguard", "version", info.Version, "commit", info.Commit, "go", info.Go, "instance", instance.Name())
	limit, source, err := memlimit.Apply(o.memoryLimit)
	if err != nil {
		return usageErrorf("--memory-limit: %v", err)
	}
	log.Info("memory limit", "bytes", limit, "from", source)
	percent, source, err := memlimit.ApplyGCPercent(o.gcPercent, cmd.Flags().Changed("gc-percent"), limit, os.Getenv)
	if err != nil {
		return usageErrorf("--gc-percent: %v", err)
	}
	log.Info("garbage collection", "percent", percent, "from", source)
	cfg, err := kubeConfig(o.kubeconfig)
	if err != nil {
		return usageErrorf("kubeconfig: %v", err)
	}
	cfg.UserAgent = "tenantguard/" + Version
	// client-go's default of 5 requests/s would make reconciling a thousand
	// namespaces take many minutes; informers use long-lived watches.
	cfg.QPS, cfg.Burst = 100, 200

	ctx := cmd.Context()
	m := metrics.New()
	pool := engine.NewPool(o.evaluators)
	defer pool.Close()
	log.Info("topdown evaluators", "count", pool.Size())
	store := state.New(clusterview.New(registry.DefaultTenantLabel), state.Options{Managers: o.managers, Observer: m, Logger: log, Pool: pool, Evaluator: o.evaluator})
	m.WatchQuotas(store)
	if o.policyDir == "" && o.policyOverlay == "" {
		err = store.LoadPolicy(ctx, "embedded", nil)
	} else {
		err = policydir.Watch(ctx, policydir.Source{Dir: o.policyDir, Overlay: o.policyOverlay}, o.pollInterval, store)
	}
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	auditOpts := auditloop.Options{Interval: o.auditInterval, Format: format, Instance: instance, Managers: o.managers, Logger: log, Observer: m}
	watcher, err := o.startInformers(ctx, stop, cfg, store, instance, namespace, name, log, auditOpts)
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	if o.tlsSecret != "" {
		o.rotation.Source, o.rotation.Observer, o.rotation.Logger = metrics.SourceTLS, m, log
		rotator, err := certrotate.New(cfg, o.rotation)
		if err == nil {
			err = rotator.Start(ctx)
		}
		if err != nil {
			return &ExitError{Code: 1, Err: err}
		}
		o.server.GetCertificate = rotator.GetCertificate
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	if o.rotation.WebhookConfiguration != "" {
		check := &configuration.RouteCheck{
			Client: client.AdmissionregistrationV1(), Name: o.rotation.WebhookConfiguration,
			InForce: func() (*catalog.Catalog, []schema.GroupResource, bool) {
				e := store.Engine()
				if e == nil {
					return nil, nil, false
				}
				return e.Policy().Catalog(), e.Registry().QuotaResources(), true
			},
			Changes: store.Subscribe(), Interval: o.webhookCheckInterval, Logger: log, Report: m.Unrouted,
			TenantNamespaces: func() ([]clusterview.NamedLabels, bool) {
				if watcher.Synced() != nil {
					return nil, false
				}
				return store.View().TenantNamespaces(), true
			},
			ReportUnselected: m.Unselected,
		}
		go check.Run(ctx)
	}
	o.server.Ledger = quota.LocalLedger{View: store.View(), TTL: o.reservationTTL}
	if o.quotaMode == quotaStrict {
		go rememberVisits(ctx, store.View(), watcher.Synced, o.reservationTTL)
		ledger := quota.NewStrictLedger(client.CoreV1().ConfigMaps(namespace), store.View(), o.reservationTTL).WithLogger(log)
		if !instance.IsDefault() {
			ledger.WithNamePrefix(instance.Name() + "-quota-")
		}
		o.server.Ledger = ledger
		go pruneLedgers(ctx, ledger, store, log)
	}
	o.server.Synced = watcher.Synced
	o.server.CertPollInterval = o.pollInterval
	srv, err := webhook.New(store, m, log, o.server)
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	if err := srv.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return &ExitError{Code: 1, Err: err}
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return &ExitError{Code: 1, Err: cause}
	}
	return nil
}

// rememberVisits has the view remember the objects that come and go
// within the strict ledger's TTL, whose entries then count no more, once
// the view is synced: the initial lists' hundreds of thousands of arrivals
// would only take memory.
func rememberVisits(ctx context.Context, view *clusterview.View, synced func() error, ttl time.Duration) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for synced() != nil {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	view.RememberVisits(ttl)
}

// ledgerPruneInterval is how often pruneLedgers looks for the ledgers of
// removed tenants, besides after each registry change.
const ledgerPruneInterval = 5 * time.Minute

// pruneLedgers deletes the strict ledgers of the tenants removed from the
// registry (quota.StrictLedger.Prune) once the registry is in force, after
// each change of the registry or policy, every ledgerPruneInterval, and once
// the entries of one that still held some expire, until ctx ends. Every replica runs it: each deletion is
// conditional, so two replicas' prunes cannot undo a write.
func pruneLedgers(ctx context.Context, ledger *quota.StrictLedger, store *state.Store, log *slog.Logger) {
	changes := store.Subscribe()
	tick := time.NewTicker(ledgerPruneInterval)
	defer tick.Stop()
	var again <-chan time.Time
	for {
		if e := store.Engine(); e != nil {
			reg := e.Registry()
			deleted, next, err := ledger.Prune(ctx, func(tenant string) bool {
				_, ok := reg.Tenant(tenant)
				return ok
			})
			if len(deleted) > 0 {
				log.Info("deleted the quota ledgers of tenants no longer in the registry", "configmaps", deleted)
			}
			if err != nil && ctx.Err() == nil {
				log.Warn("pruning the quota ledgers of removed tenants", "error", err.Error())
			}
			again = nil
			if !next.IsZero() {
				again = time.After(time.Until(next) + time.Second)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changes:
		case <-tick.C:
		case <-again:
		}
	}
}

// startInformers builds the manager of the one informer stack, whose cache
// feeds the cluster view on every replica and, unless --generator=false, the
// companion reconciler, and unless --audit-interval=0 the background audit,
// both leader-elected with --leader-election; it runs until
// ctx ends. A manager that stops by itself (a replica losing the Lease)
// stops the server with its error, so that a restart takes part in leader
// election again.
func (o *serveOptions) startInformers(ctx context.Context, stop context.CancelCauseFunc, cfg *rest.Config, store *state.Store, instance generator.Instance, namespace, name string, log *slog.Logger, auditOpts auditloop.Options) (*watch.Watcher, error) {
	// controller-runtime's own parts (the cache, the certificate watcher)
	// log through its global logger: JSON lines like ours, and no warning
	// that it was never set.
	ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))
	watchOpts := watch.Options{RegistryNamespace: namespace, RegistryName: name, SyncTimeout: o.quotaSyncTimeout, Logger: log, WebhookTenantLabel: o.webhookTenantLabel}
	mgrOpts := informers.Options{Layout: watch.CacheLayout(watchOpts), Logger: log}
	if o.generator {
		mgrOpts.Layout = mgrOpts.Layout.With(reconcile.CacheLayout(instance))
	}
	if (o.generator || o.auditInterval > 0) && o.leaderElection {
		mgrOpts.LeaderElectionNamespace, mgrOpts.LeaderElectionID = cmp.Or(o.leaderNamespace, namespace), reconcile.LeaseName(instance)
	}
	mgr, err := informers.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating the informers: %w", err)
	}
	watcher, err := watch.New(ctx, mgr, store, watchOpts)
	if err != nil {
		return nil, err
	}
	if o.generator {
		if err := reconcile.Setup(mgr, store, reconcile.Options{Logger: log, Instance: instance}); err != nil {
			return nil, err
		}
	}
	if o.auditInterval > 0 {
		auditOpts.Synced = watcher.Synced
		if err := auditloop.Setup(mgr, store, auditOpts); err != nil {
			return nil, err
		}
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			log.Error("the informers and the companion reconciler stopped; shutting down so that a restart starts them again and takes part in leader election", "error", err.Error())
			stop(fmt.Errorf("informers: %w", err))
		}
	}()
	return watcher, nil
}

// kubeConfig is the client configuration, in controller-runtime's order:
// the file given, else $KUBECONFIG, else the in-cluster service account,
// else ~/.kube/config.
func kubeConfig(file string) (*rest.Config, error) {
	if file == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = file
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no in-cluster configuration and no usable kubeconfig: %w", err)
	}
	return cfg, nil
}
