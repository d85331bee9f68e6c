package policydir

import (
	"context"
	"fmt"
	"maps"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	policy "github.com/tenantguard/tenantguard/rego"
)

// Loader is what a policy is handed to; *state.Store is one. It reports
// refusals itself (log and metric).
type Loader interface {
	LoadPolicy(ctx context.Context, source string, modules map[string]string) error
	RefusePolicy(source string, err error)
}

// Load reads the Rego modules of dir (tests and hidden entries excluded).
func Load(dir string) (map[string]string, error) {
	modules, err := policy.Modules(os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("reading policy directory %s: %w", dir, err)
	}
	if len(modules) == 0 {
		return nil, fmt.Errorf("policy directory %s has no .rego modules", dir)
	}
	return modules, nil
}

// Watch loads dir into the loader now and again whenever its modules change,
// polling every interval until ctx ends (ConfigMap volumes change by a
// symlink swap, which polling sees). A change is loaded only once two polls
// in a row read the same modules, so a directory being copied file by file
// is not put in force half-written (a policy missing a rule family can still
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
	var seen map[string]string // the previous poll's modules
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		modules, err := Load(dir)
		switch {
		case err != nil:
			if last != nil {
				loader.RefusePolicy(dir, err)
			}
			last = nil // report once, and load the directory again once it is fixed
		case maps.Equal(modules, last):
		case !maps.Equal(modules, seen):
			// changed since the previous poll: wait until it settles
		default:
			last = modules
			_ = loader.LoadPolicy(ctx, dir, modules) // refusals are reported by the loader
		}
		seen = modules
	}, interval)
	return nil
}
