package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// Root is the bundle's only root: the library's packages and its data.
const Root = "tenantguard"

// BundleOptions configure Bundle.
type BundleOptions struct {
	// Catalog is the rule library to bundle; nil is the embedded one.
	Catalog *catalog.Catalog
	// Revision is the manifest's revision; a hash of the contents when empty,
	// so that the same library and registry always give the same revision.
	Revision string
	// Managers are the user names allowed to change companion resources
	// (data.tenantguard.runtime.managers); engine.DefaultManager when empty,
	// as in the server.
	Managers []string
	// SigningKey (PEM, or the secret of an HS algorithm) signs the bundle
	// with SigningAlg (RS256 when empty) as KeyID, as `opa sign` does.
	SigningKey []byte
	SigningAlg string
	KeyID      string
}

// Bundle builds the bundle of a rule library (its modules and tests; its
// CEL translations are the other exports') and reg: the registry as
// data.tenantguard.registry, the catalog's routes and defaults as
// data.tenantguard.catalog.
func Bundle(reg *registry.Snapshot, opts BundleOptions) (*bundle.Bundle, error) {
	cat, err := library(opts.Catalog)
	if err != nil {
		return nil, err
	}
	var modules []bundle.ModuleFile
	for _, files := range []map[string]string{cat.Modules(), cat.Tests()} {
		for path, src := range files {
			path = strings.TrimPrefix(path, "/")
			modules = append(modules, bundle.ModuleFile{URL: "/" + path, Path: "/" + path, RelativePath: path, Raw: []byte(src)})
		}
	}
	slices.SortFunc(modules, func(a, b bundle.ModuleFile) int { return strings.Compare(a.Path, b.Path) })
	managers := map[string]any{}
	for _, m := range managerNames(opts.Managers) {
		managers[m] = true
	}
	registryData, err := plainRegistry(reg)
	if err != nil {
		return nil, err
	}
	data := map[string]any{Root: map[string]any{"registry": registryData, "catalog": cat.Data(), "runtime": map[string]any{"managers": managers}}}
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	revision := opts.Revision
	if revision == "" {
		h := sha256.New()
		for _, m := range modules {
			_, _ = fmt.Fprintf(h, "%s\n%d\n", m.Path, len(m.Raw))
			h.Write(m.Raw)
		}
		h.Write(raw)
		revision = hex.EncodeToString(h.Sum(nil))[:16]
	}
	regoVersion := 1
	b := &bundle.Bundle{
		Manifest: bundle.Manifest{Revision: revision, Roots: &[]string{Root}, RegoVersion: &regoVersion},
		Data:     data,
		Modules:  modules,
	}
	if len(opts.SigningKey) > 0 {
		alg := opts.SigningAlg
		if alg == "" {
			alg = "RS256"
		}
		if err := b.GenerateSignature(bundle.NewSigningConfig(string(opts.SigningKey), alg, ""), opts.KeyID, true); err != nil {
			return nil, fmt.Errorf("signing the bundle: %w", err)
		}
	}
	return b, nil
}

// WriteTarGz writes b as a bundle archive (what `opa build` writes).
func WriteTarGz(w io.Writer, b *bundle.Bundle) error {
	return bundle.NewWriter(w).UseModulePath(true).DisableFormat(true).Write(*b)
}

// WriteDir writes b as a bundle directory: .manifest, data.json, the
// modules under their paths, and .signatures.json when signed. Files are
// written in a fixed form and files of an earlier bundle that b lacks are
// removed, so that a checked-in directory diffs cleanly when the library or
// the registry changes. A non-empty directory without a .manifest is refused.
func WriteDir(dir string, b *bundle.Bundle) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(dir, ".manifest")); err != nil {
			return fmt.Errorf("%s is not empty and holds no bundle (.manifest); refusing to write into it", dir)
		}
	}
	files := map[string][]byte{}
	for _, m := range b.Modules {
		files[strings.TrimPrefix(m.Path, "/")] = m.Raw
	}
	for name, v := range map[string]any{".manifest": b.Manifest, "data.json": b.Data} {
		raw, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		files[name] = append(raw, '\n')
	}
	if len(b.Signatures.Signatures) > 0 {
		raw, err := json.MarshalIndent(b.Signatures, "", "  ")
		if err != nil {
			return err
		}
		files[".signatures.json"] = append(raw, '\n')
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) && path == dir {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if _, keep := files[filepath.ToSlash(rel)]; !keep {
			return os.Remove(path) //nolint:gosec // the output directory is the user's own, not shared with an attacker
		}
		return nil
	})
	if err != nil {
		return err
	}
	for name, raw := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { //nolint:gosec // a policy bundle is meant to be read
			return err
		}
		if existing, err := os.ReadFile(path); err == nil && bytes.Equal(existing, raw) {
			continue
		}
		if err := os.WriteFile(path, raw, 0o644); err != nil { //nolint:gosec // a policy bundle is meant to be read
			return err
		}
	}
	return nil
}
