package auditloop

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
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
	// Rows are the violations, sorted: those found, and those of objects
	// that could not be checked carried over from the reports (Carried of
	// them).
	Rows    []audit.Row
	Carried int
	// Reports, Unchanged and Pruned count the reports written, left as
	// they were (they said what the audit found) and deleted.
	Reports, Unchanged, Pruned int
	// Problems are what kept the audit from checking every object: kinds
	// it may not list, objects the rules could not decide. Any fails it.
	Problems []error
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
	l.unquiet = false
	result := &Result{}
	checked := 0
	var failed checkFailures
	// worked is the time the batch under way took to check, list requests
	// left out (they wait on the API server).
	var worked time.Duration
	check := func(o *audit.Object) error {
		if !a.Audits(o) {
			return nil
		}
		l.waitQuiet(ctx)
		started := time.Now()
		rows, err := a.Check(ctx, o)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// One object the rules cannot decide (admission could
			// not either) does not stop the audit, but fails it: its
			// reports keep the rows the last audit found of it.
			if failed.add(o, err) {
				l.opts.Logger.Warn("background audit: an object could not be checked (the first of its kind in this audit)", "kind", o.GVK.Kind, "namespace", o.Namespace, "name", o.Name, "error", err.Error())
			}
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
			l.unquiet = false
		}
		return nil
	}
	if err := l.list(ctx, namespaceGVR, namespaceGVK, check); err != nil {
		return nil, err
	}
	// unlisted are the resources tenantguard may not list: a kind of a rule
	// family of one's own that its RBAC does not grant. They do not keep
	// the other kinds' reports from being written; the reports keep the
	// rows the last audit found of their objects, and the cluster's report
	// says what was left out. Any other failure fails the audit, as one
	// that would heal: it leaves the reports as they were.
	var unlisted []error
	unlistedKinds := map[schema.GroupKind]bool{}
	for _, gr := range a.Resources() {
		gvr, err := l.mapper.ResourceFor(gr.WithVersion(""))
		if meta.IsNoMatchError(err) {
			continue // not served by this cluster (the Gateway API, say)
		}
		var mapping *meta.RESTMapping
		if err == nil {
			var gvk schema.GroupVersionKind
			if gvk, err = l.mapper.KindFor(gvr); err == nil {
				mapping, err = l.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("finding the kind of %s: %w", gr, err)
		}
		if mapping.Scope.Name() == meta.RESTScopeNameRoot {
			continue // cluster-scoped: in no tenant namespace
		}
		if err := l.list(ctx, gvr, mapping.GroupVersionKind, check); err != nil {
			switch {
			case ctx.Err() == nil && apierrors.IsNotFound(err):
				// no longer served: a CRD deleted since the mapper
				// found it, which keeps what it found
			case ctx.Err() == nil && apierrors.IsForbidden(err):
				unlisted = append(unlisted, err)
				unlistedKinds[mapping.GroupVersionKind.GroupKind()] = true
			default:
				return nil, err
			}
		}
	}
	audit.Sort(result.Rows)
	// A list that went on after its snapshot expired may have seen an
	// object twice.
	result.Rows = slices.Compact(result.Rows)
	result.Problems = unlisted
	if err := failed.err(); err != nil {
		result.Problems = append(result.Problems, err)
	}
	var unchecked func(*audit.Row) bool
	if len(unlisted) > 0 || failed.count > 0 {
		unchecked = func(r *audit.Row) bool {
			key := keyOf(r)
			return unlistedKinds[key.kind] || failed.objects[key]
		}
	}
	err := l.write(ctx, result, unchecked)
	// The rows stand even when the reports could not be written.
	return result, errors.Join(append(slices.Clone(result.Problems), err)...)
}

// checkFailures are the objects an audit could not check: how many, which,
// in which namespaces ("" for those in none), and the first error of each
// kind.
type checkFailures struct {
	count      int
	objects    map[objectKey]bool
	namespaces map[string]bool
	first      []error
	kinds      map[schema.GroupVersionKind]bool
}

