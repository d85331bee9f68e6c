package registry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tenantguard/tenantguard/internal/yamlerr"
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
	body, ok := src.document(data)
	if !ok {
		return nil, src.err()
	}
	reg, ok := src.decode(body)
	if !ok {
		return nil, src.err()
	}
	loc := &locator{root: body}
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

// addYAML records a YAML error of parsing data, splitting out the line it
// names (a syntax error's as yamlerr corrects it).
func (s *source) addYAML(err error, data []byte) {
	if syntax, ok := yamlerr.Syntax(err, data); ok {
		s.add(syntax.Line, "", "%s", syntax.Message)
		return
	}
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

func friendlyYAML(msg string) string { return strings.TrimPrefix(msg, "yaml: ") }

// document parses the file once and returns the TenantRegistry document's
// node: the tenants.yaml key of a ConfigMap, parsed in turn, or the file's
// own. The node tree is all the parsing a registry takes: decode and the
// locator read it, and it is dropped once the registry is compiled.
func (s *source) document(data []byte) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			s.add(0, "", "the file is empty")
		} else {
			s.addYAML(err, data)
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
		return body, true
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
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(value.Value), &doc); err != nil {
		s.addYAML(err, []byte(value.Value))
		return nil, false
	}
	if len(doc.Content) == 0 {
		s.add(0, "", "the registry document is empty")
		return nil, false
	}
	return doc.Content[0], true
}

// decode reads the document's node strictly: fields the registry does not
// have are problems (strictFields), as are values of the wrong type.
func (s *source) decode(body *yaml.Node) (*Registry, bool) {
	reg := &Registry{}
	if err := body.Decode(reg); err != nil {
		// Type errors (wrong types) leave the rest decoded: go on, so that
		// every other problem is reported too, each type error with its
		// field path (typeErrors), or as the decoder words it when the walk
		// finds none.
		var typeErr *yaml.TypeError
		if !errors.As(err, &typeErr) {
			s.addYAML(err, nil)
			return nil, false
		}
		if s.typeErrors(body, reflect.TypeFor[Registry](), "") == 0 {
			s.addYAML(err, nil)
		}
	}
	s.strictFields(body, reflect.TypeFor[Registry]())
	return reg, true
}

// strictFields reports every mapping key of node that names no field of
// the struct type t decodes it into, through pointers, slices and maps, as
// a decoder with known fields would, but on the tree decode already read.
func (s *source) strictFields(node *yaml.Node, t reflect.Type) {
	for node.Kind == yaml.AliasNode && node.Alias != nil {
		node = node.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && node.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(node.Content); i += 2 {
			key := node.Content[i].Value
			if field, ok := yamlField(t, key); ok {
				s.strictFields(node.Content[i+1], field.Type)
			} else if key != "<<" {
				s.add(node.Content[i].Line, "", "unknown field %q in %s", key, t.Name())
			}
		}
	case t.Kind() == reflect.Slice && node.Kind == yaml.SequenceNode:
		for _, c := range node.Content {
			s.strictFields(c, t.Elem())
		}
	case t.Kind() == reflect.Map && node.Kind == yaml.MappingNode:
		for i := 1; i < len(node.Content); i += 2 {
			s.strictFields(node.Content[i], t.Elem())
		}
	}
}

// yamlField is the field of struct type t whose yaml tag names key.
func yamlField(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
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

// locator maps a field path (tenants[0].owners[1].kind) to its document
// line. It indexes the document's tree on first use: a registry without
// problems never needs it.
type locator struct {
	root  *yaml.Node
	lines map[string]int
}

func (l *locator) index() {
	l.lines = map[string]int{}
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
				l.lines[key] = node.Content[i].Line
				walk(node.Content[i+1], key)
			}
		case yaml.SequenceNode:
			for i, c := range node.Content {
				key := fmt.Sprintf("%s[%d]", path, i)
				l.lines[key] = c.Line
				walk(c, key)
			}
		}
	}
	walk(l.root, "")
}

// line returns the line of path, or of its nearest located parent.
func (l *locator) line(path string) int {
	if l.lines == nil {
		l.index()
	}
	for path != "" {
		if n, ok := l.lines[path]; ok {
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

// keyLines are the lines of the keys of the mapping at keys, without
// indexing the whole tree (e.g. settings.enforcement's rule ids).
func (l *locator) keyLines(keys ...string) map[string]int {
	node := l.root
	for _, k := range keys {
		node = lookup(node, k)
	}
	out := map[string]int{}
	if node != nil && node.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(node.Content); i += 2 {
			out[node.Content[i].Value] = node.Content[i].Line
		}
	}
	return out
}
