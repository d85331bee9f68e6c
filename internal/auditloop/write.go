package auditloop

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tenantguard/tenantguard/internal/audit"
	"github.com/tenantguard/tenantguard/internal/reconcile"
	"github.com/tenantguard/tenantguard/internal/reports"
)

// ErrNoReportCRD is the error of an audit whose report kind the cluster
// does not serve: its rows stand (metrics, logs), no report is written.
var ErrNoReportCRD = errors.New("the report CRD is not installed, so no report is written")

// write applies the reports of rows, the cluster's saying what could not be
// checked (problems: kinds not listed, objects the rules could not
// decide), and deletes the instance's reports of namespaces without rows
// but those in kept, where objects could not be checked: how many it wrote
// and pruned. Without the report CRD in the cluster it writes nothing and
// says so.
func (l *Loop) write(ctx context.Context, rows []audit.Row, problems []error, kept map[string]bool) (written, pruned int, err error) {
	opts := reports.Options{Format: l.opts.Format, Name: l.opts.Instance.Name(), Labels: l.opts.Instance.Labels(), Time: time.Now()}
	for _, err := range problems {
		opts.Errors = append(opts.Errors, fmt.Sprintf("the audit could not check these objects, so none of their rows is in any report: %v", err))
	}
	// One report built at a time, written, then dropped: a tightened
	// registry can flag every pod of the cluster.
	desired := map[string]bool{}
	var errs []error
	for namespace, report := range reports.Reports(rows, opts) {
		desired[namespace] = true
		err := l.writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(report), client.FieldOwner(reconcile.FieldManager(l.opts.Instance)), client.ForceOwnership)
		if meta.IsNoMatchError(err) {
			return 0, 0, fmt.Errorf("%w: %s (install it, or choose another --audit-report-format): %w", ErrNoReportCRD, report.GetKind(), err)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("writing the report of namespace %q: %w", namespace, err))
			continue
		}
		written++
	}
	for _, cluster := range []bool{false, true} {
		n, err := l.prune(ctx, cluster, desired, kept)
		pruned += n
		errs = append(errs, err)
	}
	return written, pruned, errors.Join(errs...)
}

// prune deletes the instance's reports (by its labels, name and field
// manager) that are not desired, but those of the namespaces kept.
func (l *Loop) prune(ctx context.Context, cluster bool, desired, kept map[string]bool) (int, error) {
	gvk := l.opts.Format.GVK(cluster)
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := l.reader.List(ctx, list, client.MatchingLabelsSelector{Selector: l.opts.Instance.Selector()}); err != nil {
		if meta.IsNoMatchError(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("listing the %s reports: %w", gvk.Kind, err)
	}
	pruned := 0
	var errs []error
	for i := range list.Items {
		r := &list.Items[i]
		if desired[r.Namespace] || kept[r.Namespace] || r.Name != l.opts.Instance.Name() || !l.appliedByUs(r) {
			continue
		}
		r.SetGroupVersionKind(gvk)
		if err := l.writer.Delete(ctx, r); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("pruning the report of namespace %q: %w", r.Namespace, err))
			continue
		}
		pruned++
	}
	return pruned, errors.Join(errs...)
}

// appliedByUs is true when the instance's field manager applied the report.
func (l *Loop) appliedByUs(obj metav1.Object) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == reconcile.FieldManager(l.opts.Instance) && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}
