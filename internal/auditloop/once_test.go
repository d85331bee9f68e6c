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
// API server does with limit and continue (Pager), with their kinds left
// out of the items as the API server leaves them out, and counts its
// requests. Its List answers the prune's list of reports: no report CRD in
// this cluster.
type pagedReader struct {
	client.Reader
	mapper   meta.RESTMapper
	objects  map[string][]map[string]any // by kind
	requests int
}

func (r *pagedReader) Page(_ context.Context, gvr schema.GroupVersionResource, limit int64, token string) ([]byte, error) {
	r.requests++
	if limit <= 0 {
		return nil, errors.New("the audit must list whole objects page by page")
	}
	gvk, err := r.mapper.KindFor(gvr)
	if err != nil {
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
	r.requests++
	return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "openreports.io", Kind: "Report"}}
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
	view := clusterview.New("tenantguard.io/tenant")
	mapper := meta.NewDefaultRESTMapper(nil)
	reader := &pagedReader{mapper: mapper, objects: map[string][]map[string]any{}}
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
	l := New(store, reader, reader, fake.NewClientBuilder().Build(), mapper, Options{PageSize: 2, Batch: 3})
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
