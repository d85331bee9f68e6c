package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policy "github.com/tenantguard/tenantguard/rego"
)

// Catalog is a rule library: its files and the rules they declare. It is
// immutable once loaded and safe for concurrent use.
type Catalog struct {
	modules, tests map[string]string
	cel            map[string]string
	rules          []Rule
	kindSets       map[string]kindSet
	variables      []Variable
	revision       string
}

// Load reads the library under root: every *.rego module and test and
// every *.cel translation, hidden entries skipped (the "..data" folders
// through which Kubernetes swaps a mounted ConfigMap). It refuses a library
// that calls a built-in function a policy may not (Refused), declares a rule
// badly or twice, or translates a rule to CEL that it does not claim for the
// CEL engines; the error lists every problem with its file and line.
func Load(root fs.FS) (*Catalog, error) { return LoadOverlay(root, nil) }

// OverlayPrefix is the folder an overlay's files come under in the library
// (LoadOverlay): the names in its errors and in exports.
const OverlayPrefix = "overlay/"

// LoadOverlay is Load of the library under base with the rule families
// under overlay added (nil: none), as Load reads and checks them. An
// overlay adds families, and the libraries and tests they need, in packages
// of their own: a package base already has is refused (a change to a
// family of base is a library of one's own, Load of a copy). Its files come
// under OverlayPrefix.
func LoadOverlay(base, overlay fs.FS) (*Catalog, error) {
	c := newCatalog()
	if err := c.read(base, ""); err != nil {
		return nil, err
	}
	var overlaid map[string]bool
	if overlay != nil {
		added := newCatalog()
		if err := added.read(overlay, OverlayPrefix); err != nil {
			return nil, err
		}
		var err error
		if overlaid, err = c.add(added); err != nil {
			return nil, err
		}
	}
	if len(c.modules) == 0 {
		return nil, errors.New("no .rego modules")
	}
	var problems problems
	parsed, tests := c.parse(&problems)
	if problems.empty() && overlaid != nil {
		overlayPackages(parsed, tests, overlaid, &problems)
	}
	if problems.empty() {
		c.declare(parsed, &problems)
	}
	if problems.empty() {
		c.translate(&problems)
	}
	if err := problems.err(); err != nil {
		return nil, err
	}
	c.revision = c.hash()
	return c, nil
}

var (
	embeddedOnce sync.Once
	embedded     *Catalog
	embeddedErr  error
)

// Embedded is the library compiled into tenantguard (rego/).
func Embedded() (*Catalog, error) {
	embeddedOnce.Do(func() {
		embedded, embeddedErr = Load(policy.FS())
		if embeddedErr != nil {
			embeddedErr = fmt.Errorf("the embedded rule library: %w", embeddedErr)
		}
	})
	return embedded, embeddedErr
}

// MustEmbedded is Embedded for code that cannot go on without it; the
// embedded library is tested, so a failure is a build defect.
func MustEmbedded() *Catalog {
	c, err := Embedded()
	if err != nil {
		panic(err)
	}
	return c
}

func newCatalog() *Catalog {
	return &Catalog{modules: map[string]string{}, tests: map[string]string{}, cel: map[string]string{}}
}

// reservedPackages are the roots of the data the engine provides, which
// no module may define.
var reservedPackages = []string{"data.tenantguard.catalog", "data.tenantguard.registry", "data.tenantguard.runtime", "data.tenantguard.main"}

