package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenantguard/tenantguard/tests/live"
)

// TestRegistryAndPolicyFaults breaks the registry and the policy directory
// of a running server in every way a platform team can, on a real API
// server: corrupt YAML, a tenant label the webhooks do not select, the
// ConfigMap deleted, an owner removed while her requests are in flight, a
// Rego syntax error, and an edit that compiles but fails the policy's own
// tests. Each fault must be refused with a
// signal (metric, Event or log line), the last good version must keep
// deciding a control set exactly as before, and repairing the fault must
// clear the signal. It runs on a control plane of its own, serving a
// policy directory.
func TestRegistryAndPolicyFaults(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	if err := live.CopyPolicy(dir, "namespaces_test", "fixtures_test"); err != nil {
		t.Fatal(err)
	}
	c := servePolicyDir(t, dir, nil, "--poll-interval", "100ms")
	alice, bob := c.As("alice"), c.As("bob")
	controls := controlSet(alice, bob)
	eventually(t, "the control set decided", func(ctx context.Context) error { return controls.check(ctx) })
	original := registryDoc(t, c)

	t.Run("corrupt YAML is refused and the last good registry decides", func(t *testing.T) {
		setRegistryDoc(t, c, "apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants: [{name: oil, owners: [\n")
		waitFor(t, "a RegistryRefused event", func(ctx context.Context) error {
			return hasEvent(ctx, c, "RegistryRefused", "the last good registry stays in force")
		})
		wantMetric(t, c, `tenantguard_reload_last_failed{source="registry"}`, "1")
		wantAllowed(t, controls.check(ctx))
		setRegistryDoc(t, c, original)
		waitFor(t, "the failure cleared", func(context.Context) error {
			return metricIs(t, c, `tenantguard_reload_last_failed{source="registry"}`, "0")
		})
		wantAllowed(t, controls.check(ctx))
	})

	t.Run("a registry whose tenant label the webhooks do not select is refused", func(t *testing.T) {
		relabelled := strings.Replace(original, "tenantLabel: "+tenantLabel, "tenantLabel: example.com/tenant", 1)
		if relabelled == original {
			t.Fatal("the registry names no tenantLabel")
		}
		setRegistryDoc(t, c, relabelled)
		waitFor(t, "a RegistryRefused event naming both labels", func(ctx context.Context) error {
			return hasEvent(ctx, c, "RegistryRefused", `"example.com/tenant" is not "`+tenantLabel+`"`)
		})
		wantMetric(t, c, `tenantguard_reload_last_failed{source="registry"}`, "1")
		wantAllowed(t, controls.check(ctx))
		setRegistryDoc(t, c, original)
		waitFor(t, "the failure cleared", func(context.Context) error {
			return metricIs(t, c, `tenantguard_reload_last_failed{source="registry"}`, "0")
		})
	})

	t.Run("a deleted ConfigMap leaves the last good registry in force", func(t *testing.T) {
		cm, err := c.Client.CoreV1().ConfigMaps(live.Namespace).Get(ctx, live.RegistryName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Client.CoreV1().ConfigMaps(live.Namespace).Delete(ctx, live.RegistryName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a RegistryDeleted event", func(ctx context.Context) error { return hasEvent(ctx, c, "RegistryDeleted", "deleted") })
		wantMetric(t, c, `tenantguard_reload_last_failed{source="registry"}`, "1")
		if err := c.Ready(); err != nil {
			t.Fatalf("not ready without the ConfigMap: %v", err)
		}
		wantAllowed(t, controls.check(ctx))
		cm.ResourceVersion, cm.UID = "", ""
		if _, err := c.Client.CoreV1().ConfigMaps(live.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the failure cleared", func(context.Context) error {
			return metricIs(t, c, `tenantguard_reload_last_failed{source="registry"}`, "0")
		})
		wantAllowed(t, controls.check(ctx))
	})

	t.Run("an owner removed while her requests are in flight gets one answer or the other", func(t *testing.T) {
		before := metricValue(t, c, `tenantguard_generation{source="registry"}`)
		// Four senders create namespaces (dry run) back to back; the owner is
		// removed meanwhile. Each sender must see allowed answers, then only
		// the new registry's refusal: never an error, never a mix.
		const senders = 4
		answers := make([][]string, senders)
		var mu sync.Mutex
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := range senders {
			wg.Go(func() {
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					_, err := alice.CoreV1().Namespaces().Create(ctx, namespace(fmt.Sprintf("oil-flight-%d-%d", i, n), nil), dryRun)
					mu.Lock()
					answers[i] = append(answers[i], outcome(err))
					mu.Unlock()
				}
			})
		}
		time.Sleep(500 * time.Millisecond)
		without := strings.Replace(original, "      - {kind: User, name: alice}\n", "", 1)
		if without == original {
			t.Fatal("alice is not an owner in the registry")
		}
		setRegistryDoc(t, c, without)
		waitFor(t, "the registry without alice in force", func(context.Context) error {
			if metricValue(t, c, `tenantguard_generation{source="registry"}`) == before {
				return errors.New("same generation")
			}
			return nil
		})
		// Keep sending until every sender has had the new registry's answer.
		waitFor(t, "every sender refused", func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			for i, seq := range answers {
				if len(seq) == 0 || seq[len(seq)-1] == "allowed" {
					return fmt.Errorf("sender %d not refused yet", i)
				}
			}
			return nil
		})
		close(stop)
		wg.Wait()
		total := 0
		for i, seq := range answers {
			total += len(seq)
			if err := allowedThenRefused(seq); err != nil {
				t.Errorf("sender %d: %v", i, err)
			}
		}
		t.Logf("%d namespace creates in flight across the change; each sender saw allowed answers, then only refusals", total)
		_, err := alice.CoreV1().Namespaces().Create(ctx, namespace("oil-after", nil), dryRun)
		wantDenied(t, err, "namespace-ownership")
		setRegistryDoc(t, c, original)
		eventually(t, "alice an owner again", func(ctx context.Context) error { return controls.check(ctx) })
	})

	servicesRule := filepath.Join(dir, "tenantguard", "rules", "services", "services.rego")
	namespacesRule := filepath.Join(dir, "tenantguard", "rules", "namespaces", "namespaces.rego")
	for _, fault := range []struct {
		name, file string
		edit       func(string) string
		// logged is what the refusal's log line must say.
		logged string
	}{
		{"a policy with a syntax error is refused and the last good policy decides", servicesRule,
			func(src string) string { return src + "\nbroken := {\n" }, "services.rego"},
		{"a policy failing its own tests is refused and the last good policy decides", namespacesRule,
			func(src string) string { return strings.ReplaceAll(src, "owns no tenant", "has no tenant") }, "test_non_owner_is_told_they_own_no_tenant"},
	} {
		t.Run(fault.name, func(t *testing.T) {
			before := metricValue(t, c, `tenantguard_generation{source="policy"}`)
			src, err := os.ReadFile(fault.file)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, fault.file, fault.edit(string(src)))
			waitFor(t, "the policy refused", func(context.Context) error {
				return metricIs(t, c, `tenantguard_reload_last_failed{source="policy"}`, "1")
			})
			if !hasLine(c.Logs.String(), `"msg":"policy refused"`, fault.logged) {
				t.Errorf("no policy refused log line names %q", fault.logged)
			}
			wantAllowed(t, controls.check(ctx))
			if got := metricValue(t, c, `tenantguard_generation{source="policy"}`); got != before {
				t.Fatalf("policy generation %s -> %s: the broken policy was put in force", before, got)
			}
			writeFile(t, fault.file, string(src))
			waitFor(t, "the failure cleared", func(context.Context) error {
				return metricIs(t, c, `tenantguard_reload_last_failed{source="policy"}`, "0")
			})
			wantAllowed(t, controls.check(ctx))
		})
	}
}

