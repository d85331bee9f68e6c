package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// Options configure the Gatekeeper, Kyverno and VAP exports.
type Options struct {
	// Catalog is the rule library to export; nil is the embedded one.
	Catalog *catalog.Catalog
	// Managers are the user names of tenantguard itself, allowed to change
	// companion resources; engine.DefaultManager when empty.
	Managers []string
}

// library is the catalog to export: the one given, else the embedded one.
func library(c *catalog.Catalog) (*catalog.Catalog, error) {
	if c != nil {
		return c, nil
	}
	return catalog.Embedded()
}

// Library is what an engine export writes: the Kubernetes objects to apply,
// in order, and how each rule id is covered.
type Library struct {
	// Objects are apply-ready manifests, in the order to apply them.
	Objects []map[string]any
	// Coverage says, for every rule id of the catalog, whether the engine
	// enforces it ("covered ...") or why not.
	Coverage map[string]string
}

// Covers reports whether the library enforces rule.
func (l *Library) Covers(rule string) bool {
	return strings.HasPrefix(l.Coverage[rule], covered)
}

// covered starts the coverage text of an enforced rule.
const covered = "covered"

// WriteYAML writes the objects as one multi-document YAML stream.
func (l *Library) WriteYAML(w io.Writer) error {
	var buf bytes.Buffer
	for _, obj := range l.Objects {
		raw, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		buf.WriteString("---\n")
		buf.Write(raw)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// groupKinds groups a rule's kinds by API group, the groups in the order
// first seen, each kind named by names (its resources, or its kind).
func groupKinds(kinds []catalog.Kind, names func(catalog.Kind) []any) (groups []string, byGroup map[string][]any) {
	byGroup = map[string][]any{}
	for _, k := range kinds {
		if _, ok := byGroup[k.Group]; !ok {
			groups = append(groups, k.Group)
		}
		byGroup[k.Group] = append(byGroup[k.Group], names(k)...)
	}
	return groups, byGroup
}

// mode is a rule's enforcement mode: the registry's, else the rule's default.
func mode(reg *registry.Snapshot, r *catalog.Rule) string {
	if m := reg.Registry().Settings.Enforcement[r.ID]; m != "" {
		return m
	}
	return r.Enforcement
}

// plainRegistry is the registry as the engines read it (registry.Snapshot.Data)
// in plain JSON types, so that it can be embedded in manifests.
func plainRegistry(reg *registry.Snapshot) (map[string]any, error) {
	raw, err := json.Marshal(reg.Data())
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("the registry is not plain JSON: %w", err)
	}
	return out, nil
}

// managerNames are the given managers, or the server's default user name.
func managerNames(managers []string) []string {
	if len(managers) == 0 {
		return []string{engine.DefaultManager}
	}
	return managers
}

func managersOrDefault(managers []string) []any { return anyList(managerNames(managers)) }

// anyList is a list of strings as manifests hold it.
func anyList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// exportFile is the name of a file WriteDir writes.
var exportFile = regexp.MustCompile(`^[0-9]{2}-[a-z0-9.-]+\.yaml$`)

// WriteDir writes one file per object into dir, named by apply order, kind
// and name ("03-constrainttemplate-tenantguardimages.yaml"), so that `kubectl
// apply -f DIR` applies them in order. Files of an earlier export that this
// one lacks are removed; a directory holding any other file (a
// kustomization.yaml, say) is refused, so that nothing of the user's is
// removed.
func (l *Library) WriteDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || !exportFile.MatchString(e.Name()) {
			return fmt.Errorf("%s holds %s, which an export did not write; refusing to write into it", dir, e.Name())
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // policy is meant to be read
		return err
	}
	files := map[string][]byte{}
	for i, obj := range l.Objects {
		meta, _ := obj["metadata"].(map[string]any)
		name := fmt.Sprintf("%02d-%s-%s.yaml", i+1, strings.ToLower(fmt.Sprint(obj["kind"])), meta["name"])
		raw, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		files[name] = raw
	}
	for _, e := range entries {
		if _, keep := files[e.Name()]; !keep {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	for name, raw := range files {
		path := filepath.Join(dir, name)
		if existing, err := os.ReadFile(path); err == nil && bytes.Equal(existing, raw) {
			continue
		}
		if err := os.WriteFile(path, raw, 0o644); err != nil { //nolint:gosec // policy is meant to be read
			return err
		}
	}
	return nil
}
