package engine

import (
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/scale"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// TestAnExistingObjectIsNotCountedAgainstItself: tenant t0 is exactly at
// its quotas (10 namespaces, 200 pods). Creating one more is refused; the
// objects it holds, reviewed as existing, are not, not even while another
// create is being decided (which may yet be refused); an object the view
// has not seen is counted as a new one, and so is a create admitted and
// not seen yet.
func TestAnExistingObjectIsNotCountedAgainstItself(t *testing.T) {
	e, err := New(t.Context(), scaleRegistry(t, 1), Options{})
	if err != nil {
		t.Fatal(err)
	}
	otherNamespace := quota.Claim{Key: clusterview.NamespacesKey, Name: "t0-ns11"}
	otherPod := quota.Claim{Key: "pods", Namespace: "t0-ns3", Name: "other"}
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
		// held, when set, is another create's place, taken before the
		// review; admitted keeps it, else it is being decided.
		held     *quota.Claim
		admitted bool
	}{
		{"a pod created at the quota is refused", existingPod, false, "tenant-quota", nil, false},
		{"a pod the tenant holds at its quota is not refused", existingPod, true, "", nil, false},
		{"a pod the view has not seen is counted as a new one", newPod, true, "tenant-quota", nil, false},
		{"a namespace created at the quota is refused", existingNamespace, false, "namespace-quota", nil, false},
		{"a namespace the tenant holds at its quota is not refused", existingNamespace, true, "", nil, false},
		{"a namespace the view has not seen is counted as a new one", newNamespace, true, "namespace-quota", nil, false},
		{"a pod the tenant holds is not refused while another pod's create is decided", existingPod, true, "", &otherPod, false},
		{"a pod the tenant holds is refused once another pod's create is admitted past the quota", existingPod, true, "tenant-quota", &otherPod, true},
		{"a namespace the tenant holds is not refused while another namespace's create is decided", existingNamespace, true, "", &otherNamespace, false},
		{"a namespace the tenant holds is refused once another namespace's create is admitted past the quota", existingNamespace, true, "namespace-quota", &otherNamespace, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view := clusterview.New(registry.DefaultTenantLabel)
			scale.Fill(view, 1, 10, 20)
			if tt.held != nil {
				_, hold := view.Reserve(*tt.held, "", []string{"t0"}, time.Minute)
				if tt.admitted {
					hold.Keep()
				} else {
					defer hold.Release()
				}
			}
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
