package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestASecondReplicaServesButDoesNotReconcile starts a second `tenantguard
// serve`: it answers admission (ready) while the first replica keeps the
// companion reconciler's Lease.
func TestASecondReplicaServesButDoesNotReconcile(t *testing.T) {
	ctx := t.Context()
	var holder string
	eventually(t, "the first replica holds the Lease", func(ctx context.Context) error {
		lease, err := cluster.Client.CoordinationV1().Leases("tenantguard-system").Get(ctx, "tenantguard-generator", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return errors.New("no holder")
		}
		holder = *lease.Spec.HolderIdentity
		return nil
	})
	url, logs, stop, err := cluster.Replica(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	defer func() {
		if t.Failed() {
			t.Log("second replica's logs:\n" + logs.String())
		}
	}()
	eventually(t, "the second replica ready", func(context.Context) error { return cluster.ReadyAt(url) })
	eventually(t, "the second replica waiting for the Lease", func(context.Context) error {
		if !strings.Contains(logs.String(), "Attempting to acquire leader lease") {
			return errors.New("not yet")
		}
		return nil
	})
	lease, err := cluster.Client.CoordinationV1().Leases("tenantguard-system").Get(ctx, "tenantguard-generator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := *lease.Spec.HolderIdentity; got != holder {
		t.Fatalf("the Lease moved from %s to %s", holder, got)
	}
	if strings.Contains(logs.String(), "Successfully acquired lease") {
		t.Fatal("the second replica acquired the Lease while the first holds it")
	}
}
