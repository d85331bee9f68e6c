package quota

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Prune deletes the ledgers (of counts and of usage) of the tenants that
// keep does not keep, the tenants removed from the registry, once all their
// entries have expired: nothing else would, and a cluster whose tenants come
// and go would gather them. Each deletion is conditional on the ledger being
// the one listed, so that a write of a replica still deciding with the old
// registry wins (its next write after the deletion creates the ledger
// again, and a later Prune deletes it). The ledger of hosts, which every
// tenant shares, and the ledgers of other instances (another name prefix)
// are left alone. It returns the names deleted and, when a removed tenant's
// ledger still holds entries in force, when the last of them expires (zero
// otherwise): the time to prune again.
func (l *StrictLedger) Prune(ctx context.Context, keep func(tenant string) bool) (deleted []string, next time.Time, err error) {
	list, err := l.configMaps.List(ctx, metav1.ListOptions{LabelSelector: TenantLabel})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("listing the quota ledgers: %w", err)
	}
	now := l.now()
	for i := range list.Items {
		cm := &list.Items[i]
		tenant := cm.Labels[TenantLabel]
		if tenant == hostsLedger || keep(tenant) || (cm.Name != l.prefix+tenant && cm.Name != l.prefix+tenant+usageSuffix) {
			continue
		}
		var last time.Time
		for _, e := range entriesOf[entry](cm) {
			if e.Expires.After(last) {
				last = e.Expires
			}
		}
		if now.Before(last) {
			if next.IsZero() || last.Before(next) {
				next = last
			}
			continue
		}
		err := l.configMaps.Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID, ResourceVersion: &cm.ResourceVersion}})
		switch {
		case err == nil:
			deleted = append(deleted, cm.Name)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// written or deleted since listed: the next Prune sees it
		default:
			return deleted, next, fmt.Errorf("deleting the quota ledger %s: %w", cm.Name, err)
		}
	}
	return deleted, next, nil
}
