package cli

import (
	"cmp"
	"errors"

	"github.com/spf13/pflag"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/policydir"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// policyFlag is --policy-dir, a rule library that replaces the embedded one,
// and --policy-overlay, rule families added to it, for the commands that
// read rules.
type policyFlag struct{ dir, overlay string }

func (p *policyFlag) register(f *pflag.FlagSet) {
	f.StringVar(&p.dir, "policy-dir", "", "directory of a rule library that replaces the embedded one (Rego, tests, CEL), as serve --policy-dir")
	f.StringVar(&p.overlay, "policy-overlay", "", "directory of rule families added to the embedded library (or to --policy-dir's), as serve --policy-overlay")
}

// custom reports whether the library is not the embedded one alone: its
// tests are then run on the evaluator that decides, as serve runs them.
func (p *policyFlag) custom() bool { return p.dir != "" || p.overlay != "" }

// name names the library: "embedded", the --policy-dir, or either with "+"
// and the --policy-overlay.
func (p *policyFlag) name() string {
	return policydir.Source{Dir: cmp.Or(p.dir, "embedded"), Overlay: p.overlay}.String()
}

// load reads the library: --policy-dir's, else the embedded one, with
// --policy-overlay's families. A library that does not load is a usage
// error.
func (p *policyFlag) load() (*catalog.Catalog, error) {
	if p.dir == "" && p.overlay == "" {
		return catalog.Embedded()
	}
	cat, err := policydir.Source{Dir: p.dir, Overlay: p.overlay}.Load()
	if err != nil {
		return nil, usageErrorf("%v", err)
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
