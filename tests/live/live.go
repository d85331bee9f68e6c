package live

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/cli"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/reports"
	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/webhook/configuration"
	"github.com/tenantguard/tenantguard/webhook/selfsigned"
)

// Namespace and ConfigMap name of the registry, as in the example.
const (
	Namespace    = "tenantguard-system"
	RegistryName = "tenantguard-registry"
	// TenantsGroup is given cluster-admin by RBAC, so that what tenant users
	// are refused is refused by tenantguard, not by RBAC.
	TenantsGroup = "tenants"
)

// Cluster is a running control plane with tenantguard serving it.
type Cluster struct {
	*ControlPlane
	BaseURL string
	// HTTP reaches the server over TLS, trusting its CA.
	HTTP   *http.Client
	Logs   *fixtures.SyncBuffer
	cancel context.CancelFunc
	served chan int
	dir    string
	// CertFile and KeyFile are the serving certificate of every replica
	// (for 127.0.0.1 and localhost), signed by the webhooks' caBundle.
	CertFile, KeyFile string
	// serveArgs are the flags every replica shares (kubeconfig, TLS, registry).
	serveArgs []string
	// catalog is the library whose routes the webhooks install.
	catalog *catalog.Catalog
}

// exampleRegistry is the registry the cluster starts with: the example's.
func exampleRegistry() string { return filepath.Join(Root(), "examples", "registry.yaml") }

// Options configure Start.
type Options struct {
	// ServeArgs are extra `tenantguard serve` flags.
	ServeArgs []string
	// Logs receives the server's JSON log lines besides the buffer; optional.
	Logs io.Writer
	// APIServerArgs are extra kube-apiserver flags, name to value.
	APIServerArgs map[string]string
	// Catalog is the rule library whose routes the webhook configurations
	// install (that of the server's --policy-dir); nil is the embedded one.
	Catalog *catalog.Catalog
	// NoGatewayAPI leaves the Gateway API's CRDs out of the control plane.
	NoGatewayAPI bool
	// ReportCRDs installs the policy report CRDs (ControlPlaneOptions).
	ReportCRDs bool
	// ReportFormat is the background audit's report format (a
	// reports.Format name, serve's --audit-report-format): the server is
	// given the flag, and deploy/rbac's grant on the default format's
	// reports moves to this format's, as the chart's audit.reportFormat
	// moves it. Empty is the default format.
	ReportFormat string
}

// Start brings everything up; Stop tears it down.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	c := &Cluster{Logs: &fixtures.SyncBuffer{}, served: make(chan int, 1), catalog: opts.Catalog}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if c.ControlPlane, err = StartControlPlaneWith(ctx, ControlPlaneOptions{Args: opts.APIServerArgs, NoGatewayAPI: opts.NoGatewayAPI, ReportCRDs: opts.ReportCRDs}); err != nil {
		return nil, err
	}
	if c.dir, err = os.MkdirTemp("", "tenantguard-live-"); err != nil {
		return nil, err
	}
	format := reports.Formats[0]
	if opts.ReportFormat != "" {
		if format, err = reports.FormatNamed(opts.ReportFormat); err != nil {
			return nil, err
		}
		opts.ServeArgs = append(slices.Clone(opts.ServeArgs), "--audit-report-format="+format.Name)
	}
	if err := c.seed(ctx, format); err != nil {
		return nil, err
	}
	ca, err := selfsigned.NewCA("tenantguard-live")
	if err != nil {
		return nil, err
	}
	if c.CertFile, c.KeyFile, err = ca.WriteServing(c.dir, "127.0.0.1", "localhost"); err != nil {
		return nil, err
	}
	if err := c.serve(ctx, c.CertFile, c.KeyFile, ca.PEM, opts); err != nil {
		return nil, err
	}
	return c, c.installWebhooks(ctx, ca.PEM)
}

