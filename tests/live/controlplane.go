package live

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// ControlPlane is a real kube-apiserver and etcd, with what a cluster's
// controller manager would have done (admin, edit and view aggregated), the
// example's PriorityClasses and RuntimeClasses (with a pod overhead, as
// sandboxed runtimes have), the Gateway API's standard-channel CRDs, and
// the TenantsGroup bound to cluster-admin.
type ControlPlane struct {
	env    *envtest.Environment
	Admin  *rest.Config
	Client kubernetes.Interface
}

// Root is the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// AssetsDir is where `make control-plane` puts kube-apiserver and etcd, or
// $KUBEBUILDER_ASSETS when set.
func AssetsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join(Root(), "tests", "tools", "bin")
}

// StartControlPlane starts a control plane; Stop stops it. The API server
// runs without the admission plugins named in disable.
func StartControlPlane(ctx context.Context, disable ...string) (p *ControlPlane, err error) {
	return StartControlPlaneWith(ctx, ControlPlaneOptions{Disable: disable})
}

// ControlPlaneOptions configure the API server of a control plane.
type ControlPlaneOptions struct {
	// Disable names admission plugins to turn off.
	Disable []string
	// Args are extra kube-apiserver flags, name to value.
	Args map[string]string
	// NoGatewayAPI leaves the Gateway API's CRDs out (a test installs them
	// later, or checks what happens without them).
	NoGatewayAPI bool
	// ReportCRDs installs the policy report CRDs the chart ships (both
	// formats; `make report-crds` fetches them, pinned, from their Go
	// modules), for the background audit's reports.
	ReportCRDs bool
}

// GatewayAPICRDs is the folder of the Gateway API's standard-channel CRDs
// and the experimental XListenerSet's, fetched from its Go module by `make
// gateway-crds`.
func GatewayAPICRDs() string { return filepath.Join(AssetsDir(), "crds", "gateway-api") }

// ReportCRDsDir holds the policy report CRDs (charts/tenantguard/files/crds).
func ReportCRDsDir() string { return filepath.Join(Root(), "charts", "tenantguard", "files", "crds") }

// StartControlPlaneWith starts a control plane configured by o.
func StartControlPlaneWith(ctx context.Context, o ControlPlaneOptions) (p *ControlPlane, err error) {
	// envtest logs through controller-runtime's logger; the tests read
	// the API server's answers, not its log
	ctrllog.SetLogger(logr.Discard())
	assets := AssetsDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make control-plane` first", bin, assets)
		}
	}
	p = &ControlPlane{env: &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: 2 * time.Minute}}
	if !o.NoGatewayAPI {
		if _, err := os.Stat(GatewayAPICRDs()); err != nil {
			return nil, fmt.Errorf("the Gateway API CRDs are not in %s: run `make gateway-crds` first", GatewayAPICRDs())
		}
		p.env.CRDDirectoryPaths, p.env.ErrorIfCRDPathMissing = []string{GatewayAPICRDs()}, true
	}
	if len(o.Disable) > 0 {
		p.env.ControlPlane.GetAPIServer().Configure().Append("disable-admission-plugins", strings.Join(o.Disable, ","))
	}
	for name, value := range o.Args {
		p.env.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	if o.ReportCRDs {
		p.env.CRDDirectoryPaths, p.env.ErrorIfCRDPathMissing = append(p.env.CRDDirectoryPaths, ReportCRDsDir()), true
	}
	if p.Admin, err = p.env.Start(); err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	defer func() {
		if err != nil {
			p.Stop()
		}
	}()
	if p.Client, err = kubernetes.NewForConfig(p.Admin); err != nil {
		return nil, err
	}
	never := corev1.PreemptNever
	for name, value := range map[string]int32{"tenant-low": 1000, "tenant-high": 2000, "batch-high": 5000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, PreemptionPolicy: &never}
		if _, err := p.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	for name, handler := range map[string]string{"gvisor": "runsc", "kata-qemu": "kata-qemu"} {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler,
			Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}
		if _, err := p.Client.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	if err := p.aggregateClusterRoles(ctx); err != nil {
		return nil, fmt.Errorf("aggregating ClusterRoles: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenants-cluster-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: TenantsGroup}},
	}
	if _, err := p.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	return p, nil
}

// Stop stops the control plane.
func (p *ControlPlane) Stop() {
	if p.env != nil {
		_ = p.env.Stop()
	}
}

// UserKubeconfig is a kubeconfig authenticating as user (by client
// certificate), with no groups but system:authenticated: what it may do is
// what RBAC grants that user name.
func (p *ControlPlane) UserKubeconfig(user string) ([]byte, error) {
	u, err := p.env.ControlPlane.AddUser(envtest.User{Name: user}, nil)
	if err != nil {
		return nil, err
	}
	return u.KubeConfig()
}

// As is a client acting as user (impersonated by the administrator), in the
// tenants group besides groups.
func (p *ControlPlane) As(user string, groups ...string) kubernetes.Interface {
	cfg := rest.CopyConfig(p.Admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append([]string{TenantsGroup, "system:authenticated"}, groups...)}
	return kubernetes.NewForConfigOrDie(cfg)
}

// DynamicAs is a dynamic client acting as user, in the tenants group
// besides groups, as As.
func (p *ControlPlane) DynamicAs(user string, groups ...string) dynamic.Interface {
	cfg := rest.CopyConfig(p.Admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append([]string{TenantsGroup, "system:authenticated"}, groups...)}
	return dynamic.NewForConfigOrDie(cfg)
}

// AsOnly is a client acting as user with only the given groups (and
// system:authenticated): what RBAC grants it is what tenantguard generated.
func (p *ControlPlane) AsOnly(user string, groups ...string) kubernetes.Interface {
	cfg := rest.CopyConfig(p.Admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append([]string{"system:authenticated"}, groups...)}
	return kubernetes.NewForConfigOrDie(cfg)
}

// WriteKubeconfig writes an administrator kubeconfig for the cluster.
func (p *ControlPlane) WriteKubeconfig(file string) error {
	return os.WriteFile(file, p.env.KubeConfig, 0o600)
}

// aggregateClusterRoles does what kube-controller-manager's
// clusterrole-aggregation controller does (no controller manager runs here):
// it fills admin, edit and view with the rules of the roles they aggregate,
// which nest (admin aggregates edit), so it repeats until nothing changes.
func (p *ControlPlane) aggregateClusterRoles(ctx context.Context) error {
	list, err := p.Client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	roles := list.Items
	changed := map[int]bool{}
	for range 5 {
		progress := false
		for i := range roles {
			role := &roles[i]
			if role.AggregationRule == nil {
				continue
			}
			var rules []rbacv1.PolicyRule
			for _, sel := range role.AggregationRule.ClusterRoleSelectors {
				selector, err := metav1.LabelSelectorAsSelector(&sel)
				if err != nil {
					return err
				}
				for _, other := range roles {
					if other.Name != role.Name && selector.Matches(labels.Set(other.Labels)) {
						rules = append(rules, other.Rules...)
					}
				}
			}
			if len(rules) != len(role.Rules) {
				role.Rules = rules
				changed[i], progress = true, true
			}
		}
		if !progress {
			break
		}
	}
	for i := range changed {
		if _, err := p.Client.RbacV1().ClusterRoles().Update(ctx, &roles[i], metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}
