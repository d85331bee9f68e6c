package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// verdict is a validating decision as rule ids by enforcement mode, each
// list sorted and without repeats.
type verdict struct{ Deny, Warn, DryRun []string }

func (v verdict) String() string {
	return fmt.Sprintf("deny %v warn %v dryrun %v", v.Deny, v.Warn, v.DryRun)
}

// only keeps the rules an engine claims to cover.
func (v verdict) only(covers func(string) bool) verdict {
	keep := func(ids []string) []string {
		out := []string{}
		for _, id := range ids {
			if covers(id) {
				out = append(out, id)
			}
		}
		return out
	}
	return verdict{keep(v.Deny), keep(v.Warn), keep(v.DryRun)}
}

func (v verdict) equal(o verdict) bool {
	return slices.Equal(v.Deny, o.Deny) && slices.Equal(v.Warn, o.Warn) && slices.Equal(v.DryRun, o.DryRun)
}

// verdictOf collects rule ids by mode.
type verdictOf map[string]map[string]bool

func (b verdictOf) add(mode, id string) {
	if b[mode] == nil {
		b[mode] = map[string]bool{}
	}
	b[mode][id] = true
}

func (b verdictOf) verdict() verdict {
	list := func(mode string) []string {
		out := []string{}
		for id := range b[mode] {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	return verdict{list("deny"), list("warn"), list("dryrun")}
}

// ruleOf is the id of a "[rule-id] sentence" message, possibly behind a prefix
// an engine adds.
func ruleOf(message string) string {
	start := strings.Index(message, "[")
	end := strings.Index(message, "] ")
	if start < 0 || end < start {
		return ""
	}
	return message[start+1 : end]
}

// corpusCase is one decidable corpus case as every engine gets it: the
// request after the embedded engine's mutations (validating admission sees
// the mutated object) and the cluster the case runs in.
type corpusCase struct {
	*fixtures.Case
	// original is the AdmissionReview before mutation, review after it.
	original, review []byte
	request          *admissionv1.AdmissionRequest
	// objects are the corpus cluster plus the case's own objects.
	objects []map[string]any
	// want is the embedded engine's decision; response and patch its answer.
	want     verdict
	response admissionv1.AdmissionResponse
	patch    []byte
}

// namespaceObject is the namespace of the request among the case's objects.
func (c *corpusCase) namespaceObject() map[string]any {
	for _, o := range slices.Backward(c.objects) {
		meta, _ := o["metadata"].(map[string]any)
		if o["kind"] == "Namespace" && meta["name"] == c.request.Namespace && c.request.Namespace != "" {
			return o
		}
	}
	return nil
}

// judge is one engine of the policy library.
type judge struct {
	name string
	// covers reports whether the engine claims the rule.
	covers func(rule string) bool
	// refuses, when set, says why the engine cannot take a case at all; such
	// cases are counted apart, not compared.
	refuses func(c *corpusCase) string
	// notTaken are the cases the engine, or the API server in front of it,
	// is known not to take; any other case skipped fails the test.
	notTaken []string
	// prepare, when set, sees the whole corpus before any case is decided.
	prepare func(t testing.TB, corpus []*corpusCase)
	// load puts the library exported for a registry file in force.
	load func(t testing.TB, registryFile string)
	// decide is the engine's decision on a case; problems are differences
	// beyond rule ids that the engine can be held to (messages, patches).
	// It skips the test of a case the engine refuses before deciding.
	decide func(t testing.TB, c *corpusCase) (got verdict, problems []string)
	// setsDefaults, when set, reports whether the engine claims to set a
	// rule's defaults (mutates); decide then adds to defaulted the rules
	// whose defaults it set as the embedded engine did, and every rule it
	// claims must be among them.
	setsDefaults func(rule string) bool
	defaulted    map[string]bool
}

// library is a rule library and the corpus its engines are held to.
type library struct {
	// catalog is the library; nil is the embedded one.
	catalog *catalog.Catalog
	// cases are its corpus; nil is the shared corpus.
	cases []fixtures.Case
	// exercise are the rules the corpus must break with every engine that
	// claims them agreeing; nil is every rule of the library.
	exercise []string
}

// ids are the library's rule ids.
func (l library) ids() []string {
	if l.catalog == nil {
		return catalog.MustEmbedded().IDs()
	}
	return l.catalog.IDs()
}

// loadCorpus decides every decidable case with the embedded engine.
func loadCorpus(t testing.TB) []*corpusCase { return library{}.corpus(t) }

// corpus decides every decidable case of the library's corpus with
// tenantguard's engine running the library.
func (l library) corpus(t testing.TB) []*corpusCase {
	t.Helper()
	cases := l.cases
	if cases == nil {
		var err error
		if cases, err = fixtures.Load(); err != nil {
			t.Fatal(err)
		}
	}
	items := clusterItems(t)
	cluster, err := clusterview.LoadFile(fixtures.ClusterFile())
	if err != nil {
		t.Fatal(err)
	}
	engines := map[string]*engine.Engine{}
	var out []*corpusCase
	for i := range cases {
		c := &cases[i]
		if c.Expect.BadInput {
			continue
		}
		body, err := c.Review()
		if err != nil {
			t.Fatal(err)
		}
		req, err := admission.Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		eng := engineFor(t, engines, c.RegistryFile(), l.catalog)
		d, err := eng.Review(t.Context(), req, caseView(t, cluster, c, eng.Registry().TenantLabel()))
		if err != nil {
			t.Fatal(err)
		}
		review := body
		if len(d.Patch) > 0 {
			review = applyToReview(t, body, d.Patch)
		}
		var mutated admissionv1.AdmissionReview
		if err := json.Unmarshal(review, &mutated); err != nil {
			t.Fatal(err)
		}
		want := verdictOf{}
		for mode, vs := range map[string][]admission.Violation{"deny": d.Deny, "warn": d.Warn, "dryrun": d.DryRun} {
			for _, v := range vs {
				want.add(mode, v.ID)
			}
		}
		out = append(out, &corpusCase{
			Case: c, original: body, review: review, request: mutated.Request,
			objects: append(slices.Clone(items), c.Objects...),
			want:    want.verdict(), response: d.Response(req.UID).AdmissionResponse, patch: d.Patch,
		})
	}
	return out
}

// clusterItems are the corpus cluster's objects as manifests.
func clusterItems(t testing.TB) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(fixtures.ClusterFile())
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := yaml.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestEnginesAgree is the equivalence test of the policy library: every
// decidable case of the shared corpus goes through the embedded engine and
// through each exported engine, which must agree with the embedded engine on
// the rules it claims to cover: the same rule ids broken, in the same
// enforcement mode. Every rule an engine claims must be broken, with
// agreement, by at least one case. The counts per engine are logged.
func TestEnginesAgree(t *testing.T) {
	library{}.agree(t)
}

// agree runs the library's corpus through the embedded engine and every
// exported engine, as TestEnginesAgree describes.
func (l library) agree(t *testing.T) {
	corpus := l.corpus(t)
	names := map[string]bool{}
	for _, c := range corpus {
		names[c.Name] = true
	}
	var files []string
	for _, c := range corpus {
		if !slices.Contains(files, c.RegistryFile()) {
			files = append(files, c.RegistryFile())
		}
	}
	var summary []string
	for _, j := range judges(t, l.catalog) {
		t.Run(j.name, func(t *testing.T) {
			agreed, claimed := 0, 0
			var skipped []string
			exercised := map[string]bool{}
			if j.prepare != nil {
				j.prepare(t, corpus)
			}
			for _, file := range files {
				j.load(t, file)
				for _, c := range corpus {
					if c.RegistryFile() != file {
						continue
					}
					t.Run(c.Name, func(t *testing.T) {
						defer func() {
							if t.Skipped() {
								skipped = append(skipped, c.Name)
							}
						}()
						if j.refuses != nil {
							if why := j.refuses(c); why != "" {
								t.Skipf("%s cannot take this request: %s", j.name, why)
							}
						}
						want := c.want.only(j.covers)
						got, problems := j.decide(t, c)
						if !got.equal(want) {
							problems = append(problems, fmt.Sprintf("%s, engine %s", got, want))
						}
						if len(problems) > 0 {
							t.Errorf("%s disagrees with the engine:\n%s", j.name, strings.Join(problems, "\n"))
							return
						}
						agreed++
						for _, id := range slices.Concat(want.Deny, want.Warn, want.DryRun) {
							exercised[id] = true
						}
					})
				}
			}
			var missing, undefaulted []string
			for _, id := range l.ids() {
				wanted := l.exercise == nil || slices.Contains(l.exercise, id)
				if j.covers(id) {
					claimed++
					if !exercised[id] && wanted {
						missing = append(missing, id)
					}
				}
				if j.setsDefaults != nil && j.setsDefaults(id) && !j.defaulted[id] && wanted {
					undefaulted = append(undefaulted, id)
				}
			}
			slices.Sort(skipped)
			want := slices.DeleteFunc(slices.Clone(j.notTaken), func(name string) bool { return !names[name] })
			if slices.Sort(want); !slices.Equal(skipped, want) {
				t.Errorf("%s did not take %q; known not to take %q", j.name, skipped, want)
			}
			if len(missing) > 0 {
				t.Errorf("no case broke %v with %s agreeing; the claim is untested", missing, j.name)
			}
			if len(undefaulted) > 0 {
				t.Errorf("no case had %s set the defaults of %v as the engine does; the claim is untested", j.name, undefaulted)
			}
			summary = append(summary, fmt.Sprintf("%-18s %3d cases, %3d agreements, %2d not taken, %2d of %d rules covered, %2d exercised, %d defaults set",
				j.name, len(corpus), agreed, len(skipped), claimed, len(l.ids()), len(exercised), len(j.defaulted)))
		})
	}
	t.Logf("engine agreement on the corpus:\n%s", strings.Join(summary, "\n"))
}

// judges are the engines of a library (nil: the embedded one).
func judges(t testing.TB, cat *catalog.Catalog) []judge {
	cluster := &sharedCluster{owner: t}
	return []judge{embeddedJudge(), opaJudge(t, cat), gatekeeperJudge(cat), kyvernoJudge(cluster, cat), vapJudge(cluster, cat)}
}

// embeddedJudge holds the engine to the corpus's own expectations, so that
// the reference the others are compared with is itself checked.
func embeddedJudge() judge {
	return judge{
		name:   "embedded engine",
		covers: func(string) bool { return true },
		load:   func(testing.TB, string) {},
		decide: func(_ testing.TB, c *corpusCase) (verdict, []string) {
			want := verdictOf{}
			for mode, ids := range map[string][]string{"deny": c.Expect.Deny, "warn": c.Expect.Warn, "dryrun": c.Expect.DryRun} {
				for _, id := range ids {
					want.add(mode, id)
				}
			}
			if got := want.verdict(); !got.equal(c.want) {
				return c.want, []string{fmt.Sprintf("the corpus expects %s", got)}
			}
			return c.want, nil
		},
	}
}
