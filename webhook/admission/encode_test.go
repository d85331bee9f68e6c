package admission

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// marshalled is the answer as encoding/json writes it: what Encode must
// write byte for byte.
func marshalled(t *testing.T, r *Response) string {
	t.Helper()
	out, err := json.Marshal(r.Review())
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func encoded(t *testing.T, r *Response) string {
	t.Helper()
	out, err := r.Encode([]byte("kept:"))
	if err != nil {
		t.Fatal(err)
	}
	if string(out[:5]) != "kept:" {
		t.Fatalf("Encode did not append: %q", out)
	}
	return string(out[5:])
}

func TestEncodeWritesWhatEncodingJSONWrites(t *testing.T) {
	for _, c := range []struct {
		name string
		resp *Response
	}{
		{"an allowed request", Allowed("req-1")},
		{"an empty uid", Allowed("")},
		{"a denial with two reasons", Denied("u", []string{`[a] "one" <b>&`, "[b] two\ttabs\x01\u2028\u2029 é \xff"})},
		{"a patch, warnings and audit annotations", Allowed("u").
			WithPatch([]byte(`[{"op":"add","path":"/x","value":1}]`)).
			WithWarnings([]string{"[c] three", ""}).
			WithAuditAnnotations(map[string]string{"z": "last", "a<": "first", "m": ""})},
		{"an empty patch and no warnings", Allowed("u").WithPatch([]byte("[]")).WithWarnings([]string{})},
		{"a status with details, which encoding/json writes", &Response{admissionv1.AdmissionResponse{
			UID: "u", Result: &metav1.Status{Message: "m", Details: &metav1.StatusDetails{Name: "n"}},
		}}},
		{"a status with a kind, which encoding/json writes", &Response{admissionv1.AdmissionResponse{
			UID: "u", Result: &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status"}, Code: 500},
		}}},
		{"an empty status", &Response{admissionv1.AdmissionResponse{UID: "u", Result: &metav1.Status{}}}},
		{"the internal denial", internalLike()},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, want := encoded(t, c.resp), marshalled(t, c.resp); got != want {
				t.Errorf("Encode wrote\n%s\nencoding/json writes\n%s", got, want)
			}
		})
	}
}

func internalLike() *Response {
	return Denied("u", []string{"[internal] tenantguard could not decide this request: namespace \"x\" is not in the view"})
}

func FuzzEncodeWritesWhatEncodingJSONWrites(f *testing.F) {
	f.Add("req-1", true, "", "", []byte(nil), "", "")
	f.Add("u", false, "[a] one <b>", "[b] \u2028\xff\x1f", []byte(`[{"op":"add"}]`), "[w] warn", "k")
	f.Fuzz(func(t *testing.T, uid string, allowed bool, reason1, reason2 string, patch []byte, warning, annotation string) {
		resp := Allowed("")
		if !allowed {
			resp = Denied("", []string{reason1, reason2})
		}
		resp.UID = types.UID(uid)
		resp = resp.WithPatch(patch).WithWarnings([]string{warning}).WithAuditAnnotations(map[string]string{annotation: reason1, "b": warning})
		if got, want := encoded(t, resp), marshalled(t, resp); got != want {
			t.Errorf("Encode wrote\n%s\nencoding/json writes\n%s", got, want)
		}
	})
}

// TestEncodeKnowsEveryFieldOfTheAnswer fails when a Kubernetes update adds a
// field to the answer's types, which Encode would leave out.
func TestEncodeKnowsEveryFieldOfTheAnswer(t *testing.T) {
	for _, c := range []struct {
		typ    reflect.Type
		fields []string
	}{
		{reflect.TypeFor[admissionv1.AdmissionResponse](), []string{"UID", "Allowed", "Result", "Patch", "PatchType", "AuditAnnotations", "Warnings"}},
		{reflect.TypeFor[metav1.Status](), []string{"TypeMeta", "ListMeta", "Status", "Message", "Reason", "Details", "Code"}},
	} {
		var got []string
		for f := range c.typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, c.fields) {
			t.Errorf("%s has the fields %v; Encode writes %v: teach it the new ones", c.typ, got, c.fields)
		}
	}
}
