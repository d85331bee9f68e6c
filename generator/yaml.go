package generator

import (
	"bytes"
	"encoding/json"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// YAML renders objects as multi-document YAML for `kubectl apply -f -`,
// without the empty status and creationTimestamp fields Go structs carry.
func YAML(objects []client.Object) ([]byte, error) {
	var out bytes.Buffer
	for i, obj := range objects {
		raw, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		delete(m, "status")
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "creationTimestamp")
		}
		doc, err := yaml.Marshal(m)
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
