package request

import (
	"fmt"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/tenantguard/tenantguard/webhook/admission"
)

// Creates makes the CREATE requests of objects already decoded: the audit's,
// from a list. The request Creates.Decode makes of an object is the one the
// package's Decode builds from the object's text, the object used as it is,
// not encoded and parsed again.
// The requests of one kind differ only in their uid, name, namespace,
// requester and object: Creates decodes a review once for each kind and
// makes every request from it, where decoding one per object would be a
// third of what an audit allocates. Safe for concurrent use; the zero value
// is ready.
type Creates struct {
	mu sync.Mutex
	// kinds are the decoded requests of each kind, of no name, namespace
	// or requester.
	kinds map[createKind]*admission.Request
}

// createKind is what a decoded request of Creates stands for.
type createKind struct {
	gvk      schema.GroupVersionKind
	resource string
}

// Decode is the CREATE of obj that s describes (s.Object is not read). The
// request's Raw text of the object is left empty: the engine encodes obj
// when a patch must apply to it. The request shares the values of its kind
// with the others made by c: they must only be read.
func (c *Creates) Decode(s Spec, obj ast.Object) (*admission.Request, error) {
	if s.Operation != Create {
		return nil, fmt.Errorf("operation %q is not CREATE", s.Operation)
	}
	kind, err := c.kind(s)
	if err != nil {
		return nil, err
	}
	uid := uuid.NewUUID()
	namespace := s.requestNamespace()
	r := *kind.AdmissionRequest
	r.UID, r.Name, r.Namespace = uid, s.Name, namespace
	r.UserInfo = authenticationv1.UserInfo{Username: s.User, Groups: s.Groups}
	// A new Value: the kind's, with the object's own keys.
	value := ast.NewObjectWithCapacity(kind.Value.Len() + 2)
	kind.Value.Foreach(func(k, v *ast.Term) {
		switch {
		case k.Equal(keyUID):
			v = ast.StringTerm(string(uid))
		case k.Equal(keyUserInfo):
			v = userInfo(s.User, s.Groups)
		case k.Equal(keyObject):
			v = ast.NewTerm(obj)
		}
		value.Insert(k, v)
	})
	// Absent when empty, as the API server leaves them out.
	if s.Name != "" {
		value.Insert(keyName, ast.StringTerm(s.Name))
	}
	if namespace != "" {
		value.Insert(keyNamespace, ast.StringTerm(namespace))
	}
	return &admission.Request{AdmissionRequest: &r, Object: obj, Value: value}, nil
}

// kind is the decoded request of s's kind, decoded on its first use.
func (c *Creates) kind(s Spec) (*admission.Request, error) {
	key := createKind{gvk: s.GVK, resource: s.Resource}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.kinds[key]; ok {
		return r, nil
	}
	r, err := Decode(Spec{GVK: s.GVK, Resource: s.Resource, Operation: Create, Object: []byte("{}")})
	if err != nil {
		return nil, err
	}
	r.AdmissionRequest.Object.Raw = nil // left empty: see Decode
	if c.kinds == nil {
		c.kinds = map[createKind]*admission.Request{}
	}
	c.kinds[key] = r
	return r, nil
}

// userInfo is input.request.userInfo as the API server's JSON gives it: its
// username and groups, each left out when empty.
func userInfo(user string, groups []string) *ast.Term {
	info := make([][2]*ast.Term, 0, 2)
	if user != "" {
		info = append(info, ast.Item(keyUsername, ast.StringTerm(user)))
	}
	if len(groups) > 0 {
		terms := make([]*ast.Term, len(groups))
		for i, g := range groups {
			terms[i] = ast.StringTerm(g)
		}
		info = append(info, ast.Item(keyGroups, ast.ArrayTerm(terms...)))
	}
	return ast.ObjectTerm(info...)
}

// The keys of input.request that Creates sets for each object.
var (
	keyObject    = ast.InternedTerm("object")
	keyUID       = ast.InternedTerm("uid")
	keyName      = ast.InternedTerm("name")
	keyNamespace = ast.InternedTerm("namespace")
	keyUserInfo  = ast.InternedTerm("userInfo")
	keyUsername  = ast.InternedTerm("username")
	keyGroups    = ast.InternedTerm("groups")
)
