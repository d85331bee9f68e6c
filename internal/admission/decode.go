package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/internal/jsonast"
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
// objects decoded once, straight into the OPA values the policy reads.
type Request struct {
	*admissionv1.AdmissionRequest
	// Object and OldObject are the decoded objects, or nil when absent.
	// Their metadata.managedFields, often the largest part of an object and
	// read by no rule, is left out.
	Object    ast.Object
	OldObject ast.Object
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

// decodeObject decodes an embedded object, keeping numbers exact and
// leaving out its managed fields.
func decodeObject(field string, raw []byte) (ast.Object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	v, err := ParseObject(raw)
	if err != nil {
		return nil, badf("%s %v", field, err)
	}
	return v, nil
}

// ParseObject decodes a Kubernetes object's JSON, keeping numbers exact and
// leaving out metadata.managedFields.
func ParseObject(raw []byte) (ast.Object, error) {
	v, err := jsonast.Parse(raw, "metadata", "managedFields")
	if err != nil {
		return nil, fmt.Errorf("is not a JSON object: %w", err)
	}
	obj, ok := v.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("is not a JSON object but %s", ast.ValueName(v))
	}
	return obj, nil
}

func badf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadReview, fmt.Sprintf(format, args...))
}
