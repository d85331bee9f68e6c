package auditloop

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/internal/audit"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/metrics"
	"github.com/tenantguard/tenantguard/internal/reports"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// pagedReader serves the objects of a fixture file page by page, as the
// API server does with limit and continue (Pager), with their kinds left
// out of the items as the API server leaves them out, and counts its
// requests. Its List answers the prune's list of reports: no report CRD in
// this cluster.
type pagedReader struct {
	client.Reader
	mapper  meta.RESTMapper
	objects map[string][]map[string]any // by kind
	// forbidden is a kind the audit may not list; gone one the API
	// server no longer serves (its CRD deleted), which the mapper still
	// maps.
	forbidden, gone string
	// forbiddenAfterFirst has the forbidden kind's first page served,
	// the next ones refused: RBAC changed during the list.
	forbiddenAfterFirst bool
	// expireOnce are kinds whose first continue token is refused, as
	// expired (410), with a token to go on with; expired counts them.
	expireOnce map[string]bool
	expired    int
	// rewind has an expired list go on from its start, as one whose
	// objects before the token changed: those are listed again.
	rewind   bool
	mu       sync.Mutex
	requests int
}

// requested is how many requests the reader answered.
func (r *pagedReader) requested() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

func (r *pagedReader) Page(_ context.Context, gvr schema.GroupVersionResource, limit int64, token string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if limit <= 0 {
		return nil, errors.New("the audit must list whole objects page by page")
	}
	gvk, err := r.mapper.KindFor(gvr)
	if err != nil {
		return nil, err
	}
	if gvk.Kind == r.forbidden && (token != "" || !r.forbiddenAfterFirst) {
		return nil, apierrors.NewForbidden(gvr.GroupResource(), "", errors.New(`User "system:serviceaccount:tenantguard-system:tenantguard" cannot list resource`))
	}
	if gvk.Kind == r.gone {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), "")
	}
	if token != "" && r.expireOnce[gvk.Kind] {
		delete(r.expireOnce, gvk.Kind)
		r.expired++
		err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result.")
		err.ErrStatus.Continue = token // where the list was, in the cluster as it is now
		if r.rewind {
			err.ErrStatus.Continue = "0"
		}
		return nil, err
	}
	all := r.objects[gvk.Kind]
	start := 0
	if token != "" {
		start, _ = strconv.Atoi(token)
	}
	end := min(start+int(limit), len(all))
	next := ""
	if end < len(all) {
		next = strconv.Itoa(end)
	}
	items := make([]map[string]any, 0, end-start)
	for _, item := range all[start:end] {
		item = maps.Clone(item)
		delete(item, "apiVersion")
		delete(item, "kind")
		items = append(items, item)
	}
	return json.Marshal(map[string]any{"apiVersion": gvk.Version, "kind": gvk.Kind + "List", "metadata": map[string]any{"continue": next}, "items": items})
}

func (r *pagedReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "openreports.io", Kind: "Report"}}
}

