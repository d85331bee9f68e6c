package engine

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/fixtures"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// FuzzAdmit builds the policy input of arbitrary AdmissionReviews and
// evaluates it, seeded with every case of the shared corpus. Whatever
// decodes is decided without a panic; a decision is well formed (allowed
// exactly when nothing is denied, every violation with an id and a
// sentence); Admit decides as Validate does, and gives back every place it
// reserved for a refused create.
func FuzzAdmit(f *testing.F) {
	seeds, err := fixtures.Reviews()
	if err != nil {
		f.Fatal(err)
	}
	for _, body := range seeds {
		f.Add(body)
	}
	data, err := os.ReadFile(filepath.Join(fixtures.Dir(), "registry.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	snap, err := registry.Parse("registry.yaml", data)
	if err != nil {
		f.Fatal(err)
	}
	e, err := New(f.Context(), snap, Options{})
	if err != nil {
		f.Fatal(err)
	}
	objects, err := clusterview.LoadFile(fixtures.ClusterFile())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, ok := decodeFuzzed(t, body)
		if !ok {
			return
		}
		view := fixtureView(t, snap.TenantLabel(), objects)
		if d, err := e.Review(t.Context(), req, view); err == nil {
			wellFormed(t, d)
		}
		validated, verr := e.Validate(t.Context(), req, view)
		admitted, aerr := e.Admit(t.Context(), req, view, quota.LocalLedger{View: view})
		if (verr == nil) != (aerr == nil) {
			t.Fatalf("Validate error %v, Admit error %v", verr, aerr)
		}
		if verr != nil {
			return
		}
		wellFormed(t, admitted)
		if admitted.Allowed != validated.Allowed || !slices.Equal(ids(admitted.Deny), ids(validated.Deny)) {
			t.Fatalf("Admit decided %v %v, Validate %v %v", admitted.Allowed, ids(admitted.Deny), validated.Allowed, ids(validated.Deny))
		}
		if key, tenants := e.counted(req, view); !admitted.Allowed && key != "" {
			for _, tenant := range tenants {
				if n := view.Reserved(tenant, key); n != 0 {
					t.Fatalf("a refused create left %d places held in %s of %q", n, key, tenant)
				}
			}
		}
	})
}

func wellFormed(t *testing.T, d *admission.Decision) {
	t.Helper()
	if d.Allowed != (len(d.Deny) == 0) {
		t.Fatalf("allowed %v with denials %v", d.Allowed, d.Deny)
	}
	for _, v := range slices.Concat(d.Deny, d.Warn, d.DryRun) {
		if v.ID == "" || v.Msg == "" {
			t.Fatalf("a violation without an id or a sentence: %+v", v)
		}
	}
}

func ids(vs []admission.Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.ID
	}
	return out
}

// decodeFuzzed decodes a fuzzed AdmissionReview; not ok when it is refused,
// which must be as a bad review.
func decodeFuzzed(t *testing.T, body []byte) (*admission.Request, bool) {
	t.Helper()
	req, err := admission.Decode(body)
	if err != nil {
		if !errors.Is(err, admission.ErrBadReview) {
			t.Fatalf("a refusal that is not a bad review: %v", err)
		}
		return nil, false
	}
	return req, true
}

// fixtureView is a view of the corpus cluster's objects.
func fixtureView(tb testing.TB, label string, objects []clusterview.Object) *clusterview.View {
	tb.Helper()
	view := clusterview.New(label)
	for _, o := range objects {
		view.Upsert(o)
	}
	return view
}
