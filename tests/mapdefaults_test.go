package tests

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// familyPatcher gives the patch each mutating family's Rego makes on a
// case: tenantguard's engine running a copy of the library whose entrypoint
// takes the mutations of that family only. The API server's answer is
// held, family by family, to the patches of the families whose defaults
// the MutatingAdmissionPolicies set.
type familyPatcher struct {
	cat      *catalog.Catalog
	policies map[string]*engine.Policy // by family
	engines  map[string]*engine.Engine // by family and registry file
	cluster  []clusterview.Object
	// learned are the operations of the families the policies cover on the
	// corpus's creates, by family and kind (learn).
	learned map[string][]map[string]any
	// ops are familyOps' answers, by case.
	ops map[*corpusCase]map[string][]map[string]any
}

// mutationsLoop is where the library's entrypoint takes each family's
// mutations; the copy for one family adds a condition after it.
const mutationsLoop = "some family in mutating_families"

var mainPackage = regexp.MustCompile(`(?m)^package tenantguard\.main$`)

func newFamilyPatcher(t testing.TB, cat *catalog.Catalog) *familyPatcher {
	t.Helper()
	f := &familyPatcher{cat: cat, policies: map[string]*engine.Policy{}, engines: map[string]*engine.Engine{}}
	var err error
	if f.cluster, err = clusterview.LoadFile(fixtures.ClusterFile()); err != nil {
		t.Fatal(err)
	}
	entrypoint := ""
	for path, src := range cat.Modules() {
		if mainPackage.MatchString(src) {
			entrypoint = path
		}
	}
	for _, r := range cat.Rules() {
		if !r.Mutates || f.policies[r.Family] != nil {
			continue
		}
		files := cat.Files()
		src := files[entrypoint]
		files[entrypoint] = strings.Replace(src, mutationsLoop, mutationsLoop+"\n\tfamily == "+strconv.Quote(r.Family), 1)
		if files[entrypoint] == src {
			t.Fatalf("%s no longer takes the families' mutations with %q", entrypoint, mutationsLoop)
		}
		lib, err := fixtures.Library(files)
		if err == nil {
			f.policies[r.Family], err = engine.Compile(t.Context(), engine.PolicyOptions{Catalog: lib, Evaluator: engine.EvaluatorTopdown})
		}
		if err != nil {
			t.Fatalf("the library with the mutations of %s only: %v", r.Family, err)
		}
	}
	return f
}

// covers reports whether the MutatingAdmissionPolicies set a family's
// defaults: every rule of it that mutates has CEL mutations.
func (f *familyPatcher) covers(family string) bool {
	return !slices.ContainsFunc(f.cat.Rules(), func(r catalog.Rule) bool {
		return r.Family == family && r.Mutates && !r.HasCELMutations()
	})
}

