package auditloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/tenantguard/tenantguard/generator"
	"github.com/tenantguard/tenantguard/internal/jsonast"
	"github.com/tenantguard/tenantguard/internal/metrics"
	"github.com/tenantguard/tenantguard/internal/reports"
	"github.com/tenantguard/tenantguard/internal/state"
)

// Defaults of Options.
const (
	DefaultInterval = 5 * time.Minute
	DefaultDebounce = 10 * time.Second
	// DefaultPageSize keeps a page's decode short: the bench-audit
	// profile gave about 87 µs of decode per object, so 9 ms a page at
	// 100 against 45 ms at 500 (BENCHMARKS.md, bench-audit, has the runs).
	DefaultPageSize  = 100
	DefaultBatch     = 100
	DefaultPause     = 10 * time.Millisecond
	DefaultShare     = 0.25
	DefaultQuietWait = 5 * time.Millisecond
)

// Observer receives each audit's figures (metrics.Metrics).
type Observer interface {
	Audited(violations map[metrics.AuditKey]int, objects int, took time.Duration, at time.Time)
	AuditFailed()
}

// Options configure the loop.
type Options struct {
	// Interval is the time between audits; DefaultInterval when zero.
	Interval time.Duration
	// Debounce is how long the loop waits after a registry or policy
	// change, for more changes, before it audits; when zero DefaultDebounce,
	// or half the interval if that is shorter.
	Debounce time.Duration
	// Format is the reports' API; reports.OpenReports when zero.
	Format reports.Format
	// Instance names the reports, their labels and field manager.
	Instance generator.Instance
	// Managers are tenantguard's own user names (see audit.New).
	Managers []string
	// PageSize is how many objects a list request asks for; Batch how many
	// are checked between two pauses. A pause lasts at least Pause, and
	// long enough that checking takes at most Share of the time the audit
	// runs, list requests aside (0.25: a pause three times as long as the
	// batch before it took to check). A batch takes longer on busy CPUs, so
	// the busier admission keeps them, the longer the audit waits.
	PageSize int64
	Batch    int
	Pause    time.Duration
	Share    float64
	// QuietWait is the longest the audit waits, before each object it
	// checks and each page it decodes, for the server to be answering no
	// admission request (state.Store.WaitQuiet): the audit then runs in the
	// gaps between requests rather than beside them. After a wait that
	// reached it, the audit waits no more until its next pause.
	QuietWait time.Duration
	Logger    *slog.Logger
	Observer  Observer
	// Synced says whether the cluster view is synced (watch.Watcher's):
	// the first audit waits for it, so that it neither misses what the
	// view does not hold yet nor prunes reports that still stand. Nil:
	// no wait.
	Synced func() error
}

