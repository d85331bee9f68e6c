package e2e

import (
	"context"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

var gateways = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}

// withTenant is the registry document doc with one more tenant.
func withTenant(t *testing.T, doc string, tenant map[string]any) string {
	t.Helper()
	return edited(t, doc, func(reg map[string]any) { reg["tenants"] = append(reg["tenants"].([]any), tenant) })
}

// withSetting is the registry document doc with settings[key] = value.
func withSetting(t *testing.T, doc, key string, value any) string {
	t.Helper()
	return edited(t, doc, func(reg map[string]any) { reg["settings"].(map[string]any)[key] = value })
}

// edited is the registry document doc changed by change.
func edited(t *testing.T, doc string, change func(reg map[string]any)) string {
	t.Helper()
	var reg map[string]any
	if err := yaml.Unmarshal([]byte(doc), &reg); err != nil {
		t.Fatal(err)
	}
	change(reg)
	out, err := yaml.Marshal(reg)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func ingress(name, class string, hosts ...string) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if class != "" {
		ing.Spec.IngressClassName = &class
	}
	for _, h := range hosts {
		ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: h})
	}
	return ing
}

// TestEdgeAndLifecycle adds tenant tin (IngressClass nginx by default, hosts
// under tin.example.com, namespaces deleted by administrators only), then
// cordons it, against the real API server: the tenant's creates and
// changes, kubectl scale and relabeling its namespace out are refused; its
// deletes, events and the controllers' replacement pods pass. Tenant lead
// owns a shared Gateway that tin's routes attach to.
func TestEdgeAndLifecycle(t *testing.T) {
	original := registryDoc(t, cluster)
	t.Cleanup(func() { setRegistryDoc(t, cluster, original) })
	tin := map[string]any{
		"name":   "tin",
		"owners": []any{map[string]any{"kind": "User", "name": "tina"}},
		"ingress": map[string]any{
			"classes":   map[string]any{"allowed": []any{"nginx"}, "default": "nginx"},
			"hostnames": map[string]any{"allowed": []any{"tin.example.com", "*.tin.example.com"}},
		},
		"preventNamespaceDeletion": true,
	}
	lead := map[string]any{"name": "lead", "owners": []any{map[string]any{"kind": "User", "name": "lea"}}}
	// cert-manager's controller passes a cordon; its CA injector does not
	doc := withSetting(t, withTenant(t, original, lead), "cordonExempt", []any{
		map[string]any{"kind": "ServiceAccount", "name": "system:serviceaccount:cert-manager:cert-manager"},
	})
	setRegistryDoc(t, cluster, withTenant(t, doc, tin))
	admin := cluster.As("platform-admin")
	tina := cluster.As("tina")
	ctx := t.Context()
	_, err := admin.CoreV1().Namespaces().Create(ctx, namespace("tin-web", map[string]string{tenantLabel: "tin"}), metav1.CreateOptions{})
	wantAllowed(t, err)
	eventually(t, "tin's registry in force", func(ctx context.Context) error {
		_, err := tina.NetworkingV1().Ingresses("tin-web").Create(ctx, ingress("probe", "haproxy", "tin.example.com"), dryRun)
		return denialOf(err, "ingress-class")
	})

	t.Run("an Ingress without a class gets the tenant default", func(t *testing.T) {
		ing, err := tina.NetworkingV1().Ingresses("tin-web").Create(t.Context(), ingress("shop", "", "shop.tin.example.com"), metav1.CreateOptions{})
		wantAllowed(t, err)
		if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != "nginx" {
			t.Fatalf("stored ingressClassName %v, want nginx", ptrText(ing.Spec.IngressClassName))
		}
	})
	t.Run("an Ingress of another class is refused", func(t *testing.T) {
		_, err := tina.NetworkingV1().Ingresses("tin-web").Create(t.Context(), ingress("lb", "haproxy", "tin.example.com"), dryRun)
		wantDenied(t, err, "ingress-class")
	})
	t.Run("hosts outside the tenant's, near misses and wildcards are refused", func(t *testing.T) {
		for _, host := range []string{"bank.example.com", "evil-tin.example.com", "*.tin.example.com"} {
			_, err := tina.NetworkingV1().Ingresses("tin-web").Create(t.Context(), ingress("steal", "nginx", host), dryRun)
			wantDenied(t, err, "hostname")
		}
		stolen := ingress("tls", "nginx", "tin.example.com")
		stolen.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"bank.example.com"}, SecretName: "bank"}}
		_, err := tina.NetworkingV1().Ingresses("tin-web").Create(t.Context(), stolen, dryRun)
		wantDenied(t, err, "hostname")
	})
	t.Run("a route attaching to another tenant's Gateway may publish only the tenant's own hosts", func(t *testing.T) {
		_, err := admin.CoreV1().Namespaces().Create(t.Context(), namespace("lead-edge", map[string]string{tenantLabel: "lead"}), metav1.CreateOptions{})
		wantAllowed(t, err)
		gateway := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
			"metadata": map[string]any{"name": "shared"},
			"spec": map[string]any{"gatewayClassName": "shared", "listeners": []any{map[string]any{
				"name": "http", "protocol": "HTTP", "port": int64(80),
				"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}},
			}}},
		}}
		_, err = cluster.DynamicAs("lea").Resource(gateways).Namespace("lead-edge").Create(t.Context(), gateway, metav1.CreateOptions{})
		wantAllowed(t, err)
		attached := func(host string) *unstructured.Unstructured {
			r := httpRoute("borrow", host)
			r.Object["spec"].(map[string]any)["parentRefs"] = []any{map[string]any{"name": "shared", "namespace": "lead-edge"}}
			return r
		}
		routes := cluster.DynamicAs("tina").Resource(httpRoutes).Namespace("tin-web")
		_, err = routes.Create(t.Context(), attached("bank.example.com"), dryRun)
		wantDenied(t, err, "hostname")
		_, err = routes.Create(t.Context(), attached("api.tin.example.com"), dryRun)
		wantAllowed(t, err)
	})
	t.Run("only administrators delete the namespaces", func(t *testing.T) {
		err := tina.CoreV1().Namespaces().Delete(t.Context(), "tin-web", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		wantDenied(t, err, "namespace-deletion")
		wantAllowed(t, admin.CoreV1().Namespaces().Delete(t.Context(), "tin-web", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}))
	})

	t.Run("a cordoned tenant creates and changes nothing, of any kind, but still deletes", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"a": "b"}}
		_, err := tina.CoreV1().ConfigMaps("tin-web").Create(t.Context(), cm, metav1.CreateOptions{})
		wantAllowed(t, err)
		_, err = tina.AppsV1().Deployments("tin-web").Create(t.Context(), deployment("web", func(*corev1.PodSpec) {}), metav1.CreateOptions{})
		wantAllowed(t, err)
		// cert-manager's controller and its CA injector may edit tin-web;
		// only the first is in settings.cordonExempt.
		addOns := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "cert-manager-edit"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects: []rbacv1.Subject{
				{Kind: rbacv1.ServiceAccountKind, Namespace: "cert-manager", Name: "cert-manager"},
				{Kind: rbacv1.ServiceAccountKind, Namespace: "cert-manager", Name: "cert-manager-cainjector"},
			},
		}
		_, err = admin.RbacV1().RoleBindings("tin-web").Create(t.Context(), addOns, metav1.CreateOptions{})
		wantAllowed(t, err)
		tin["cordoned"] = true
		setRegistryDoc(t, cluster, withTenant(t, doc, tin))
		// A ConfigMap is judged by no other rule: the catch-all webhook sends it.
		eventually(t, "the cordon in force", func(ctx context.Context) error {
			_, err := tina.CoreV1().ConfigMaps("tin-web").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "more"}}, dryRun)
			return denialOf(err, "tenant-cordoned")
		})
		cm.Data["a"] = "c"
		_, err = tina.CoreV1().ConfigMaps("tin-web").Update(t.Context(), cm, metav1.UpdateOptions{})
		wantDenied(t, err, "tenant-cordoned")
		_, err = tina.CoreV1().Pods("tin-web").Create(t.Context(), pod("web"), dryRun)
		wantDenied(t, err, "tenant-cordoned")
		// kubectl scale: the scale subresource, which the catch-all sends too
		scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "tin-web"}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
		_, err = tina.AppsV1().Deployments("tin-web").UpdateScale(t.Context(), "web", scale, metav1.UpdateOptions{})
		wantDenied(t, err, "tenant-cordoned")
		_, err = tina.NetworkingV1().Ingresses("tin-web").Create(t.Context(), ingress("more", "nginx", "more.tin.example.com"), dryRun)
		wantDenied(t, err, "tenant-cordoned")
		// A ReplicaSet's controller replacing a pod of the running
		// Deployment is the control plane, exempt so that a frozen tenant's
		// workloads stay healthy; the tenant scaling them up is refused above.
		controller := cluster.AsOnly("system:serviceaccount:kube-system:replicaset-controller", "system:serviceaccounts", "system:serviceaccounts:kube-system")
		replacement := pod("web-7d9f-abcde")
		replacement.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", UID: "0d6f8c1e-0000-4000-8000-000000000002"}}
		_, err = controller.CoreV1().Pods("tin-web").Create(t.Context(), replacement, dryRun)
		wantAllowed(t, err)
		// Relabeling a namespace out of the tenant would take it out of
		// the cordon.
		ns, err := admin.CoreV1().Namespaces().Get(t.Context(), "tin-web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		delete(ns.Labels, tenantLabel)
		_, err = tina.CoreV1().Namespaces().Update(t.Context(), ns, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		wantDenied(t, err, "tenant-cordoned")
		// A cordon-exempt add-on renews a certificate's Secret; another
		// add-on, with the same RBAC, is refused like the tenant.
		renewed := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-tls"}, Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("new"), "tls.key": []byte("new")}}
		certManager := cluster.AsOnly("system:serviceaccount:cert-manager:cert-manager", "system:serviceaccounts", "system:serviceaccounts:cert-manager")
		_, err = certManager.CoreV1().Secrets("tin-web").Create(t.Context(), renewed, dryRun)
		wantAllowed(t, err)
		injector := cluster.AsOnly("system:serviceaccount:cert-manager:cert-manager-cainjector", "system:serviceaccounts", "system:serviceaccounts:cert-manager")
		_, err = injector.CoreV1().Secrets("tin-web").Create(t.Context(), renewed, dryRun)
		wantDenied(t, err, "tenant-cordoned")
		event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web.1"}, InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "tin-web"}, Reason: "Started", Message: "still running"}
		_, err = tina.CoreV1().Events("tin-web").Create(t.Context(), event, dryRun)
		wantAllowed(t, err) // events go on
		_, err = admin.CoreV1().ConfigMaps("tin-web").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fix"}}, dryRun)
		wantAllowed(t, err) // administrators are exempt
		wantAllowed(t, tina.CoreV1().ConfigMaps("tin-web").Delete(t.Context(), "settings", metav1.DeleteOptions{}))

		tin["cordoned"] = false
		setRegistryDoc(t, cluster, withTenant(t, doc, tin))
		eventually(t, "the cordon lifted", func(ctx context.Context) error {
			_, err := tina.CoreV1().ConfigMaps("tin-web").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "more"}}, dryRun)
			return err
		})
	})
}
