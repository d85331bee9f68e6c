package state_test

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/policydir"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/tests/live"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// observer records loads and refusals.
type observer struct {
	mu        sync.Mutex
	loaded    map[string]int64
	rejected  map[string]int
	recovered map[string]int
}

func (o *observer) Loaded(source string, generation int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.loaded[source] = generation
}

func (o *observer) Rejected(source string, _ time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rejected[source]++
}

func (o *observer) Recovered(source string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recovered[source]++
}

func newStore(t *testing.T) (*state.Store, *observer) {
	t.Helper()
	obs := &observer{loaded: map[string]int64{}, rejected: map[string]int{}, recovered: map[string]int{}}
	store := state.New(clusterview.New(registry.DefaultTenantLabel), state.Options{
		Observer: obs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err := store.LoadPolicy(t.Context(), "embedded", nil); err != nil {
		t.Fatal(err)
	}
	return store, obs
}

func registryDoc(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures.Dir(), "registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestRegistryReloads(t *testing.T) {
	ctx := t.Context()
	store, obs := newStore(t)
	good := registryDoc(t)
	if store.Engine() != nil {
		t.Fatal("an engine before any registry")
	}
	if err := store.LoadRegistry(ctx, "good", []byte(good)); err != nil {
		t.Fatal(err)
	}
	first := store.Engine()

	t.Run("an invalid registry is refused with every problem and the old one kept", func(t *testing.T) {
		bad := strings.Replace(good, "namespaceQuota: 3", "namespaceQuota: many", 1)
		bad = strings.Replace(bad, "name: gas", "name: Gas!", 1)
		err := store.LoadRegistry(ctx, "bad", []byte(bad))
		var problems *registry.Error
		if !errors.As(err, &problems) || len(problems.Problems) < 2 {
			t.Fatalf("error %v, want a *registry.Error with both problems", err)
		}
		if store.Engine() != first {
			t.Fatal("the engine changed on a refused registry")
		}
		if gen, _ := store.Generations(); gen != 1 || obs.rejected["registry"] != 1 {
			t.Fatalf("generation %d, refusals %d; want 1 and 1", gen, obs.rejected["registry"])
		}
	})

	t.Run("the same registry again changes nothing, and the source has recovered", func(t *testing.T) {
		if err := store.LoadRegistry(ctx, "good", []byte(good)); err != nil || store.Engine() != first {
			t.Fatalf("err %v, engine replaced %v", err, store.Engine() != first)
		}
		if gen, _ := store.Generations(); gen != 1 || obs.recovered["registry"] != 1 {
			t.Fatalf("generation %d, recoveries %d; want 1 and 1", gen, obs.recovered["registry"])
		}
		if err := store.LoadRegistry(ctx, "good", []byte(good)); err != nil || obs.recovered["registry"] != 1 {
			t.Fatalf("err %v, recoveries %d; a source that was not failing does not recover", err, obs.recovered["registry"])
		}
	})

	t.Run("a changed registry is a new engine and generation", func(t *testing.T) {
		changed := strings.Replace(good, "namespaceQuota: 3", "namespaceQuota: 4", 1)
		if err := store.LoadRegistry(ctx, "changed", []byte(changed)); err != nil {
			t.Fatal(err)
		}
		if store.Engine() == first {
			t.Fatal("the engine was not replaced")
		}
		if gen, _ := store.Generations(); gen != 2 || obs.loaded["registry"] != 2 {
			t.Fatalf("generation %d, observed %d; want 2", gen, obs.loaded["registry"])
		}
	})
}

func TestPolicyReloads(t *testing.T) {
	ctx := t.Context()
	store, obs := newStore(t)
	if err := store.LoadRegistry(ctx, "good", []byte(registryDoc(t))); err != nil {
		t.Fatal(err)
	}
	embedded := store.Engine()
	tests := []struct {
		name    string
		modules map[string]string
		want    string
	}{
		{"a policy without the decision is refused", map[string]string{"main.rego": "package tenantguard.main\n\nmutations := []\n"}, "data.tenantguard.main.decision is undefined"},
		{"a policy answering in the wrong shape is refused", map[string]string{"main.rego": "package tenantguard.main\n\nmutations := []\n\ndecision := {\"allowed\": 1}\n"}, "is not {allowed, deny, warn, dryrun}"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := store.LoadPolicy(ctx, "custom", library(t, tt.modules))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			}
			if store.Engine() != embedded || obs.rejected["policy"] != i+1 {
				t.Fatalf("engine replaced %v, refusals %d", store.Engine() != embedded, obs.rejected["policy"])
			}
		})
	}
	t.Run("the policy in force offered again after a refusal has recovered", func(t *testing.T) {
		if err := store.LoadPolicy(ctx, "embedded", nil); err != nil || store.Engine() != embedded || obs.recovered["policy"] != 1 {
			t.Fatalf("err %v, engine replaced %v, recoveries %d", err, store.Engine() != embedded, obs.recovered["policy"])
		}
	})
	t.Run("a working policy replaces the embedded one", func(t *testing.T) {
		allowAll := map[string]string{"main.rego": "package tenantguard.main\n\nmutations := []\n\ndecision := {\"allowed\": true, \"deny\": [], \"warn\": [], \"dryrun\": []}\n"}
		if err := store.LoadPolicy(ctx, "custom", library(t, allowAll)); err != nil {
			t.Fatal(err)
		}
		if _, gen := store.Generations(); gen != 2 || store.Engine() == embedded {
			t.Fatalf("policy generation %d, engine replaced %v", gen, store.Engine() != embedded)
		}
	})
}

