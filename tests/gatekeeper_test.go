package tests

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/open-policy-agent/frameworks/constraint/pkg/apis"
	templatesv1 "github.com/open-policy-agent/frameworks/constraint/pkg/apis/templates/v1"
	constraintclient "github.com/open-policy-agent/frameworks/constraint/pkg/client"
	"github.com/open-policy-agent/frameworks/constraint/pkg/client/drivers/rego"
	"github.com/open-policy-agent/frameworks/constraint/pkg/client/reviews"
	"github.com/open-policy-agent/frameworks/constraint/pkg/core/templates"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/target"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// webhookEnforcementPoint is where Gatekeeper's admission webhook reviews.
const webhookEnforcementPoint = "validation.gatekeeper.sh"

// gatekeeperJudge loads the exported templates and constraints into
// Gatekeeper's own constraint framework (the Rego driver and Gatekeeper's
// K8sValidationTarget, as its webhook runs them), replicates the case's
// cluster into the inventory as the SyncSet would, and reviews the mutated
// request with its namespace as the webhook does. Messages must be the
// engine's, sentence for sentence.
func gatekeeperJudge(cat *catalog.Catalog) judge {
	var (
		lib     *export.Library
		synced  map[schema.GroupVersionKind]bool
		clients gatekeeperClients // holds the client of the last registry
	)
	return judge{
		name:     "Gatekeeper",
		covers:   func(rule string) bool { return lib == nil || lib.Covers(rule) },
		notTaken: []string{deleteWithoutOld},
		// Gatekeeper's target refuses a DELETE without oldObject
		refuses: refusesDeleteWithoutOld,
		load: func(t testing.TB, registryFile string) {
			snap, err := registry.Load(registryFile)
			if err != nil {
				t.Fatal(err)
			}
			if lib, err = export.Gatekeeper(snap, export.Options{Catalog: cat}); err != nil {
				t.Fatal(err)
			}
			synced = syncSetKinds(t, lib)
			clients.load(t, lib)
		},
		decide: func(t testing.TB, c *corpusCase) (verdict, []string) {
			var added []*unstructured.Unstructured
			for _, o := range c.objects {
				u := &unstructured.Unstructured{Object: o}
				if !synced[u.GroupVersionKind()] {
					continue // not in the SyncSet, so not in Gatekeeper's inventory
				}
				if _, err := clients.client.AddData(t.Context(), u); err != nil {
					t.Fatal(err)
				}
				added = append(added, u)
			}
			defer func() {
				for _, u := range added {
					if _, err := clients.client.RemoveData(t.Context(), u); err != nil {
						t.Fatal(err)
					}
				}
			}()
			review := &target.AugmentedReview{AdmissionRequest: c.request, IsAdmission: true}
			var opts []reviews.ReviewOpt
			if ns := c.namespaceObject(); ns != nil {
				var typed corev1.Namespace
				convert(t, ns, &typed)
				review.Namespace = &typed
				opts = append(opts, reviews.Namespace(ns))
			}
			resp, err := clients.client.Review(t.Context(), review, append(opts, reviews.EnforcementPoint(webhookEnforcementPoint))...)
			if err != nil {
				t.Fatal(err)
			}
			v := verdictOf{}
			var problems []string
			for _, r := range resp.Results() {
				id := ruleOf(r.Msg)
				v.add(r.EnforcementAction, id)
				if !c.hasMessage(r.Msg) {
					problems = append(problems, "message not the engine's: "+r.Msg)
				}
			}
			return v.verdict(), problems
		},
	}
}

