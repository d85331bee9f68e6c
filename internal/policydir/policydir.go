package policydir

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/rego"
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
	return Source{Dir: dir}.Load()
}

// Source is where a library is read from: Dir, a library that replaces the
// embedded one, and Overlay, rule families added to it (or to Dir's);
// either may be empty.
type Source struct {
	Dir, Overlay string
}

// Load reads the library: the embedded one or Dir's, with Overlay's
// families (catalog.LoadOverlay).
func (s Source) Load() (*catalog.Catalog, error) {
	cat, err := catalog.LoadOverlay(s.files())
	if err != nil {
		var names []string
		if s.Dir != "" {
			names = append(names, "policy directory "+s.Dir)
		}
		if s.Overlay != "" {
			names = append(names, "policy overlay "+s.Overlay)
		}
		return nil, fmt.Errorf("%s: %w", strings.Join(names, " with "), err)
	}
	return cat, nil
}

// files are the library's folders: the embedded library or Dir, and
// Overlay (nil when none).
func (s Source) files() (base, overlay fs.FS) {
	base = rego.FS()
	if s.Dir != "" {
		base = os.DirFS(s.Dir)
	}
	if s.Overlay != "" {
		overlay = os.DirFS(s.Overlay)
	}
	return base, overlay
}

// revision is the Revision of the library Load would read, from its files
// alone (catalog.FilesRevision).
func (s Source) revision() (string, error) {
	return catalog.FilesRevision(s.files())
}

// String names the source in logs: its directory, or directories.
func (s Source) String() string {
	switch {
	case s.Overlay == "":
		return s.Dir
	case s.Dir == "":
		return "embedded+" + s.Overlay
	}
	return s.Dir + "+" + s.Overlay
}

// Watch loads src into the loader now and again whenever its files change,
// polling every interval until ctx ends (ConfigMap volumes change by a
// symlink swap, which polling sees). A change is loaded only once two polls
// in a row read the same files, so a directory being copied file by file is
// not put in force half-written (a policy missing a rule family can still
// compile). The first load's error is returned; later ones are reported by
// the loader.
func Watch(ctx context.Context, src Source, interval time.Duration, loader Loader) error {
	last, err := src.Load()
	if err == nil {
		err = loader.LoadPolicy(ctx, src.String(), last)
	}
	if err != nil {
		return err
	}
	settled := last.Revision() // the files last loaded, or refused
	seen := settled            // the previous poll's files
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		// The files are read and hashed every poll, and parsed only once
		// they changed and settled: loading a library takes about 100 ms
		// of CPU.
		rev, err := src.revision()
		if err == nil {
			if rev == settled {
				return
			}
			if rev != seen {
				seen = rev // changed since the previous poll: wait until it settles
				return
			}
			settled = rev
		}
		cat, err := src.Load()
		if err != nil {
			if last != nil {
				loader.RefusePolicy(src.String(), err)
			}
			last = nil // report once, and load the directory again once it is fixed
			return
		}
		last = cat
		_ = loader.LoadPolicy(ctx, src.String(), cat) // refusals are reported by the loader
	}, interval)
	return nil
}