// TestTheRegistryAndThePolicyAgreeOnRuleIDs: a registry whose enforcement
// names a rule the policy in force does not declare is refused, and so is a
// policy that does not declare a rule the registry in force names.
func TestTheRegistryAndThePolicyAgreeOnRuleIDs(t *testing.T) {
	ctx := t.Context()
	store, obs := newStore(t)
	doc := registryDoc(t)
	named := strings.Replace(doc, "    settings:\n", "    settings:\n      enforcement: {host-network: warn}\n", 1)
	unknown := strings.Replace(doc, "    settings:\n", "    settings:\n      enforcement: {no-such-rule: warn}\n", 1)
	if named == doc {
		t.Fatalf("the fixture registry cannot take an enforcement this way:\n%s", doc)
	}
	if err := store.LoadRegistry(ctx, "unknown", []byte(unknown)); err == nil || !strings.Contains(err.Error(), `unknown rule id "no-such-rule"`) {
		t.Fatalf("a registry naming no rule of the policy: %v", err)
	}
	if err := store.LoadRegistry(ctx, "named", []byte(named)); err != nil {
		t.Fatal(err)
	}
	good := store.Engine()
	noRules := library(t, map[string]string{"main.rego": "package tenantguard.main\n\nmutations := []\n\ndecision := {\"allowed\": true, \"deny\": [], \"warn\": [], \"dryrun\": []}\n"})
	if err := store.LoadPolicy(ctx, "custom", noRules); err == nil || !strings.Contains(err.Error(), `unknown rule id "host-network"`) {
		t.Fatalf("a policy without a rule the registry names: %v", err)
	}
	if store.Engine() != good || obs.rejected["policy"] != 1 {
		t.Fatalf("engine replaced %v, policy refusals %d", store.Engine() != good, obs.rejected["policy"])
	}
}

// TestAFamilyAndItsEnforcementRollOutInEitherOrder adds a rule family and
// the registry's enforcement of it, and removes both, each pair in both
// orders: whichever comes first is refused (its rule ids do not match) and
// put in force as soon as the other arrives, with no new version of it.
func TestAFamilyAndItsEnforcementRollOutInEitherOrder(t *testing.T) {
	ctx := t.Context()
	withFamily, withoutFamily := t.TempDir(), t.TempDir()
	if err := live.CopyFamilyPolicy(withFamily); err != nil {
		t.Fatal(err)
	}
	if err := live.CopyPolicy(withoutFamily, "_test.rego"); err != nil {
		t.Fatal(err)
	}
	family, err := policydir.Load(withFamily)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := policydir.Load(withoutFamily)
	if err != nil {
		t.Fatal(err)
	}
	doc := registryDoc(t)
	enforced := strings.Replace(doc, "    settings:\n", "    settings:\n      enforcement: {configmap-secrets: warn}\n", 1)
	inForce := func(store *state.Store, wantRule bool, wantRegistry string) {
		t.Helper()
		e := store.Engine()
		_, hasRule := e.Policy().Catalog().Rule("configmap-secrets")
		mode := e.Registry().Registry().Settings.Enforcement["configmap-secrets"]
		if hasRule != wantRule || mode != wantRegistry {
			t.Fatalf("in force: the family %v, the registry's mode %q; want %v and %q", hasRule, mode, wantRule, wantRegistry)
		}
	}
	steps := map[string][]func(*state.Store) error{
		"the registry first": {
			func(s *state.Store) error { return s.LoadRegistry(ctx, "enforced", []byte(enforced)) },
			func(s *state.Store) error { return s.LoadPolicy(ctx, "with the family", family) },
		},
		"the policy first": {
			func(s *state.Store) error { return s.LoadPolicy(ctx, "with the family", family) },
			func(s *state.Store) error { return s.LoadRegistry(ctx, "enforced", []byte(enforced)) },
		},
	}
	for name, add := range steps {
		t.Run("adding, "+name, func(t *testing.T) {
			store, _ := newStore(t)
			if err := store.LoadRegistry(ctx, "plain", []byte(doc)); err != nil {
				t.Fatal(err)
			}
			first, second := add[0](store), add[1](store)
			if name == "the registry first" && (first == nil || second != nil) {
				t.Fatalf("the registry naming a rule not in force: %v; then the policy: %v", first, second)
			}
			if name == "the policy first" && (first != nil || second != nil) {
				t.Fatalf("%v, %v", first, second)
			}
			inForce(store, true, "warn")
		})
	}
	t.Run("removing, the policy first", func(t *testing.T) {
		store, _ := newStore(t)
		if err := store.LoadPolicy(ctx, "with the family", family); err != nil {
			t.Fatal(err)
		}
		if err := store.LoadRegistry(ctx, "enforced", []byte(enforced)); err != nil {
			t.Fatal(err)
		}
		if err := store.LoadPolicy(ctx, "without the family", plain); err == nil || !strings.Contains(err.Error(), `unknown rule id "configmap-secrets"`) {
			t.Fatalf("a policy without a rule the registry names: %v", err)
		}
		inForce(store, true, "warn")
		if err := store.LoadRegistry(ctx, "plain", []byte(doc)); err != nil {
			t.Fatal(err)
		}
		inForce(store, false, "")
	})
}

