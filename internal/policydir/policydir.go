package policydir

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tenantguard/tenantguard/internal/catalog"
)

// Loader is what a policy is handed to; *state.Store is one. It compiles
// the policy, runs its tests on the evaluator that will serve it, and
// reports refusals itself (log and metric).
type Loader interface {
	LoadPolicy(ctx context.Context, source string, cat *catalog.Catalog) error
	RefusePolicy(source string, err error)
}

// Load reads the rule library in dir (hidden entries excluded): its Rego
// modules and tests, its CEL translations, the rules it declares.
func Load(dir string) (*catalog.Catalog, error) {
	cat, err := catalog.Load(os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("policy directory %s: %w", dir, err)
	}
	return cat, nil
}

// same reports whether two reads of a directory hold the same files.
func same(a, b *catalog.Catalog) bool {
	return a != nil && b != nil && a.Revision() == b.Revision()
}

// Watch loads dir into the loader now and again whenever its files change,
// polling every interval until ctx ends (ConfigMap volumes change by a
// symlink swap, which polling sees). A change is loaded only once two polls
// in a row read the same files, so a directory being copied file by file is
// not put in force half-written (a policy missing a rule family can still
// compile). The first load's error is returned; later ones are reported by
// the loader.
func Watch(ctx context.Context, dir string, interval time.Duration, loader Loader) error {
	last, err := Load(dir)
	if err == nil {
		err = loader.LoadPolicy(ctx, dir, last)
	}
	if err != nil {
		return err
	}
	var seen *catalog.Catalog // the previous poll's files
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		cat, err := Load(dir)
		switch {
		case err != nil:
			if last != nil {
				loader.RefusePolicy(dir, err)
			}
			last = nil // report once, and load the directory again once it is fixed
		case same(cat, last):
		case !same(cat, seen):
			// changed since the previous poll: wait until it settles
		default:
			last = cat
			_ = loader.LoadPolicy(ctx, dir, cat) // refusals are reported by the loader
		}
		seen = cat
	}, interval)
	return nil
}
