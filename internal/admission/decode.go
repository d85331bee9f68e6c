package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/yaml"
)

// Version and Kind of the only AdmissionReview tenantguard speaks.
const (
	Version = "admission.k8s.io/v1"
	Kind    = "AdmissionReview"
)

// ErrBadReview marks input that is not a usable AdmissionReview; the webhook
// answers it with HTTP 400, the review command with exit code 2.
var ErrBadReview = errors.New("bad AdmissionReview")

// Request is a decoded admission request: the typed AdmissionRequest and its
// objects decoded once into the generic form the policy engine reads.
type Request struct {
	*admissionv1.AdmissionRequest
	// Object and OldObject are the decoded objects, or nil when absent.
	Object    map[string]any
	OldObject map[string]any
}

// Decode parses an AdmissionReview v1 in JSON or YAML and checks that it
// carries a request tenantguard can decide.
func Decode(data []byte) (*Request, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, badf("the body is empty")
	}
	if data[0] != '{' {
		converted, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, badf("not JSON or YAML: %v", err)
		}
		data = converted
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &review); err != nil {
		return nil, badf("not an AdmissionReview: %v", err)
	}
	if review.APIVersion != Version || review.Kind != Kind {
		return nil, badf("expected apiVersion %s and kind %s, got %q and %q", Version, Kind, review.APIVersion, review.Kind)
	}
	req := review.Request
	if req == nil {
		return nil, badf("the AdmissionReview has no request")
	}
	if req.UID == "" {
		return nil, badf("request.uid is empty")
	}
	if req.Kind.Kind == "" || req.Resource.Resource == "" {
		return nil, badf("request.kind.kind and request.resource.resource are required")
	}
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
	default:
		return nil, badf("request.operation %q is not CREATE, UPDATE, DELETE or CONNECT", req.Operation)
	}
	out := &Request{AdmissionRequest: req}
	var err error
	if out.Object, err = decodeObject("request.object", req.Object.Raw); err != nil {
		return nil, err
	}
	if out.OldObject, err = decodeObject("request.oldObject", req.OldObject.Raw); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeObject decodes an embedded object, keeping numbers exact.
func decodeObject(field string, raw []byte) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, badf("%s is not a JSON object: %v", field, err)
	}
	return obj, nil
}

func badf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadReview, fmt.Sprintf(format, args...))
}
