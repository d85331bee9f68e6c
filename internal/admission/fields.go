package admission

import (
	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fields reads the typed fields of a decoded review as encoding/json fills
// admissionv1.AdmissionReview, but with case-sensitive keys, as the API
// server's own decoder (sigs.k8s.io/json) reads them: a missing key or a
// null leaves the zero value, a value of the wrong type is an error. It
// keeps the first error, naming the field.
type fields struct{ err error }

// request fills an AdmissionRequest but its objects and options.
func (f *fields) request(obj ast.Object) *admissionv1.AdmissionRequest {
	req := &admissionv1.AdmissionRequest{
		UID:                types.UID(f.str(obj, "request.", "uid")),
		Kind:               f.gvk(f.obj(obj, "request.", "kind"), "request.kind."),
		Resource:           f.gvr(f.obj(obj, "request.", "resource"), "request.resource."),
		SubResource:        f.str(obj, "request.", "subResource"),
		RequestSubResource: f.str(obj, "request.", "requestSubResource"),
		Name:               f.str(obj, "request.", "name"),
		Namespace:          f.str(obj, "request.", "namespace"),
		Operation:          admissionv1.Operation(f.str(obj, "request.", "operation")),
	}
	if kind := f.obj(obj, "request.", "requestKind"); kind != nil {
		gvk := f.gvk(kind, "request.requestKind.")
		req.RequestKind = &gvk
	}
	if resource := f.obj(obj, "request.", "requestResource"); resource != nil {
		gvr := f.gvr(resource, "request.requestResource.")
		req.RequestResource = &gvr
	}
	if user := f.obj(obj, "request.", "userInfo"); user != nil {
		req.UserInfo = authenticationv1.UserInfo{
			Username: f.str(user, "request.userInfo.", "username"),
			UID:      f.str(user, "request.userInfo.", "uid"),
			Groups:   f.strs(user.Get(ast.InternedTerm("groups")), "request.userInfo.groups"),
		}
		if extra := f.obj(user, "request.userInfo.", "extra"); extra != nil {
			req.UserInfo.Extra = make(map[string]authenticationv1.ExtraValue, extra.Len())
			extra.Foreach(func(k, v *ast.Term) {
				key := string(k.Value.(ast.String))
				req.UserInfo.Extra[key] = f.strs(v, "request.userInfo.extra."+key)
			})
		}
	}
	if t := obj.Get(ast.InternedTerm("dryRun")); t != nil && !isNull(t) {
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
	return metav1.GroupVersionKind{Group: f.str(obj, prefix, "group"), Version: f.str(obj, prefix, "version"), Kind: f.str(obj, prefix, "kind")}
}

func (f *fields) gvr(obj ast.Object, prefix string) metav1.GroupVersionResource {
	return metav1.GroupVersionResource{Group: f.str(obj, prefix, "group"), Version: f.str(obj, prefix, "version"), Resource: f.str(obj, prefix, "resource")}
}

// str is obj[key] as a string; "" when obj is nil or has no such key.
func (f *fields) str(obj ast.Object, prefix, key string) string {
	if obj == nil {
		return ""
	}
	t := obj.Get(ast.InternedTerm(key))
	if t == nil || isNull(t) {
		return ""
	}
	s, ok := t.Value.(ast.String)
	if !ok {
		f.typeError(prefix+key, t, "a string")
	}
	return string(s)
}

// obj is obj[key] as an object; nil when absent or null.
func (f *fields) obj(obj ast.Object, prefix, key string) ast.Object {
	if obj == nil {
		return nil
	}
	t := obj.Get(ast.InternedTerm(key))
	if t == nil || isNull(t) {
		return nil
	}
	o, ok := t.Value.(ast.Object)
	if !ok {
		f.typeError(prefix+key, t, "an object")
	}
	return o
}

// strs is a list of strings; nil when t is nil or null.
func (f *fields) strs(t *ast.Term, field string) []string {
	if t == nil || isNull(t) {
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
		} else if !isNull(elem) {
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

// isNull reports whether t is JSON's null; nil (absent) is not.
func isNull(t *ast.Term) bool {
	if t == nil {
		return false
	}
	_, null := t.Value.(ast.Null)
	return null
}
