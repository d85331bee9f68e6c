package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// serving is an Ingress or route a request creates or updates in a tenant
// namespace, as the host index knows it: the object, its namespace's
// tenant, the hosts it serves, and whether its rules read their holders
// (its tenant's hostnameCollision is not off). found are the hosts' other
// holders once reserved (clusterview.View.ReserveHosts); before, they are
// read from the view.
type serving struct {
	holder   clusterview.Holder
	tenant   string
	hosts    []string
	facts    bool
	reserved bool
	found    map[string][]clusterview.HostHolder
}

// served is the Ingress or route a request creates or updates in a tenant
// namespace, when some tenant refuses collisions and the object serves a
// host; nil otherwise. Every such request holds its hosts, so that a tenant
// whose collisions are off still holds the hosts it takes from the others.
func (e *Engine) served(req *admission.Request, view *clusterview.View) *serving {
	if !e.collisions || req.Object == nil || req.SubResource != "" || req.Namespace == "" ||
		(req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) ||
		!clusterview.ServesHosts(req.Kind.Group, req.Kind.Kind) {
		return nil
	}
	labels, ok := view.NamespaceLabels(req.Namespace)
	if !ok {
		return nil
	}
	tenant, known := e.registry.Tenant(labels.Get(e.registry.TenantLabel()))
	if !known {
		return nil
	}
	hosts := objectHosts(req, req.Object)
	if len(hosts) == 0 {
		return nil
	}
	name := req.Name
	if name == "" {
		name = "uid:" + string(req.UID) // not named yet, as a counted create
	}
	return &serving{
		holder: clusterview.Holder{Group: req.Kind.Group, Kind: req.Kind.Kind, Namespace: req.Namespace, Name: name},
		tenant: tenant.Name,
		hosts:  hosts,
		facts:  tenant.Ingress != nil && tenant.Ingress.HostnameCollision != registry.CollisionOff,
	}
}

// keptHosts are the hosts of an update's object that its old object
// served too: every replica's view has them, so the strict ledger claims
// none of them. Only the strict ledger reads them.
func keptHosts(req *admission.Request, hosts []string) []string {
	if req.Operation != admissionv1.Update || req.OldObject == nil {
		return nil
	}
	old := objectHosts(req, req.OldObject)
	var kept []string
	for _, h := range hosts {
		if slices.Contains(old, h) {
			kept = append(kept, h)
		}
	}
	return kept
}

// tooManyHosts is the refusal of a request whose new hosts would take its
// tenant's holds past full.Most (quota.MostHostsHeld), each held for up to
// ttl after its object is admitted.
func tooManyHosts(req *admission.Request, full *quota.TooManyHostsError, ttl time.Duration) *admission.Decision {
	msg := fmt.Sprintf("%s %q would hold %d new hosts while tenant %q holds %d: a tenant holds at most %d new hosts at a time, each for up to %s after its object is admitted; try again shortly, or name fewer new hosts in one object",
		req.Kind.Kind, req.Name, full.Asked, full.Tenant, full.Held, full.Most, ttl)
	if full.MostBytes > 0 {
		msg = fmt.Sprintf("%s %q would add %d new hosts taking %d KiB to the ledger of hosts, where tenant %q's take %d KiB: a tenant's take at most %d KiB of it at a time, each for up to %s after its object is admitted; try again shortly, or name fewer new hosts, or shorter ones, in one object",
			req.Kind.Kind, req.Name, full.Asked, kib(full.AskedBytes), full.Tenant, kib(full.Bytes), kib(full.MostBytes), ttl)
	}
	return &admission.Decision{Deny: []admission.Violation{{ID: collisionRule, Msg: msg}}}
}

// overHosts is the answer to a request whose holds of hosts failed with
// err: the refusal of a tenant past its bound (tooManyHosts), else err.
func overHosts(req *admission.Request, ledger quota.Ledger, err error) (*admission.Decision, error) {
	if full := (*quota.TooManyHostsError)(nil); errors.As(err, &full) {
		return tooManyHosts(req, full, reservationTTL(ledger)), nil
	}
	return nil, err
}

// kib is n bytes in KiB, rounded up.
func kib(n int) int { return (n + 1023) / 1024 }

// collisionRule is the id of the rule whose holds of hosts tooManyHosts
// bounds.
const collisionRule = "hostname-collision"

// objectHosts are the hosts obj, the request's object or old object,
// serves, normalized: the fields clusterview.HostKindOf names, read from
// the decoded object.
func objectHosts(req *admission.Request, obj ast.Value) []string {
	k, ok := clusterview.HostKindOf(req.Kind.Group, req.Kind.Kind)
	if !ok {
		return nil
	}
	return k.Hosts(req.Namespace, func(path []string, into *[]string) { collectTerms(obj, path, into) })
}

// collectTerms appends the strings at path under v.
func collectTerms(v ast.Value, path []string, into *[]string) {
	if len(path) == 0 {
		if s, ok := v.(ast.String); ok {
			// A copy: the view may hold it, and the decoded string
			// shares the whole request body's memory.
			*into = append(*into, strings.Clone(string(s)))
		}
		return
	}
	if path[0] == "*" {
		if items, ok := v.(*ast.Array); ok {
			items.Foreach(func(t *ast.Term) { collectTerms(t.Value, path[1:], into) })
		}
		return
	}
	if obj, ok := v.(ast.Object); ok {
		if t := obj.Get(ast.InternedTerm(path[0])); t != nil {
			collectTerms(t.Value, path[1:], into)
		}
	}
}

// hostFacts is cluster.hosts: for each host of the object that another
// object serves or another request holds, those holders, each {group,
// kind, namespace, name, tenant}.
func hostFacts(s *serving, view *clusterview.View) *ast.Term {
	found := s.found
	if !s.reserved {
		found = view.HostHolders(s.holder, s.hosts)
	}
	facts := make([][2]*ast.Term, 0, len(found))
	for _, host := range s.hosts {
		holders, ok := found[host]
		if !ok {
			continue
		}
		list := make([]*ast.Term, len(holders))
		for i, h := range holders {
			items := [][2]*ast.Term{
				ast.Item(ast.InternedTerm("group"), ast.StringTerm(h.Group)),
				ast.Item(ast.InternedTerm("kind"), ast.StringTerm(h.Kind)),
				ast.Item(ast.InternedTerm("namespace"), ast.StringTerm(h.Namespace)),
				ast.Item(ast.InternedTerm("name"), ast.StringTerm(h.Name)),
				ast.Item(ast.InternedTerm("tenant"), ast.StringTerm(h.Tenant)),
			}
			if h.Host != "" {
				items = append(items, ast.Item(ast.InternedTerm("host"), ast.StringTerm(h.Host)))
			}
			list[i] = ast.ObjectTerm(items...)
		}
		facts = append(facts, ast.Item(ast.StringTerm(host), ast.ArrayTerm(list...)))
	}
	return ast.ObjectTerm(facts...)
}
