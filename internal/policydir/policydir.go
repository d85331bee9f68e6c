package policydir

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
	"k8s.io/apimachinery/pkg/util/wait"

	policy "github.com/tenantguard/tenantguard/rego"
)

// Loader is what a policy is handed to; *state.Store is one. It reports
// refusals itself (log and metric).
type Loader interface {
	LoadPolicy(ctx context.Context, source string, modules map[string]string) error
	RefusePolicy(source string, err error)
}

// Policy is a policy directory's Rego: the modules put in force and the
// tests (*_test.rego) they must pass first.
type Policy struct {
	Modules, Tests map[string]string
}

// Load reads the Rego modules and tests of dir (hidden entries excluded).
func Load(dir string) (Policy, error) {
	modules, tests, err := policy.ModulesAndTests(os.DirFS(dir))
	if err != nil {
		return Policy{}, fmt.Errorf("reading policy directory %s: %w", dir, err)
	}
	if len(modules) == 0 {
		return Policy{}, fmt.Errorf("policy directory %s has no .rego modules", dir)
	}
	return Policy{Modules: modules, Tests: tests}, nil
}

// equal reports whether two reads of a directory hold the same files.
func (p Policy) equal(o Policy) bool {
	return maps.Equal(p.Modules, o.Modules) && maps.Equal(p.Tests, o.Tests)
}

// Test runs the policy's tests as `opa test` does and fails, naming every
// test that did not pass, unless all pass. A policy without tests passes.
func (p Policy) Test(ctx context.Context) error {
	if len(p.Tests) == 0 {
		return nil
	}
	parsed := make(map[string]*ast.Module, len(p.Modules)+len(p.Tests))
	for _, files := range []map[string]string{p.Modules, p.Tests} {
		for path, src := range files {
			m, err := ast.ParseModuleWithOpts(path, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
			if err != nil {
				return err
			}
			parsed[path] = m
		}
	}
	results, err := tester.NewRunner().SetModules(parsed).SetTimeout(time.Minute).RaiseBuiltinErrors(true).RunTests(ctx, nil)
	if err != nil {
		return fmt.Errorf("policy tests: %w", err)
	}
	var failed []string
	passed := 0
	for r := range results {
		switch {
		case r.Pass():
			passed++
		case r.Skip:
		default:
			failed = append(failed, fmt.Sprintf("%s.%s (%s)", r.Package, r.Name, r.Location))
		}
	}
	if len(failed) > 0 {
		slices.Sort(failed)
		return fmt.Errorf("%d of %d policy tests failed: %s", len(failed), len(failed)+passed, strings.Join(failed, ", "))
	}
	return nil
}

// Watch loads dir into the loader now and again whenever its files change,
// polling every interval until ctx ends (ConfigMap volumes change by a
// symlink swap, which polling sees). A change is loaded only once two polls
// in a row read the same modules, so a directory being copied file by file
// is not put in force half-written (a policy missing a rule family can still
// compile). The directory's tests must pass before its modules are handed
// over: a policy whose own tests fail is refused like one that does not
// compile. The first load's error is returned; later ones are reported by
// the loader.
func Watch(ctx context.Context, dir string, interval time.Duration, loader Loader) error {
	last, err := Load(dir)
	if err == nil {
		err = last.Test(ctx)
	}
	if err == nil {
		err = loader.LoadPolicy(ctx, dir, last.Modules)
	}
	if err != nil {
		return err
	}
	var seen Policy // the previous poll's files
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		p, err := Load(dir)
		switch {
		case err != nil:
			if last.Modules != nil {
				loader.RefusePolicy(dir, err)
			}
			last = Policy{} // report once, and load the directory again once it is fixed
		case p.equal(last):
		case !p.equal(seen):
			// changed since the previous poll: wait until it settles
		default:
			last = p
			if err := p.Test(ctx); err != nil {
				loader.RefusePolicy(dir, err)
				break
			}
			_ = loader.LoadPolicy(ctx, dir, p.Modules) // refusals are reported by the loader
		}
		seen = p
	}, interval)
	return nil
}