// familyOps is the engine's patch of a case, family by family, worked out
// once (learn, then split).
func (f *familyPatcher) familyOps(t testing.TB, c *corpusCase) map[string][]map[string]any {
	t.Helper()
	if ops, ok := f.ops[c]; ok {
		return ops
	}
	req, err := admission.Decode(c.original)
	if err != nil {
		t.Fatal(err)
	}
	byFamily := map[string][]map[string]any{}
	for family := range f.policies {
		key := family + "|" + c.RegistryFile()
		if f.engines[key] == nil {
			reg, err := registry.Load(c.RegistryFile())
			if err == nil {
				f.engines[key], err = f.policies[family].Engine(t.Context(), reg, nil, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		eng := f.engines[key]
		patch, err := eng.Mutate(t.Context(), req, caseView(t, f.cluster, c.Case, eng.Registry().TenantLabel()))
		if err != nil {
			t.Fatal(err)
		}
		var ops []map[string]any
		if len(patch) > 0 {
			if err := json.Unmarshal(patch, &ops); err != nil {
				t.Fatal(err)
			}
		}
		byFamily[family] = ops
	}
	if f.ops == nil {
		f.ops = map[*corpusCase]map[string][]map[string]any{}
	}
	f.ops[c] = byFamily
	return byFamily
}

// learn records, by family and kind, the operations the families the
// policies cover make on the corpus's creates: where a family's patch of a
// create is empty, the API server's object must gain none of them
// (overDefaults).
func (f *familyPatcher) learn(t testing.TB, corpus []*corpusCase) {
	t.Helper()
	f.learned = map[string][]map[string]any{}
	for _, c := range corpus {
		if c.request.Operation != "CREATE" || c.request.SubResource != "" {
			continue
		}
		for family, ops := range f.familyOps(t, c) {
			key := family + "|" + c.request.Kind.Kind
			for _, op := range ops {
				if f.covers(family) && op["op"] == "add" && !slices.ContainsFunc(f.learned[key], func(o map[string]any) bool { return fmt.Sprint(o) == fmt.Sprint(op) }) {
					f.learned[key] = append(f.learned[key], op)
				}
			}
		}
	}
}

// split divides the engine's patch of a case among the families: the
// operations of the families the policies cover, by family, and the
// others. The parts must add up to the patch.
func (f *familyPatcher) split(t testing.TB, c *corpusCase) (covered map[string][]map[string]any, others []map[string]any) {
	t.Helper()
	covered = map[string][]map[string]any{}
	var parts []string
	byFamily := f.familyOps(t, c)
	for _, family := range slices.Sorted(maps.Keys(byFamily)) {
		ops := byFamily[family]
		for _, op := range ops {
			raw, _ := json.Marshal(op)
			parts = append(parts, string(raw))
		}
		if f.covers(family) && len(ops) > 0 {
			covered[family] = ops
		} else {
			others = append(others, ops...)
		}
	}
	var whole []map[string]any
	if len(c.patch) > 0 {
		if err := json.Unmarshal(c.patch, &whole); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	for _, op := range whole {
		raw, _ := json.Marshal(op)
		all = append(all, string(raw))
	}
	if slices.Sort(parts); !slices.Equal(parts, slices.Sorted(slices.Values(all))) {
		t.Fatalf("the families' patches %v do not add up to the engine's %v", parts, all)
	}
	return covered, others
}

// createBody is what a create sends: the case's object as the requester
// wrote it, with the patch of the families whose defaults no
// MutatingAdmissionPolicy sets applied (tenantguard's webhook would).
func createBody(t testing.TB, c *corpusCase, others []map[string]any) []byte {
	t.Helper()
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(c.original, &review); err != nil {
		t.Fatal(err)
	}
	body := review.Request.Object.Raw
	if len(others) == 0 {
		return body
	}
	raw, err := json.Marshal(others)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(raw)
	if err == nil {
		body, err = p.Apply(body)
	}
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// defaultsSet compares the object the API server answered, with the
// MutatingAdmissionPolicies in force, with the engine's patch of each
// family they cover: every field a patch sets must be there with its value
// (in an object value, with its keys: the API server adds labels of its
// own), every field it removes absent. The rules of a family that agrees,
// those with CEL mutations, count as defaulted.
func (f *familyPatcher) defaultsSet(t testing.TB, answered *unstructured.Unstructured, covered map[string][]map[string]any, defaulted map[string]bool) []string {
	if answered == nil {
		return []string{"the API server answered the create without its object (it exists already?); the defaults cannot be compared"}
	}
	got := roundTrip(t, answered.Object)
	var problems []string
	for family, ops := range covered {
		before := len(problems)
		for _, op := range ops {
			path, _ := op["path"].(string)
			value, found := atPointer(got, path)
			if parent, ok := strings.CutSuffix(path, "/-"); ok && op["op"] == "add" {
				// appended: some element of the list holds it
				value, found = atPointer(got, parent)
				op = map[string]any{"op": "add", "value": []any{op["value"]}}
			}
			switch {
			case op["op"] == "remove" && found:
				problems = append(problems, fmt.Sprintf("%s removes %s; the API server's object has %v", family, path, value))
			case op["op"] != "remove" && (!found || !holds(value, op["value"])):
				problems = append(problems, fmt.Sprintf("%s sets %s to %v; the API server's object has %v (found: %v)", family, path, op["value"], value, found))
			}
		}
		for _, r := range f.cat.Rules() {
			if r.Family == family && r.HasCELMutations() && len(problems) == before {
				defaulted[r.ID] = true
			}
		}
	}
	return problems
}

// overDefaults reports what the API server's object gained of the
// operations a family makes on creates of the kind elsewhere in the corpus
// (learn) where the engine's patch of that family is empty: a default a
// policy sets that the engine does not. sent is the object created.
func (f *familyPatcher) overDefaults(t testing.TB, kind string, sent map[string]any, answered *unstructured.Unstructured, covered map[string][]map[string]any) []string {
	if answered == nil {
		return nil // defaultsSet says why
	}
	got, before := roundTrip(t, answered.Object), roundTrip(t, sent)
	var problems []string
	for _, family := range slices.Sorted(maps.Keys(f.policies)) {
		if len(covered[family]) > 0 {
			continue
		}
		for _, op := range f.learned[family+"|"+kind] {
			path, _ := op["path"].(string)
			if kind == "Pod" && slices.Contains(priorityPluginFields, path) {
				continue
			}
			want := op["value"]
			if parent, ok := strings.CutSuffix(path, "/-"); ok {
				path, want = parent, []any{want}
			}
			value, found := atPointer(got, path)
			if !found || !holds(value, want) {
				continue
			}
			if had, ok := atPointer(before, path); !ok || !holds(had, want) {
				problems = append(problems, fmt.Sprintf("%s sets nothing on this %s; the API server's object gained %s = %v, which the family sets elsewhere", family, kind, path, value))
			}
		}
	}
	return problems
}

// priorityPluginFields are set on every Pod by the API server's Priority
// plugin, from the class the pod names: the priority family's patch sets
// them too, but their being there says nothing of a policy.
var priorityPluginFields = []string{"/spec/priority", "/spec/preemptionPolicy"}

// atPointer is the value at a JSON pointer (RFC 6901) of plain JSON data.
func atPointer(doc any, pointer string) (any, bool) {
	if pointer == "" {
		return doc, true
	}
	for _, token := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		token = strings.NewReplacer("~1", "/", "~0", "~").Replace(token)
		switch node := doc.(type) {
		case map[string]any:
			next, ok := node[token]
			if !ok {
				return nil, false
			}
			doc = next
		case []any:
			i, err := strconv.Atoi(token)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			doc = node[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// holds reports whether got has want: equal, or for objects, every key of
// want held by got's value of it, or for lists, every element of want held
// by some element of got (the API server's own plugins add to lists, e.g.
// DefaultTolerationSeconds to a Pod's tolerations).
func holds(got, want any) bool {
	if wl, ok := want.([]any); ok {
		gl, ok := got.([]any)
		return ok && !slices.ContainsFunc(wl, func(w any) bool {
			return !slices.ContainsFunc(gl, func(g any) bool { return holds(g, w) })
		})
	}
	w, ok := want.(map[string]any)
	if !ok {
		return fmt.Sprint(got) == fmt.Sprint(want)
	}
	g, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range w {
		if !holds(g[k], v) {
			return false
		}
	}
	return true
}

// ensurePriorityClass makes the PriorityClass a Pod names exist, so that
// the API server's Priority plugin lets the pod through to the policies.
func (vc *vapCluster) ensurePriorityClass(t testing.TB, obj map[string]any) {
	t.Helper()
	spec, _ := obj["spec"].(map[string]any)
	name, _ := spec["priorityClassName"].(string)
	if obj["kind"] != "Pod" || name == "" || vc.classes[name] {
		return
	}
	classes := vc.cp.Client.SchedulingV1().PriorityClasses()
	if _, err := classes.Get(t.Context(), name, metav1.GetOptions{}); err == nil {
		vc.classes[name] = true
		return
	}
	_, err := classes.Create(t.Context(), &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: 10}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	vc.classes[name] = true
	// the plugin reads PriorityClasses through the API server's informer
	time.Sleep(500 * time.Millisecond)
}
