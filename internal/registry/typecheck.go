package registry

import (
	"fmt"
	"reflect"
	"strconv"

	"gopkg.in/yaml.v3"
)

// typeErrors reports, with its field path and line, every value of node that
// does not fit the type t it decodes into (tenants[0].quotas.pods: expected
// a number, got "ten"), in the registry's words rather than the decoder's Go
// type names; it returns how many it found. Leaves are tried with the
// decoder itself, so that what it accepts (a number as a string, yes as a
// bool) is accepted here too.
func (s *source) typeErrors(node *yaml.Node, t reflect.Type, path string) int {
	for node.Kind == yaml.AliasNode && node.Alias != nil {
		node = node.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if node.Kind == yaml.ScalarNode && node.ShortTag() == "!!null" {
		return 0 // the zero value, for every type
	}
	mismatch := func() int {
		s.add(node.Line, path, "expected %s, got %s", expected(t), got(node))
		return 1
	}
	found := 0
	switch t.Kind() {
	case reflect.Struct:
		if node.Kind != yaml.MappingNode {
			return mismatch()
		}
		for i := 0; i+1 < len(node.Content); i += 2 {
			if field, ok := yamlField(t, node.Content[i].Value); ok {
				found += s.typeErrors(node.Content[i+1], field.Type, join(path, node.Content[i].Value))
			}
		}
	case reflect.Map:
		if node.Kind != yaml.MappingNode {
			return mismatch()
		}
		for i := 0; i+1 < len(node.Content); i += 2 {
			found += s.typeErrors(node.Content[i+1], t.Elem(), join(path, node.Content[i].Value))
		}
	case reflect.Slice:
		if node.Kind != yaml.SequenceNode {
			return mismatch()
		}
		for i, c := range node.Content {
			found += s.typeErrors(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Interface:
		// any value fits (a tenant's extensions, checked by validate)
	default:
		if node.Kind != yaml.ScalarNode || node.Decode(reflect.New(t).Interface()) != nil {
			return mismatch()
		}
	}
	return found
}

// join is path.key, or key at the top.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// expected names what a Go type holds, as a registry author thinks of it.
func expected(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	default:
		return "a mapping"
	}
}

// got describes a YAML value: a scalar quoted as written, else its kind.
func got(node *yaml.Node) string {
	switch node.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	default:
		return strconv.Quote(node.Value)
	}
}