// controls are requests whose decisions must not change while the registry
// or policy is broken: each names the rule that refuses it, or "" when it
// is allowed, and the words the refusal must contain.
type controls []struct {
	name, rule, words string
	do                func(ctx context.Context) error
}

func controlSet(alice, bob kubernetes.Interface) controls {
	return controls{
		{"a plain pod of alice's", "", "", func(ctx context.Context) error {
			_, err := alice.CoreV1().Pods("oil-dev").Create(ctx, pod("plain", asking("100m")), dryRun) // oil sums CPU and memory: a pod names them
			return err
		}},
		{"a hostNetwork pod of alice's", "host-network", "hostNetwork", func(ctx context.Context) error {
			_, err := alice.CoreV1().Pods("oil-dev").Create(ctx, pod("host", func(s *corev1.PodSpec) { s.HostNetwork = true }), dryRun)
			return err
		}},
		{"a NodePort of alice's", "service-type", "NodePort", func(ctx context.Context) error {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "np"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}
			_, err := alice.CoreV1().Services("oil-dev").Create(ctx, svc, dryRun)
			return err
		}},
		{"a namespace of bob's in oil", "namespace-ownership", "owns no tenant", func(ctx context.Context) error {
			_, err := bob.CoreV1().Namespaces().Create(ctx, namespace("oil-bob", nil), dryRun)
			return err
		}},
		{"a namespace of alice's", "", "", func(ctx context.Context) error {
			_, err := alice.CoreV1().Namespaces().Create(ctx, namespace("oil-more", nil), dryRun)
			return err
		}},
	}
}

