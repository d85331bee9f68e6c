package registry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load reads, validates and compiles the registry in a file.
func Load(file string) (*Snapshot, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading registry: %w", err)
	}
	return Parse(file, data)
}

// Parse validates and compiles a registry: a ConfigMap manifest holding the
// document under tenants.yaml, or the bare document, in YAML or JSON. The file
// name is used in problem locations only. Any problem rejects the whole
// registry with an *Error listing all of them. The rule ids its enforcement
// names are the policy's to know: Snapshot.CheckRules checks them.
func Parse(file string, data []byte) (*Snapshot, error) {
	src := source{file: file}
	doc, ok := src.document(data)
	if !ok {
		return nil, src.err()
	}
	reg, root, ok := src.decode(doc)
	if !ok {
		return nil, src.err()
	}
	loc := newLocator(root)
	checkRegistry(&src, loc, reg)
	if len(src.problems) > 0 {
		return nil, src.err()
	}
	return compile(reg, data, &src, loc), nil
}

// source collects the problems of one registry file and maps document lines
// to file lines (a ConfigMap holds the document in a block scalar).
type source struct {
	file     string
	offset   int
	problems []Problem
}

func (s *source) add(line int, path, format string, args ...any) {
	if line > 0 {
		line += s.offset
	}
	s.problems = append(s.problems, Problem{File: s.file, Line: line, Path: path, Message: fmt.Sprintf(format, args...)})
}

func (s *source) err() error {
	slices.SortStableFunc(s.problems, func(a, b Problem) int { return a.Line - b.Line })
	return &Error{File: s.file, Problems: s.problems}
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// addYAML records a YAML error, splitting out the line it names.
func (s *source) addYAML(err error) {
	var typeErr *yaml.TypeError
	messages := []string{err.Error()}
	if errors.As(err, &typeErr) {
		messages = typeErr.Errors
	}
	for _, msg := range messages {
		line := 0
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		s.add(line, "", "%s", friendlyYAML(msg))
	}
}

var unknownField = regexp.MustCompile(`^field (\S+) not found in type registry\.(\w+)$`)

func friendlyYAML(msg string) string {
	if m := unknownField.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("unknown field %q in %s", m[1], m[2])
	}
	return strings.TrimPrefix(msg, "yaml: ")
}

// document returns the TenantRegistry text: the tenants.yaml key of a
// ConfigMap, or the input itself.
func (s *source) document(data []byte) ([]byte, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			s.add(0, "", "the file is empty")
		} else {
			s.addYAML(err)
		}
		return nil, false
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		s.add(extra.Line, "", "the file holds more than one document; a registry is one document")
		return nil, false
	}
	body := &root
	if body.Kind == yaml.DocumentNode && len(body.Content) == 1 {
		body = body.Content[0]
	}
	if body.Kind != yaml.MappingNode {
		s.add(body.Line, "", "a registry is a mapping (a TenantRegistry document or a ConfigMap)")
		return nil, false
	}
	if scalar(lookup(body, "kind")) != "ConfigMap" {
		return data, true
	}
	value := lookup(lookup(body, "data"), DataKey)
	if value == nil || value.Kind != yaml.ScalarNode {
		s.add(body.Line, "", "ConfigMap has no data key %q holding the registry", DataKey)
		return nil, false
	}
	s.offset = value.Line - 1
	if value.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		s.offset = value.Line
	}
	return []byte(value.Value), true
}

// decode parses the document strictly (unknown fields are problems) and
// returns it with its node tree for locating later problems.
func (s *source) decode(doc []byte) (*Registry, *yaml.Node, bool) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		s.addYAML(err)
		return nil, nil, false
	}
	if len(root.Content) == 0 {
		s.add(0, "", "the registry document is empty")
		return nil, nil, false
	}
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	reg := &Registry{}
	if err := dec.Decode(reg); err != nil {
		s.addYAML(err)
		// Type errors (unknown fields, wrong types) leave the rest decoded:
		// go on, so that every other problem is reported too.
		var typeErr *yaml.TypeError
		if !errors.As(err, &typeErr) {
			return nil, nil, false
		}
	}
	return reg, &root, true
}

func lookup(node *yaml.Node, key string) *yaml.Node {
	if node == nil || node.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == key {
			return node.Content[i+1]
		}
	}
	return nil
}

func scalar(node *yaml.Node) string {
	if node == nil || node.Kind != yaml.ScalarNode {
		return ""
	}
	return node.Value
}

// locator maps a field path (tenants[0].owners[1].kind) to its document line.
type locator map[string]int

func newLocator(root *yaml.Node) locator {
	l := locator{}
	var walk func(node *yaml.Node, path string)
	walk = func(node *yaml.Node, path string) {
		switch node.Kind {
		case yaml.DocumentNode:
			for _, c := range node.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(node.Content); i += 2 {
				key := node.Content[i].Value
				if path != "" {
					key = path + "." + key
				}
				l[key] = node.Content[i].Line
				walk(node.Content[i+1], key)
			}
		case yaml.SequenceNode:
			for i, c := range node.Content {
				key := fmt.Sprintf("%s[%d]", path, i)
				l[key] = c.Line
				walk(c, key)
			}
		}
	}
	walk(root, "")
	return l
}

// line returns the line of path, or of its nearest located parent.
func (l locator) line(path string) int {
	for path != "" {
		if n, ok := l[path]; ok {
			return n
		}
		cut := strings.LastIndexAny(path, ".[")
		if cut < 0 {
			break
		}
		path = path[:cut]
	}
	return 0
}
