package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/metrics"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// Observer hears about accepted and refused versions of a source
// (metrics.SourceRegistry or metrics.SourcePolicy); *metrics.Metrics is one.
type Observer interface {
	Loaded(source string, generation int64)
	Rejected(source string, at time.Time)
	// Recovered is told when the version in force is offered again after a
	// refusal (a broken edit reverted): nothing is loaded, but the source is
	// no longer failing.
	Recovered(source string)
}

// Options configure a Store.
type Options struct {
	// Managers are tenantguard's own user names (see engine.Options).
	Managers []string
	// Pool runs the engines' topdown evaluations (see engine.Options); nil
	// runs them on the requests' goroutines, where the plan evaluator always
	// runs its own.
	Pool *engine.Pool
	// Evaluator runs the rules (see engine.Options); "" is engine.EvaluatorAuto.
	Evaluator string
	// Observer is told of every load; optional.
	Observer Observer
	// Logger receives one line per load; slog.Default() when nil.
	Logger *slog.Logger
}

// Store is safe for concurrent use. Readers call Engine, which is one atomic
// load; loads are serialized and build a complete new engine before swapping.
type Store struct {
	opts    Options
	log     *slog.Logger
	view    *clusterview.View
	current atomic.Pointer[engine.Engine]
	// collecting is set while the collection after a swap runs
	collecting atomic.Bool
	// admitting counts the requests being answered (AdmitStart); quiet
	// wakes a WaitQuiet, when quietWanted, once none is left
	admitting   atomic.Int64
	quietWanted atomic.Bool
	quiet       chan struct{}
	quietMu     sync.Mutex // one WaitQuiet at a time

	mu          sync.Mutex
	subscribers []chan struct{}
	registry    *registry.Snapshot // last good; nil until the first load
	policy      *engine.Policy     // last good; nil until the first load (the embedded one)
	custom      bool               // the policy in force is not the embedded one
	registryGen int64
	policyGen   int64
	// failing are the sources whose last version offered was refused
	failing map[string]bool
	// waiting holds the last registry and the last policy refused only
	// because the other names rules it does not declare (a rule family
	// and the registry's enforcement of it rolled out together): each is
	// tried again once the other changes.
	waiting struct {
		registry       *registry.Snapshot
		policy         *engine.Policy
		registrySource string
		policySource   string
	}
}

// New returns a store for the view, with no registry; until a policy is
// loaded the first registry is put in force with the embedded one.
func New(view *clusterview.View, opts Options) *Store {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Store{opts: opts, log: log, view: view, failing: map[string]bool{}, quiet: make(chan struct{}, 1)}
}

// View is the live cluster view.
func (s *Store) View() *clusterview.View { return s.view }

// Engine is the engine in force, nil until a registry has been loaded.
func (s *Store) Engine() *engine.Engine { return s.current.Load() }

// Generations are how many registries and policies have been accepted.
func (s *Store) Generations() (registryGen, policyGen int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registryGen, s.policyGen
}

// LoadRegistry parses and validates a registry (ConfigMap or bare document)
// and puts it in force with the current policy (see LoadSnapshot). On error
// nothing changes; a *registry.Error lists every problem.
func (s *Store) LoadRegistry(ctx context.Context, source string, data []byte) error {
	snap, err := registry.Parse(source, data)
	if err != nil {
		return s.RefuseRegistry(source, err)
	}
	_, err = s.LoadSnapshot(ctx, source, snap)
	return err
}

// LoadSnapshot puts a parsed registry in force with the current policy.
// changed is false for a registry identical to the one in force, which is a
// no-op. On error nothing changes.
func (s *Store) LoadSnapshot(ctx context.Context, source string, snap *registry.Snapshot) (changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.registry != nil && snap.Revision() == s.registry.Revision() {
		s.unchanged(metrics.SourceRegistry, source)
		return false, nil
	}
	if s.policy == nil {
		p, err := engine.Compile(ctx, engine.PolicyOptions{Evaluator: s.opts.Evaluator})
		if err != nil {
			return false, s.rejected(metrics.SourceRegistry, source, err)
		}
		s.policy = p
	}
	if err := s.swap(ctx, snap, s.policy); err != nil {
		if ruleMismatch(err) {
			s.waiting.registry, s.waiting.registrySource = snap, source
		}
		return false, s.rejected(metrics.SourceRegistry, source, err)
	}
	s.putRegistry(source, snap)
	s.retryPolicy(ctx)
	return true, nil
}

