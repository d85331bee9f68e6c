package policydir_test

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// recorder is a Loader that keeps what it was handed.
type recorder struct {
	mu      sync.Mutex
	loads   []*catalog.Catalog
	refused []error
}

func (r *recorder) LoadPolicy(_ context.Context, _ string, cat *catalog.Catalog) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loads = append(r.loads, cat)
	return nil
}

func (r *recorder) RefusePolicy(_ string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused = append(r.refused, err)
}

func (r *recorder) counts() (loads, refused int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.loads), len(r.refused)
}

// copyEmbedded writes the embedded rule library into dir, with the tests
// whose paths contain one of tests.
func copyEmbedded(t *testing.T, dir string, tests ...string) {
	t.Helper()
	if err := live.CopyPolicy(dir, tests...); err != nil {
		t.Fatal(err)
	}
}

func TestLoadSeparatesTestsAndSkipsHiddenFolders(t *testing.T) {
	dir := t.TempDir()
	copyEmbedded(t, dir, "namespaces_test", "fixtures_test")
	// A ConfigMap volume keeps its files under a hidden timestamped folder.
	hidden := filepath.Join(dir, "..2026_11_22", "tenantguard")
	if err := os.MkdirAll(hidden, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hidden, "dup.rego"), []byte("package dup"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policydir.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	modules := p.Modules()
	embedded := catalog.MustEmbedded().Modules()
	if len(p.Tests()) != 2 || p.Tests()["tenantguard/rules/namespaces/namespaces_test.rego"] == "" {
		t.Errorf("tests %v, want the 2 copied", slices.Collect(maps.Keys(p.Tests())))
	}
	if !slices.Equal(p.IDs(), catalog.MustEmbedded().IDs()) {
		t.Errorf("rules %v, want the embedded ones", p.IDs())
	}
	if len(modules) != len(embedded) {
		t.Fatalf("%d modules, want the %d embedded ones", len(modules), len(embedded))
	}
	for path := range modules {
		if strings.HasSuffix(path, "_test.rego") || strings.Contains(path, "..") {
			t.Errorf("loaded %s", path)
		}
	}
}

func TestAnEmptyDirectoryIsAnError(t *testing.T) {
	if _, err := policydir.Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no .rego modules") {
		t.Fatalf("error %v, want no .rego modules", err)
	}
}

func TestWatchFollowsChanges(t *testing.T) {
	dir := t.TempDir()
	copyEmbedded(t, dir)
	loader := &recorder{}
	if err := policydir.Watch(t.Context(), policydir.Source{Dir: dir}, 10*time.Millisecond, loader); err != nil {
		t.Fatal(err)
	}
	wait := func(what string, ok func(loads, refused int) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if ok(loader.counts()) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %s", what)
	}
	wait("the first load", func(l, _ int) bool { return l == 1 })

	main := filepath.Join(dir, "tenantguard", "main", "main.rego")
	data, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	// Written atomically, as ConfigMap volumes are: a poll in the middle of
	// a plain write would see (and load) a truncated file.
	if err := live.ReplaceFile(main, append(data, []byte("\n# edited\n")...)); err != nil {
		t.Fatal(err)
	}
	wait("the edited policy", func(l, _ int) bool { return l == 2 })

	time.Sleep(50 * time.Millisecond)
	if l, _ := loader.counts(); l != 2 {
		t.Fatalf("%d loads of an unchanged directory, want 2", l)
	}

	if err := os.RemoveAll(filepath.Join(dir, "tenantguard")); err != nil {
		t.Fatal(err)
	}
	// Removing and copying file by file may be seen half done, and loaded:
	// what matters is the refusal, and that the complete policy comes back.
	wait("the emptied directory refused", func(_, r int) bool { return r >= 1 })
	copyEmbedded(t, dir)
	embedded := catalog.MustEmbedded().Modules()
	wait("the restored policy", func(int, int) bool {
		loader.mu.Lock()
		defer loader.mu.Unlock()
		return len(loader.loads) >= 3 && len(loader.loads[len(loader.loads)-1].Modules()) == len(embedded)
	})
}

