package auditloop

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/metrics"
	"github.com/tenantguard/tenantguard/internal/reports"
	"github.com/tenantguard/tenantguard/rego"
	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// erringOnServices is a rule family of one's own whose rule fails on every
// Service: two values of one complete rule.
var erringOnServices = map[string]string{"tenantguard/rules/boom/boom.rego": `# METADATA
# title: Boom
# description: Fails on Services.
# custom:
#   kinds: [Service]
#   operations: [CREATE]
#   engines: [opa]
package tenantguard.rules.boom

# METADATA
# title: Boom
# description: Fails on Services.
# custom:
#   id: boom
violations contains {"id": "boom", "msg": "boom"} if _x

_x := true if input.request.kind.kind == "Service"

_x := false if input.request.kind.kind == "Service"
`}

// TestObjectsTheRulesCannotDecideFailTheAuditAndKeepTheirReports: an
// object whose check errs is not an object without violations: the audit
// fails (counted), the cluster's report says what was not checked, and the
// other kinds' rows stand. (What its reports keep of it is
// TestWhatTheAuditCannotCheckKeepsItsRowsAndCleanNamespacesArePruned's.)
func TestObjectsTheRulesCannotDecideFailTheAuditAndKeepTheirReports(t *testing.T) {
	l, _, writer := auditOfFixture(t)
	cat, err := catalog.LoadOverlay(rego.FS(), fixtures.MapFS(erringOnServices))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.store.LoadPolicy(t.Context(), "overlay", cat); err != nil {
		t.Fatal(err)
	}
	result, err := l.Once(t.Context())
	if !errors.Is(err, ErrUnchecked) || !strings.Contains(err.Error(), "the rules could not decide 1, in 1 namespaces") || !strings.Contains(err.Error(), `in namespace "gas-web": Service "web"`) {
		t.Fatalf("error %v, want the Service that could not be checked", err)
	}
	want := []string{"oil-dev/Pod/debug/host-path", "oil-prod/Deployment/edge/host-network", "oil-prod/PersistentVolumeClaim/data/storage-class", "steel-apps/Pod/app/image-registry"}
	if got := rowNames(result.Rows); !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	if result.Objects != 15 {
		t.Errorf("%d objects checked, want the 16 less the Service", result.Objects)
	}
	if results, _, _ := unstructured.NestedSlice(clusterReport(t, l, writer).Object, "results"); len(results) != 1 || !strings.Contains(results[0].(map[string]any)["message"].(string), "the rules could not decide 1") {
		t.Errorf("the cluster's report lists %v, want the object not checked", results)
	}
	observer := &failures{}
	l.opts.Observer = observer
	l.auditLogged(t.Context())
	if observer.failed != 1 {
		t.Errorf("%d audits failed, want 1", observer.failed)
	}
}