// putRegistry records a registry put in force by swap.
func (s *Store) putRegistry(source string, snap *registry.Snapshot) {
	s.registry = snap
	s.registryGen++
	s.waiting.registry = nil
	s.loaded(metrics.SourceRegistry, source, s.registryGen, "revision", snap.Revision(), "tenants", snap.Len())
}

// putPolicy records a policy put in force.
func (s *Store) putPolicy(source string, p *engine.Policy, custom bool) {
	s.policy, s.custom = p, custom
	s.policyGen++
	s.waiting.policy = nil
	s.loaded(metrics.SourcePolicy, source, s.policyGen, "rules", len(p.Catalog().Rules()), "modules", len(p.Catalog().Modules()), "embedded", !custom, "evaluator", p.Evaluator())
	if p.Evaluator() != engine.EvaluatorPlan && s.opts.Evaluator != engine.EvaluatorTopdown {
		// auto fell back: every decision now costs about twelve times more
		s.log.Warn("the policy runs on OPA's topdown evaluator, not the plan evaluator; decisions cost about 12 times more CPU", "source", source, "evaluator", p.Evaluator())
	}
}

// ruleMismatch reports whether a swap failed only because the registry's
// enforcement names a rule the policy does not declare.
func ruleMismatch(err error) bool {
	var invalid *registry.Error
	return errors.As(err, &invalid)
}

// retryRegistry puts in force the registry that waited for a policy
// declaring its rules, now that the policy changed; the caller holds s.mu.
func (s *Store) retryRegistry(ctx context.Context) {
	snap, source := s.waiting.registry, s.waiting.registrySource
	if snap == nil {
		return
	}
	if err := s.swap(ctx, snap, s.policy); err != nil {
		s.log.Info("the registry waiting for the policy's rules is still refused", "source", source, "error", err.Error())
		return
	}
	s.putRegistry(source+" (waited for the policy that declares its rules)", snap)
}

// retryPolicy puts in force the policy that waited for a registry naming
// only its rules, now that the registry changed; the caller holds s.mu.
func (s *Store) retryPolicy(ctx context.Context) {
	p, source := s.waiting.policy, s.waiting.policySource
	if p == nil {
		return
	}
	if err := s.swap(ctx, s.registry, p); err != nil {
		s.log.Info("the policy waiting for the registry is still refused", "source", source, "error", err.Error())
		return
	}
	s.putPolicy(source+" (waited for a registry naming only its rules)", p, true)
}

// LoadPolicy puts a rule library in force: a replacement one (a
// --policy-dir), whose own tests must pass on the evaluator that will
// serve it, or, when cat is nil, the embedded one. The policy must compile,
// declare every rule id the registry in force names, and answer the
// self-check request; before a registry is loaded it answers it against an
// empty registry. On error nothing changes.
func (s *Store) LoadPolicy(ctx context.Context, source string, cat *catalog.Catalog) error {
	s.mu.Lock()
	if s.policyGen > 0 && (cat == nil) == !s.custom && (cat == nil || cat.Revision() == s.policy.Catalog().Revision()) {
		s.unchanged(metrics.SourcePolicy, source)
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	// Compiled and tested outside the lock: a library's tests may take
	// seconds, and registry reloads must not wait for them. Loads of
	// policies come one at a time (the watcher's goroutine).
	p, err := engine.Compile(ctx, engine.PolicyOptions{Catalog: cat, Evaluator: s.opts.Evaluator, Test: cat != nil})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		if s.registry != nil {
			err = s.swap(ctx, s.registry, p)
			if err != nil && ruleMismatch(err) && cat != nil {
				s.waiting.policy, s.waiting.policySource = p, source
			}
		} else {
			err = selfCheck(ctx, p) // no registry yet: check it against an empty one
		}
	}
	if err != nil {
		return s.rejected(metrics.SourcePolicy, source, err)
	}
	s.putPolicy(source, p, cat != nil)
	s.retryRegistry(ctx)
	return nil
}