// library is a rule library of the given files.
func library(t *testing.T, files map[string]string) *catalog.Catalog {
	t.Helper()
	c, err := fixtures.Library(files)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNoRequestSeesAHalfSwappedState reviews a request while the registry
// flips between one where bob owns nothing and one where he owns oil. Every
// answer must be one of the two registries' answers, never an error.
func TestNoRequestSeesAHalfSwappedState(t *testing.T) {
	ctx := t.Context()
	store, _ := newStore(t)
	without := registryDoc(t)
	with := strings.Replace(without, "- {kind: User, name: alice}", "- {kind: User, name: alice}\n          - {kind: User, name: bob}", 1)
	if with == without {
		t.Fatal("the edit changed nothing")
	}
	if err := store.LoadRegistry(ctx, "without", []byte(without)); err != nil {
		t.Fatal(err)
	}
	body, err := (&fixtures.Case{User: "bob", Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "oil-bob"}}}).Review()
	if err != nil {
		t.Fatal(err)
	}
	req, err := admission.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	// Reviewers stop on a flag, not by cancelling their context, so that no
	// evaluation is cut short: every answer must be a complete one.
	var stopped atomic.Bool
	var reviews atomic.Int64
	var wg sync.WaitGroup
	outcomes := make([]map[string]int, 4)
	for i := range outcomes {
		outcomes[i] = map[string]int{}
		wg.Go(func() {
			for !stopped.Load() {
				d, err := store.Engine().Review(ctx, req, store.View())
				reviews.Add(1)
				switch {
				case err != nil:
					outcomes[i]["error: "+err.Error()]++
				case d.Allowed && len(d.Deny) == 0:
					outcomes[i]["allowed"]++
				case !d.Allowed && len(d.Deny) == 1 && d.Deny[0].ID == "namespace-ownership":
					outcomes[i]["denied"]++
				default:
					outcomes[i]["inconsistent"]++
				}
			}
		})
	}
	for i := range 16 {
		doc := with
		if i%2 == 1 {
			doc = without
		}
		if err := store.LoadRegistry(ctx, "flip", []byte(doc)); err != nil {
			t.Fatal(err)
		}
		// Each registry answers before the next swap: once more reviews
		// than there are reviewers have ended since the swap, one of them
		// began after it. On a loaded machine the reviewers may otherwise
		// not run at all between two swaps.
		for n := reviews.Load(); reviews.Load() <= n+int64(len(outcomes)); {
			runtime.Gosched()
		}
	}
	stopped.Store(true)
	wg.Wait()
	seen := map[string]int{}
	for _, o := range outcomes {
		for outcome, n := range o {
			seen[outcome] += n
			if outcome != "allowed" && outcome != "denied" {
				t.Errorf("%d answers %q", n, outcome)
			}
		}
	}
	if seen["allowed"] == 0 || seen["denied"] == 0 {
		t.Errorf("answers %v: both registries should have answered", seen)
	}
}

func TestAPolicyIsCheckedBeforeAnyRegistry(t *testing.T) {
	store := state.New(clusterview.New(registry.DefaultTenantLabel), state.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	err := store.LoadPolicy(t.Context(), "custom", library(t, map[string]string{"main.rego": "package tenantguard.main\n\nmutations := []\n"}))
	if err == nil || !strings.Contains(err.Error(), "data.tenantguard.main.decision is undefined") {
		t.Fatalf("error %v, want the missing decision reported", err)
	}
}

func TestASwapHasTheCollectorRunOnce(t *testing.T) {
	store, _ := newStore(t)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := store.LoadRegistry(t.Context(), "r", []byte(registryDoc(t))); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var now runtime.MemStats
		runtime.ReadMemStats(&now)
		if now.NumForcedGC > before.NumForcedGC {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no collection forced after the registry was put in force (%d forced before, %d now)", before.NumForcedGC, now.NumForcedGC)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
