package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/internal/usage"
)

type statusOptions struct {
	registry          string
	objects           []string
	kubeconfig        string
	registryConfigMap string
	output            string
	policy            policyFlag
}

// statusRow is one tenant-wide limit in `tenantguard status -o json|yaml`.
type statusRow struct {
	Tenant   string `json:"tenant"`
	Resource string `json:"resource"`
	// Used and Hard are as people write them (1500m, 2Gi, 12); Percent is
	// Used of Hard, null when Hard is 0 (nothing may be used: the table
	// says "over" when something is, "-" otherwise).
	Used    string   `json:"used"`
	Hard    string   `json:"hard"`
	Percent *float64 `json:"percent"`
	// used is Used as a number, for the table
	used int64
}

func newStatusCommand() *cobra.Command {
	var o statusOptions
	cmd := &cobra.Command{
		Use: "status [--registry FILE --objects FILE... | --kubeconfig FILE] [-o table|json|yaml]",
		Example: `  tenantguard status --registry examples/registry.yaml --objects examples/cluster.yaml
  # the cluster of the current context, with the registry in force there
  tenantguard status --kubeconfig ~/.kube/config`,
		Short: "Show each tenant's namespaces, object counts and resource sums against their limits",
		Long: `Show every tenant-wide limit of the registry with what the tenant uses of it,
summed over all of its namespaces: namespaceQuota (resource "namespaces"), the
object counts of quotas, and the resources of resourceQuota.hard, computed as
the server computes them (pods' requests and limits as ResourceQuota counts
them, finished pods and those past the grace period of their deletion left
out; PersistentVolumeClaims' storage, ResourceClaims' devices per DeviceClass).

Offline, --registry and --objects (kubectl get -A -o yaml output as is) are
the registry and the cluster. With --kubeconfig (or with neither), the
registry is read from the cluster's ConfigMap (--registry-configmap) and the
objects are listed from the API server, page by page.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringVar(&o.registry, "registry", "", "tenant registry: ConfigMap manifest or TenantRegistry document (with --objects)")
	cmd.Flags().StringArrayVar(&o.objects, "objects", nil, "the cluster's objects (repeatable; with --registry)")
	cmd.Flags().StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file of the cluster to read; $KUBECONFIG, else in-cluster configuration, else ~/.kube/config when empty")
	cmd.Flags().StringVar(&o.registryConfigMap, "registry-configmap", "tenantguard-system/tenantguard-registry", "NAMESPACE/NAME of the tenant registry ConfigMap in the cluster")
	outputFlag(cmd, &o.output, "table", "table, json or yaml", "table", "json", "yaml")
	o.policy.register(cmd.Flags())
	return cmd
}

func (o *statusOptions) run(cmd *cobra.Command) error {
	if !slices.Contains([]string{"table", "json", "yaml"}, o.output) {
		return usageErrorf("--output must be table, json or yaml, not %q", o.output)
	}
	offline := o.registry != "" || len(o.objects) > 0
	if offline && (o.registry == "" || len(o.objects) == 0) {
		return usageErrorf("--registry and --objects go together")
	}
	if offline && o.kubeconfig != "" {
		return usageErrorf("give --registry and --objects, or --kubeconfig, not both")
	}
	var reg *registry.Snapshot
	var view *clusterview.View
	var err error
	if offline {
		reg, view, err = o.fromFiles(cmd.InOrStdin())
	} else {
		reg, view, err = o.fromCluster(cmd.Context())
	}
	if err != nil {
		return err
	}
	var rows []statusRow
	state.Limits(reg, view, func(l state.Limit) {
		row := statusRow{Tenant: l.Tenant, Resource: l.Resource, Used: l.Text(l.Used), Hard: l.Text(l.Hard), used: l.Used}
		if l.Hard > 0 {
			p := float64(int(1000*float64(l.Used)/float64(l.Hard))) / 10
			row.Percent = &p
		}
		rows = append(rows, row)
	})
	if rows == nil {
		rows = []statusRow{}
	}
	if o.output != "table" {
		return writeData(cmd.OutOrStdout(), o.output, rows)
	}
	return statusTable(cmd.OutOrStdout(), rows)
}

func statusTable(w io.Writer, rows []statusRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no tenant has a tenant-wide limit")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "TENANT\tRESOURCE\tUSED\tHARD\tUSE")
	for _, r := range rows {
		use := "-"
		switch {
		case r.Percent != nil:
			use = fmt.Sprintf("%.1f%%", *r.Percent)
		case r.used > 0:
			use = "over"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Tenant, r.Resource, r.Used, r.Hard, use)
	}
	return tw.Flush()
}

// fromFiles reads the registry and the objects of the files.
func (o *statusOptions) fromFiles(stdin io.Reader) (*registry.Snapshot, *clusterview.View, error) {
	cat, err := o.policy.load()
	if err != nil {
		return nil, nil, err
	}
	reg, err := loadRegistry(o.registry, cat)
	if err != nil {
		return nil, nil, &ExitError{Code: ExitUsage, Err: err}
	}
	view := clusterview.New(reg.TenantLabel())
	for _, file := range o.objects {
		read, err := readObjects(stdin, file)
		if err != nil {
			return nil, nil, err
		}
		for _, m := range read {
			obj, err := clusterview.FromManifest(m.object)
			if err != nil {
				return nil, nil, usageErrorf("%s: %v", m.at, err)
			}
			view.Upsert(obj)
		}
	}
	return reg, view, nil
}

// fromCluster reads the registry ConfigMap and lists namespaces, pods,
// claims and the counted resources from the API server.
func (o *statusOptions) fromCluster(ctx context.Context) (*registry.Snapshot, *clusterview.View, error) {
	cfg, err := kubeConfig(o.kubeconfig)
	if err != nil {
		return nil, nil, usageErrorf("kubeconfig: %v", err)
	}
	namespace, name, ok := strings.Cut(o.registryConfigMap, "/")
	if !ok {
		return nil, nil, usageErrorf("--registry-configmap must be NAMESPACE/NAME, not %q", o.registryConfigMap)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("reading the registry: %w", err)
	}
	reg, err := registry.Parse("configmap "+o.registryConfigMap, []byte(cm.Data[registry.DataKey]))
	if err != nil {
		return nil, nil, err
	}
	view := clusterview.New(reg.TenantLabel())
	if err := listInto(ctx, cfg, client, reg, view); err != nil {
		return nil, nil, err
	}
	return reg, view, nil
}

// listInto lists what the view counts, page by page, into it.
func listInto(ctx context.Context, cfg *rest.Config, client kubernetes.Interface, reg *registry.Snapshot, view *clusterview.View) error {
	err := pages(ctx, func(opts metav1.ListOptions) (string, error) {
		list, err := client.CoreV1().Namespaces().List(ctx, opts)
		if err != nil {
			return "", err
		}
		for _, ns := range list.Items {
			view.Upsert(clusterview.Object{Kind: "Namespace", Resource: "namespaces", Name: ns.Name, Labels: ns.Labels})
		}
		return list.Continue, nil
	})
	if err != nil {
		return fmt.Errorf("listing namespaces: %w", err)
	}
	cached := memory.NewMemCacheClient(client.Discovery())
	if err := discoveredGroups(cached, reg.QuotaResources()); err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, gr := range reg.QuotaResources() {
		if err := listResource(ctx, client, meta, mapper, gr, view); err != nil {
			return fmt.Errorf("listing %s: %w", gr, err)
		}
	}
	return nil
}

// discoveredGroups fails when the API server could not say what a group of
// the counted resources serves (an aggregated API whose server is down):
// the RESTMapper would leave the group out, and its objects would read as
// none, where the tenant may be at its limit.
func discoveredGroups(dc discovery.DiscoveryInterface, counted []schema.GroupResource) error {
	_, _, err := dc.ServerGroupsAndResources()
	var failed *discovery.ErrGroupDiscoveryFailed
	if !errors.As(err, &failed) {
		return err
	}
	for gv, why := range failed.Groups {
		for _, gr := range counted {
			if gr.Group == gv.Group {
				return fmt.Errorf("the API server could not list what %s serves, so %s cannot be counted: %w", gv, gr, why)
			}
		}
	}
	return nil
}

func listResource(ctx context.Context, client kubernetes.Interface, meta metadata.Interface, mapper *restmapper.DeferredDiscoveryRESTMapper, gr schema.GroupResource, view *clusterview.View) error {
	switch gr {
	case schema.GroupResource{Resource: "pods"}:
		return pages(ctx, func(opts metav1.ListOptions) (string, error) {
			opts.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed"
			list, err := client.CoreV1().Pods("").List(ctx, opts)
			if err != nil {
				return "", err
			}
			for i := range list.Items {
				view.Upsert(clusterview.PodObject(&list.Items[i]))
			}
			return list.Continue, nil
		})
	case schema.GroupResource{Resource: "persistentvolumeclaims"}:
		return pages(ctx, func(opts metav1.ListOptions) (string, error) {
			list, err := client.CoreV1().PersistentVolumeClaims("").List(ctx, opts)
			if err != nil {
				return "", err
			}
			for i := range list.Items {
				c := &list.Items[i]
				view.Upsert(clusterview.Object{Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims", Namespace: c.Namespace, Name: c.Name, Usage: clusterview.ClaimUsage(c)})
			}
			return list.Continue, nil
		})
	case usage.ResourceClaims:
		if _, err := mapper.ResourceFor(gr.WithVersion("v1")); apimeta.IsNoMatchError(err) {
			return nil // not served: nothing to count
		}
		return pages(ctx, func(opts metav1.ListOptions) (string, error) {
			list, err := client.ResourceV1().ResourceClaims("").List(ctx, opts)
			if err != nil {
				return "", err
			}
			for i := range list.Items {
				c := &list.Items[i]
				view.Upsert(clusterview.Object{Kind: usage.ResourceClaimKind.Kind, Group: gr.Group, Resource: gr.Resource, Namespace: c.Namespace, Name: c.Name, Usage: clusterview.DeviceClaimUsage(c)})
			}
			return list.Continue, nil
		})
	}
	gvr, err := mapper.ResourceFor(gr.WithVersion(""))
	if apimeta.IsNoMatchError(err) {
		return nil // not served: nothing to count
	}
	if err != nil {
		return fmt.Errorf("finding %s: %w", gr, err)
	}
	return pages(ctx, func(opts metav1.ListOptions) (string, error) {
		list, err := meta.Resource(gvr).List(ctx, opts)
		if err != nil {
			return "", err
		}
		for _, m := range list.Items {
			view.Upsert(clusterview.Object{Group: gr.Group, Resource: gr.Resource, Namespace: m.Namespace, Name: m.Name})
		}
		return list.Continue, nil
	})
}

// pages calls list with a page size and each next page's token until the
// last page.
func pages(ctx context.Context, list func(metav1.ListOptions) (string, error)) error {
	opts := metav1.ListOptions{Limit: 500}
	for {
		next, err := list(opts)
		if err != nil || next == "" {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		opts.Continue = next
	}
}