// auditOfFixture is a loop auditing the audit fixture's cluster, listed
// page by page from reader, its reports written to writer.
func auditOfFixture(t *testing.T) (l *Loop, reader *pagedReader, writer client.Client) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtures.Dir(), "audit", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := yaml.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	view := clusterview.New("tenantguard.io/tenant")
	mapper := meta.NewDefaultRESTMapper(nil)
	reader = &pagedReader{mapper: mapper, objects: map[string][]map[string]any{}}
	for _, item := range list.Items {
		u := unstructured.Unstructured{Object: item}
		reader.objects[u.GetKind()] = append(reader.objects[u.GetKind()], item)
		o, err := clusterview.FromManifest(item)
		if err != nil {
			t.Fatal(err)
		}
		view.Upsert(o)
		mapper.Add(u.GroupVersionKind(), meta.RESTScopeNamespace)
	}
	store := state.New(view, state.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	registryDoc, err := os.ReadFile(filepath.Join(fixtures.Dir(), "registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.LoadRegistry(t.Context(), "test", registryDoc); err != nil {
		t.Fatal(err)
	}
	writer = fake.NewClientBuilder().Build()
	l = New(store, reader, reader, writer, mapper, Options{PageSize: 2, Batch: 3})
	l.opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return l, reader, writer
}

// rowNames are rows as namespace/kind/name/rule.
func rowNames(rows []audit.Row) []string {
	var names []string
	for _, r := range rows {
		names = append(names, r.Namespace+"/"+r.Kind+"/"+r.Name+"/"+r.Rule)
	}
	return names
}

func TestAnAuditListsPageByPageAndFindsWhatTheOfflineAuditFinds(t *testing.T) {
	l, reader, _ := auditOfFixture(t)
	result, err := l.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if result.Reports != 4 {
		t.Errorf("%d reports written, want one for each of the 4 namespaces with violations", result.Reports)
	}
	got := rowNames(result.Rows)
	want := []string{"gas-web/Service/web/service-type", "oil-dev/Pod/debug/host-path", "oil-prod/Deployment/edge/host-network", "oil-prod/PersistentVolumeClaim/data/storage-class", "steel-apps/Pod/app/image-registry"}
	if !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	if result.Objects != 16 {
		t.Errorf("%d objects checked, want the offline audit's 16", result.Objects)
	}
	// 8 Namespaces in 4 pages, 6 Pods in 3, the other kinds 1 each (2 for
	// the reports the prune lists).
	if reader.requests < 10 || reader.requests > 30 {
		t.Errorf("%d list requests: not a few per kind", reader.requests)
	}
}

func TestAPauseLetsTheAuditWorkItsShareOfTheTimeAndNoLessThanPause(t *testing.T) {
	l := &Loop{opts: Options{Share: 0.25}}
	l.opts.defaults()
	for _, tt := range []struct{ worked, want time.Duration }{
		{0, DefaultPause},
		{time.Millisecond, DefaultPause},
		{20 * time.Millisecond, 60 * time.Millisecond},
		{time.Second, 3 * time.Second},
	} {
		if got := l.pause(tt.worked); got != tt.want {
			t.Errorf("after a batch of %s, a pause of %s, want %s", tt.worked, got, tt.want)
		}
	}
	l.opts.Share = 2 // out of range: the default
	l.opts.defaults()
	if l.opts.Share != DefaultShare {
		t.Errorf("share %v, want the default %v", l.opts.Share, DefaultShare)
	}
}

// TestAKindTheAuditMayNotListLeavesTheOthersReported: RBAC that does not
// grant one kind (a rule family of one's own) fails that kind, not the
// audit: the other kinds' reports are written, the cluster's report lists
// the kind as an error result, and the audit still counts as failed.
func TestAKindTheAuditMayNotListLeavesTheOthersReported(t *testing.T) {
	l, reader, writer := auditOfFixture(t)
	reader.forbidden = "Service"
	result, err := l.Once(t.Context())
	if !apierrors.IsForbidden(err) {
		t.Fatalf("error %v, want the forbidden list", err)
	}
	if result == nil {
		t.Fatal("no result: the other kinds were not audited")
	}
	want := []string{"oil-dev/Pod/debug/host-path", "oil-prod/Deployment/edge/host-network", "oil-prod/PersistentVolumeClaim/data/storage-class", "steel-apps/Pod/app/image-registry"}
	if got := rowNames(result.Rows); !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	if result.Reports != 4 {
		t.Errorf("%d reports written, want the 3 namespaces' with rows and the cluster's", result.Reports)
	}
	cluster := clusterReport(t, l, writer)
	results, _, _ := unstructured.NestedSlice(cluster.Object, "results")
	errorsSeen, _, _ := unstructured.NestedInt64(cluster.Object, "summary", "error")
	if len(results) != 1 || errorsSeen != 1 {
		t.Fatalf("the cluster's report lists %v (summary error %d), want one error result", results, errorsSeen)
	}
	r := results[0].(map[string]any)
	if r["result"] != "error" || r["policy"] != reports.ErrorPolicy || !strings.Contains(r["message"].(string), "services is forbidden") {
		t.Fatalf("the cluster's report says %v, want the forbidden services", r)
	}
}

// TestAKindNoLongerServedIsLeftOut: a kind whose CRD was deleted while
// serve ran (the mapper still maps it, its list is NotFound) is left out
// as one the cluster never served, not a failed audit every interval.
func TestAKindNoLongerServedIsLeftOut(t *testing.T) {
	l, reader, _ := auditOfFixture(t)
	reader.gone = "Service"
	result, err := l.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"oil-dev/Pod/debug/host-path", "oil-prod/Deployment/edge/host-network", "oil-prod/PersistentVolumeClaim/data/storage-class", "steel-apps/Pod/app/image-registry"}
	if got := rowNames(result.Rows); !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}

