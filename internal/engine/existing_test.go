package engine

import (
	"testing"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/scale"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// TestAnExistingObjectIsNotCountedAgainstItself: tenant t0 is exactly at
// its quotas (10 namespaces, 200 pods). Creating one more is refused; the
// objects it holds, reviewed as existing, are not; an object the view has
// not seen is counted as a new one.
func TestAnExistingObjectIsNotCountedAgainstItself(t *testing.T) {
	e, err := New(t.Context(), scaleRegistry(t, 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	view := clusterview.New(registry.DefaultTenantLabel)
	scale.Fill(view, 1, 10, 20)
	existingPod := podCreate(t, 0, podSpec)
	existingPod.Name = "p7" // in t0-ns3, as the view holds it
	newPod := podCreate(t, 0, podSpec)
	existingNamespace := namespaceCreate(t, "t0-ns3", `{"tenantguard.io/tenant":"t0"}`)
	newNamespace := namespaceCreate(t, "t0-ns10", `{"tenantguard.io/tenant":"t0"}`)
	tests := []struct {
		name     string
		req      *admission.Request
		existing bool
		wantDeny string
	}{
		{"a pod created at the quota is refused", existingPod, false, "tenant-quota"},
		{"a pod the tenant holds at its quota is not refused", existingPod, true, ""},
		{"a pod the view has not seen is counted as a new one", newPod, true, "tenant-quota"},
		{"a namespace created at the quota is refused", existingNamespace, false, "namespace-quota"},
		{"a namespace the tenant holds at its quota is not refused", existingNamespace, true, ""},
		{"a namespace the view has not seen is counted as a new one", newNamespace, true, "namespace-quota"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			review := e.Review
			if tt.existing {
				review = e.ReviewExisting
			}
			d, err := review(t.Context(), tt.req, view)
			if err != nil {
				t.Fatal(err)
			}
			var denied []string
			for _, v := range d.Deny {
				denied = append(denied, v.ID)
			}
			switch {
			case tt.wantDeny == "" && len(denied) > 0:
				t.Errorf("refused with %v, want admitted", denied)
			case tt.wantDeny != "" && (len(denied) != 1 || denied[0] != tt.wantDeny):
				t.Errorf("refused with %v, want only %s", denied, tt.wantDeny)
			}
		})
	}
}

// namespaceCreate is t0's owner creating namespace name with labels (JSON).
func namespaceCreate(tb testing.TB, name, labels string) *admission.Request {
	tb.Helper()
	req, err := admission.Decode([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"","version":"v1","kind":"Namespace"},"resource":{"group":"","version":"v1","resource":"namespaces"},"name":"` + name + `","operation":"CREATE","userInfo":{"username":"u0","groups":["system:authenticated"]},"object":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `","labels":` + labels + `}}}}`))
	if err != nil {
		tb.Fatal(err)
	}
	return req
}