// syncSetKinds are the kinds the library's SyncSet replicates.
func syncSetKinds(t testing.TB, lib *export.Library) map[schema.GroupVersionKind]bool {
	t.Helper()
	out := map[schema.GroupVersionKind]bool{}
	for _, obj := range lib.Objects {
		if obj["kind"] != "SyncSet" {
			continue
		}
		var spec struct {
			GVKs []struct{ Groups, Versions, Kinds []string } `json:"gvks"`
		}
		convert(t, obj["spec"], &spec)
		for _, e := range spec.GVKs {
			for _, g := range e.Groups {
				for _, v := range e.Versions {
					for _, k := range e.Kinds {
						out[schema.GroupVersionKind{Group: g, Version: v, Kind: k}] = true
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the library has no SyncSet")
	}
	return out
}

// hasMessage reports whether the embedded engine gave the message, as a
// denial line, a warning or an audit annotation.
func (c *corpusCase) hasMessage(msg string) bool {
	if c.response.Result != nil && strings.Contains("\n"+c.response.Result.Message+"\n", "\n"+msg+"\n") {
		return true
	}
	for _, w := range c.response.Warnings {
		if w == msg {
			return true
		}
	}
	for _, a := range c.response.AuditAnnotations {
		if a == msg {
			return true
		}
	}
	return false
}

// gatekeeperClient is a constraint framework client with the library's
// templates and constraints added, as Gatekeeper's controllers add them.
func gatekeeperClient(t testing.TB, lib *export.Library) *constraintclient.Client {
	t.Helper()
	var g gatekeeperClients
	return g.load(t, lib)
}

// gatekeeperClients keeps a client from one library to the next. Libraries
// of different registries differ in their constraints' parameters, not in
// their templates: the next one's constraints then replace the last one's
// in the same client, as Gatekeeper's controller updates constraints
// without compiling the templates again, which took most of a load (about
// 6 s under the race detector). Different templates get a new client.
type gatekeeperClients struct {
	client *constraintclient.Client
	// templates is the JSON of the client's templates.
	templates   string
	constraints []*unstructured.Unstructured
}

// load returns a client holding lib's templates and constraints only.
func (g *gatekeeperClients) load(t testing.TB, lib *export.Library) *constraintclient.Client {
	t.Helper()
	var tmpls, constraints []map[string]any
	for _, obj := range lib.Objects {
		switch obj["kind"] {
		case "ConstraintTemplate":
			tmpls = append(tmpls, obj)
		case "SyncSet":
		default:
			constraints = append(constraints, obj)
		}
	}
	key, err := json.Marshal(tmpls)
	if err != nil {
		t.Fatal(err)
	}
	if g.client == nil || string(key) != g.templates {
		g.client, g.templates, g.constraints = newGatekeeperClient(t, tmpls), string(key), nil
	}
	for _, c := range g.constraints {
		if _, err := g.client.RemoveConstraint(t.Context(), c); err != nil {
			t.Fatalf("Gatekeeper did not remove constraint %s: %v", c.GetName(), err)
		}
	}
	g.constraints = g.constraints[:0]
	for _, obj := range constraints {
		c := &unstructured.Unstructured{Object: obj}
		if _, err := g.client.AddConstraint(t.Context(), c); err != nil {
			t.Fatalf("Gatekeeper refused constraint %v: %v", obj["metadata"], err)
		}
		g.constraints = append(g.constraints, c)
	}
	return g.client
}

// newGatekeeperClient is a constraint framework client with the templates
// added.
func newGatekeeperClient(t testing.TB, tmpls []map[string]any) *constraintclient.Client {
	t.Helper()
	driver, err := rego.New()
	if err != nil {
		t.Fatal(err)
	}
	client, err := constraintclient.NewClient(constraintclient.Targets(&target.K8sValidationTarget{}),
		constraintclient.Driver(driver), constraintclient.EnforcementPoints(webhookEnforcementPoint))
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range tmpls {
		var versioned templatesv1.ConstraintTemplate
		convert(t, obj, &versioned)
		var tmpl templates.ConstraintTemplate
		if err := gatekeeperScheme.Convert(&versioned, &tmpl, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := client.AddTemplate(t.Context(), &tmpl); err != nil {
			t.Fatalf("Gatekeeper refused template %s: %v", tmpl.Name, err)
		}
	}
	return client
}

// gatekeeperScheme converts templates as Gatekeeper's controller does.
var gatekeeperScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// convert round-trips a manifest through JSON into a typed value.
func convert(t testing.TB, in, out any) {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}