func (o *Options) defaults() {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Debounce <= 0 {
		// Never longer than half the interval.
		o.Debounce = min(DefaultDebounce, o.Interval/2)
	}
	if o.Format.Name == "" {
		o.Format = reports.OpenReports
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.Pause <= 0 {
		o.Pause = DefaultPause
	}
	if o.Share <= 0 || o.Share > 1 {
		o.Share = DefaultShare
	}
	if o.QuietWait <= 0 {
		o.QuietWait = DefaultQuietWait
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Loop is the background audit.
type Loop struct {
	store *state.Store
	pager Pager
	// reader lists the reports, writer writes them.
	reader  client.Reader
	writer  client.Client
	mapper  meta.RESTMapper
	changes <-chan struct{}
	// cache shares the values that the objects listed repeat (a label
	// set, a container's resources) between the pages' decodes.
	cache *jsonast.Cache
	// unquiet is set when a wait for admission to be quiet reached its
	// bound, until the next pause (waitQuiet).
	unquiet bool
	opts    Options
}

// cacheSlots is the size of a loop's jsonast.Cache: like admission's, a few
// MB for what objects repeat.
const cacheSlots = 2048

// Setup adds the loop to mgr: it runs while mgr runs, on the leader only.
// It lists the objects it audits from the API server (NewRESTPager), the
// reports with the manager's API reader (uncached), and writes the reports
// with its client.
func Setup(mgr manager.Manager, store *state.Store, opts Options) error {
	pager, err := NewRESTPager(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return err
	}
	l := New(store, pager, mgr.GetAPIReader(), mgr.GetClient(), mgr.GetRESTMapper(), opts)
	if err := mgr.Add(l); err != nil {
		return fmt.Errorf("adding the background audit: %w", err)
	}
	return nil
}

// New is a loop over the registry and view of store that lists what it
// audits with pager and its reports with reader, writes the reports with
// writer, and finds the kinds of the resources it audits with mapper:
// Setup's, which serve runs, with the API server; the load harness's with
// a cluster it serves itself.
func New(store *state.Store, pager Pager, reader client.Reader, writer client.Client, mapper meta.RESTMapper, opts Options) *Loop {
	opts.defaults()
	return &Loop{store: store, pager: pager, reader: reader, writer: writer, mapper: mapper, changes: store.Subscribe(), cache: jsonast.NewCache(cacheSlots), opts: opts}
}

// waitSaid is how long the loop waits to start before it says why, and
// again every interval: a view that never syncs (a kind whose list is
// refused) would otherwise keep the audit, its gauges and its failures
// counter silent.
const waitSaid = time.Minute

// NeedLeaderElection is true: one replica audits and writes the reports.
func (l *Loop) NeedLeaderElection() bool { return true }

// Start audits once the registry is in force and the view synced, then
// every interval and after each change of the registry or the policy,
// until ctx ends. The loop runs on an operating-system thread of its own
// whose scheduling priority is the lowest (nice 19, lowPriority), so that
// the kernel gives the server's other threads, admission's, the CPU first:
// Go's scheduler alone shares the CPUs with no regard for which goroutine
// waits on a request. The kernel weighs nice values between the threads of
// one cgroup (in a pod, the container's), not against other pods. That
// thread keeps its Go processor while the kernel keeps it waiting, so
// while an audit runs Go's scheduler has one processor more, unless a CPU
// limit bounds the processors (auditSettings). The thread ends with the
// loop; its priority cannot be raised again without privileges.
func (l *Loop) Start(ctx context.Context) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := lowPriority(); err != nil {
			l.opts.Logger.Info("background audit: its thread keeps the normal priority", "error", err.Error())
		}
		done <- l.run(ctx)
	}()
	return <-done
}

// run is Start's loop, on the audit's own thread.
func (l *Loop) run(ctx context.Context) error {
	waiting, said := time.Now(), time.Time{}
	for l.store.Engine() == nil || (l.opts.Synced != nil && l.opts.Synced() != nil) {
		if time.Since(waiting) > waitSaid && time.Since(said) > l.opts.Interval {
			why := "no registry in force yet"
			if l.store.Engine() != nil {
				why = l.opts.Synced().Error()
			}
			l.opts.Logger.Warn("background audit: waiting to start", "since", waiting.Format(time.RFC3339), "why", why)
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	tick := time.NewTicker(l.opts.Interval)
	defer tick.Stop()
	for {
		// Changes signalled before the audit starts are in it (it takes
		// the policy and registry in force then): without this, a
		// registry loaded before the view synced, or before this replica
		// led, would have the whole cluster audited twice in a row.
		drain(l.changes)
		l.auditLogged(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-l.changes:
			if !l.settle(ctx) {
				return nil
			}
			tick.Reset(l.opts.Interval)
		}
	}
}

// drain takes the signals waiting in changes, if any.
func drain(changes <-chan struct{}) {
	for {
		select {
		case <-changes:
		default:
			return
		}
	}
}

// settle waits until no change came for the debounce time, or for an
// interval at most (changes that never pause do not hold the audit off);
// false when ctx ended first.
func (l *Loop) settle(ctx context.Context) bool {
	quiet := time.NewTimer(l.opts.Debounce)
	defer quiet.Stop()
	longest := time.NewTimer(l.opts.Interval)
	defer longest.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-l.changes:
			quiet.Reset(l.opts.Debounce)
		case <-quiet.C:
			return true
		case <-longest.C:
			return true
		}
	}
}

// auditLogged runs one audit, with one more Go processor and collections
// half as frequent (auditSettings), and reports how it went.
func (l *Loop) auditLogged(ctx context.Context) {
	defer auditSettings()()
	started := time.Now()
	result, err := l.onceRecovered(ctx)
	took := time.Since(started)
	if ctx.Err() != nil {
		return
	}
	if result != nil {
		l.opts.Logger.Info("background audit", "objects", result.Objects, "violations", len(result.Rows), "carried", result.Carried, "reports", result.Reports, "unchanged", result.Unchanged, "pruned", result.Pruned, "took", took.String())
		if l.opts.Observer != nil {
			counts := map[metrics.AuditKey]int{}
			for _, r := range result.Rows {
				counts[metrics.AuditKey{Tenant: r.Tenant, Rule: r.Rule, Mode: r.Mode}]++
			}
			l.opts.Observer.Audited(counts, result.Objects, took, time.Now())
		}
	}
	if errors.Is(err, ErrNoReportCRD) && result != nil && len(result.Problems) == 0 { // an audit that checked everything did not fail
		l.opts.Logger.Warn("background audit: no reports written", "error", err.Error())
		return
	}
	if err != nil {
		l.opts.Logger.Error("background audit failed", "error", err.Error(), "took", took.String())
		if l.opts.Observer != nil {
			l.opts.Observer.AuditFailed()
		}
	}
}

// ErrPanicked is the error of an audit that panicked. A bug in the audit
// fails that audit, which is logged with its stack and counted as failed,
// and leaves the process running, as a panic while deciding refuses that
// request alone: the process is also the one that admits requests. The
// next audit runs as usual.
var ErrPanicked = errors.New("the audit panicked")

// onceRecovered is Once with a panic turned into ErrPanicked. The loop's
// cache of shared values starts afresh: the panic may have left a slot
// half written.
func (l *Loop) onceRecovered(ctx context.Context) (result *Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			l.opts.Logger.Error("background audit: panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			l.cache = jsonast.NewCache(cacheSlots)
			result, err = nil, fmt.Errorf("%w: %v", ErrPanicked, p)
		}
	}()
	return l.Once(ctx)
}
