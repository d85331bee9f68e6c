package e2e

import (
	"context"
	"fmt"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// breakGlassGroup is the administrators' emergency group of TestOutage.
const breakGlassGroup = "platform:break-glass"

// TestOutage installs the chart with every replica down (its webhooks
// pointing at a port nothing listens on) and checks what keeps working:
// cluster administrators (system:masters, the chart's default break-glass
// group) and a break-glass group create and delete namespaces, nodes and
// their Leases are untouched, kube-system keeps scheduling, and tenants'
// creates fail closed.
func TestOutage(t *testing.T) {
	ctx := t.Context()
	cp := installChart(t, append(exampleRegistry(), "--set", "webhook.breakGlassGroups={system:masters,"+breakGlassGroup+"}")...).cp
	// a tenant namespace from before the outage
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, namespace("oil-before", map[string]string{tenantLabel: "oil"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	masters := cp.AsOnly("root", "system:masters")
	oncall := cp.As("oncall", breakGlassGroup) // the tenants group's cluster-admin is its RBAC
	node := cp.As("system:node:worker-1", "system:nodes")
	admins := []struct {
		name   string
		client kubernetes.Interface
	}{{"system:masters", masters}, {"the break-glass group", oncall}}
	for i, admin := range admins {
		t.Run(admin.name+" creates and deletes namespaces", func(t *testing.T) {
			for _, name := range []string{fmt.Sprintf("platform-%d", i), fmt.Sprintf("oil-by-admin-%d", i)} {
				_, err := admin.client.CoreV1().Namespaces().Create(ctx, namespace(name, nil), metav1.CreateOptions{})
				wantAllowed(t, err)
				wantAllowed(t, admin.client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}))
			}
			wantAllowed(t, admin.client.CoreV1().Namespaces().Delete(ctx, "oil-before", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}))
		})
	}
	tests := []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"a node registers and updates its status", func(ctx context.Context) error {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}}
			if _, err := masters.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
				return err
			}
			n, err := node.CoreV1().Nodes().Get(ctx, "worker-1", metav1.GetOptions{})
			if err != nil {
				return err
			}
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
			_, err = node.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		}},
		{"a node renews its Lease", func(ctx context.Context) error {
			now := metav1.NowMicro()
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}, Spec: coordinationv1.LeaseSpec{RenewTime: &now}}
			if _, err := node.CoordinationV1().Leases("kube-node-lease").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
				return err
			}
			l, err := node.CoordinationV1().Leases("kube-node-lease").Get(ctx, "worker-1", metav1.GetOptions{})
			if err != nil {
				return err
			}
			later := metav1.NowMicro()
			l.Spec.RenewTime = &later
			_, err = node.CoordinationV1().Leases("kube-node-lease").Update(ctx, l, metav1.UpdateOptions{})
			return err
		}},
		{"kube-system workloads are created and scheduled", func(ctx context.Context) error {
			// not a break-glass group: the namespace exemption lets it through
			// (the tenants group gives it RBAC's cluster-admin)
			controller := cp.As("system:serviceaccount:kube-system:replicaset-controller", "system:serviceaccounts", "system:serviceaccounts:kube-system")
			p, err := controller.CoreV1().Pods("kube-system").Create(ctx, pod("coredns-1"), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: "worker-1"}}
			return cp.AsOnly("system:kube-scheduler").CoreV1().Pods("kube-system").Bind(ctx, binding, metav1.CreateOptions{})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantAllowed(t, tt.do(t.Context())) })
	}
	t.Run("tenant creates fail closed", func(t *testing.T) {
		alice := cp.As("alice")
		_, err := alice.CoreV1().Namespaces().Create(ctx, namespace("oil-during", nil), metav1.CreateOptions{})
		wantFailedClosed(t, err)
		_, err = alice.CoreV1().Pods("oil-before").Create(ctx, pod("web"), metav1.CreateOptions{})
		wantFailedClosed(t, err)
		_, err = alice.CoreV1().Services("oil-before").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
		wantFailedClosed(t, err)
	})
	// A ResourceClaim's devices are counted when it is created; its spec
	// cannot change, so its updates (finalizers, labels) go to the
	// catch-all webhook, which ignores the outage.
	t.Run("a tenant's ResourceClaim is updated, not created", func(t *testing.T) {
		gpu := resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}
		claim, err := masters.ResourceV1().ResourceClaims("oil-before").Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "before"}, Spec: gpu}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		alice := cp.As("alice")
		claim.Finalizers = append(claim.Finalizers, "example.com/driver")
		_, err = alice.ResourceV1().ResourceClaims("oil-before").Update(ctx, claim, metav1.UpdateOptions{})
		wantAllowed(t, err)
		_, err = alice.ResourceV1().ResourceClaims("oil-before").Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "during"}, Spec: gpu}, metav1.CreateOptions{})
		wantFailedClosed(t, err)
	})
}

// TestChartWithNoValues installs the chart as `helm install` with no values
// does (only the webhook URL pointed at the server run outside the
// cluster): the server starts on the empty registry, and the helm test hook
// passes.
func TestChartWithNoValues(t *testing.T) {
	chart := installChart(t)
	cp, rendered := chart.cp, chart.rendered
	_, logs := runChartServer(t, cp, rendered, chart.port)
	waitForChartServer(t, cp, chart.url, logs)
	helmTestPasses(t, cp, rendered)
	_, err := cp.As("bob").CoreV1().Namespaces().Create(t.Context(), namespace("team-b", nil), dryRun)
	wantAllowed(t, err)
}
