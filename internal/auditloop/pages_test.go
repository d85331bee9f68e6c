package auditloop

import (
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// TestTheRESTPagerGivesTheAPIServersRefusalAsItsStatus: a refused list
// request's Status reaches the loop whole, through the client the loop
// uses on the API server: a 410's reason and its continue token (which
// DoRaw dropped), a 403's reason.
func TestTheRESTPagerGivesTheAPIServersRefusalAsItsStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Query().Get("continue") {
		case "old":
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{"continue":"now"},"status":"Failure","message":"The provided continue parameter is too old to display a consistent list result.","reason":"Expired","code":410}`))
		case "forbidden":
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \"x\" cannot list resource \"pods\"","reason":"Forbidden","code":403}`))
		default:
			_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`))
		}
	}))
	defer srv.Close()
	pager, err := NewRESTPager(&rest.Config{Host: srv.URL}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	if page, err := pager.Page(t.Context(), pods, 100, ""); err != nil || len(page) == 0 {
		t.Fatalf("a page: %q, %v", page, err)
	}
	_, err = pager.Page(t.Context(), pods, 100, "old")
	if next, ok := expiredContinue(err); !ok || next != "now" {
		t.Errorf("an expired token: %v gives %q, %v; want the token to go on with, now", err, next, ok)
	}
	if _, err := pager.Page(t.Context(), pods, 100, "forbidden"); !apierrors.IsForbidden(err) || err.Error() != `pods is forbidden: User "x" cannot list resource "pods"` {
		t.Errorf("a forbidden list: %v, want the API server's Status", err)
	}
}