// seed creates tenantguard's namespace and registry, and installs
// deploy/rbac for tenantguard's user, granting format's reports.
func (c *Cluster) seed(ctx context.Context, format reports.Format) error {
	registryFile := exampleRegistry()
	raw, err := os.ReadFile(registryFile)
	if err != nil {
		return err
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(raw, &cm); err != nil {
		return fmt.Errorf("%s is not a ConfigMap: %w", registryFile, err)
	}
	cm.Namespace, cm.Name = Namespace, RegistryName
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := c.Client.CoreV1().ConfigMaps(Namespace).Create(ctx, &cm, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := c.serverRBAC(ctx, format); err != nil {
		return fmt.Errorf("installing deploy/rbac: %w", err)
	}
	return nil
}

// serverRBAC installs deploy/rbac/tenantguard.yaml, its reports grant
// moved to format's, and binds it to tenantguard's user: the server runs
// with exactly those permissions.
func (c *Cluster) serverRBAC(ctx context.Context, format reports.Format) error {
	raw, err := os.ReadFile(filepath.Join(Root(), "deploy", "rbac", "tenantguard.yaml"))
	if err != nil {
		return err
	}
	var role rbacv1.ClusterRole
	var nsRole rbacv1.Role
	for doc := range strings.SplitSeq(string(raw), "\n---\n") {
		var kind struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			return err
		}
		switch {
		case kind.Kind == "Role" && kind.Metadata.Name != "tenantguard":
			continue // built-in TLS's, which the tests' servers are given apart
		case kind.Kind == "Role":
			if err := yaml.UnmarshalStrict([]byte(doc), &nsRole); err != nil {
				return err
			}
			nsRole.Namespace = Namespace
		case kind.Kind == "ClusterRole" && kind.Metadata.Name == "tenantguard":
			if err := yaml.UnmarshalStrict([]byte(doc), &role); err != nil {
				return err
			}
			if err := grantReports(&role, format); err != nil {
				return err
			}
			continue // created below
		case kind.Kind == "ClusterRole":
			var other rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict([]byte(doc), &other); err != nil {
				return err
			}
			if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, &other, metav1.CreateOptions{}); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected %s in deploy/rbac", kind.Kind)
		}
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: engine.DefaultManager}}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := c.Client.RbacV1().Roles(Namespace).Create(ctx, &nsRole, metav1.CreateOptions{}); err != nil {
		return err
	}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, RoleRef: ref, Subjects: subject}, metav1.CreateOptions{}); err != nil {
		return err
	}
	ref.Kind, ref.Name = "Role", nsRole.Name
	_, err = c.Client.RbacV1().RoleBindings(Namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: nsRole.Name}, RoleRef: ref, Subjects: subject}, metav1.CreateOptions{})
	return err
}

// grantReports moves a role's grant on the default format's reports to
// format's.
func grantReports(role *rbacv1.ClusterRole, format reports.Format) error {
	def := reports.Formats[0]
	for i, r := range role.Rules {
		if slices.Equal(r.APIGroups, []string{def.GroupVersion.Group}) {
			role.Rules[i].APIGroups = []string{format.GroupVersion.Group}
			role.Rules[i].Resources = []string{format.Resource, format.ClusterResource}
			return nil
		}
	}
	return fmt.Errorf("deploy/rbac grants nothing on %s's reports", def.GroupVersion.Group)
}

// serve runs `tenantguard serve` in this process as tenantguard's service
// account user and waits until /readyz answers 200.
func (c *Cluster) serve(ctx context.Context, certFile, keyFile string, caPEM []byte, opts Options) error {
	// tenantguard's identity: the default manager name, with deploy/rbac's permissions only.
	kubeconfig, err := c.UserKubeconfig(engine.DefaultManager)
	if err != nil {
		return err
	}
	kubeconfigFile := filepath.Join(c.dir, "tenantguard.kubeconfig")
	if err := os.WriteFile(kubeconfigFile, kubeconfig, 0o600); err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	c.BaseURL = fmt.Sprintf("https://127.0.0.1:%d", port)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c.HTTP = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}

	c.serveArgs = append([]string{"serve", "--kubeconfig", kubeconfigFile,
		"--tls-cert-file", certFile, "--tls-private-key-file", keyFile,
		"--registry-configmap", Namespace + "/" + RegistryName, "--shutdown-delay=0s", "--quota-sync-timeout=3s"}, opts.ServeArgs...)
	args := append(slices.Clone(c.serveArgs), "--addr", fmt.Sprintf("127.0.0.1:%d", port))
	var logs io.Writer = c.Logs
	if opts.Logs != nil {
		logs = io.MultiWriter(c.Logs, opts.Logs)
	}
	serveCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	go func() { c.served <- cli.RunContext(serveCtx, args, bytes.NewReader(nil), io.Discard, logs) }()

	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case code := <-c.served:
			return fmt.Errorf("tenantguard serve exited with %d:\n%s", code, c.Logs.String())
		case <-time.After(100 * time.Millisecond):
		}
		if c.Ready() == nil {
			return nil
		}
	}
	return fmt.Errorf("tenantguard serve not ready after a minute: %w\n%s", c.Ready(), c.Logs.String())
}

