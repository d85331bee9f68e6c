package registry

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// collisionScopes are the values of ingress.hostnameCollision.
var collisionScopes = []string{CollisionCluster, CollisionTenant, CollisionNamespace, CollisionOff}

func (c checker) ingress(p string, policy *IngressPolicy) {
	if policy == nil {
		return
	}
	c.classes(p+".classes", policy.Classes, validation.IsDNS1123Subdomain)
	c.classes(p+".gatewayClasses", policy.GatewayClasses, validation.IsDNS1123Subdomain)
	if g := policy.GatewayClasses; g != nil && g.Default != "" {
		c.at(p+".gatewayClasses.default", "a Gateway must name its class, so there is no default to set; remove %q", g.Default)
	}
	if h := policy.Hostnames; h != nil {
		for i, host := range h.Allowed {
			c.hostPattern(fmt.Sprintf("%s.hostnames.allowed[%d]", p, i), host)
		}
		c.regex(p+".hostnames.allowedRegex", h.AllowedRegex)
	}
	if s := policy.HostnameCollision; s != "" && !slices.Contains(collisionScopes, s) {
		c.at(p+".hostnameCollision", "must be one of %s, not %q", strings.Join(collisionScopes, ", "), s)
	}
}

// hostPattern checks an allowed host: a lower-case DNS name, or "*." and
// one, as Ingress hosts are written.
func (c checker) hostPattern(p, host string) {
	name := strings.TrimPrefix(host, "*.")
	if strings.Contains(name, "*") {
		c.at(p, "%q is not a host name or pattern: a wildcard is allowed only as the first label, as in *.oil.example.com", host)
		return
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		c.at(p, "%q is not a host name or pattern: %s", host, strings.Join(errs, "; "))
		return
	}
	if !strings.Contains(name, ".") && name != host {
		c.at(p, "%q would admit every name under the top-level domain %q; name the tenant's own domain", host, name)
	}
}
