package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/request"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// Auditor checks existing objects with one engine (a registry and a rule
// library) against one view of the cluster. It is safe for concurrent use.
type Auditor struct {
	engine *engine.Engine
	view   *clusterview.View
	// skipped are the rules left out (audit: false).
	skipped map[string]bool
	// resources are the namespaced resources some audited rule judges,
	// every kind when anyKind.
	resources []schema.GroupResource
	// kinds are the kinds some audited rule judges: an object of one is
	// audited whatever resource its kind's name suggests (a rule may name
	// its kind's resource, Endpoints' endpoints).
	kinds   map[schema.GroupKind]bool
	anyKind bool
	// manager is the user name companions are audited as.
	manager string
	// creates makes the objects' requests.
	creates request.Creates
}

// New readies an audit with the engine's registry and rules, against view.
// managers are tenantguard's own user names (engine.DefaultManager when
// empty): its companions are audited as the first, which writes them.
func New(e *engine.Engine, view *clusterview.View, managers []string) *Auditor {
	a := &Auditor{engine: e, view: view, skipped: map[string]bool{}, kinds: map[schema.GroupKind]bool{}, manager: engine.DefaultManager}
	if len(managers) > 0 {
		a.manager = managers[0]
	}
	counted := false
	for _, r := range e.Policy().Catalog().Rules() {
		if !r.Audit {
			a.skipped[r.ID] = true
			continue
		}
		a.anyKind = a.anyKind || r.All
		counted = counted || r.Counted
		for _, k := range r.Kinds {
			a.add(schema.GroupResource{Group: k.Group, Resource: k.Resource})
			a.kinds[schema.GroupKind{Group: k.Group, Kind: k.Kind}] = true
		}
	}
	if counted {
		for _, gr := range e.Registry().QuotaResources() {
			a.add(gr)
		}
	}
	return a
}

func (a *Auditor) add(gr schema.GroupResource) {
	if gr.Group == "" && gr.Resource == "namespaces" || slices.Contains(a.resources, gr) {
		return
	}
	a.resources = append(a.resources, gr)
}

// Resources are the namespaced resources the audit checks in tenant
// namespaces: those of the kinds an audited rule judges and the ones the
// registry counts, in the order first declared. Namespaces are audited
// too. EveryKind reports a rule of every kind, which the audit of files
// applies to every namespaced object and serve's to these.
func (a *Auditor) Resources() []schema.GroupResource { return slices.Clone(a.resources) }

// EveryKind reports whether an audited rule judges every namespaced kind.
func (a *Auditor) EveryKind() bool { return a.anyKind }

// Audits reports whether the audit checks the object: every Namespace, and
// an object of a resource it checks in a tenant namespace (one labelled for
// a tenant), unless it is being deleted, is a finished Pod (Succeeded or
// Failed: it runs nothing, and tenant counts leave it out as the server's
// view does) or a workload's history (a Deployment's old ReplicaSet scaled
// to zero, a finished Job: neither runs again; counts still hold them).
func (a *Auditor) Audits(o *Object) bool {
	switch {
	case o.deleting() || o.finished() || o.history():
		return false
	case o.isNamespace():
		return true
	case o.Namespace == "" || a.tenantOf(o) == "":
		return false
	case a.anyKind || a.kinds[o.GVK.GroupKind()]:
		return true
	}
	return slices.Contains(a.resources, schema.GroupResource{Group: o.GVK.Group, Resource: o.resource()})
}

// tenantOf is the tenant label of the object's namespace, or of the
// Namespace itself.
func (a *Auditor) tenantOf(o *Object) string {
	label := a.engine.Registry().TenantLabel()
	if o.isNamespace() {
		return o.label(label)
	}
	labels, _ := a.view.NamespaceLabels(o.Namespace)
	return labels.Get(label)
}

// Check audits one object: a row per violation of an audited rule, none
// when the object is not audited (Audits).
func (a *Auditor) Check(ctx context.Context, o *Object) ([]Row, error) {
	if !a.Audits(o) {
		return nil, nil
	}
	tenant := a.tenantOf(o)
	user, groups := a.requester(o, tenant)
	req, err := a.creates.Decode(request.Spec{GVK: o.GVK, Resource: o.resource(), Name: o.Name, Namespace: o.Namespace, Operation: request.Create, User: user, Groups: request.Groups(user, groups)}, o.createObject())
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", o.GVK.Kind, o.Name, err)
	}
	d, err := a.engine.ReviewExisting(ctx, req, a.view)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", o.GVK.Kind, o.Name, err)
	}
	var rows []Row
	for _, group := range []struct {
		mode string
		vs   []admission.Violation
	}{{registry.ModeDeny, d.Deny}, {registry.ModeWarn, d.Warn}, {registry.ModeDryRun, d.DryRun}} {
		for _, v := range group.vs {
			if a.skipped[v.ID] {
				continue
			}
			// The row outlives the object, whose strings may share the
			// text of a whole page of a list: its own copies.
			rows = append(rows, Row{Namespace: strings.Clone(o.Namespace), APIVersion: o.GVK.GroupVersion().String(), Kind: o.GVK.Kind, Name: strings.Clone(o.Name), UID: strings.Clone(o.uid()), Tenant: strings.Clone(tenant), Rule: v.ID, Mode: group.mode, Message: strings.Clone(v.Msg)})
		}
	}
	return rows, nil
}

// All audits every object and returns the rows sorted.
func (a *Auditor) All(ctx context.Context, objects []Object) ([]Row, error) {
	var rows []Row
	for i := range objects {
		r, err := a.Check(ctx, &objects[i])
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	Sort(rows)
	return rows, nil
}
