package auditloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tenantguard/tenantguard/internal/audit"
	"github.com/tenantguard/tenantguard/internal/reconcile"
	"github.com/tenantguard/tenantguard/internal/reports"
)

// ErrNoReportCRD is the error of an audit whose report kind the cluster
// does not serve: its rows stand (metrics, logs), no report is written.
var ErrNoReportCRD = errors.New("the report CRD is not installed, so no report is written")

// write applies the reports of the result's rows, the cluster's saying what
// could not be checked (its problems: kinds not listed, objects the rules
// could not decide), and deletes the instance's reports of namespaces
// without rows; it counts in the result the reports written, left as they
// were and pruned. The rows that unchecked picks (what could not be
// checked), when it is not nil, are carried over from the reports there
// are into the result: what the audit could not check keeps what the last
// audit found of it, and a namespace with no other rows keeps its report;
// if the reports cannot be read, none is written or pruned.
// A report is rewritten only when it would
// say something else than it does (its digest, timestamps left out) or
// another manager changed it: an audit that finds what the one before it
// found writes nothing. Without the report CRD in the cluster it writes
// nothing and says so.
func (l *Loop) write(ctx context.Context, result *Result, unchecked func(*audit.Row) bool) error {
	opts := reports.Options{Format: l.opts.Format, Name: l.opts.Instance.Name(), Labels: l.opts.Instance.Labels(), Time: time.Now()}
	for _, err := range result.Problems {
		opts.Errors = append(opts.Errors, fmt.Sprintf("the audit could not check these objects; the reports give the rows the last audit found of them: %v", err))
	}
	// The reports there are, by namespace ("" the cluster's): a list
	// that fails leaves every report written and none pruned.
	existing, errs := map[string]*metav1.PartialObjectMetadata{}, []error(nil)
	for _, cluster := range []bool{false, true} {
		if err := l.ours(ctx, cluster, existing); err != nil {
			errs = append(errs, err)
		}
	}
	listed := len(errs) == 0
	if unchecked != nil {
		if !listed {
			// Written without them, the reports would drop the rows
			// of what could not be checked.
			return errors.Join(errs...)
		}
		carried, err := l.carried(ctx, existing, unchecked, result.Rows)
		if err != nil {
			return err
		}
		result.Rows, result.Carried = append(result.Rows, carried...), len(carried)
		audit.Sort(result.Rows)
	}
	// One report built at a time, written, then dropped: a tightened
	// registry can flag every pod of the cluster.
	desired := map[string]bool{}
	for namespace, report := range reports.Reports(result.Rows, opts) {
		desired[namespace] = true
		if l.current(existing[namespace], report) {
			result.Unchanged++
			continue
		}
		err := l.writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(report), client.FieldOwner(reconcile.FieldManager(l.opts.Instance)), client.ForceOwnership)
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("%w: %s (install it, or choose another --audit-report-format): %w", ErrNoReportCRD, report.GetKind(), err)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("writing the report of namespace %q: %w", namespace, err))
			continue
		}
		result.Reports++
	}
	if !listed {
		return errors.Join(errs...)
	}
	for namespace, r := range existing {
		if desired[namespace] {
			continue
		}
		if err := l.writer.Delete(ctx, r); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("pruning the report of namespace %q: %w", namespace, err))
			continue
		}
		result.Pruned++
	}
	return errors.Join(errs...)
}

