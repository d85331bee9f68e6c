package audit

import (
	"encoding/json"
	"maps"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Object is an existing object to audit.
type Object struct {
	GVK schema.GroupVersionKind
	// Namespace is "" for a cluster-scoped object.
	Namespace, Name string
	// Content is the object as stored, as decoded JSON (or YAML).
	Content map[string]any
}

// apiServerFields are the metadata fields the API server sets on a create:
// a create does not carry them, so neither does the audit's.
var apiServerFields = []string{"resourceVersion", "uid", "managedFields", "creationTimestamp", "generation", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// createBody is the object as a create would carry it: as stored, status
// included, without the metadata the API server sets, and in the object's
// namespace. o.Content is not changed.
func (o *Object) createBody() ([]byte, error) {
	body := maps.Clone(o.Content)
	metadata, _ := body["metadata"].(map[string]any)
	metadata = maps.Clone(metadata)
	if metadata == nil {
		metadata = map[string]any{}
	}
	for _, f := range apiServerFields {
		delete(metadata, f)
	}
	if o.Namespace != "" {
		metadata["namespace"] = o.Namespace
	}
	body["metadata"] = metadata
	if o.GVK.Group == "" && o.GVK.Kind == "Pod" {
		// The scheduler binds every scheduled pod by setting its
		// spec.nodeName (pods/binding), which the stored pod cannot tell
		// from one its creator set: node-placement judges nodeName when
		// the pod is created, and the audit leaves it to that.
		if spec, ok := body["spec"].(map[string]any); ok {
			spec = maps.Clone(spec)
			delete(spec, "nodeName")
			body["spec"] = spec
		}
	}
	return json.Marshal(body)
}

// labels are the object's labels.
func (o *Object) labels() map[string]any {
	metadata, _ := o.Content["metadata"].(map[string]any)
	labels, _ := metadata["labels"].(map[string]any)
	return labels
}

// deleting reports whether the object is being deleted.
func (o *Object) deleting() bool {
	metadata, _ := o.Content["metadata"].(map[string]any)
	return metadata["deletionTimestamp"] != nil
}

// finished reports whether the object is a Pod that has finished.
func (o *Object) finished() bool {
	if o.GVK.Group != "" || o.GVK.Kind != "Pod" {
		return false
	}
	status, _ := o.Content["status"].(map[string]any)
	phase, _ := status["phase"].(string)
	return phase == "Succeeded" || phase == "Failed"
}

// isNamespace reports whether the object is a Namespace.
func (o *Object) isNamespace() bool {
	return o.GVK.Group == "" && o.GVK.Kind == "Namespace"
}

// uid is the object's uid, "" when it has none.
func (o *Object) uid() string {
	metadata, _ := o.Content["metadata"].(map[string]any)
	uid, _ := metadata["uid"].(string)
	return uid
}