// objectKey is an object by kind, namespace and name: a row's or an
// audited object's, whatever the version it was read at.
type objectKey struct {
	kind            schema.GroupKind
	namespace, name string
}

// keyOf is the key of r's object.
func keyOf(r *audit.Row) objectKey {
	return objectKey{schema.FromAPIVersionAndKind(r.APIVersion, r.Kind).GroupKind(), r.Namespace, r.Name}
}

// add counts o, which err kept from being checked: true when it is the
// first of its kind.
func (f *checkFailures) add(o *audit.Object, err error) bool {
	if f.namespaces == nil {
		f.objects, f.namespaces, f.kinds = map[objectKey]bool{}, map[string]bool{}, map[schema.GroupVersionKind]bool{}
	}
	f.count++
	f.objects[objectKey{o.GVK.GroupKind(), strings.Clone(o.Namespace), strings.Clone(o.Name)}] = true
	f.namespaces[strings.Clone(o.Namespace)] = true
	if f.kinds[o.GVK] {
		return false
	}
	f.kinds[o.GVK] = true
	f.first = append(f.first, fmt.Errorf("in namespace %q: %w", o.Namespace, err))
	return true
}

// err says what could not be checked; nil when everything was.
func (f *checkFailures) err() error {
	if f.count == 0 {
		return nil
	}
	return fmt.Errorf("%w: the rules could not decide %d, in %d namespaces (their reports keep the rows the last audit found of them); the first of each kind: %w", ErrUnchecked, f.count, len(f.namespaces), errors.Join(f.first...))
}

// ErrUnchecked is the error of an audit that could not check some objects:
// the rules failed on them (a policy of one's own that errs on a kind, say).
var ErrUnchecked = errors.New("objects could not be checked")

// waitQuiet waits, up to QuietWait, for the server to answer no admission
// request; after a wait that reached its bound (a load that does not
// pause), none until the next pause between batches, so that such a load
// costs the audit at most QuietWait a batch.
func (l *Loop) waitQuiet(ctx context.Context) {
	if !l.unquiet && !l.store.WaitQuiet(ctx, l.opts.QuietWait) {
		l.unquiet = true
	}
}

// pause is how long the audit waits after a batch that took worked: long
// enough that it works Share of the time, and at least Pause.
func (l *Loop) pause(worked time.Duration) time.Duration {
	return max(l.opts.Pause, time.Duration(float64(worked)*(1/l.opts.Share-1)))
}

// list calls each with every object of a resource, of kind gvk, in all
// namespaces, listed from the API server page by page.
func (l *Loop) list(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, each func(*audit.Object) error) error {
	expired := 0
	for token := ""; ; {
		page, err := l.pager.Page(ctx, gvr, l.opts.PageSize, token)
		if next, ok := expiredContinue(err); ok && token != "" && expired < maxExpired {
			// The list took longer than the API server keeps its
			// snapshot (etcd's compaction, about 5 minutes): go on
			// from where it was, in the cluster as it is now, with the
			// token the API server gives for that. An object changed
			// meanwhile may be missed or seen twice; the next audit
			// sees it as it is.
			expired++
			l.opts.Logger.Info("background audit: a list outlived the API server's snapshot; going on with the cluster as it is now", "resource", gvr.GroupResource().String())
			token = next
			continue
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		l.waitQuiet(ctx)
		items, next, err := DecodePage(l.cache, page)
		if err != nil {
			return fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		for _, item := range items {
			o := audit.ObjectOf(gvk, item)
			o.Resource = gvr.Resource
			if err := each(&o); err != nil {
				return err
			}
		}
		if token = next; token == "" {
			return nil
		}
	}
}

// maxExpired is how many times one list goes on after its snapshot
// expired before it fails.
const maxExpired = 10

// expiredContinue is the continue token of a list request refused because
// its own token expired (410 ResourceExpired): the API server gives one to
// go on with, inconsistently, from where the list was.
func expiredContinue(err error) (string, bool) {
	var status apierrors.APIStatus
	if err == nil || !apierrors.IsResourceExpired(err) || !errors.As(err, &status) {
		return "", false
	}
	next := status.Status().Continue
	return next, next != ""
}