// TestWhatTheAuditCannotCheckKeepsItsRowsAndCleanNamespacesArePruned: the
// rows the last audit found of objects this one cannot check (a kind it may
// no longer list, objects the rules cannot decide) are carried over from
// the reports, so that the namespace that holds them keeps its report as
// it was, while the report of a namespace that became clean is pruned.
func TestWhatTheAuditCannotCheckKeepsItsRowsAndCleanNamespacesArePruned(t *testing.T) {
	tests := []struct {
		name    string
		uncheck func(t *testing.T, l *Loop, reader *pagedReader)
		wantErr func(error) bool
	}{
		{"a kind the audit may no longer list", func(_ *testing.T, _ *Loop, reader *pagedReader) { reader.forbidden = "Service" }, apierrors.IsForbidden},
		{"objects the rules cannot decide", func(t *testing.T, l *Loop, _ *pagedReader) {
			cat, err := catalog.LoadOverlay(rego.FS(), fixtures.MapFS(erringOnServices))
			if err != nil {
				t.Fatal(err)
			}
			if err := l.store.LoadPolicy(t.Context(), "overlay", cat); err != nil {
				t.Fatal(err)
			}
		}, func(err error) bool { return errors.Is(err, ErrUnchecked) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, reader, _ := auditOfFixture(t)
			writer := fake.NewClientBuilder().WithReturnManagedFields().Build()
			l.reader, l.writer = metadataLister{writer}, writer
			if _, err := l.Once(t.Context()); err != nil {
				t.Fatal(err)
			}
			// steel-apps becomes clean; gas-web's only row is of its
			// Service, which this audit cannot check.
			reader.objects["Pod"] = slices.DeleteFunc(reader.objects["Pod"], func(o map[string]any) bool {
				return o["metadata"].(map[string]any)["namespace"] == "steel-apps"
			})
			tt.uncheck(t, l, reader)
			result, err := l.Once(t.Context())
			if !tt.wantErr(err) {
				t.Fatalf("error %v, want the Services not checked", err)
			}
			want := []string{"gas-web/Service/web/service-type", "oil-dev/Pod/debug/host-path", "oil-prod/Deployment/edge/host-network", "oil-prod/PersistentVolumeClaim/data/storage-class"}
			if got := rowNames(result.Rows); !slices.Equal(got, want) {
				t.Errorf("rows %v, want %v: the Service's carried over", got, want)
			}
			if result.Carried != 1 || result.Pruned != 1 || result.Unchanged != 3 || result.Reports != 1 {
				t.Errorf("%d rows carried, %d reports pruned, %d unchanged, %d written; want the Service's carried, steel-apps's report pruned, the 3 others unchanged, the cluster's written", result.Carried, result.Pruned, result.Unchanged, result.Reports)
			}
			report := &unstructured.Unstructured{}
			report.SetGroupVersionKind(reports.OpenReports.GVK(false))
			if err := writer.Get(t.Context(), client.ObjectKey{Namespace: "gas-web", Name: l.opts.Instance.Name()}, report); err != nil {
				t.Fatalf("gas-web's report: %v", err)
			}
			if got := rowNames(reports.Rows(report)); !slices.Equal(got, want[:1]) {
				t.Errorf("gas-web's report lists %v, want %v", got, want[:1])
			}
			if err := writer.Get(t.Context(), client.ObjectKey{Namespace: "steel-apps", Name: l.opts.Instance.Name()}, report); !apierrors.IsNotFound(err) {
				t.Errorf("steel-apps's report: %v, want it pruned", err)
			}
		})
	}
}

// TestReportsThatCannotBeReadBackAreLeftAsTheyWere: when the reports cannot
// be listed, or read back to carry over the rows of what the audit could
// not check, no report is written or pruned: written, they would drop
// those rows.
func TestReportsThatCannotBeReadBackAreLeftAsTheyWere(t *testing.T) {
	for _, refused := range []string{"metadata", "whole reports"} {
		t.Run(refused, func(t *testing.T) {
			l, reader, _ := auditOfFixture(t)
			writer := fake.NewClientBuilder().WithReturnManagedFields().Build()
			l.reader, l.writer = metadataLister{writer}, writer
			if _, err := l.Once(t.Context()); err != nil {
				t.Fatal(err)
			}
			l.reader = interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
				List: func(ctx context.Context, _ client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if _, partial := list.(*metav1.PartialObjectMetadataList); partial != (refused == "metadata") {
						return metadataLister{writer}.List(ctx, list, opts...)
					}
					return apierrors.NewServiceUnavailable("etcd is slow")
				},
			})
			reader.forbidden = "Service"
			reader.objects["Pod"] = nil // two namespaces become clean
			result, err := l.Once(t.Context())
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "etcd is slow") {
				t.Fatalf("error %v, want the forbidden Services and the reports not read", err)
			}
			if result.Reports != 0 || result.Pruned != 0 || result.Unchanged != 0 || result.Carried != 0 {
				t.Errorf("%d reports written, %d pruned, %d unchanged, %d rows carried; want none", result.Reports, result.Pruned, result.Unchanged, result.Carried)
			}
		})
	}
}