// clusterReport is the cluster-scoped report the loop l wrote to writer.
func clusterReport(t *testing.T, l *Loop, writer client.Client) *unstructured.Unstructured {
	t.Helper()
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(reports.OpenReports.GVK(true))
	if err := writer.Get(t.Context(), client.ObjectKey{Name: l.opts.Instance.Name()}, cluster); err != nil {
		t.Fatalf("the cluster's report: %v", err)
	}
	return cluster
}

// observerFunc is an Observer that calls itself after each audit.
type observerFunc func()

func (f observerFunc) Audited(map[metrics.AuditKey]int, int, time.Duration, time.Time) { f() }
func (f observerFunc) AuditFailed()                                                    {}

// failures counts the audits an Observer is told failed.
type failures struct{ failed int }

func (f *failures) Audited(map[metrics.AuditKey]int, int, time.Duration, time.Time) {}
func (f *failures) AuditFailed()                                                    { f.failed++ }

// TestAKindNotListedFailsTheAuditWithoutTheReportCRDToo: a cluster without
// the report CRD is said and not counted as a failed audit, but a kind the
// audit may not list still is.
func TestAKindNotListedFailsTheAuditWithoutTheReportCRDToo(t *testing.T) {
	for _, forbidden := range []string{"", "Service"} {
		l, reader, _ := auditOfFixture(t)
		reader.forbidden = forbidden
		l.writer = interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
			Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
				return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "openreports.io", Kind: "Report"}}
			},
		})
		observer := &failures{}
		l.opts.Observer = observer
		l.auditLogged(t.Context())
		if want := map[string]int{"": 0, "Service": 1}[forbidden]; observer.failed != want {
			t.Errorf("forbidden %q: %d audits failed, want %d", forbidden, observer.failed, want)
		}
	}
}

