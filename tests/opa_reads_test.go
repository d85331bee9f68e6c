package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/scale"
)

// readRecorder is OPA's in-memory store, as `opa run --server
// --optimize-store-for-read-speed` keeps data, recording the paths under
// data.kubernetes that evaluation reads.
type readRecorder struct {
	storage.Store
	mu    sync.Mutex
	reads []string
}

func (r *readRecorder) Read(ctx context.Context, txn storage.Transaction, path storage.Path) (any, error) {
	if len(path) > 0 && path[0] == "kubernetes" {
		r.mu.Lock()
		r.reads = append(r.reads, path.String())
		r.mu.Unlock()
	}
	return r.Store.Read(ctx, txn, path)
}

// take returns the paths read since the last take.
func (r *readRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reads
	r.reads = nil
	return out
}

// TestOPABundleReadsOnlyWhatTheRequestNeeds evaluates the bundle's
// validating entrypoint on the scale corpus over the scale cluster laid out
// as kube-mgmt replicates it, recording what it reads of data.kubernetes. A
// request that needs no tenant-wide count reads its own namespace (and a
// created pod the PriorityClass its tenant defaults to) and nothing else of
// the cluster: never the map of every namespace or of every object of a
// resource. One that needs a count (scale.Request's Counted) reads those
// maps too, and the objects of its tenant's namespaces, and no other
// namespace's. Every decision is the corpus's.
func TestOPABundleReadsOnlyWhatTheRequestNeeds(t *testing.T) {
	// the corpus's requests are in namespace ns3 of their tenant, and its
	// namespace creates are refused: every tenant has its 10 namespaces
	const tenants, namespaces, pods = 4, 10, 2
	snap, err := registry.Parse("scale.yaml", scale.Registry(tenants))
	if err != nil {
		t.Fatal(err)
	}
	b, err := export.Bundle(snap, export.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kube := map[string]map[string]any{}
	scale.Objects(tenants, namespaces, pods, func(o clusterview.Object) {
		if kube[o.Resource] == nil {
			kube[o.Resource] = map[string]any{}
		}
		obj := map[string]any{"metadata": map[string]any{"name": o.Name, "namespace": o.Namespace, "labels": o.Labels}}
		if o.PriorityClass != nil {
			obj["value"] = o.PriorityClass.Value
		}
		if o.Namespace == "" {
			kube[o.Resource][o.Name] = obj
			return
		}
		byName, _ := kube[o.Resource][o.Namespace].(map[string]any)
		if byName == nil {
			byName = map[string]any{}
			kube[o.Resource][o.Namespace] = byName
		}
		byName[o.Name] = obj
	})
	data := map[string]any{"kubernetes": roundTrip(t, kube)}
	for k, v := range b.Data {
		data[k] = v
	}
	store := &readRecorder{Store: inmem.NewFromObjectWithOpts(roundTrip(t, data).(map[string]any), inmem.OptReturnASTValuesOnRead(true))}
	opts := []func(*rego.Rego){rego.Query("data.tenantguard.kubernetes.validate.response.allowed"), rego.Store(store)}
	for _, m := range b.Modules {
		if !strings.HasSuffix(m.Path, "_test.rego") {
			opts = append(opts, rego.Module(m.Path, string(m.Raw)))
		}
	}
	query, err := rego.New(opts...).PrepareForEval(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// the objects of a resource in every namespace of the tenant of ns
	tenantObjects := func(resource, ns string) []string {
		tenant, _, _ := strings.Cut(ns, "-")
		var out []string
		for j := range namespaces {
			out = append(out, fmt.Sprintf("/kubernetes/%s/%s-ns%d", resource, tenant, j))
		}
		return out
	}
	counted := 0
	for _, req := range scale.Corpus(tenants, 20) {
		t.Run(fmt.Sprintf("%s/%s", req.Kind, req.UID), func(t *testing.T) {
			var review struct {
				Request struct {
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
					Resource  struct {
						Resource string `json:"resource"`
					} `json:"resource"`
				} `json:"request"`
			}
			var input any
			if err := json.Unmarshal(req.Body, &review); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(req.Body, &input); err != nil {
				t.Fatal(err)
			}
			store.take()
			rs, err := query.Eval(t.Context(), rego.EvalInput(input))
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 || rs[0].Expressions[0].Value != req.Allowed {
				t.Errorf("allowed: %v, want %t", rs, req.Allowed)
			}
			ns := review.Request.Namespace
			if ns == "" {
				ns = review.Request.Name
			}
			own := []string{"/kubernetes/namespaces/" + ns, "/kubernetes/priorityclasses/tenant-low"}
			// a count reads every namespace, to find its tenant's (or, when
			// fewer namespaces hold objects of the resource, those), then
			// the objects of the tenant's namespaces
			if resource := review.Request.Resource.Resource; req.Counted {
				own = append(own, "/kubernetes/namespaces", "/kubernetes/"+resource)
				own = append(own, tenantObjects(resource, ns)...)
			}
			var others []string
			for _, path := range store.take() {
				if !slices.Contains(own, path) {
					others = append(others, path)
				}
			}
			if len(others) > 0 {
				t.Errorf("read %q beyond what it needs (counted: %t)", others, req.Counted)
			}
			if req.Counted {
				counted++
			}
		})
	}
	if counted == 0 {
		t.Error("no counted request in the corpus")
	}
}

// roundTrip gives v as encoding/json decodes it, the form OPA's store
// takes.
func roundTrip(t testing.TB, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
