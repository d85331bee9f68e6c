package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"
	kjson "sigs.k8s.io/json"

	"github.com/tenantguard/tenantguard/internal/jsonast"
	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/tests/scale"
)

const podReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"oil-dev","operation":"CREATE","userInfo":{"username":"alice"},"object":{"kind":"Pod","spec":{"priority":12345678901234567}}}}`

func TestDecodeKeepsTheRequestAndExactNumbers(t *testing.T) {
	req, err := Decode([]byte(podReview))
	if err != nil {
		t.Fatal(err)
	}
	if req.UID != "u1" || req.Namespace != "oil-dev" || req.UserInfo.Username != "alice" {
		t.Errorf("request = %+v", req.AdmissionRequest)
	}
	if got, err := req.Object.Find(ast.MustParseRef("x.spec.priority")[1:]); err != nil || got.Compare(ast.Number("12345678901234567")) != 0 {
		t.Errorf("priority = %v (%v)", got, err)
	}
	if req.OldObject != nil {
		t.Error("no oldObject was sent")
	}
}

func TestTheKeysDecodeReadsAreTheTermsTheDecoderPutsInTheReview(t *testing.T) {
	// Looking a key up by the term the decoder used skips comparing strings.
	req, err := Decode([]byte(podReview))
	if err != nil {
		t.Fatal(err)
	}
	keys := []key{keyUID, keyKind, keyResource, keyGroup, keyNamespace, keyOperation, keyUserInfo, keyUsername, keyObject}
	seen := map[string]bool{}
	var walk func(obj ast.Object)
	walk = func(obj ast.Object) {
		obj.Foreach(func(k, v *ast.Term) {
			for _, want := range keys {
				if k.Value.Compare(want.term.Value) == 0 {
					seen[want.name] = true
					if k != want.term {
						t.Errorf("the review's key %v is a term of its own", k)
					}
				}
			}
			if o, ok := v.Value.(ast.Object); ok {
				walk(o)
			}
		})
	}
	walk(req.Value)
	if len(seen) != len(keys) {
		t.Fatalf("saw the keys %v, want all %d", seen, len(keys))
	}
}

func TestANullThePolicyCouldReadIsTheZeroValueGoReads(t *testing.T) {
	// The policy and the Go code must decide on one request: a null subResource
	// read as "" by Go but as null by Rego would count a create against its
	// quota in Go and skip the quota rule in Rego.
	req, err := Decode([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",
		"kind":{"group":null,"version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
		"subResource":null,"name":null,"namespace":"ns","operation":"DELETE",
		"userInfo":{"username":null,"groups":["a",null]},"object":null,"oldObject":{"metadata":{"labels":null}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := ast.MustParseTerm(`{"uid":"u1","kind":{"version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
		"namespace":"ns","operation":"DELETE","userInfo":{"groups":["a",""]},"oldObject":{"metadata":{"labels":null}}}`).Value
	if req.Value.Compare(want) != 0 {
		t.Fatalf("the policy reads %v, want %v", req.Value, want)
	}
	if req.SubResource != "" || req.Name != "" || req.UserInfo.Username != "" || !reflect.DeepEqual(req.UserInfo.Groups, []string{"a", ""}) {
		t.Fatalf("Go reads %+v", req.AdmissionRequest)
	}
}

func TestDecodeLeavesOutManagedFields(t *testing.T) {
	review := strings.Replace(podReview, `"object":{"kind":"Pod",`, `"object":{"kind":"Pod","metadata":{"name":"p","managedFields":[{"manager":"kubectl"}]},`, 1)
	req, err := Decode([]byte(review))
	if err != nil {
		t.Fatal(err)
	}
	want := ast.MustParseTerm(`{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": 12345678901234567}}`).Value
	if req.Object.Compare(want) != 0 {
		t.Errorf("object = %v, want %v", req.Object, want)
	}
}

func TestDecodeSharesWhatReviewsRepeatAndGivesTheSameValues(t *testing.T) {
	// A cache of its own, with many slots: the served one's 2,048, under
	// a seed drawn at random, now and then give the containers' text the
	// slot of another text the corpus repeats, which then holds it.
	served := repeated
	repeated = jsonast.NewCache(1 << 18)
	t.Cleanup(func() { repeated = served })
	// one tenant: the texts of the tenants' own node pools would compete
	// for the cache's slots with those the test looks at
	corpus := scale.Corpus(1, 100)
	decoded := make([]*Request, 0, 3*len(corpus))
	for range 3 {
		for _, c := range corpus {
			req, err := Decode(c.Body)
			if err != nil {
				t.Fatal(err)
			}
			decoded = append(decoded, req)
		}
	}
	for i, req := range decoded {
		body := corpus[i%len(corpus)].Body
		v, err := jsonast.ParsePaths(body, reviewPaths[:], nil)
		if err != nil {
			t.Fatal(err)
		}
		want := v.(ast.Object).Get(keyRequest.term).Value
		if req.Value.Compare(want) != 0 {
			t.Fatalf("review %d decoded as %v, without the cache as %v", i, req.Value, want)
		}
	}
	// Every pod of the corpus has the same containers: the first review, a
	// pod, shares them when decoded again, but not its request or object.
	last, before := decoded[len(decoded)-len(corpus)], decoded[len(decoded)-2*len(corpus)]
	containersOf := func(r *Request) *ast.Term {
		return r.Object.Get(ast.InternedTerm("spec")).Value.(ast.Object).Get(ast.InternedTerm("containers"))
	}
	if containersOf(last) != containersOf(before) {
		t.Error("the containers every pod repeats are decoded anew")
	}
	if last.Value == before.Value || last.Object == before.Object {
		t.Error("two requests share their request or object")
	}
}

func TestDecodeAcceptsYAML(t *testing.T) {
	yamlReview := "apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\nrequest:\n  uid: u\n  kind: {kind: Namespace, version: v1}\n  resource: {resource: namespaces}\n  operation: DELETE\n"
	if _, err := Decode([]byte(yamlReview)); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeRefusesBadInput(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"an empty body", "", "the body is empty"},
		{"text that is neither JSON nor YAML", "{", "not an AdmissionReview"},
		{"YAML that is not a review", "- a\n- b", "not an AdmissionReview"},
		{"another API version", strings.Replace(podReview, "admission.k8s.io/v1", "admission.k8s.io/v1beta1", 1), "expected apiVersion admission.k8s.io/v1"},
		{"no request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, "has no request"},
		{"no uid", strings.Replace(podReview, `"uid":"u1",`, "", 1), "request.uid is empty"},
		{"no kind", strings.Replace(podReview, `"kind":"Pod"},`, `"kind":""},`, 1), "request.kind.kind"},
		{"an unknown operation", strings.Replace(podReview, "CREATE", "PATCH", 1), `"PATCH" is not CREATE`},
		{"a uid that is a number", strings.Replace(podReview, `"uid":"u1"`, `"uid":1`, 1), "request.uid is number, not a string"},
		{"a kind that is a string", strings.Replace(podReview, `"kind":{"group":"","version":"v1","kind":"Pod"}`, `"kind":"Pod"`, 1), "request.kind is string, not an object"},
		{"groups that are not strings", strings.Replace(podReview, `"username":"alice"`, `"username":"alice","groups":["a",2]`, 1), "request.userInfo.groups is number, not a list of strings"},
		{"a dry run that is a string", strings.Replace(podReview, `"operation"`, `"dryRun":"yes","operation"`, 1), "request.dryRun is string, not a boolean"},
		{"a request that is a list", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":[]}`, "request is array, not an object"},
		{"a review that is a list", `[]`, "the document is array, not an object"},
		{"an object that is a string", strings.Replace(podReview, `"object":{"kind":"Pod","spec":{"priority":12345678901234567}}`, `"object":"pod"`, 1), "request.object is not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.body))
			if !errors.Is(err, ErrBadReview) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a bad review error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("the error must be one line: %q", err)
			}
		})
	}
}

func TestResponsesCarryEveryReasonPatchAndWarning(t *testing.T) {
	resp := Denied("u", []string{"[a] one", "[b] two"}).WithPatch([]byte(`[{"op":"add","path":"/x","value":1}]`)).WithWarnings([]string{"[c] three"}).WithAuditAnnotations(map[string]string{"dryrun-d": "[d] four"})
	out, err := resp.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var review struct {
		APIVersion string `json:"apiVersion"`
		Response   struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
			Status  struct {
				Code    int
				Message string
			} `json:"status"`
			Patch    []byte            `json:"patch"`
			Type     string            `json:"patchType"`
			Warnings []string          `json:"warnings"`
			Audit    map[string]string `json:"auditAnnotations"`
		} `json:"response"`
	}
	if err := json.Unmarshal(out, &review); err != nil {
		t.Fatal(err)
	}
	r := review.Response
	if review.APIVersion != Version || r.UID != "u" || r.Allowed || r.Status.Code != 403 || r.Status.Message != "[a] one\n[b] two" {
		t.Errorf("response = %s", out)
	}
	if r.Type != "JSONPatch" || string(r.Patch) != `[{"op":"add","path":"/x","value":1}]` || len(r.Warnings) != 1 || r.Audit["dryrun-d"] != "[d] four" {
		t.Errorf("response = %s", out)
	}
	if allowed := Allowed("u").WithPatch([]byte("[]")); allowed.PatchType != nil {
		t.Error("an empty patch must not be sent")
	}
}

// fullReview sets every field of a request that Decode fills.
const fullReview = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u2",` +
	`"kind":{"group":"apps","version":"v1","kind":"Deployment"},"resource":{"group":"apps","version":"v1","resource":"deployments"},` +
	`"subResource":"scale","requestKind":{"group":"autoscaling","version":"v1","kind":"Scale"},` +
	`"requestResource":{"group":"apps","version":"v1","resource":"deployments"},"requestSubResource":"scale",` +
	`"name":"web","namespace":"oil-dev","operation":"UPDATE",` +
	`"userInfo":{"username":"alice","uid":"42","groups":["devs",null],"extra":{"scopes":["a","b"],"none":null}},` +
	`"object": {"kind":"Scale","metadata":{"managedFields":[]}} ,"oldObject":{"kind":"Scale"},"dryRun":true,` +
	`"options":{"kind":"UpdateOptions"},"ignored":[1e5]}}`

func TestDecodeFillsTheRequestAsEncodingJSON(t *testing.T) {
	for _, body := range []string{podReview, fullReview} {
		want := typedReview(t, []byte(body))
		req, err := Decode([]byte(body))
		if err != nil || want == nil {
			t.Fatalf("Decode: %v; encoding/json: %v", err, want)
		}
		if !reflect.DeepEqual(req.AdmissionRequest, want) {
			t.Errorf("got %+v\nwant %+v", req.AdmissionRequest, want)
		}
	}
}

// typedReview is the request the API server's decoder (sigs.k8s.io/json:
// encoding/json with case-sensitive keys) reads into the Kubernetes types,
// nil when it refuses the document.
func typedReview(t *testing.T, data []byte) *admissionv1.AdmissionRequest {
	t.Helper()
	var review admissionv1.AdmissionReview
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &review); err != nil {
		return nil
	}
	return review.Request
}

