package tests

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/audit"
	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/request"
	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// auditDiffers are the corpus cases the audit judges apart from admission
// by design, and why.
var auditDiffers = map[string]string{
	"a pod naming its node is denied": "the scheduler sets spec.nodeName on every scheduled pod, so the audit leaves nodeName to admission",
}

// TestAuditAgreesWithAdmissionOnEveryCreateOfTheCorpus: for each CREATE of
// the corpus, the object is made to exist (added to the case's cluster)
// and audited. Its rows must be the violations admission finds when the
// audit's requester creates it in the cluster without it (rules with
// audit: false left out), mode by mode; and where the audit's requester is
// the case's own, the corpus's expected rule ids too: an object admission
// refuses on create is reported with the same rule ids, one it admits is not.
func TestAuditAgreesWithAdmissionOnEveryCreateOfTheCorpus(t *testing.T) {
	cases, err := fixtures.Load()
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := clusterview.LoadFile(fixtures.ClusterFile())
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.MustEmbedded()
	skipped := map[string]bool{}
	for _, r := range cat.Rules() {
		if !r.Audit {
			skipped[r.ID] = true
		}
	}
	cache := map[string]*engine.Engine{}
	var creates, audited, asTheCase, reported int
	for i := range cases {
		c := &cases[i]
		if c.Raw != "" || c.Expect.BadInput || c.SubResource != "" || c.Object == nil || (c.Operation != "" && c.Operation != request.Create) {
			continue
		}
		o, content, ok := existing(t, c)
		if !ok {
			continue // not named: not an object that could exist
		}
		if _, differs := auditDiffers[c.Name]; differs {
			continue
		}
		creates++
		t.Run(c.Name, func(t *testing.T) {
			eng := engineFor(t, cache, c.RegistryFile(), nil)
			before := caseView(t, cluster, c, eng.Registry().TenantLabel())
			after := caseView(t, cluster, c, eng.Registry().TenantLabel())
			stored, err := clusterview.FromManifest(content)
			if err != nil {
				t.Fatal(err)
			}
			after.Upsert(stored)
			auditor := audit.New(eng, after, nil)
			rows, err := auditor.Check(t.Context(), &o)
			if err != nil {
				t.Fatal(err)
			}
			user, groups := auditor.Requester(&o)
			body, _ := json.Marshal(content)
			req, err := request.Decode(request.Spec{GVK: o.GVK, Name: o.Name, Namespace: o.Namespace, Operation: request.Create, User: user, Groups: request.Groups(user, groups), Object: body})
			if err != nil {
				t.Fatal(err)
			}
			d, err := eng.Review(t.Context(), req, before)
			if err != nil {
				t.Fatal(err)
			}
			if !auditor.Audits(&o) {
				denied := slices.DeleteFunc(slices.Clone(d.Deny), func(v admission.Violation) bool { return skipped[v.ID] })
				if len(rows) > 0 || len(denied) > 0 {
					t.Fatalf("not audited, yet rows %v and admission's denials %v", rows, denied)
				}
				return
			}
			audited++
			for _, mode := range []struct {
				name string
				vs   []admission.Violation
			}{{registry.ModeDeny, d.Deny}, {registry.ModeWarn, d.Warn}, {registry.ModeDryRun, d.DryRun}} {
				var want, got []string
				for _, v := range mode.vs {
					if !skipped[v.ID] {
						want = append(want, v.String())
					}
				}
				for _, r := range rows {
					if r.Mode == mode.name {
						got = append(got, "["+r.Rule+"] "+r.Message)
					}
				}
				slices.Sort(want)
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("%s: the audit reports %v, admission as %s %v finds %v", mode.name, got, user, groups, want)
				}
			}
			if len(rows) > 0 {
				reported++
			}
			if user != caseUser(c) || !slices.Equal(slices.Sorted(slices.Values(groups)), slices.Sorted(slices.Values(c.Groups))) {
				return
			}
			asTheCase++
			var want, got []string
			for _, id := range c.Expect.Deny {
				if !skipped[id] {
					want = append(want, id)
				}
			}
			for _, r := range rows {
				if r.Mode == registry.ModeDeny {
					got = append(got, r.Rule)
				}
			}
			if !slices.Equal(sorted(got), sorted(want)) {
				t.Errorf("the audit reports %v, the corpus expects admission to refuse %v", sorted(got), sorted(want))
			}
		})
	}
	t.Logf("%d creates of the corpus: %d audited, %d with violations, %d by the case's own requester", creates, audited, reported, asTheCase)
	if audited < 50 || asTheCase < 30 || reported < 20 {
		t.Errorf("the corpus has too few creates the audit checks: %d audited, %d by the case's requester, %d reported", audited, asTheCase, reported)
	}
}

// existing is the case's object as it would be stored: in the request's
// namespace (default for a namespaced object that names none).
func existing(t *testing.T, c *fixtures.Case) (audit.Object, map[string]any, bool) {
	t.Helper()
	content := maps.Clone(c.Object)
	metadata, _ := content["metadata"].(map[string]any)
	metadata = maps.Clone(metadata)
	name, _ := metadata["name"].(string)
	apiVersion, _ := content["apiVersion"].(string)
	kind, _ := content["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if name == "" || err != nil {
		return audit.Object{}, nil, false
	}
	gvk := gv.WithKind(kind)
	namespace := ""
	if !request.ClusterScoped(gvk.GroupKind()) {
		namespace, _ = metadata["namespace"].(string)
		if c.Namespace != "" {
			namespace = c.Namespace
		}
		if namespace == "" {
			namespace = "default"
		}
		metadata["namespace"] = namespace
	}
	content["metadata"] = metadata
	o, err := audit.FromMap(gvk, content)
	if err != nil {
		t.Fatal(err)
	}
	return o, content, true
}

// caseUser is the case's requester (alice when it names none).
func caseUser(c *fixtures.Case) string {
	if c.User == "" {
		return "alice"
	}
	return strings.TrimSpace(c.User)
}