// Replica runs another `tenantguard serve` with the same identity and
// registry on its own port, as a separate process of the binary built from
// this tree (replicas are separate processes in a cluster too), until stop
// is called; it returns the replica's base URL and logs. args are extra
// `tenantguard serve` flags.
func (c *Cluster) Replica(ctx context.Context, args ...string) (baseURL string, logs *fixtures.SyncBuffer, stop func(), err error) {
	bin, err := Binary(ctx, c.dir)
	if err != nil {
		return "", nil, nil, err
	}
	port, err := FreePort()
	if err != nil {
		return "", nil, nil, err
	}
	logs = &fixtures.SyncBuffer{}
	args = append(append(slices.Clone(c.serveArgs), args...), "--addr", fmt.Sprintf("127.0.0.1:%d", port))
	cmd := exec.CommandContext(ctx, bin, args...) //nolint:gosec // the binary just built, with the harness's own flags
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		return "", nil, nil, err
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	return fmt.Sprintf("https://127.0.0.1:%d", port), logs, stop, nil
}

// Binary builds the tenantguard binary of this tree into dir.
func Binary(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "tenantguard")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/tenantguard") //nolint:gosec // the test harness builds this tree
	build.Dir = Root()
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building tenantguard: %w\n%s", err, out)
	}
	return bin, nil
}

// Ready is nil when the server's /readyz answers 200.
func (c *Cluster) Ready() error {
	return c.ReadyAt(c.BaseURL)
}

// ReadyAt is nil when the /readyz of the server at baseURL answers 200.
func (c *Cluster) ReadyAt(baseURL string) error {
	resp, err := c.HTTP.Get(baseURL + "/readyz")
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return errors.New(string(bytes.TrimSpace(body)))
	}
	return nil
}

func (c *Cluster) installWebhooks(ctx context.Context, caPEM []byte) error {
	snap, err := registry.Load(exampleRegistry())
	if err != nil {
		return err
	}
	o := configuration.Options{URL: c.BaseURL, CABundle: caPEM, Namespace: Namespace, QuotaResources: snap.QuotaResources(), Catalog: c.catalog}
	if _, err := c.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, configuration.Mutating(o), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("installing the mutating webhook: %w", err)
	}
	if _, err := c.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, configuration.Validating(o), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("installing the validating webhook: %w", err)
	}
	return nil
}

// companionResources are the kinds of namespaced companions.
var companionResources = map[string]schema.GroupVersionResource{
	"ResourceQuota": {Version: "v1", Resource: "resourcequotas"},
	"LimitRange":    {Version: "v1", Resource: "limitranges"},
	"NetworkPolicy": {Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
	"RoleBinding":   {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
}

// Companions lists the objects of the companion kinds matching a label
// selector in one namespace ("" for all), as KIND/NAME (KIND/NAMESPACE/NAME
// across namespaces) -> UID.
func (c *Cluster) Companions(ctx context.Context, namespace, selector string) (map[string]string, error) {
	client, err := dynamic.NewForConfig(c.Admin)
	if err != nil {
		return nil, err
	}
	found := map[string]string{}
	for kind, gvr := range companionResources {
		list, err := client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			key := kind + "/" + o.GetName()
			if namespace == "" {
				key = kind + "/" + o.GetNamespace() + "/" + o.GetName()
			}
			found[key] = string(o.GetUID())
		}
	}
	return found, nil
}

// Stop stops the server (gracefully) and the control plane.
func (c *Cluster) Stop() {
	if c.cancel != nil {
		c.cancel()
		select {
		case <-c.served:
		case <-time.After(30 * time.Second):
		}
	}
	if c.ControlPlane != nil {
		c.ControlPlane.Stop()
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// FreePort is a TCP port on 127.0.0.1 that nothing listens on.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
