package admission

import (
	"bytes"
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
	// Value is the whole request as decoded, Object and OldObject
	// included: the request the policy reads as input.request. Keys the
	// API server leaves out (name, namespace, subResource when empty)
	// are absent, as in the review's JSON.
	Value ast.Object
}

// Decode parses an AdmissionReview v1 in JSON or YAML and checks that it
// carries a request tenantguard can decide. The review is read in one pass,
// straight into OPA values (jsonast), and the typed request is filled from
// them as encoding/json would fill it, except that keys are matched
// case-sensitively, as the API server's own decoder matches them, and of a
// key given twice the last value is taken whole (encoding/json would merge
// two objects); request.response is not read. The objects' Raw text shares
// data, which must not be modified afterwards, and so do the request's
// strings: clone one that outlives the request. Its small objects and
// arrays may be shared with other requests' (repeated): they are only ever
// read.
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
	var spans [len(reviewPaths)]jsonast.Span
	v, err := repeated.ParsePaths(data, reviewPaths[:], spans[:])
	if err != nil {
		return nil, badf("not an AdmissionReview: %v", err)
	}
	review, ok := v.(ast.Object)
	if !ok {
		return nil, badf("not an AdmissionReview: the document is %s, not an object", ast.ValueName(v))
	}
	var f fields
	apiVersion, kind := f.str(review, "", keyAPIVersion), f.str(review, "", keyKind)
	request := f.obj(review, "", keyRequest)
	if f.err != nil {
		return nil, f.err
	}
	if apiVersion != Version || kind != Kind {
		return nil, badf("expected apiVersion %s and kind %s, got %q and %q", Version, Kind, apiVersion, kind)
	}
	if request == nil {
		return nil, badf("the AdmissionReview has no request")
	}
	req := f.request(request)
	if f.err != nil {
		return nil, f.err
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
	out := &Request{AdmissionRequest: req, Value: request}
	if out.Object, req.Object.Raw, err = f.embedded(keyObject, request, data, spans[spanObject]); err != nil {
		return nil, err
	}
	if out.OldObject, req.OldObject.Raw, err = f.embedded(keyOldObject, request, data, spans[spanOldObject]); err != nil {
		return nil, err
	}
	// The span is that of the last request.options in the text, which is
	// the request's own only when the last request has options.
	if t := request.Get(keyOptions.term); t != nil && !f.null(t) {
		req.Options.Raw = data[spans[spanOptions].Start:spans[spanOptions].End]
	}
	if f.nulls {
		out.Value = absent(request)
	}
	return out, nil
}

// repeated shares, between the reviews Decode reads, the values of the
// small objects and arrays they repeat: the kind and resource of every
// request for a kind, and the parts of objects many requests carry alike,
// such as a label set or a container's ports and resources (jsonast.Cache).
// 2,048 values at most, each of at most 512 bytes of text and 32 terms: a
// few MB for the values reviews repeat, about 24 MB at worst for crafted ones.
var repeated = jsonast.NewCache(2048)

// reviewPaths are what Decode does below the review's root: the objects'
// managed fields are left out; the objects' and options' text is kept, as
// runtime.RawExtension keeps it (JSON patches apply to it).
var reviewPaths = [...]jsonast.Path{
	{Keys: []string{"request", "object", "metadata", "managedFields"}, Drop: true},
	{Keys: []string{"request", "oldObject", "metadata", "managedFields"}, Drop: true},
	spanObject:    {Keys: []string{"request", "object"}},
	spanOldObject: {Keys: []string{"request", "oldObject"}},
	spanOptions:   {Keys: []string{"request", "options"}},
}

// Indices of the spans of reviewPaths.
const (
	spanObject = iota + 2
	spanOldObject
	spanOptions
)

// embedded is one of the request's objects, decoded already, and its text;
// nil for an object absent or null.
func (f *fields) embedded(k key, request ast.Object, data []byte, span jsonast.Span) (ast.Object, []byte, error) {
	t := request.Get(k.term)
	if t == nil || f.null(t) {
		return nil, nil, nil
	}
	obj, ok := t.Value.(ast.Object)
	if !ok {
		return nil, nil, badf("request.%s is not a JSON object but %s", k.name, ast.ValueName(t.Value))
	}
	return obj, data[span.Start:span.End], nil
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
