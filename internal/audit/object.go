package audit

import (
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/jsonast"
)

// Object is an existing object to audit.
type Object struct {
	GVK schema.GroupVersionKind
	// Resource is the resource the object was listed from, "" when
	// unknown (an object of a file): its kind's name then gives it
	// (clusterview.Resource), which a CRD's irregular plural (Cactus,
	// cacti) does not follow.
	Resource string
	// Namespace is "" for a cluster-scoped object.
	Namespace, Name string
	// Value is the object as stored, decoded into OPA's values (jsonast),
	// its metadata.managedFields, read by no rule, left out or not. It is
	// only read: values a parse shares between objects may be in it.
	Value ast.Object
}

// ObjectOf is the Object of value, an object of kind gvk as stored: its
// namespace and name are those of its metadata.
func ObjectOf(gvk schema.GroupVersionKind, value ast.Object) Object {
	metadata := jsonast.ObjectAt(value, keyMetadata)
	return Object{GVK: gvk, Namespace: jsonast.StringAt(metadata, keyNamespace), Name: jsonast.StringAt(metadata, keyName), Value: value}
}

// resource is the object's resource: the one it was listed from, else the
// one its kind's name gives.
func (o *Object) resource() string {
	if o.Resource != "" {
		return o.Resource
	}
	return clusterview.Resource(o.GVK)
}

// FromMap is the Object of content, an object of kind gvk as decoded JSON
// (or YAML).
func FromMap(gvk schema.GroupVersionKind, content map[string]any) (Object, error) {
	data, err := json.Marshal(content)
	if err != nil {
		return Object{}, fmt.Errorf("a %s: %w", gvk.Kind, err)
	}
	v, err := jsonast.Parse(data, "metadata", "managedFields")
	if err != nil {
		return Object{}, fmt.Errorf("a %s: %w", gvk.Kind, err)
	}
	obj, ok := v.(ast.Object)
	if !ok {
		return Object{}, fmt.Errorf("a %s is %s, not an object", gvk.Kind, ast.ValueName(v))
	}
	return ObjectOf(gvk, obj), nil
}

// Keys of the stored object the audit reads or rewrites, made once.
var (
	keyAPIVersion = ast.InternedTerm("apiVersion")
	keyKind       = ast.InternedTerm("kind")
	keyMetadata   = ast.InternedTerm("metadata")
	keyNamespace  = ast.InternedTerm("namespace")
	keyName       = ast.InternedTerm("name")
	keyLabels     = ast.InternedTerm("labels")
	keyUID        = ast.InternedTerm("uid")
	keyDeletion   = ast.InternedTerm("deletionTimestamp")
	keyStatus     = ast.InternedTerm("status")
	keyPhase      = ast.InternedTerm("phase")
	keySpec       = ast.InternedTerm("spec")
	keyNodeName   = ast.InternedTerm("nodeName")
	keyReplicas   = ast.InternedTerm("replicas")
	keyConditions = ast.InternedTerm("conditions")
	keyType       = ast.InternedTerm("type")
	keyOwners     = ast.InternedTerm("ownerReferences")
	keyController = ast.InternedTerm("controller")
)

// apiServerFields are the metadata fields the API server sets on a create:
// a create does not carry them, so neither does the audit's.
var apiServerFields = func() map[string]bool {
	fields := map[string]bool{}
	for _, f := range []string{"resourceVersion", "uid", "managedFields", "creationTimestamp", "generation", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		fields[f] = true
	}
	return fields
}()