// carried are the rows of the reports in existing that unchecked picks, read
// back page by page: those of objects this audit could not check, as the
// last audit found them. Only reports no other manager has changed give
// theirs (an edit is the audit's to undo, not to keep), and an object that
// has rows in found (a kind whose list was refused after its first pages)
// keeps those alone.
func (l *Loop) carried(ctx context.Context, existing map[string]*metav1.PartialObjectMetadata, unchecked func(*audit.Row) bool, found []audit.Row) ([]audit.Row, error) {
	fresh := map[objectKey]bool{}
	for i := range found {
		if unchecked(&found[i]) {
			fresh[keyOf(&found[i])] = true
		}
	}
	var rows []audit.Row
	for _, cluster := range []bool{false, true} {
		gvk := l.opts.Format.GVK(cluster)
		for token := ""; ; {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			err := l.reader.List(ctx, list, client.MatchingLabelsSelector{Selector: l.opts.Instance.Selector()}, client.Limit(carryPage), client.Continue(token))
			if meta.IsNoMatchError(err) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("reading the %s reports, whose rows of what the audit could not check it keeps: %w", gvk.Kind, err)
			}
			for i := range list.Items {
				r := &list.Items[i]
				ours := existing[r.GetNamespace()]
				if ours == nil || ours.UID != r.GetUID() || !l.asWritten(ours) { // the report ours found, unchanged by others
					continue
				}
				for _, row := range reports.Rows(r) {
					if unchecked(&row) && !fresh[keyOf(&row)] {
						rows = append(rows, row)
					}
				}
			}
			if token = list.GetContinue(); token == "" {
				break
			}
		}
	}
	return rows, nil
}

// carryPage is how many reports one page of carried's lists holds: a report
// can take about 1 MiB (MaxResultBytes).
const carryPage = 10

// ours adds to existing, by namespace, the metadata of the instance's
// reports (by its labels, name and field manager), namespaced or the
// cluster's. A cluster without the report CRD has none.
func (l *Loop) ours(ctx context.Context, cluster bool, existing map[string]*metav1.PartialObjectMetadata) error {
	gvk := l.opts.Format.GVK(cluster)
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := l.reader.List(ctx, list, client.MatchingLabelsSelector{Selector: l.opts.Instance.Selector()}); err != nil {
		if meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("listing the %s reports: %w", gvk.Kind, err)
	}
	for i := range list.Items {
		r := &list.Items[i]
		if r.Name != l.opts.Instance.Name() || !l.appliedByUs(r) {
			continue
		}
		r.SetGroupVersionKind(gvk)
		existing[r.Namespace] = r
	}
	return nil
}

// current is true when r, the report there is, says what report would:
// the same digest, and no other manager owns any of its fields but labels
// and annotations of its own (kubectl edit of its results, say, is undone;
// a label someone added is left, and costs no write each audit).
func (l *Loop) current(r *metav1.PartialObjectMetadata, report *unstructured.Unstructured) bool {
	return r != nil && r.Annotations[reports.DigestAnnotation] == report.GetAnnotations()[reports.DigestAnnotation] && l.asWritten(r)
}

// asWritten is true when no other manager than the audit owns any of r's
// fields but labels and annotations of its own.
func (l *Loop) asWritten(r *metav1.PartialObjectMetadata) bool {
	for _, f := range r.ManagedFields {
		ours := f.Manager == reconcile.FieldManager(l.opts.Instance) && f.Operation == metav1.ManagedFieldsOperationApply
		if !ours && !metadataOnly(f.FieldsV1) {
			return false
		}
	}
	return true
}

// metadataOnly is true when fields, a manager's, are labels or annotations
// of a report but its digest: what the audit does not write.
func metadataOnly(fields *metav1.FieldsV1) bool {
	if fields == nil {
		return true
	}
	var top, meta, annotations map[string]json.RawMessage
	if json.Unmarshal(fields.GetRawBytes(), &top) != nil {
		return false
	}
	for key, raw := range top {
		switch {
		case key == "f:metadata":
			if json.Unmarshal(raw, &meta) != nil {
				return false
			}
		case key != ".":
			return false
		}
	}
	for key, raw := range meta {
		switch key {
		case "f:annotations":
			if json.Unmarshal(raw, &annotations) != nil {
				return false
			}
		case "f:labels":
		default:
			return false
		}
	}
	_, digest := annotations["f:"+reports.DigestAnnotation]
	return !digest
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