// TestABrokenEditKeepsTheLastGoodPolicy runs the watcher against the real
// state store: a syntax error is refused and the previous rules keep
// answering; the fixed file is then put in force.
func TestABrokenEditKeepsTheLastGoodPolicy(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	copyEmbedded(t, dir)
	store := newStore(t)
	if err := policydir.Watch(ctx, policydir.Source{Dir: dir}, 10*time.Millisecond, store); err != nil {
		t.Fatal(err)
	}
	_, first := store.Generations()
	good := store.Engine()

	rule := filepath.Join(dir, "tenantguard", "rules", "namespaces", "namespaces.rego")
	src, err := os.ReadFile(rule)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rule, append(src, []byte("\nbroken := {\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, gen := store.Generations(); gen != first || store.Engine() != good {
		t.Fatalf("a broken policy was put in force (generation %d -> %d)", first, gen)
	}

	edited := strings.Replace(string(src), "owns no tenant", "has no tenant", 1)
	if edited == string(src) {
		t.Fatal("the edit changed nothing")
	}
	if err := os.WriteFile(rule, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for store.Engine() == good && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if msg := bobIsTold(t, store); !strings.Contains(msg, "has no tenant") {
		t.Fatalf("denial %q, want the edited message", msg)
	}
}

// newStore is a state store with the fixture registry in force.
func newStore(t *testing.T) *state.Store {
	t.Helper()
	store := state.New(clusterview.New(registry.DefaultTenantLabel), state.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	data, err := os.ReadFile(filepath.Join(fixtures.Dir(), "registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.LoadRegistry(t.Context(), "registry", data); err != nil {
		t.Fatal(err)
	}
	return store
}

// bobIsTold is the one denial of bob's namespace create: he owns no tenant.
func bobIsTold(t *testing.T, store *state.Store) string {
	t.Helper()
	body, err := (&fixtures.Case{User: "bob", Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "oil-bob"}}}).Review()
	if err != nil {
		t.Fatal(err)
	}
	req, err := admission.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	d, err := store.Engine().Review(t.Context(), req, store.View())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Deny) != 1 {
		t.Fatalf("denials %v, want one", d.Deny)
	}
	return d.Deny[0].Msg
}

// refusals is a store that also hands every policy refusal to a channel:
// the policies it refuses to load, and those the watcher could not read.
type refusals struct {
	*state.Store
	refused chan error
}

func (r refusals) LoadPolicy(ctx context.Context, source string, cat *catalog.Catalog) error {
	err := r.Store.LoadPolicy(ctx, source, cat)
	if err != nil {
		r.refused <- err
	}
	return err
}

func (r refusals) RefusePolicy(source string, err error) {
	r.Store.RefusePolicy(source, err)
	r.refused <- err
}

// TestAPolicyWhoseOwnTestsFailIsRefused edits a rule so that it compiles
// and answers but breaks the test beside it: the edit is refused, naming
// the test, and the last good rules keep answering; once the test is
// changed too, the edit is put in force.
func TestAPolicyWhoseOwnTestsFailIsRefused(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	copyEmbedded(t, dir, "namespaces_test", "fixtures_test")
	store := refusals{newStore(t), make(chan error, 10)}
	if err := policydir.Watch(ctx, policydir.Source{Dir: dir}, 10*time.Millisecond, store); err != nil {
		t.Fatal(err)
	}
	_, first := store.Generations()
	good := store.Engine()
	edit := func(path string) {
		t.Helper()
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.ReplaceAll(string(src), "owns no tenant", "has no tenant")
		if edited == string(src) {
			t.Fatalf("the edit changed nothing in %s", path)
		}
		if err := live.ReplaceFile(path, []byte(edited)); err != nil {
			t.Fatal(err)
		}
	}
	rules := filepath.Join(dir, "tenantguard", "rules", "namespaces")
	edit(filepath.Join(rules, "namespaces.rego"))
	select {
	case err := <-store.refused:
		if !strings.Contains(err.Error(), "policy tests failed") || !strings.Contains(err.Error(), "test_non_owner_is_told_they_own_no_tenant") {
			t.Fatalf("refused with %v, want the failing test named", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the edit breaking a test was not refused")
	}
	if _, gen := store.Generations(); gen != first || store.Engine() != good {
		t.Fatalf("a policy failing its tests was put in force (generation %d -> %d)", first, gen)
	}
	if msg := bobIsTold(t, store.Store); !strings.Contains(msg, "owns no tenant") {
		t.Fatalf("denial %q, want the last good rules' message", msg)
	}

	edit(filepath.Join(rules, "namespaces_test.rego"))
	deadline := time.Now().Add(30 * time.Second)
	for store.Engine() == good && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if msg := bobIsTold(t, store.Store); !strings.Contains(msg, "has no tenant") {
		t.Fatalf("denial %q, want the edited rules' once their tests pass", msg)
	}

	// A directory whose tests fail does not start.
	broken := t.TempDir()
	copyEmbedded(t, broken, "namespaces_test", "fixtures_test")
	edit(filepath.Join(broken, "tenantguard", "rules", "namespaces", "namespaces.rego"))
	if err := policydir.Watch(ctx, policydir.Source{Dir: broken}, time.Hour, newStore(t)); err == nil || !strings.Contains(err.Error(), "policy tests failed") {
		t.Fatalf("Watch of a directory failing its tests: %v", err)
	}
}
