package auditloop

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// pagedReader serves the objects of a fixture file page by page, as the
// API server does with limit and continue, and counts its requests.
type pagedReader struct {
	client.Reader
	objects  map[string][]unstructured.Unstructured // by list kind
	requests int
}

func (r *pagedReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.requests++
	var o client.ListOptions
	o.ApplyOptions(opts)
	u, ok := list.(*unstructured.UnstructuredList)
	if !ok {
		// The reports the prune lists: no report CRD in this cluster.
		return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "openreports.io", Kind: "Report"}}
	}
	if o.Limit == 0 {
		return errors.New("the audit must list whole objects page by page")
	}
	all := r.objects[u.GetKind()]
	start := 0
	if o.Continue != "" {
		start, _ = strconv.Atoi(o.Continue)
	}
	end := min(start+int(o.Limit), len(all))
	u.Items = append([]unstructured.Unstructured(nil), all[start:end]...)
	u.SetContinue("")
	if end < len(all) {
		u.SetContinue(strconv.Itoa(end))
	}
	return nil
}

func TestAnAuditListsPageByPageAndFindsWhatTheOfflineAuditFinds(t *testing.T) {
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
	reader := &pagedReader{objects: map[string][]unstructured.Unstructured{}}
	view := clusterview.New("tenantguard.io/tenant")
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, item := range list.Items {
		u := unstructured.Unstructured{Object: item}
		reader.objects[u.GetKind()+"List"] = append(reader.objects[u.GetKind()+"List"], u)
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
	l := &Loop{store: store, reader: reader, writer: fake.NewClientBuilder().Build(), mapper: mapper, opts: Options{PageSize: 2, Batch: 3}}
	l.opts.defaults()
	l.opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))

	result, err := l.Once(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if result.Reports != 4 {
		t.Errorf("%d reports written, want one for each of the 4 namespaces with violations", result.Reports)
	}
	var got []string
	for _, r := range result.Rows {
		got = append(got, r.Namespace+"/"+r.Kind+"/"+r.Name+"/"+r.Rule)
	}
	want := []string{"gas-web/Service/web/service-type", "oil-dev/Pod/debug/host-path", "oil-prod/Deployment/edge/host-network", "oil-prod/PersistentVolumeClaim/data/storage-class", "steel-apps/Pod/app/image-registry"}
	if len(got) != len(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d %s, want %s", i, got[i], want[i])
		}
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