func TestDecodeTakesTheLastOfARequestGivenTwice(t *testing.T) {
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"options":{},"object":{}},` +
		`"request":{"uid":"u","kind":{"kind":"Pod"},"resource":{"resource":"pods"},"operation":"CREATE"}}`
	req, err := Decode([]byte(review))
	if err != nil || req.UID != "u" || req.Options.Raw != nil || req.Object != nil || req.AdmissionRequest.Object.Raw != nil {
		t.Fatalf("got %+v, %v; want the last request, without the first's options and object", req, err)
	}
}

func TestDecodeMatchesKeysCaseSensitively(t *testing.T) {
	review := strings.Replace(podReview, `"namespace":"oil-dev"`, `"nameSpace":"oil-dev"`, 1)
	req, err := Decode([]byte(review))
	if err != nil || req.Namespace != "" {
		t.Fatalf("got namespace %q, %v; want none", req.Namespace, err)
	}
	if want := typedReview(t, []byte(review)); want == nil || want.Namespace != "" {
		t.Fatalf("the reference reads %+v", want)
	}
}

// FuzzDecodeReadsTheRequestAsEncodingJSON: whenever both accept a JSON
// review, Decode's typed request is the one the API server's decoder
// (encoding/json with case-sensitive keys) fills.
func FuzzDecodeReadsTheRequestAsEncodingJSON(f *testing.F) {
	addReviews(f)
	f.Add([]byte(fullReview))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(bytes.TrimSpace(data)) == 0 || bytes.TrimSpace(data)[0] != '{' {
			return // YAML goes through sigs.k8s.io/yaml first
		}
		req, err := Decode(data)
		want := typedReview(t, data)
		if err != nil || want == nil {
			return
		}
		if !reflect.DeepEqual(req.AdmissionRequest, want) {
			t.Fatalf("got %+v\nwant %+v", req.AdmissionRequest, want)
		}
	})
}

// addReviews seeds a fuzz target with the shared AdmissionReview fixtures
// and podReview.
func addReviews(f *testing.F) {
	seeds, err := fixtures.Reviews()
	if err != nil {
		f.Fatal(err)
	}
	for _, body := range seeds {
		f.Add(body)
	}
	f.Add([]byte(podReview))
}

func FuzzDecode(f *testing.F) {
	addReviews(f)
	f.Add([]byte("apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\nrequest: {uid: u}\n"))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"object":null}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrBadReview) {
				t.Fatalf("every refusal is a bad review: %v", err)
			}
			return
		}
		if req.UID == "" || req.Kind.Kind == "" {
			t.Fatalf("accepted an incomplete request: %+v", req.AdmissionRequest)
		}
	})
}