// TestAnAuditThatFindsWhatTheLastOneFoundWritesNothing: the reports of a
// second audit of the same cluster say what the first ones say, so none is
// written again (their resource versions stay); a report whose results
// another manager changed is, and one another manager labelled is not.
func TestAnAuditThatFindsWhatTheLastOneFoundWritesNothing(t *testing.T) {
	l, _, _ := auditOfFixture(t)
	writer := fake.NewClientBuilder().WithReturnManagedFields().Build()
	l.reader, l.writer = metadataLister{writer}, writer
	first, err := l.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if first.Reports != 4 || first.Unchanged != 0 {
		t.Fatalf("first audit: %d reports written, %d unchanged, want 4 and 0", first.Reports, first.Unchanged)
	}
	versions := func() map[string]string {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(reports.OpenReports.GroupVersion.WithKind("ReportList"))
		if err := writer.List(t.Context(), list); err != nil {
			t.Fatal(err)
		}
		v := map[string]string{}
		for _, r := range list.Items {
			v[r.GetNamespace()] = r.GetResourceVersion()
		}
		return v
	}
	before := versions()
	second, err := l.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if second.Reports != 0 || second.Unchanged != 4 || second.Pruned != 0 {
		t.Errorf("second audit: %d written, %d unchanged, %d pruned, want 0, 4 and 0", second.Reports, second.Unchanged, second.Pruned)
	}
	if after := versions(); !maps.Equal(before, after) {
		t.Errorf("resource versions %v, then %v: a report was written again", before, after)
	}

	// Someone edits one report by hand: it is written back.
	edited := &unstructured.Unstructured{}
	edited.SetGroupVersionKind(reports.OpenReports.GVK(false))
	if err := writer.Get(t.Context(), client.ObjectKey{Namespace: "oil-dev", Name: l.opts.Instance.Name()}, edited); err != nil {
		t.Fatal(err)
	}
	edited.Object["results"] = []any{}
	if err := writer.Update(t.Context(), edited, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	third, err := l.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if third.Reports != 1 || third.Unchanged != 3 {
		t.Errorf("after an edit: %d written, %d unchanged, want oil-dev's written alone", third.Reports, third.Unchanged)
	}
	if err := writer.Get(t.Context(), client.ObjectKey{Namespace: "oil-dev", Name: l.opts.Instance.Name()}, edited); err != nil {
		t.Fatal(err)
	}
	if results, _, _ := unstructured.NestedSlice(edited.Object, "results"); len(results) != 1 {
		t.Errorf("oil-dev's report lists %v after the audit, want its row back", results)
	}

	// Someone labels it: a field the audit does not write, left as it is.
	labels := edited.GetLabels()
	labels["team"] = "oil"
	edited.SetLabels(labels)
	if err := writer.Update(t.Context(), edited, client.FieldOwner("kubectl-label")); err != nil {
		t.Fatal(err)
	}
	labelled := versions()
	fourth, err := l.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fourth.Reports != 0 || fourth.Unchanged != 4 || !maps.Equal(labelled, versions()) {
		t.Errorf("after a label: %d written, %d unchanged, want none written: a label is not the audit's to undo", fourth.Reports, fourth.Unchanged)
	}
}

// metadataLister lists the metadata of objects of kinds its client knows
// only as unstructured, as the API server does and the fake client cannot.
type metadataLister struct{ client.Client }

func (m metadataLister) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	partial, ok := list.(*metav1.PartialObjectMetadataList)
	if !ok {
		return m.Client.List(ctx, list, opts...)
	}
	all := &unstructured.UnstructuredList{}
	all.SetGroupVersionKind(partial.GroupVersionKind())
	if err := m.Client.List(ctx, all, opts...); err != nil {
		return err
	}
	for _, u := range all.Items {
		r := metav1.PartialObjectMetadata{}
		r.SetGroupVersionKind(u.GroupVersionKind())
		r.SetName(u.GetName())
		r.SetNamespace(u.GetNamespace())
		r.SetLabels(u.GetLabels())
		r.SetAnnotations(u.GetAnnotations())
		r.SetResourceVersion(u.GetResourceVersion())
		r.SetUID(u.GetUID())
		r.SetManagedFields(u.GetManagedFields())
		partial.Items = append(partial.Items, r)
	}
	return nil
}

