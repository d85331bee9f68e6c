package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/tenantguard/tenantguard/internal/clusterview"
)

// Kind is a kind a rule judges, with the resource the API server routes it
// by and the subresources through which the rule must see it change.
type Kind struct {
	Group, Kind string
	// Resource is the kind's resource name (plural, lower case).
	Resource string
	// Subresources are resource/subresource names, e.g. "pods/ephemeralcontainers".
	Subresources []string
	// ClusterScoped is set for a kind of another API that a rule declares
	// with scope: Cluster, whose objects live in no namespace (the scope
	// of the built-in kinds is request.ClusterScoped's).
	ClusterScoped bool
	// Operations narrow the rule's operations for this kind (METADATA
	// {kind: ..., operations: [CREATE]}): a kind whose changes cannot
	// matter to the rule is then not sent on them. Nil: the rule's.
	Operations []string
	// path is where a kind set says the kind keeps what it is in the set
	// for (a pod carrier's pod spec), read by atKindPath.
	path []string
}

// Key is the kind as rules name it and as data.tenantguard.catalog routes
// it: "Pod" in the core API, "group/Kind" elsewhere ("apps/Deployment").
func (k Kind) Key() string {
	if k.Group == "" {
		return k.Kind
	}
	return k.Group + "/" + k.Kind
}

// Counted is the kinds token of a rule that judges the resources the
// registry's tenant quotas count: which they are is the registry's to say.
const Counted = "counted"

// All is the kinds token of a rule that judges every namespaced kind in
// tenant namespaces (a cordon): the webhooks send them through a catch-all
// webhook of their own.
const All = "all"

var (
	kindName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	group    = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)
	setName  = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// kindEntry is one entry of a rule's kinds: "Kind", "group/Kind", a kind
// set's name, or {kind: group/Kind, resource: plural, scope: Cluster,
// operations: [CREATE]} for a kind whose resource is not its regular
// plural, that lives in no namespace (scope Namespaced, the default, or
// Cluster), or that the rule must see in fewer of its operations.
type kindEntry struct {
	name, resource string
	cluster        bool
	operations     []string
}

func (e *kindEntry) UnmarshalJSON(raw []byte) error {
	if err := json.Unmarshal(raw, &e.name); err == nil {
		return nil
	}
	var explicit struct {
		Kind       string   `json:"kind"`
		Resource   string   `json:"resource"`
		Scope      string   `json:"scope"`
		Operations []string `json:"operations"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&explicit); err != nil || explicit.Kind == "" || (explicit.Resource == "" && explicit.Scope == "" && explicit.Operations == nil) {
		return fmt.Errorf("a kind is a string (Pod, apps/Deployment, a kind set) or {kind: group/Kind} with one or more of resource: plural (when not its regular plural), scope: Cluster (for a kind in no namespace) and operations: [CREATE] (for a kind the rule must see in fewer of its operations), not %s", raw)
	}
	switch explicit.Scope {
	case "", "Namespaced":
	case "Cluster":
		e.cluster = true
	default:
		return fmt.Errorf("the scope of %s is Namespaced (the default) or Cluster, not %q", explicit.Kind, explicit.Scope)
	}
	e.name, e.resource, e.operations = explicit.Kind, explicit.Resource, explicit.Operations
	return nil
}

// parseKind reads "Kind" or "group/Kind", with its resource when given: a
// kind of a built-in group must be one of the group's kinds.
func parseKind(s, resource string) (Kind, error) {
	g, k, grouped := strings.Cut(s, "/")
	if !grouped {
		g, k = "", s
	}
	if !kindName.MatchString(k) || (grouped && !group.MatchString(g)) {
		return Kind{}, fmt.Errorf("%q is not a kind: write Kind for the core API (Pod) or group/Kind (apps/Deployment)", s)
	}
	if scheme.Scheme.IsGroupRegistered(g) && !builtinKind(g, k) {
		return Kind{}, fmt.Errorf("%q is not a kind of the built-in API group %q", k, g)
	}
	if resource == "" {
		resource = clusterview.Resource(schema.GroupVersionKind{Group: g, Kind: k})
	} else if !group.MatchString(resource) || strings.ToLower(resource) != resource {
		return Kind{}, fmt.Errorf("resource %q of %s is not a lower-case resource name", resource, s)
	}
	return Kind{Group: g, Kind: k, Resource: resource}, nil
}

// builtinKind reports whether a built-in API group serves kind.
func builtinKind(g, kind string) bool {
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Group == g && gvk.Kind == kind {
			return true
		}
	}
	return false
}
