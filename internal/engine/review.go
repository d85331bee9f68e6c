package engine

import (
	"context"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/jsonast"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// Review mutates then validates a request against the view of the cluster, as
// the API server does with the mutating and the validating webhook. The input
// is converted to an OPA value once, and again only when a patch changed the
// object.
func (e *Engine) Review(ctx context.Context, req *admission.Request, view *clusterview.View) (*admission.Decision, error) {
	return e.review(ctx, req, view, nil)
}

// review is Review with what the request holds (see validate), or, when h
// is nil, with the view's counts and hosts.
func (e *Engine) review(ctx context.Context, req *admission.Request, view *clusterview.View, h *held) (*admission.Decision, error) {
	in := e.input(req, view, h)
	value := in.value()
	patch, patched, err := e.mutations(ctx, req, value)
	if err != nil {
		return nil, err
	}
	if patched != nil {
		// The rules judge the object the mutations made, as the API
		// server sends it to the validating webhook, and so do the facts
		// read from it: a default StorageClass decides which class's
		// quota a claim takes, a tenant label which tenant's count a
		// namespace takes.
		mutated := *req
		mutated.Object = patched
		in = e.input(&mutated, view, h.forMutated(e, &mutated, view))
		in.patched = patched
		value = in.value()
	}
	d, err := e.decision(ctx, value)
	if err != nil {
		return nil, err
	}
	d.Patch = patch
	return d, nil
}

// Mutate answers the mutating webhook: the JSON patch of the mutations, nil
// when there are none. It never denies; the validating webhook does.
func (e *Engine) Mutate(ctx context.Context, req *admission.Request, view *clusterview.View) ([]byte, error) {
	patch, _, err := e.mutations(ctx, req, e.input(req, view, nil).value())
	return patch, err
}

// Validate answers the validating webhook: the decision on the request's
// object as it is (the API server has already applied the mutations).
func (e *Engine) Validate(ctx context.Context, req *admission.Request, view *clusterview.View) (*admission.Decision, error) {
	return e.validate(ctx, req, view, nil)
}

// validate decides with what the request holds (its reserved counts and
// hosts), or, when h is nil, with the view's counts and hosts.
func (e *Engine) validate(ctx context.Context, req *admission.Request, view *clusterview.View, h *held) (*admission.Decision, error) {
	return e.decision(ctx, e.input(req, view, h).value())
}

// mutations evaluates the mutations of a CREATE or UPDATE and applies them to
// the object: the patch and the patched object, both nil when nothing changes.
func (e *Engine) mutations(ctx context.Context, req *admission.Request, value ast.Value) ([]byte, ast.Object, error) {
	if req.Object == nil || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return nil, nil, nil
	}
	result, err := e.eval(ctx, e.mutate, MutationsQuery, value)
	if err != nil {
		return nil, nil, err
	}
	ops, ok := jsonOf(result).([]any)
	if !ok {
		return nil, nil, fmt.Errorf("%s is %T, not a list of patch operations", MutationsQuery, result)
	}
	if len(ops) == 0 {
		return nil, nil, nil
	}
	doc := req.AdmissionRequest.Object.Raw
	if doc == nil {
		// A request built from a decoded object (the audit's) has no
		// text of it: its encoding.
		if doc, err = json.Marshal(jsonOf(req.Object)); err != nil {
			return nil, nil, fmt.Errorf("encoding the object to patch: %w", err)
		}
	}
	patched, patch, err := applyPatch(doc, ops)
	if err != nil {
		return nil, nil, err
	}
	return patch, patched, nil
}

// decision evaluates the validating decision.
func (e *Engine) decision(ctx context.Context, value ast.Value) (*admission.Decision, error) {
	result, err := e.eval(ctx, e.decide, DecisionQuery, value)
	if err != nil {
		return nil, err
	}
	return parseDecision(result)
}

