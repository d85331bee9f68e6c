package admission

import (
	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tenantguard/tenantguard/internal/jsonast"
)

// key is a key of the review: its name, for messages, and its term, made
// once, the one the decoder puts in the review (jsonast.Intern), so that a
// lookup finds it without comparing strings.
type key struct {
	name string
	term *ast.Term
}

func newKey(name string) key {
	jsonast.Intern(name)
	return key{name: name, term: ast.InternedTerm(name)}
}

// The keys Decode reads.
var (
	keyAPIVersion         = newKey("apiVersion")
	keyRequest            = newKey("request")
	keyUID                = newKey("uid")
	keyKind               = newKey("kind")
	keyResource           = newKey("resource")
	keyGroup              = newKey("group")
	keyVersion            = newKey("version")
	keySubResource        = newKey("subResource")
	keyRequestSubResource = newKey("requestSubResource")
	keyName               = newKey("name")
	keyNamespace          = newKey("namespace")
	keyOperation          = newKey("operation")
	keyRequestKind        = newKey("requestKind")
	keyRequestResource    = newKey("requestResource")
	keyUserInfo           = newKey("userInfo")
	keyUsername           = newKey("username")
	keyGroups             = newKey("groups")
	keyExtra              = newKey("extra")
	keyDryRun             = newKey("dryRun")
	keyObject             = newKey("object")
	keyOldObject          = newKey("oldObject")
	keyOptions            = newKey("options")
)

// fields reads the typed fields of a decoded review as encoding/json fills
// admissionv1.AdmissionReview, but with case-sensitive keys, as the API
// server's own decoder (sigs.k8s.io/json) reads them: a missing key or a
// null leaves the zero value, a value of the wrong type is an error. It
// keeps the first error, naming the field, and notes whether it read a
// null (see absent).
type fields struct {
	err   error
	nulls bool
}

// null reports whether t is JSON's null, and notes it.
func (f *fields) null(t *ast.Term) bool {
	if isNull(t) {
		f.nulls = true
		return true
	}
	return false
}

// request fills an AdmissionRequest but its objects and options.
func (f *fields) request(obj ast.Object) *admissionv1.AdmissionRequest {
	req := &admissionv1.AdmissionRequest{
		UID:                types.UID(f.str(obj, "request.", keyUID)),
		Kind:               f.gvk(f.obj(obj, "request.", keyKind), "request.kind."),
		Resource:           f.gvr(f.obj(obj, "request.", keyResource), "request.resource."),
		SubResource:        f.str(obj, "request.", keySubResource),
		RequestSubResource: f.str(obj, "request.", keyRequestSubResource),
		Name:               f.str(obj, "request.", keyName),
		Namespace:          f.str(obj, "request.", keyNamespace),
		Operation:          admissionv1.Operation(f.str(obj, "request.", keyOperation)),
	}
	if kind := f.obj(obj, "request.", keyRequestKind); kind != nil {
		gvk := f.gvk(kind, "request.requestKind.")
		req.RequestKind = &gvk
	}
	if resource := f.obj(obj, "request.", keyRequestResource); resource != nil {
		gvr := f.gvr(resource, "request.requestResource.")
		req.RequestResource = &gvr
	}
	if user := f.obj(obj, "request.", keyUserInfo); user != nil {
		req.UserInfo = authenticationv1.UserInfo{
			Username: f.str(user, "request.userInfo.", keyUsername),
			UID:      f.str(user, "request.userInfo.", keyUID),
			Groups:   f.strs(user.Get(keyGroups.term), "request.userInfo.groups"),
		}
		if extra := f.obj(user, "request.userInfo.", keyExtra); extra != nil {
			req.UserInfo.Extra = make(map[string]authenticationv1.ExtraValue, extra.Len())
			extra.Foreach(func(k, v *ast.Term) {
				key := string(k.Value.(ast.String))
				req.UserInfo.Extra[key] = f.strs(v, "request.userInfo.extra."+key)
			})
		}
	}
	if t := obj.Get(keyDryRun.term); t != nil && !f.null(t) {
		b, ok := t.Value.(ast.Boolean)
		if !ok {
			f.typeError("request.dryRun", t, "a boolean")
		}
		dry := bool(b)
		req.DryRun = &dry
	}
	return req
}

