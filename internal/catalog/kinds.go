package catalog

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is a kind a rule judges, with the resource the API server routes it
// by and the subresources through which the rule must see it change.
type Kind struct {
	Group, Kind string
	// Resource is the kind's resource name (plural, lower case).
	Resource string
	// Subresources are resource/subresource names, e.g. "pods/ephemeralcontainers".
	Subresources []string
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

var (
	kindName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	group    = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)
	setName  = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// parseKind reads "Kind" or "group/Kind".
func parseKind(s string) (Kind, error) {
	g, k, grouped := strings.Cut(s, "/")
	if !grouped {
		g, k = "", s
	}
	if !kindName.MatchString(k) || (grouped && !group.MatchString(g)) {
		return Kind{}, fmt.Errorf("%q is not a kind: write Kind for the core API (Pod) or group/Kind (apps/Deployment)", s)
	}
	return Kind{Group: g, Kind: k, Resource: resourceOf(g, k)}, nil
}

// resourceOf is a kind's resource as the API server names it: Kubernetes'
// own guess (Pod pods, Ingress ingresses, NetworkPolicy networkpolicies),
// which every built-in kind the rules judge follows.
func resourceOf(g, k string) string {
	plural, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Group: g, Kind: k})
	return plural.Resource
}