// add takes in an overlay's files, whose paths must not be c's (a
// --policy-dir may hold an overlay/ folder), and returns their paths.
func (c *Catalog) add(overlay *Catalog) (map[string]bool, error) {
	paths := map[string]bool{}
	var problems []string
	for _, files := range []map[string]string{overlay.modules, overlay.tests, overlay.cel} {
		for path := range files {
			paths[path] = true
			if _, taken := c.modules[path]; taken || c.tests[path] != "" || c.cel[path] != "" {
				problems = append(problems, fmt.Sprintf("%s: the library has a file of that path", path))
			}
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	maps.Copy(c.modules, overlay.modules)
	maps.Copy(c.tests, overlay.tests)
	maps.Copy(c.cel, overlay.cel)
	return paths, nil
}

// overlayPackages refuses an overlay's module or test (its path in
// overlaid) whose package is, is above or is below one of the library's
// modules' (it would add rules to it: the exported bundle holds the tests
// too) or the data the engine provides (reservedPackages): an overlay adds
// families in packages of their own.
func overlayPackages(parsed, tests map[string]*ast.Module, overlaid map[string]bool, problems *problems) {
	own := slices.Clone(reservedPackages)
	for _, path := range sortedKeys(parsed) {
		if !overlaid[path] {
			own = append(own, parsed[path].Package.Path.String())
		}
	}
	all := maps.Clone(parsed)
	maps.Copy(all, tests)
	for _, path := range sortedKeys(all) {
		if !overlaid[path] {
			continue
		}
		m := all[path]
		pkg := m.Package.Path.String()
		if i := slices.IndexFunc(own, func(o string) bool { return nested(pkg, o) }); i >= 0 {
			problems.add(m.Package.Location, "package %s is in the library's own %s; an overlay adds rule families in packages of their own (to change one, copy the library and replace it)", strings.TrimPrefix(pkg, "data."), strings.TrimPrefix(own[i], "data."))
		}
	}
}

// nested reports whether package a is package b, or one is under the other.
func nested(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(b, a+".")
}

// dataFiles are the names of the data files of an OPA bundle, which a
// library refuses rather than ignore: a rule reading data from one would
// find it undefined, and fail open.
var dataFiles = map[string]bool{"data.json": true, "data.yaml": true, "data.yml": true}

// read collects the library's files by their slash path, after prefix.
func (c *Catalog) read(root fs.FS, prefix string) error {
	return fs.WalkDir(root, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		var into map[string]string
		switch {
		case d.IsDir():
			return nil
		case dataFiles[d.Name()]:
			return fmt.Errorf("%s%s: tenantguard does not load data files: a rule reads the registry (a tenant's settings, or its extensions for a rule family of one's own) and constants in Rego", prefix, path)
		case strings.HasSuffix(path, "_test.rego"):
			into = c.tests
		case strings.HasSuffix(path, ".rego"):
			into = c.modules
		case strings.HasSuffix(path, CELSuffix):
			into = c.cel
		default:
			return nil
		}
		src, err := fs.ReadFile(root, path)
		if err != nil {
			return err
		}
		into[prefix+path] = string(src)
		return nil
	})
}

// parse parses every module and test, annotations included, and refuses
// calls of built-ins a policy may not make; it returns the modules and the
// tests, by path.
func (c *Catalog) parse(problems *problems) (parsed, tests map[string]*ast.Module) {
	parsed, tests = map[string]*ast.Module{}, map[string]*ast.Module{}
	for _, files := range []map[string]string{c.modules, c.tests} {
		for _, path := range sortedKeys(files) {
			m, err := ParseModule(path, files[path])
			if err != nil {
				problems.addError(err)
				continue
			}
			for _, call := range refusedCalls(m) {
				problems.add(call.loc, "calls %s, which a tenantguard policy may not: %s", call.name, refusedWhy)
			}
			if _, test := c.tests[path]; test {
				tests[path] = m
			} else {
				parsed[path] = m
			}
		}
	}
	return parsed, tests
}

// ParseModule parses a Rego v1 module with its annotations, as the library
// is parsed everywhere.
func ParseModule(path, src string) (*ast.Module, error) {
	return ast.ParseModuleWithOpts(path, src, ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
}

// Modules are the library's Rego modules, tests excluded, by path.
func (c *Catalog) Modules() map[string]string { return c.modules }

// Tests are the library's test modules (*_test.rego), by path.
func (c *Catalog) Tests() map[string]string { return c.tests }

// Files are every file of the library by path: modules, tests and CEL.
func (c *Catalog) Files() map[string]string {
	out := make(map[string]string, len(c.modules)+len(c.tests)+len(c.cel))
	for _, files := range []map[string]string{c.modules, c.tests, c.cel} {
		for path, src := range files {
			out[path] = src
		}
	}
	return out
}

// Revision identifies the library's files: equal revisions, equal files.
func (c *Catalog) Revision() string { return c.revision }

// FilesRevision is the Revision LoadOverlay(base, overlay) gives a library
// that loads, from its files alone: nothing is parsed, so that a watcher
// polling a library tells whether it changed for the cost of reading it.
func FilesRevision(base, overlay fs.FS) (string, error) {
	c := newCatalog()
	if err := c.read(base, ""); err != nil {
		return "", err
	}
	if overlay != nil {
		if err := c.read(overlay, OverlayPrefix); err != nil {
			return "", err
		}
	}
	return c.hash(), nil
}

func (c *Catalog) hash() string {
	h := sha256.New()
	files := c.Files()
	for _, path := range sortedKeys(files) {
		_, _ = fmt.Fprintf(h, "%s\n%d\n", path, len(files[path]))
		h.Write([]byte(files[path]))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Rules are the declared rules, by family, then in the order of their files.
func (c *Catalog) Rules() []Rule { return c.rules }

// ClusterScoped reports whether a rule declares a kind of another API with
// scope: Cluster (Kind.ClusterScoped); the built-in kinds' scope is
// request.ClusterScoped's.
func (c *Catalog) ClusterScoped(gk schema.GroupKind) bool {
	for _, r := range c.rules {
		for _, k := range r.Kinds {
			if k.ClusterScoped && k.Group == gk.Group && k.Kind == gk.Kind {
				return true
			}
		}
	}
	return false
}

// Rule is the rule declared with id.
func (c *Catalog) Rule(id string) (Rule, bool) {
	i := slices.IndexFunc(c.rules, func(r Rule) bool { return r.ID == id })
	if i < 0 {
		return Rule{}, false
	}
	return c.rules[i], true
}

// IDs are the rule ids, in the order of Rules.
func (c *Catalog) IDs() []string {
	out := make([]string, len(c.rules))
	for i, r := range c.rules {
		out[i] = r.ID
	}
	return out
}

// KindSets are the names of the library's kind sets, sorted.
func (c *Catalog) KindSets() []string { return sortedKeys(c.kindSets) }

// KindSet is a kind set's kinds, e.g. "pod-carriers".
func (c *Catalog) KindSet(name string) []Kind { return c.kindSets[name].kinds }

// KindSetTitle is a kind set's title, from its METADATA.
func (c *Catalog) KindSetTitle(name string) string { return c.kindSets[name].title }

// KindSetRule is the rule that defines a kind set, data.PACKAGE.RULE.
func (c *Catalog) KindSetRule(name string) string { return c.kindSets[name].rule }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