// check is nil when every control is decided as expected.
func (cs controls) check(ctx context.Context) error {
	var wrong []string
	for _, c := range cs {
		err := c.do(ctx)
		switch {
		case c.rule == "" && err != nil:
			wrong = append(wrong, fmt.Sprintf("%s: refused: %v", c.name, err))
		case c.rule != "" && (denialOf(err, c.rule) != nil || !strings.Contains(err.Error(), c.words)):
			wrong = append(wrong, fmt.Sprintf("%s: %v, want a [%s] refusal saying %q", c.name, err, c.rule, c.words))
		}
	}
	if len(wrong) > 0 {
		return errors.New(strings.Join(wrong, "; "))
	}
	return nil
}

// hasLine reports whether one line of logs contains every one of words.
func hasLine(logs string, words ...string) bool {
	for line := range strings.SplitSeq(logs, "\n") {
		if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(line, w) }) {
			return true
		}
	}
	return false
}

// outcome names an answer to alice's namespace create.
func outcome(err error) string {
	switch {
	case err == nil:
		return "allowed"
	case denialOf(err, "namespace-ownership") == nil && strings.Contains(err.Error(), `"alice" owns no tenant`):
		return "refused"
	}
	return err.Error()
}

// allowedThenRefused is nil for a sequence of allowed answers followed by
// refusals, with at least one of each.
func allowedThenRefused(seq []string) error {
	refused := false
	for i, o := range seq {
		switch {
		case o == "refused":
			refused = true
		case o != "allowed":
			return fmt.Errorf("answer %d is an error: %s", i, o)
		case refused:
			return fmt.Errorf("answer %d allowed after a refusal: %v", i, seq)
		}
	}
	if !refused || seq[0] != "allowed" {
		return fmt.Errorf("want allowed answers then refusals, got %v", seq)
	}
	return nil
}

// writeFile replaces a file of the policy directory.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := live.ReplaceFile(path, []byte(data)); err != nil {
		t.Fatal(err)
	}
}

// hasEvent is nil once an Event of reason mentioning words is on the
// registry ConfigMap.
func hasEvent(ctx context.Context, c *live.Cluster, reason, words string) error {
	events, err := c.Client.CoreV1().Events(live.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		return err
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == live.RegistryName && strings.Contains(e.Message, words) {
			return nil
		}
	}
	return fmt.Errorf("no %s event mentioning %q yet", reason, words)
}

// waitFor retries f for up to 30 s: policy tests run before a policy loads.
func waitFor(t *testing.T, what string, f func(ctx context.Context) error) {
	t.Helper()
	within(t, 30*time.Second, what, f)
}

// metricValue is the value of the server's metric line starting with name.
func metricValue(t *testing.T, c *live.Cluster, name string) string {
	t.Helper()
	line := metricAt(t, c, name+" ")
	return strings.TrimPrefix(line, name+" ")
}

func metricIs(t *testing.T, c *live.Cluster, name, want string) error {
	if got := metricValue(t, c, name); got != want {
		return fmt.Errorf("%s = %q, want %s", name, got, want)
	}
	return nil
}

func wantMetric(t *testing.T, c *live.Cluster, name, want string) {
	t.Helper()
	if err := metricIs(t, c, name, want); err != nil {
		t.Fatal(err)
	}
}

// metricAt returns the /metrics line of c's server starting with prefix, or "".
func metricAt(t *testing.T, c *live.Cluster, prefix string) string {
	t.Helper()
	resp, err := c.HTTP.Get(c.BaseURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}
