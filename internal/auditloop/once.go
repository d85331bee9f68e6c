package auditloop

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/audit"
)

// Result is what one audit found and did.
type Result struct {
	// Objects is how many objects were checked.
	Objects int
	// Rows are the violations, sorted.
	Rows []audit.Row
	// Reports and Pruned count the reports written and deleted.
	Reports, Pruned int
}

// The resource and kind of Namespaces.
var (
	namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
)

// Once audits the cluster as it is and writes the reports. A result with
// an error is an audit whose reports were not all written.
func (l *Loop) Once(ctx context.Context) (*Result, error) {
	e := l.store.Engine()
	if e == nil {
		return nil, fmt.Errorf("no registry in force yet")
	}
	a := audit.New(e, l.store.View(), l.opts.Managers)
	result := &Result{}
	checked := 0
	// worked is the time the batch under way took to check, list requests
	// left out (they wait on the API server).
	var worked time.Duration
	check := func(o *audit.Object) error {
		started := time.Now()
		if !a.Audits(o) {
			return nil
		}
		rows, err := a.Check(ctx, o)
		if err != nil {
			// One object the rules cannot decide (admission could
			// not either) does not stop the audit.
			l.opts.Logger.Warn("background audit: an object could not be checked", "kind", o.GVK.Kind, "namespace", o.Namespace, "name", o.Name, "error", err.Error())
			return nil
		}
		result.Objects++
		result.Rows = append(result.Rows, rows...)
		checked++
		runtime.Gosched()
		worked += time.Since(started)
		if checked%l.opts.Batch == 0 {
			// Admission first: a pause between batches.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(l.pause(worked)):
			}
			worked = 0
		}
		return nil
	}
	if err := l.list(ctx, namespaceGVR, namespaceGVK, check); err != nil {
		return nil, err
	}
	// unlisted are the resources tenantguard may not list: a kind of a rule
	// family of one's own that its RBAC does not grant. They do not keep
	// the other kinds' reports from being written; the cluster's report
	// says what was left out. Any other failure fails the audit, as one
	// that would heal: it leaves the reports as they were.
	var unlisted []error
	for _, gr := range a.Resources() {
		gvr, err := l.mapper.ResourceFor(gr.WithVersion(""))
		if meta.IsNoMatchError(err) {
			continue // not served by this cluster (the Gateway API, say)
		}
		var gvk schema.GroupVersionKind
		if err == nil {
			gvk, err = l.mapper.KindFor(gvr)
		}
		if err != nil {
			return nil, fmt.Errorf("finding the kind of %s: %w", gr, err)
		}
		if err := l.list(ctx, gvr, gvk, check); err != nil {
			if ctx.Err() != nil || !apierrors.IsForbidden(err) {
				return nil, err
			}
			unlisted = append(unlisted, err)
		}
	}
	audit.Sort(result.Rows)
	var err error
	result.Reports, result.Pruned, err = l.write(ctx, result.Rows, unlisted)
	// The rows stand even when the reports could not be written.
	return result, errors.Join(append(unlisted, err)...)
}

// pause is how long the audit waits after a batch that took worked: long
// enough that it works Share of the time, and at least Pause.
func (l *Loop) pause(worked time.Duration) time.Duration {
	return max(l.opts.Pause, time.Duration(float64(worked)*(1/l.opts.Share-1)))
}

// list calls each with every object of a resource, of kind gvk, in all
// namespaces, listed from the API server page by page.
func (l *Loop) list(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, each func(*audit.Object) error) error {
	for token := ""; ; {
		page, err := l.pager.Page(ctx, gvr, l.opts.PageSize, token)
		if err != nil {
			return fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		items, next, err := DecodePage(l.cache, page)
		if err != nil {
			return fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		for _, item := range items {
			o := audit.ObjectOf(gvk, item)
			if err := each(&o); err != nil {
				return err
			}
		}
		if token = next; token == "" {
			return nil
		}
	}
}