// TestACountedKindOfAnIrregularPluralIsAudited: a quota on a CRD whose
// plural its kind's name does not give (Cactus, served as cacti) audits the
// objects listed from that resource: the audit takes the resource it
// listed, not a guess from the kind.
func TestACountedKindOfAnIrregularPluralIsAudited(t *testing.T) {
	l, reader, _ := auditOfFixture(t)
	countedKind(t, l, reader, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Cactus"}, "cacti", meta.RESTScopeNamespace)
	reader.objects["Cactus"] = []map[string]any{{"apiVersion": "example.com/v1", "kind": "Cactus", "metadata": map[string]any{"name": "prickly", "namespace": "steel-apps"}}}
	result, err := l.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := rowNames(result.Rows); !slices.Contains(got, "steel-apps/Cactus/prickly/tenant-quota") {
		t.Fatalf("rows %v, want the cactus over steel's quota of none", got)
	}
}

// TestACountedClusterScopedKindIsNotListed: a quota names a cluster-scoped
// kind, whose objects are in no tenant namespace: the audit does not list
// it, so a list it may not make does not fail it.
func TestACountedClusterScopedKindIsNotListed(t *testing.T) {
	l, reader, _ := auditOfFixture(t)
	countedKind(t, l, reader, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, "widgets", meta.RESTScopeRoot)
	reader.forbidden = "Widget"
	if _, err := l.Once(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// countedKind has the fixture's tenant steel count a kind (a quota of none
// on count/PLURAL.GROUP) and the cluster serve it as plural, with scope.
func countedKind(t *testing.T, l *Loop, reader *pagedReader, kind schema.GroupVersionKind, plural string, scope meta.RESTScope) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(fixtures.Dir(), "registry.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	steel := "      - name: steel\n        owners:\n          - {kind: User, name: sam}\n"
	if !strings.Contains(string(doc), steel) {
		t.Fatal("the fixture registry's tenant steel is not as this test expects")
	}
	doc = []byte(strings.Replace(string(doc), steel, steel+"        quotas: {count/"+plural+"."+kind.Group+": 0}\n", 1))
	if err := l.store.LoadRegistry(t.Context(), "test", doc); err != nil {
		t.Fatal(err)
	}
	reader.mapper.(*meta.DefaultRESTMapper).AddSpecific(kind, kind.GroupVersion().WithResource(plural), kind.GroupVersion().WithResource(strings.ToLower(kind.Kind)), scope)
}

// TestTheAuditRunsBetweenAdmissionRequests: the audit waits for the server
// to answer no admission request (up to QuietWait), here at its first
// page's decode, and goes on once none is left. (The wait before each
// object is not held apart: both come before the first object checked.)
func TestTheAuditRunsBetweenAdmissionRequests(t *testing.T) {
	l, reader, _ := auditOfFixture(t)
	whole, err := l.Once(t.Context())
	if whole == nil {
		t.Fatal(err)
	}
	requests := reader.requested()
	l.opts.QuietWait = time.Hour
	l.store.AdmitStart() // a request being answered
	type ended struct {
		result *Result
		err    error
	}
	done := make(chan ended, 1)
	go func() {
		r, err := l.Once(t.Context())
		done <- ended{r, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); reader.requested() == requests; {
		if time.Now().After(deadline) {
			t.Fatal("the audit listed nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("the audit ran beside a request being answered")
	case <-time.After(300 * time.Millisecond):
	}
	if got := reader.requested() - requests; got != 1 {
		t.Errorf("%d list requests while admission was busy, want the first page's alone", got)
	}
	l.store.AdmitEnd()
	select {
	case e := <-done:
		if e.result == nil || e.result.Objects != whole.Objects {
			t.Fatalf("after the request: %+v, %v; want %d objects checked", e.result, e.err, whole.Objects)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the audit did not go on once no request was left")
	}
}

// TestALoadThatNeverPausesCostsTheAuditOneWaitABatch: after a wait for
// admission to be quiet reaches its bound, the audit waits no more until
// its next pause, so a load that never pauses does not hold it up for
// QuietWait before every object and page.
func TestALoadThatNeverPausesCostsTheAuditOneWaitABatch(t *testing.T) {
	l, _, _ := auditOfFixture(t)
	l.opts.QuietWait, l.opts.Batch = 300*time.Millisecond, 1000 // no pause in this audit
	l.store.AdmitStart()                                        // never ends
	started := time.Now()
	result, err := l.Once(t.Context())
	took := time.Since(started)
	if result == nil {
		t.Fatal(err)
	}
	// One wait per object and page would be 300 ms for each of the
	// fixture's objects, and more.
	if took < 300*time.Millisecond || took > 4*time.Second {
		t.Errorf("the audit took %s, want one wait of 300 ms and its checks", took)
	}
}