func (f *fields) gvk(obj ast.Object, prefix string) metav1.GroupVersionKind {
	return metav1.GroupVersionKind{Group: f.str(obj, prefix, keyGroup), Version: f.str(obj, prefix, keyVersion), Kind: f.str(obj, prefix, keyKind)}
}

func (f *fields) gvr(obj ast.Object, prefix string) metav1.GroupVersionResource {
	return metav1.GroupVersionResource{Group: f.str(obj, prefix, keyGroup), Version: f.str(obj, prefix, keyVersion), Resource: f.str(obj, prefix, keyResource)}
}

// str is obj[k] as a string; "" when obj is nil or has no such key.
func (f *fields) str(obj ast.Object, prefix string, k key) string {
	if obj == nil {
		return ""
	}
	t := obj.Get(k.term)
	if t == nil || f.null(t) {
		return ""
	}
	s, ok := t.Value.(ast.String)
	if !ok {
		f.typeError(prefix+k.name, t, "a string")
	}
	return string(s)
}

// obj is obj[k] as an object; nil when absent or null.
func (f *fields) obj(obj ast.Object, prefix string, k key) ast.Object {
	if obj == nil {
		return nil
	}
	t := obj.Get(k.term)
	if t == nil || f.null(t) {
		return nil
	}
	o, ok := t.Value.(ast.Object)
	if !ok {
		f.typeError(prefix+k.name, t, "an object")
	}
	return o
}

// strs is a list of strings; nil when t is nil or null.
func (f *fields) strs(t *ast.Term, field string) []string {
	if t == nil || f.null(t) {
		return nil
	}
	arr, ok := t.Value.(*ast.Array)
	if !ok {
		f.typeError(field, t, "a list of strings")
		return nil
	}
	out := make([]string, arr.Len())
	for i := range out {
		elem := arr.Elem(i)
		if s, ok := elem.Value.(ast.String); ok {
			out[i] = string(s)
		} else if !f.null(elem) {
			f.typeError(field, elem, "a list of strings")
		}
	}
	return out
}

func (f *fields) typeError(field string, t *ast.Term, want string) {
	if f.err == nil {
		f.err = badf("not an AdmissionReview: %s is %s, not %s", field, ast.ValueName(t.Value), want)
	}
}

// absent is the request with its nulls read as the typed request reads
// them, so that the policy sees what Go decides with: a null value is left
// out, as if its key were absent (the zero value), and a null in a list of
// strings is "". The objects and options are kept whole, but a null one is
// left out too. Decode calls it only for a request with a null in a field
// it reads (the API server sends none), so it need not be quick.
func absent(obj ast.Object) ast.Object {
	out := ast.NewObjectWithCapacity(obj.Len())
	obj.Foreach(func(k, v *ast.Term) {
		switch {
		case isNull(v):
			return
		case k.Equal(keyObject.term) || k.Equal(keyOldObject.term) || k.Equal(keyOptions.term):
		default:
			v = absentValue(v)
		}
		out.Insert(k, v)
	})
	return out
}

func absentValue(t *ast.Term) *ast.Term {
	switch v := t.Value.(type) {
	case ast.Object:
		return ast.NewTerm(absent(v))
	case *ast.Array:
		elems := make([]*ast.Term, v.Len())
		for i := range elems {
			if elems[i] = v.Elem(i); isNull(elems[i]) {
				elems[i] = ast.InternedEmptyString
			}
		}
		return ast.ArrayTerm(elems...)
	}
	return t
}

// isNull reports whether t is JSON's null; nil (absent) is not.
func isNull(t *ast.Term) bool {
	if t == nil {
		return false
	}
	_, null := t.Value.(ast.Null)
	return null
}
