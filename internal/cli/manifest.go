package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/yamlerr"
)

// manifestObject is one object of a manifest, with where it was found.
type manifestObject struct {
	// at is "FILE:LINE", the line where the object starts.
	at  string
	gvk schema.GroupVersionKind
	// namespace and name are the object's metadata.namespace and
	// metadata.name ("" when absent; a name is "" only with a
	// metadata.generateName, whose object stored objects never are:
	// clusterview.FromManifest refuses it).
	namespace, name string
	object          map[string]any
}

// describe is the object as people name it: Pod "web", or Job "migrate-*"
// for one named by the API server from its generateName.
func (o *manifestObject) describe() string {
	if o.name == "" {
		metadata, _ := o.object["metadata"].(map[string]any)
		prefix, _ := metadata["generateName"].(string)
		return fmt.Sprintf("%s %q", o.gvk.Kind, prefix+"*")
	}
	return fmt.Sprintf("%s %q", o.gvk.Kind, o.name)
}

// readManifest reads the objects of a manifest: multi-document YAML or JSON,
// Lists (kind: List, or any kind ending in List with items, as kubectl get
// -o yaml prints) and JSON arrays. file names the manifest in errors
// ("-" is <stdin>), each with the line of the object or syntax error.
func readManifest(file string, data []byte) ([]manifestObject, error) {
	if file == "-" {
		file = "<stdin>"
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []manifestObject
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			if syntax, ok := yamlerr.Syntax(err, data); ok && syntax.Line > 0 {
				return nil, fmt.Errorf("%s:%d: not YAML: %s", file, syntax.Line, syntax.Message)
			}
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(doc.Content) == 0 {
			continue // an empty document
		}
		objects, err := manifestObjects(file, doc.Content[0])
		if err != nil {
			return nil, err
		}
		out = append(out, objects...)
	}
}

// manifestObjects reads one node: an object, a List of them, or an array.
func manifestObjects(file string, node *yaml.Node) ([]manifestObject, error) {
	at := fmt.Sprintf("%s:%d", file, node.Line)
	switch node.Kind {
	case yaml.SequenceNode:
		var out []manifestObject
		for _, item := range node.Content {
			objects, err := manifestObjects(file, item)
			if err != nil {
				return nil, err
			}
			out = append(out, objects...)
		}
		return out, nil
	case yaml.MappingNode:
	case yaml.ScalarNode:
		if node.Tag == "!!null" {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: expected a Kubernetes object, got %q", at, node.Value)
	default:
		return nil, fmt.Errorf("%s: expected a Kubernetes object", at)
	}
	var obj map[string]any
	if err := node.Decode(&obj); err != nil {
		return nil, fmt.Errorf("%s: expected a Kubernetes object: %w", at, err)
	}
	kind, _ := obj["kind"].(string)
	if items, ok := obj["items"]; ok && strings.HasSuffix(kind, "List") {
		if _, ok := items.([]any); !ok && items != nil {
			return nil, fmt.Errorf("%s: %s.items: expected a list", at, kind)
		}
		for i := 0; i+1 < len(node.Content); i += 2 {
			if node.Content[i].Value == "items" {
				return manifestObjects(file, node.Content[i+1])
			}
		}
	}
	apiVersion, _ := obj["apiVersion"].(string)
	metadata, _ := obj["metadata"].(map[string]any)
	name, _ := metadata["name"].(string)
	generateName, _ := metadata["generateName"].(string)
	namespace, _ := metadata["namespace"].(string)
	if apiVersion == "" || kind == "" || name == "" && generateName == "" {
		return nil, fmt.Errorf("%s: an object needs apiVersion, kind and metadata.name (or generateName)", at)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("%s: apiVersion: %w", at, err)
	}
	// The object travels as JSON: a value JSON cannot carry (a mapping
	// with keys that are not strings) is refused here, at its object.
	if _, err := json.Marshal(obj); err != nil {
		return nil, fmt.Errorf("%s: %s is not JSON: %w", at, kind, err)
	}
	return []manifestObject{{at: at, gvk: gv.WithKind(kind), namespace: namespace, name: name, object: obj}}, nil
}
