package cli

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/policydir"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// policyFlag is --policy-dir, a rule library that replaces the embedded one,
// for the commands that read rules.
type policyFlag struct{ dir string }

func (p *policyFlag) register(f *pflag.FlagSet) {
	f.StringVar(&p.dir, "policy-dir", "", "directory of a rule library that replaces the embedded one (Rego, tests, CEL), as serve --policy-dir")
}

// load reads the library: --policy-dir, else the embedded one. A library
// that does not load is a usage error.
func (p *policyFlag) load() (*catalog.Catalog, error) {
	if p.dir == "" {
		return catalog.Embedded()
	}
	cat, err := policydir.Load(p.dir)
	if err != nil {
		return nil, usageErrorf("--policy-dir: %v", err)
	}
	return cat, nil
}

// loadRegistry loads a registry and, when cat is given, checks that its
// enforcement names only cat's rules; an unreadable file is a usage error,
// an invalid registry a *registry.Error.
func loadRegistry(file string, cat *catalog.Catalog) (*registry.Snapshot, error) {
	snap, err := registry.Load(file)
	var invalid *registry.Error
	if err != nil && !errors.As(err, &invalid) {
		return nil, usageErrorf("%v", err)
	}
	if err == nil && cat != nil {
		if err := snap.CheckRules(cat.IDs()); err != nil {
			return nil, err
		}
	}
	return snap, err
}