// RefuseRegistry reports a registry refused before it reached the store (it
// does not parse, or its counted resources cannot be watched); the registry
// in force stays.
func (s *Store) RefuseRegistry(source string, err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejected(metrics.SourceRegistry, source, err)
}

// RefusePolicy reports a policy that could not even be read; the policy in
// force stays.
func (s *Store) RefusePolicy(source string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.rejected(metrics.SourcePolicy, source, err)
}

// emptyRegistry is a registry without tenants, to check a policy loaded
// before the first registry.
var emptyRegistry = []byte("apiVersion: " + registry.APIVersion + "\nkind: " + registry.Kind + "\ntenants: []\n")

// selfCheck has a policy answer the self-check request against an empty
// registry.
func selfCheck(ctx context.Context, p *engine.Policy) error {
	snap, err := registry.Parse("empty registry", emptyRegistry)
	if err != nil {
		return err
	}
	e, err := p.Engine(ctx, snap, nil, nil)
	if err != nil {
		return err
	}
	return e.Check(ctx)
}

// swap builds and self-checks an engine, then puts it in force. The view
// follows the registry's tenant label first, so counts are by the label the
// new engine reads.
func (s *Store) swap(ctx context.Context, snap *registry.Snapshot, p *engine.Policy) error {
	e, err := p.Engine(ctx, snap, s.opts.Managers, s.opts.Pool)
	if err != nil {
		return err
	}
	if err := e.Check(ctx); err != nil {
		return err
	}
	s.view.SetTenantLabel(snap.TenantLabel())
	s.current.Store(e)
	s.collect()
	for _, ch := range s.subscribers {
		select {
		case ch <- struct{}{}:
		default: // a signal is pending already
		}
	}
	return nil
}

// collect has the garbage collector run once, in the background, after a
// swap: a reload leaves about twice the engine's registry as garbage and a
// collection that falls while it runs takes its transient for live, so
// that the collector's goal (gc-percent over the live heap) stays that
// high until the next one, and the resident memory with it. Collecting
// once the old engine is released sets the goal from what is live again.
// A collection already under way covers the swaps that come meanwhile.
func (s *Store) collect() {
	if s.collecting.CompareAndSwap(false, true) {
		go func() {
			defer s.collecting.Store(false)
			runtime.GC()
		}()
	}
}

// Subscribe returns a channel that receives a signal after every swap (a
// new registry or policy in force); signals coalesce while one is pending.
func (s *Store) Subscribe() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{}, 1)
	s.subscribers = append(s.subscribers, ch)
	return ch
}

// unchanged reports a source offering the version in force again: if its
// last version was refused, it has recovered.
func (s *Store) unchanged(source, name string) {
	if !s.failing[source] {
		return
	}
	s.failing[source] = false
	if s.opts.Observer != nil {
		s.opts.Observer.Recovered(source)
	}
	s.log.Info(source+" recovered: the version in force is offered again", "source", name)
}

func (s *Store) loaded(source, name string, generation int64, attrs ...any) {
	s.failing[source] = false
	if s.opts.Observer != nil {
		s.opts.Observer.Loaded(source, generation)
	}
	if e := s.current.Load(); e != nil && source != metrics.SourcePolicy {
		attrs = append(attrs, "evaluator", e.Evaluator())
	}
	s.log.Info(source+" loaded", append([]any{"source", name, "generation", generation}, attrs...)...)
}

func (s *Store) rejected(source, name string, err error) error {
	s.failing[source] = true
	if s.opts.Observer != nil {
		s.opts.Observer.Rejected(source, time.Now())
	}
	kept := "none"
	if s.current.Load() != nil {
		kept = "the previous one"
	}
	s.log.Error(source+" refused", "source", name, "error", err.Error(), "inForce", kept)
	return fmt.Errorf("%s %s refused: %w", source, name, err)
}