// eval runs a prepared query on a parsed input, in the engine's pool if it
// has one, and returns its value; undefined is an error. An ended request
// is not evaluated.
func (e *Engine) eval(ctx context.Context, q query, name string, input ast.Value) (ast.Value, error) {
	var (
		result ast.Value
		err    error
	)
	switch {
	case e.pool != nil:
		var evalErr error
		if err := e.pool.Do(ctx, func() { result, evalErr = q.eval(ctx, input) }); err != nil {
			return nil, err
		}
		err = evalErr
	case ctx.Err() != nil:
		return nil, fmt.Errorf("not evaluating %s: %w", name, context.Cause(ctx))
	default:
		result, err = q.eval(ctx, input)
	}
	if err != nil {
		return nil, fmt.Errorf("evaluating %s: %w", name, err)
	}
	if result == nil {
		return nil, fmt.Errorf("%s is undefined", name)
	}
	return result, nil
}

// jsonOf is a value as Go's JSON values; nil when it has no JSON form.
func jsonOf(v ast.Value) any {
	j, err := ast.JSON(v)
	if err != nil {
		return nil
	}
	return j
}

// parseDecision reads {allowed, deny, warn, dryrun}, each list of {id, msg};
// any other shape is an error, so a broken replacement policy fails closed.
func parseDecision(value ast.Value) (*admission.Decision, error) {
	obj, ok := value.(ast.Object)
	wrong := func() (*admission.Decision, error) {
		return nil, fmt.Errorf("%s is not {allowed, deny, warn, dryrun}: %v", DecisionQuery, value)
	}
	if !ok {
		return wrong()
	}
	allowed, ok := valueAt(obj, "allowed").(ast.Boolean)
	if !ok {
		return wrong()
	}
	var d admission.Decision
	for _, list := range []struct {
		key  string
		into *[]admission.Violation
	}{{"deny", &d.Deny}, {"warn", &d.Warn}, {"dryrun", &d.DryRun}} {
		vs, ok := violations(valueAt(obj, list.key))
		if !ok {
			return wrong()
		}
		*list.into = vs
	}
	d.Allowed = bool(allowed) && len(d.Deny) == 0
	return &d, nil
}

// termAt is the term at key of obj, which may be nil; nil when absent.
func termAt(obj ast.Object, key string) *ast.Term {
	if obj == nil {
		return nil
	}
	return obj.Get(ast.InternedTerm(key))
}

// valueAt is the value of key in obj (which may be nil), or nil.
func valueAt(obj ast.Object, key string) ast.Value {
	return jsonast.ValueAt(obj, ast.InternedTerm(key))
}

// objectAt is the object at key of obj, or nil.
func objectAt(obj ast.Object, key string) ast.Object {
	return jsonast.ObjectAt(obj, ast.InternedTerm(key))
}

// stringAt is the string at key of obj: "" when there is none, not ok when
// it is not a string.
func stringAt(obj ast.Object, key string) (string, bool) {
	switch v := valueAt(obj, key).(type) {
	case nil:
		return "", true
	case ast.String:
		return string(v), true
	}
	return "", false
}

// violations reads a list (array or set) of {id, msg}; a missing list is
// empty.
func violations(value ast.Value) ([]admission.Violation, bool) {
	var terms []*ast.Term
	switch v := value.(type) {
	case nil:
		return nil, true
	case *ast.Array:
		v.Foreach(func(t *ast.Term) { terms = append(terms, t) })
	case ast.Set:
		terms = v.Slice()
	default:
		return nil, false
	}
	out := make([]admission.Violation, 0, len(terms))
	for _, t := range terms {
		obj, ok := t.Value.(ast.Object)
		if !ok {
			return nil, false
		}
		id, idOK := stringAt(obj, "id")
		msg, msgOK := stringAt(obj, "msg")
		if !idOK || !msgOK {
			return nil, false
		}
		out = append(out, admission.Violation{ID: id, Msg: msg})
	}
	return out, true
}

// applyPatch applies JSON patch operations to an object's raw JSON: the
// patched object and the patch.
func applyPatch(doc []byte, ops []any) (ast.Object, []byte, error) {
	rawPatch, err := json.Marshal(ops)
	if err != nil {
		return nil, nil, err
	}
	patch, err := jsonpatch.DecodePatch(rawPatch)
	if err != nil {
		return nil, nil, fmt.Errorf("the rules produced a bad patch: %w", err)
	}
	patchedDoc, err := patch.Apply(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("applying the rules' patch: %w", err)
	}
	patched, err := admission.ParseObject(patchedDoc)
	if err != nil {
		return nil, nil, fmt.Errorf("the patched object %w", err)
	}
	return patched, rawPatch, nil
}