// createObject is the object as a create would carry it: as stored, status
// included, without the metadata the API server sets, in the object's
// namespace, with its apiVersion and kind (which the items of a list may
// leave out). o.Value is not changed: the objects that change are new ones
// sharing the values that do not.
func (o *Object) createObject() ast.Object {
	metadata := without(jsonast.ObjectAt(o.Value, keyMetadata), func(k ast.String) bool { return apiServerFields[string(k)] })
	if o.Namespace != "" {
		metadata.Insert(keyNamespace, ast.StringTerm(o.Namespace))
	}
	var spec ast.Object
	if s := jsonast.ObjectAt(o.Value, keySpec); o.GVK.Group == "" && o.GVK.Kind == "Pod" && s != nil && s.Get(keyNodeName) != nil {
		// The scheduler binds every scheduled pod by setting its
		// spec.nodeName (pods/binding), which the stored pod cannot tell
		// from one its creator set: node-placement judges nodeName when
		// the pod is created, and the audit leaves it to that.
		spec = without(s, func(k ast.String) bool { return k == "nodeName" })
	}
	body := without(o.Value, func(k ast.String) bool { return k == "metadata" || spec != nil && k == "spec" })
	body.Insert(keyMetadata, ast.NewTerm(metadata))
	if spec != nil {
		body.Insert(keySpec, ast.NewTerm(spec))
	}
	if body.Get(keyAPIVersion) == nil {
		body.Insert(keyAPIVersion, ast.StringTerm(o.GVK.GroupVersion().String()))
	}
	if body.Get(keyKind) == nil {
		body.Insert(keyKind, ast.StringTerm(o.GVK.Kind))
	}
	return body
}

// without is a new object of obj's members but those whose key leave says
// to leave out (an empty one for a nil obj).
func without(obj ast.Object, leave func(ast.String) bool) ast.Object {
	if obj == nil {
		return ast.NewObject()
	}
	out := ast.NewObjectWithCapacity(obj.Len())
	obj.Foreach(func(k, v *ast.Term) {
		if s, ok := k.Value.(ast.String); !ok || !leave(s) {
			out.Insert(k, v)
		}
	})
	return out
}

// label is the value of one of the object's labels, "" when it has none.
func (o *Object) label(name string) string {
	return jsonast.StringAt(jsonast.ObjectAt(jsonast.ObjectAt(o.Value, keyMetadata), keyLabels), ast.InternedTerm(name))
}

// deleting reports whether the object is being deleted.
func (o *Object) deleting() bool {
	switch jsonast.ValueAt(jsonast.ObjectAt(o.Value, keyMetadata), keyDeletion).(type) {
	case nil, ast.Null:
		return false
	}
	return true
}

// finished reports whether the object is a Pod that has finished.
func (o *Object) finished() bool {
	if o.GVK.Group != "" || o.GVK.Kind != "Pod" {
		return false
	}
	phase := jsonast.StringAt(jsonast.ObjectAt(o.Value, keyStatus), keyPhase)
	return phase == "Succeeded" || phase == "Failed"
}

// history reports whether the object is a workload's history, which runs
// nothing and will not run again: a Deployment's old ReplicaSet (scaled to
// zero, kept for rollbacks), or a Job that has completed or failed.
func (o *Object) history() bool {
	switch o.GVK.GroupKind() {
	case schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}:
		replicas, ok := jsonast.ValueAt(jsonast.ObjectAt(o.Value, keySpec), keyReplicas).(ast.Number)
		n, whole := replicas.Int()
		return ok && whole && n == 0 && o.controlledBy("Deployment")
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		conditions, ok := jsonast.ValueAt(jsonast.ObjectAt(o.Value, keyStatus), keyConditions).(*ast.Array)
		for i := 0; ok && i < conditions.Len(); i++ {
			c, _ := conditions.Elem(i).Value.(ast.Object)
			if t := jsonast.StringAt(c, keyType); (t == "Complete" || t == "Failed") && jsonast.StringAt(c, keyStatus) == "True" {
				return true
			}
		}
	}
	return false
}

// controlledBy reports whether the object's controller is of kind.
func (o *Object) controlledBy(kind string) bool {
	owners, ok := jsonast.ValueAt(jsonast.ObjectAt(o.Value, keyMetadata), keyOwners).(*ast.Array)
	for i := 0; ok && i < owners.Len(); i++ {
		owner, _ := owners.Elem(i).Value.(ast.Object)
		if controller, _ := jsonast.ValueAt(owner, keyController).(ast.Boolean); controller && jsonast.StringAt(owner, keyKind) == kind {
			return true
		}
	}
	return false
}

// isNamespace reports whether the object is a Namespace.
func (o *Object) isNamespace() bool {
	return o.GVK.Group == "" && o.GVK.Kind == "Namespace"
}

// uid is the object's uid, "" when it has none.
func (o *Object) uid() string {
	return jsonast.StringAt(jsonast.ObjectAt(o.Value, keyMetadata), keyUID)
}
