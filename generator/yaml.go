package generator

import (
	"bytes"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Unstructured is an object as server-side apply wants it: only the fields
// tenantguard sets, without the empty status and creationTimestamp that Go
// structs carry.
func Unstructured(obj client.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// YAML renders objects as multi-document YAML for `kubectl apply -f -`.
func YAML(objects []client.Object) ([]byte, error) {
	var out bytes.Buffer
	for i, obj := range objects {
		u, err := Unstructured(obj)
		if err != nil {
			return nil, err
		}
		doc, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(doc)
	}
	return out.Bytes(), nil
}