// TestAReportEditedByHandGivesNoRows: the rows of a report another manager
// changed are not carried over (the audit undoes edits, it does not keep
// them): gas-web's, whose only row was of its Service, is pruned.
func TestAReportEditedByHandGivesNoRows(t *testing.T) {
	l, reader, _ := auditOfFixture(t)
	writer := fake.NewClientBuilder().WithReturnManagedFields().Build()
	l.reader, l.writer = metadataLister{writer}, writer
	if _, err := l.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	edited := &unstructured.Unstructured{}
	edited.SetGroupVersionKind(reports.OpenReports.GVK(false))
	if err := writer.Get(t.Context(), client.ObjectKey{Namespace: "gas-web", Name: l.opts.Instance.Name()}, edited); err != nil {
		t.Fatal(err)
	}
	results, _, _ := unstructured.NestedSlice(edited.Object, "results")
	results[0].(map[string]any)["message"] = "fine by me"
	if err := unstructured.SetNestedSlice(edited.Object, results, "results"); err != nil {
		t.Fatal(err)
	}
	if err := writer.Update(t.Context(), edited, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	reader.forbidden = "Service"
	result, err := l.Once(t.Context())
	if !apierrors.IsForbidden(err) {
		t.Fatalf("error %v, want the forbidden Services", err)
	}
	if result.Carried != 0 || result.Pruned != 1 {
		t.Errorf("%d rows carried, %d reports pruned; want none carried, gas-web's pruned", result.Carried, result.Pruned)
	}
}

// TestAListRefusedAfterItsFirstPageCarriesOnlyWhatItDidNotCheck: the rows of
// the objects of the refused kind that were checked are this audit's, not
// also the last one's; those of the others are carried over.
func TestAListRefusedAfterItsFirstPageCarriesOnlyWhatItDidNotCheck(t *testing.T) {
	l, reader, _ := auditOfFixture(t)
	writer := fake.NewClientBuilder().WithReturnManagedFields().Build()
	l.reader, l.writer = metadataLister{writer}, writer
	first, err := l.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	reader.forbidden, reader.forbiddenAfterFirst = "Pod", true // oil-dev's pod debug is on the first page, steel-apps's app after it
	result, err := l.Once(t.Context())
	if !apierrors.IsForbidden(err) {
		t.Fatalf("error %v, want the Pods' list refused", err)
	}
	if got, want := rowNames(result.Rows), rowNames(first.Rows); !slices.Equal(got, want) {
		t.Errorf("rows %v, want the first audit's %v, each once", got, want)
	}
	if result.Carried != 1 || result.Unchanged != 4 {
		t.Errorf("%d rows carried, %d reports unchanged; want steel-apps's pod's carried, the 4 reports unchanged", result.Carried, result.Unchanged)
	}
}

// TestAListThatOutlivesItsSnapshotGoesOn: a continue token the API server
// no longer serves (410 ResourceExpired, after etcd's compaction) does not
// fail the audit: it goes on with the token the refusal carries.
func TestAListThatOutlivesItsSnapshotGoesOn(t *testing.T) {
	l, reader, _ := auditOfFixture(t)
	reader.expireOnce = map[string]bool{"Pod": true, "Namespace": true}
	result, err := l.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if result.Objects != 16 || len(result.Rows) != 5 {
		t.Errorf("%d objects and %d rows, want every object's: 16 and 5", result.Objects, len(result.Rows))
	}
	if reader.expired != 2 {
		t.Errorf("%d lists expired, want the Pods' and the Namespaces'", reader.expired)
	}
	// A list that goes on from further back sees objects twice: each
	// row counts once.
	l, reader, _ = auditOfFixture(t)
	reader.expireOnce, reader.rewind = map[string]bool{"Pod": true}, true
	if result, err = l.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(result.Rows) != 5 {
		t.Errorf("%d rows after a list went on from its start, want every object's once: 5", len(result.Rows))
	}
	for _, err := range []error{nil, errors.New("x"), apierrors.NewResourceExpired("too old resource version")} {
		if _, ok := expiredContinue(err); ok {
			t.Errorf("%v: a token to go on with, want none", err)
		}
	}
}

// TestChangesThatNeverPauseDoNotHoldTheAuditOffForMoreThanAnInterval.
func TestChangesThatNeverPauseDoNotHoldTheAuditOffForMoreThanAnInterval(t *testing.T) {
	changes := make(chan struct{})
	l := &Loop{changes: changes, opts: Options{Interval: 600 * time.Millisecond, Debounce: 300 * time.Millisecond}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			select {
			case changes <- struct{}{}:
			case <-ctx.Done():
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	settled := make(chan bool)
	go func() { settled <- l.settle(ctx) }()
	select {
	case ok := <-settled:
		if !ok {
			t.Error("settle gave up, want it to settle")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("changes every 10 ms held the audit off past its interval")
	}
}

// TestTheFirstAuditWaitsForTheViewToBeSynced.
func TestTheFirstAuditWaitsForTheViewToBeSynced(t *testing.T) {
	l, reader, _ := auditOfFixture(t)
	synced := make(chan struct{})
	l.opts.Synced = func() error {
		select {
		case <-synced:
			return nil
		default:
			return errors.New("not synced")
		}
	}
	audited := make(chan struct{}, 1)
	l.opts.Observer = observerFunc(func() { audited <- struct{}{} })
	running(t, l)
	time.Sleep(1500 * time.Millisecond)
	if reader.requested() != 0 {
		t.Fatalf("%d list requests before the view was synced", reader.requested())
	}
	close(synced)
	select {
	case <-audited:
	case <-time.After(10 * time.Second):
		t.Fatal("no audit once the view was synced")
	}
}

// TestAChangeBeforeTheFirstAuditIsInIt: a registry loaded before the audit
// starts (before the view synced, or this replica led) signalled a change
// the first audit covers: it does not start a second one.
func TestAChangeBeforeTheFirstAuditIsInIt(t *testing.T) {
	l, _, _ := auditOfFixture(t)
	changes := make(chan struct{}, 1)
	changes <- struct{}{}
	l.changes = changes
	l.opts.Interval, l.opts.Debounce = time.Hour, 50*time.Millisecond
	audited := make(chan struct{}, 2)
	l.opts.Observer = observerFunc(func() { audited <- struct{}{} })
	running(t, l)
	select {
	case <-audited:
	case <-time.After(30 * time.Second):
		t.Fatal("no first audit")
	}
	// A second audit would start after the debounce (50 ms) and take
	// about as long as the first.
	select {
	case <-audited:
		t.Fatal("a second audit ran for the change before the first")
	case <-time.After(2 * time.Second):
	}
}

// running starts l's loop, which ends, and is waited for, when the test
// does.
func running(t *testing.T, l *Loop) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		_ = l.Start(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// panickingPager panics on the first page of kind, times times: a bug in
// the audit, which nothing provokes for real.
type panickingPager struct {
	*pagedReader
	kind  string
	times atomic.Int32
}

func (p *panickingPager) Page(ctx context.Context, gvr schema.GroupVersionResource, limit int64, token string) ([]byte, error) {
	if gvk, err := p.mapper.KindFor(gvr); err == nil && gvk.Kind == p.kind && p.times.Add(-1) >= 0 {
		panic("a bug in the audit")
	}
	return p.pagedReader.Page(ctx, gvr, limit, token)
}

// audits tells, on a channel, how each audit ended: the objects it
// checked, or -1 when it failed.
type audits chan int

func (a audits) Audited(_ map[metrics.AuditKey]int, objects int, _ time.Duration, _ time.Time) {
	a.tell(objects)
}
func (a audits) AuditFailed() { a.tell(-1) }

// tell sends n, or drops it once the test has read what it needs.
func (a audits) tell(n int) {
	select {
	case a <- n:
	default:
	}
}

// TestAnAuditThatPanicsFailsAndTheNextOneRuns: a panic in the audit (a
// bug) fails that audit, logged with its stack and counted as failed; the
// process, which admits requests too, and the loop go on, and the next
// audit checks the whole cluster.
func TestAnAuditThatPanicsFailsAndTheNextOneRuns(t *testing.T) {
	l, reader, _ := auditOfFixture(t)
	whole, err := l.Once(t.Context()) // what an audit checks
	if whole == nil {
		t.Fatal(err)
	}
	objects := whole.Objects
	pager := &panickingPager{pagedReader: reader, kind: "Pod"}
	pager.times.Store(1)
	l.pager = pager
	var logged fixtures.SyncBuffer
	l.opts.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	l.opts.Interval = 200 * time.Millisecond
	ended := make(audits, 4)
	l.opts.Observer = ended
	running(t, l)
	for i, want := range []int{-1, objects} {
		select {
		case got := <-ended:
			if got != want {
				t.Fatalf("audit %d checked %d objects (-1: failed), want %d", i+1, got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("audit %d did not end", i+1)
		}
	}
	log := logged.String()
	for _, want := range []string{"background audit: panic", "a bug in the audit", "panickingPager", "background audit failed", ErrPanicked.Error()} {
		if !strings.Contains(log, want) {
			t.Errorf("the log does not say %q:\n%s", want, log)
		}
	}
}
