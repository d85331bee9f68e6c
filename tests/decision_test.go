package tests

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// engineFor compiles one engine per registry file of the corpus; subtests run
// one after another, so the cache needs no lock.
func engineFor(t testing.TB, cache map[string]*engine.Engine, file string, cat *catalog.Catalog) *engine.Engine {
	t.Helper()
	if eng, ok := cache[file]; ok {
		return eng
	}
	reg, err := registry.Load(file)
	if err != nil {
		t.Fatalf("loading %s: %v", file, err)
	}
	eng, err := engine.New(t.Context(), reg, engine.Options{PolicyOptions: engine.PolicyOptions{Catalog: cat}})
	if err != nil {
		t.Fatalf("compiling the rules: %v", err)
	}
	cache[file] = eng
	return eng
}

// caseView is the corpus cluster (read once by the caller) plus the case's own objects.
func caseView(t testing.TB, cluster []clusterview.Object, c *fixtures.Case, label string) *clusterview.View {
	t.Helper()
	extra, err := c.ExtraObjects()
	if err != nil {
		t.Fatal(err)
	}
	view := clusterview.New(label)
	for _, o := range append(slices.Clone(cluster), extra...) {
		view.Upsert(o)
	}
	return view
}

func TestCorpusDecisions(t *testing.T) {
	cases, err := fixtures.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 80 {
		t.Fatalf("the corpus has %d cases; it must keep at least 80", len(cases))
	}
	cluster, err := clusterview.LoadFile(fixtures.ClusterFile())
	if err != nil {
		t.Fatal(err)
	}
	cache := map[string]*engine.Engine{}
	seenRules := map[string]bool{}
	for i := range cases {
		c := &cases[i]
		t.Run(c.Name, func(t *testing.T) {
			body, err := c.Review()
			if err != nil {
				t.Fatal(err)
			}
			req, err := admission.Decode(body)
			if c.Expect.BadInput {
				if !errors.Is(err, admission.ErrBadReview) {
					t.Fatalf("want a bad-input error, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("decoding: %v", err)
			}
			eng := engineFor(t, cache, c.RegistryFile(), nil)
			d, err := eng.Review(t.Context(), req, caseView(t, cluster, c, eng.Registry().TenantLabel()))
			if err != nil {
				t.Fatalf("review: %v", err)
			}
			checkDecision(t, c, d)
			for _, v := range d.Deny {
				seenRules[v.ID] = true
			}
		})
	}
	for _, id := range catalog.MustEmbedded().IDs() {
		if !seenRules[id] {
			t.Errorf("no corpus case is denied by rule %q", id)
		}
	}
}

func checkDecision(t testing.TB, c *fixtures.Case, d *admission.Decision) {
	t.Helper()
	wantAllowed := c.Expect.Allowed || len(c.Expect.Deny) == 0
	if d.Allowed != wantAllowed {
		t.Errorf("allowed = %v, want %v; denials: %v", d.Allowed, wantAllowed, d.Deny)
	}
	for _, mode := range []struct {
		name string
		got  []admission.Violation
		want []string
	}{{"deny", d.Deny, c.Expect.Deny}, {"warn", d.Warn, c.Expect.Warn}, {"dryrun", d.DryRun, c.Expect.DryRun}} {
		if got := ruleIDs(mode.got); !slices.Equal(got, sorted(mode.want)) {
			t.Errorf("%s rules = %v, want %v; messages: %v", mode.name, got, sorted(mode.want), mode.got)
		}
	}
	var messages []string
	for _, v := range d.Deny {
		messages = append(messages, v.String())
	}
	for _, want := range c.Expect.Messages {
		if !slices.Contains(messages, want) {
			t.Errorf("missing denial\n  %s\ngot\n  %v", want, messages)
		}
	}
	if c.Expect.Patch != nil {
		var got []map[string]any
		if d.Patch != nil {
			if err := json.Unmarshal(d.Patch, &got); err != nil {
				t.Fatal(err)
			}
		}
		want, _ := json.Marshal(c.Expect.Patch)
		gotJSON, _ := json.Marshal(got)
		if len(c.Expect.Patch) == 0 && len(got) == 0 {
			return
		}
		if string(want) != string(gotJSON) {
			t.Errorf("patch = %s, want %s", gotJSON, want)
		}
	}
}

func ruleIDs(vs []admission.Violation) []string {
	ids := []string{}
	for _, v := range vs {
		if !slices.Contains(ids, v.ID) {
			ids = append(ids, v.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	slices.Sort(out)
	return out
}
