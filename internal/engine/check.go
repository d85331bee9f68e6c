package engine

import (
	"context"
	"fmt"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// selfCheckReview is a Pod CREATE outside any tenant: every policy must be
// able to answer it.
var selfCheckReview = []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
 "uid":"self-check","kind":{"group":"","version":"v1","kind":"Pod"},
 "resource":{"group":"","version":"v1","resource":"pods"},
 "namespace":"tenantguard-self-check","name":"self-check","operation":"CREATE",
 "userInfo":{"username":"tenantguard:self-check"},
 "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"self-check","namespace":"tenantguard-self-check"},
  "spec":{"containers":[{"name":"c","image":"c"}]}}}}`)

// Check reviews a synthetic request, so that a policy whose entrypoints are
// missing or answer in the wrong shape is refused when it is loaded rather
// than failing every request afterwards.
func (e *Engine) Check(ctx context.Context) error {
	req, err := admission.Decode(selfCheckReview)
	if err != nil {
		return err
	}
	// On the caller's goroutine: a reload must not queue behind requests
	// for the pool, nor fail because the pool has stopped. Nor is it
	// refused when its context ends (a shutdown): an ended request is not
	// evaluated, but the check is of the policy, and takes microseconds.
	unpooled := *e
	unpooled.pool = nil
	if _, err := unpooled.Review(context.WithoutCancel(ctx), req, clusterview.New(e.registry.TenantLabel())); err != nil {
		return fmt.Errorf("self-check: %w", err)
	}
	return nil
}
