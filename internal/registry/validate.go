package registry

import (
	"fmt"
	"maps"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tenantguard/tenantguard/internal/usage"
)

// checker validates a decoded registry, recording problems at field paths.
type checker struct {
	src *source
	loc *locator
}

func (c checker) at(path, format string, args ...any) {
	c.src.add(c.loc.line(path), path, format, args...)
}

func checkRegistry(src *source, loc *locator, reg *Registry) {
	c := checker{src: src, loc: loc}
	if reg.APIVersion != APIVersion {
		c.at("apiVersion", "must be %q, not %q", APIVersion, reg.APIVersion)
	}
	if reg.Kind != Kind {
		c.at("kind", "must be %q, not %q", Kind, reg.Kind)
	}
	c.settings(&reg.Settings)
	c.tenants(reg.Tenants)
	c.cordonExempt(reg)
}

// everyone are the groups every requester, or every ServiceAccount, is in,
// and the user any tenant can bind roles to: exempting one from a cordon
// would leave no cordon.
var everyone = []Subject{
	{Kind: "Group", Name: "system:authenticated"},
	{Kind: "Group", Name: "system:unauthenticated"},
	{Kind: "Group", Name: "system:serviceaccounts"},
	{Kind: "User", Name: "system:anonymous"},
}

// cordonExempt refuses settings.cordonExempt subjects that would let a
// cordoned tenant through its own cordon: everyone, a tenant's owner, or a
// ServiceAccount (or all of a namespace's) in a namespace holding a
// tenant's ServiceAccount owner, whose tokens that tenant can mint.
func (c checker) cordonExempt(reg *Registry) {
	owned := ownerNamespaces(reg.Tenants)
	owners := map[Subject][]string{}
	for _, t := range reg.Tenants {
		for _, o := range t.Owners {
			if o = userOrGroup(o); !slices.Contains(owners[o], t.Name) {
				owners[o] = append(owners[o], t.Name)
			}
		}
	}
	for i, s := range reg.Settings.CordonExempt {
		sp := fmt.Sprintf("settings.cordonExempt[%d]", i)
		if slices.Contains(everyone, s) {
			c.at(sp+".name", "%s %q stands for every requester of its kind: exempting it from the cordon leaves no cordon", strings.ToLower(s.Kind), s.Name)
		}
		if tenants := owners[userOrGroup(s)]; len(tenants) > 0 {
			c.at(sp+".name", "%q owns tenants %q, who would pass their own cordon", s.Name, tenants)
		}
		if ns, ok := heldNamespace(s); ok && len(owned[ns]) > 0 {
			c.at(sp+".name", "namespace %q holds ServiceAccount owners of tenants %q, who could act as %q and pass their own cordon", ns, owned[ns], s.Name)
		}
	}
}

func (c checker) settings(s *Settings) {
	if s.TenantLabel != "" {
		c.labelKey("settings.tenantLabel", s.TenantLabel)
	}
	for i, expr := range s.ProtectedNamespaces {
		c.regex(fmt.Sprintf("settings.protectedNamespaces[%d]", i), expr)
	}
	c.subjects("settings.administrators", s.Administrators)
	c.subjects("settings.cordonExempt", s.CordonExempt)
	c.keys("settings.protectedLabels", s.ProtectedLabels)
	c.keys("settings.protectedAnnotations", s.ProtectedAnnotations)
	for _, id := range sortedKeys(s.Enforcement) {
		p := "settings.enforcement." + id
		switch s.Enforcement[id] {
		case ModeDeny, ModeWarn, ModeDryRun:
		default:
			c.at(p, "enforcement must be deny, warn or dryrun, not %q", s.Enforcement[id])
		}
	}
}

func (c checker) tenants(tenants []Tenant) {
	seen := map[string]int{}
	for i := range tenants {
		t := &tenants[i]
		p := fmt.Sprintf("tenants[%d]", i)
		if errs := validation.IsDNS1123Label(t.Name); len(errs) > 0 {
			c.at(p+".name", "tenant name %q is not a DNS label: %s", t.Name, strings.Join(errs, "; "))
		}
		if j, dup := seen[t.Name]; dup {
			c.at(p+".name", "tenant %q is already defined at tenants[%d]", t.Name, j)
		} else {
			seen[t.Name] = i
		}
		c.tenant(p, t)
	}
	c.ambiguousPrefixes(tenants)
}

func (c checker) tenant(p string, t *Tenant) {
	c.subjects(p+".owners", t.Owners)
	if t.NamespaceQuota != nil && *t.NamespaceQuota < 0 {
		c.at(p+".namespaceQuota", "must not be negative")
	}
	c.keys(p+".protectedLabels", t.ProtectedLabels)
	c.keys(p+".protectedAnnotations", t.ProtectedAnnotations)
	for i, g := range t.Pods.AllowedHostPaths {
		gp := fmt.Sprintf("%s.pods.allowedHostPaths[%d].pathPrefix", p, i)
		if !strings.HasPrefix(g.PathPrefix, "/") || path.Clean(g.PathPrefix) != g.PathPrefix {
			c.at(gp, "%q must be a clean absolute path such as /var/log", g.PathPrefix)
		}
	}
	c.classes(p+".priorityClasses", t.PriorityClasses, validation.IsDNS1123Subdomain)
	c.classes(p+".storageClasses", t.StorageClasses, validation.IsDNS1123Subdomain)
	c.classes(p+".runtimeClasses", t.RuntimeClasses, validation.IsDNS1123Subdomain)
	c.images(p+".images", t.Images)
	c.nodePlacement(p+".nodePlacement", t.NodePlacement)
	c.ingress(p+".ingress", t.Ingress)
	named := map[string]string{} // by count, the key that named it first
	for _, key := range sortedKeys(t.Quotas) {
		qp := p + ".quotas." + key
		count, ok := quotaKey(key)
		if !ok {
			c.at(qp, "%q is not an object count; use a namespaced resource of the core API group (%s) or count/RESOURCE.GROUP such as count/deployments.apps", key, strings.Join(coreResources, ", "))
		}
		if first, twice := named[count]; twice {
			c.at(qp, "%q counts the same objects as %q; give one of them", key, first)
		}
		named[count] = key
		if t.Quotas[key] < 0 {
			c.at(qp, "must not be negative")
		}
	}
	if t.ResourceQuota != nil {
		c.resourceQuota(p+".resourceQuota.hard", t.ResourceQuota.Hard)
	}
	c.companions(p+".companions", &t.Companions)
	for _, key := range sortedKeys(t.Extensions) {
		c.extension(p+".extensions."+key, t.Extensions[key])
	}
}

// extension checks that a value under a tenant's extensions is data the
// rules can read as JSON: mappings keyed by strings, finite numbers.
func (c checker) extension(p string, v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, key := range sortedKeys(v) {
			c.extension(p+"."+key, v[key])
		}
	case map[any]any:
		c.at(p, "a mapping whose keys are not all strings; quote them (\"80\": web)")
	case []any:
		for i, item := range v {
			c.extension(fmt.Sprintf("%s[%d]", p, i), item)
		}
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			c.at(p, "%v is not a number JSON holds", v)
		}
	}
}

// resourceQuota checks a tenant-wide resource quota: resources a quota can
// sum (usage.CheckKey), each with a quantity that is not negative.
func (c checker) resourceQuota(p string, hard map[string]string) {
	for _, key := range sortedKeys(hard) {
		if err := usage.CheckKey(key); err != nil {
			c.at(p+"."+key, "%v", err)
			continue
		}
		q, err := resource.ParseQuantity(hard[key])
		switch {
		case err != nil:
			c.at(p+"."+key, "%q is not a quantity (e.g. 500m, 2, 16Gi)", hard[key])
		case q.Sign() < 0:
			c.at(p+"."+key, "must not be negative")
		}
	}
}

func (c checker) companions(p string, comp *Companions) {
	if comp.ResourceQuota != nil {
		c.quantities(p+".resourceQuota.hard", comp.ResourceQuota.Hard)
		c.namespaceQuota(p+".resourceQuota.hard", comp.ResourceQuota.Hard)
	}
	if comp.LimitRange != nil {
		c.limitRangeItems(p+".limitRange.limits", comp.LimitRange.Limits)
		for i, item := range comp.LimitRange.Limits {
			ip := fmt.Sprintf("%s.limitRange.limits[%d]", p, i)
			switch item.Type {
			case "Container", "Pod", "PersistentVolumeClaim":
			default:
				c.at(ip+".type", "must be Container, Pod or PersistentVolumeClaim, not %q", item.Type)
			}
			c.quantities(ip+".max", item.Max)
			c.quantities(ip+".min", item.Min)
			c.quantities(ip+".default", item.Default)
			c.quantities(ip+".defaultRequest", item.DefaultRequest)
			c.quantities(ip+".maxLimitRequestRatio", item.MaxLimitRequestRatio)
		}
	}
	for i, role := range comp.OwnerClusterRoles {
		c.name(fmt.Sprintf("%s.ownerClusterRoles[%d]", p, i), role)
	}
	for i, rb := range comp.AdditionalRoleBindings {
		rp := fmt.Sprintf("%s.additionalRoleBindings[%d]", p, i)
		c.name(rp+".clusterRole", rb.ClusterRole)
		if len(rb.Subjects) == 0 {
			c.at(rp+".subjects", "a role binding needs at least one subject")
		}
		c.subjects(rp+".subjects", rb.Subjects)
	}
}

func (c checker) classes(p string, policy *ClassPolicy, valid func(string) []string) {
	if policy == nil {
		return
	}
	for i, name := range policy.Allowed {
		if errs := valid(name); len(errs) > 0 {
			c.at(fmt.Sprintf("%s.allowed[%d]", p, i), "%q is not a valid class name", name)
		}
	}
	re := c.regex(p+".allowedRegex", policy.AllowedRegex)
	if policy.Default == "" {
		return
	}
	if !slices.Contains(policy.Allowed, policy.Default) && (re == nil || !re.MatchString(policy.Default)) {
		c.at(p+".default", "default %q is not allowed by allowed or allowedRegex, so every object given it would be refused", policy.Default)
	}
}

func (c checker) regex(p, expr string) *regexp.Regexp {
	if expr == "" {
		return nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		c.at(p, "bad regular expression %q: %v", expr, err)
		return nil
	}
	return re
}

func (c checker) subjects(p string, subjects []Subject) {
	seen := map[Subject]bool{}
	for i, s := range subjects {
		sp := fmt.Sprintf("%s[%d]", p, i)
		switch s.Kind {
		case "User", "Group":
			if strings.HasPrefix(s.Name, serviceAccountPrefix) {
				c.at(sp+".name", "%q is a service account; write it as {kind: ServiceAccount, name: %q}", s.Name, s.Name)
			}
		case "ServiceAccount":
			if !validServiceAccount(s.Name) {
				c.at(sp+".name", "service account %q must be written system:serviceaccount:NAMESPACE:NAME", s.Name)
			}
		default:
			c.at(sp+".kind", "kind must be User, Group or ServiceAccount, not %q", s.Kind)
		}
		if strings.TrimSpace(s.Name) == "" {
			c.at(sp+".name", "name must not be empty")
		}
		if seen[s] {
			c.at(sp, "%s %q is listed twice", s.Kind, s.Name)
		}
		seen[s] = true
	}
}

const serviceAccountPrefix = "system:serviceaccount:"

func validServiceAccount(name string) bool {
	ns, sa, ok := splitServiceAccount(name)
	return ok && len(validation.IsDNS1123Label(ns)) == 0 && len(validation.IsDNS1123Subdomain(sa)) == 0
}

// splitServiceAccount splits system:serviceaccount:NAMESPACE:NAME.
func splitServiceAccount(user string) (namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(user, serviceAccountPrefix)
	parts := strings.Split(rest, ":")
	if !found || len(parts) != 2 {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// keys checks protected label or annotation keys: exact keys, or prefixes ending in "/".
func (c checker) keys(p string, keys []string) {
	for i, key := range keys {
		kp := fmt.Sprintf("%s[%d]", p, i)
		if prefix, ok := strings.CutSuffix(key, "/"); ok {
			if errs := validation.IsDNS1123Subdomain(prefix); len(errs) > 0 {
				c.at(kp, "%q is not a valid key prefix: %s", key, strings.Join(errs, "; "))
			}
			continue
		}
		c.labelKey(kp, key)
	}
}

func (c checker) labelKey(p, key string) {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		c.at(p, "%q is not a valid label key: %s", key, strings.Join(errs, "; "))
	}
}

func (c checker) name(p, name string) {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 && !strings.Contains(name, ":") {
		c.at(p, "%q is not a valid name: %s", name, strings.Join(errs, "; "))
	}
}

func (c checker) quantities(p string, values map[string]string) {
	for _, key := range sortedKeys(values) {
		if _, err := resource.ParseQuantity(values[key]); err != nil {
			c.at(p+"."+key, "%q is not a quantity (e.g. 500m, 2, 16Gi)", values[key])
		}
	}
}

// ambiguousPrefixes reports tenants such as "oil" and "oil-x" that share an
// owner: that owner's namespace "oil-x-dev" could be meant for either.
func (c checker) ambiguousPrefixes(tenants []Tenant) {
	byName := map[string]int{}
	for i, t := range tenants {
		if _, dup := byName[t.Name]; !dup {
			byName[t.Name] = i
		}
	}
	for i, t := range tenants {
		parts := strings.Split(t.Name, "-")
		for n := 1; n < len(parts); n++ {
			j, ok := byName[strings.Join(parts[:n], "-")]
			if !ok {
				continue
			}
			if owner, shared := sharedOwner(tenants[j].Owners, t.Owners); shared {
				c.at(fmt.Sprintf("tenants[%d].name", i), "tenant %q starts with tenant %q and both are owned by %s %q, so that owner's namespace %q-... is ambiguous; rename one tenant or give them distinct owners", t.Name, tenants[j].Name, owner.Kind, owner.Name, t.Name)
			}
		}
	}
}

func sharedOwner(a, b []Subject) (Subject, bool) {
	for _, s := range a {
		if slices.Contains(b, s) {
			return s, true
		}
	}
	return Subject{}, false
}

// quotaKey returns the canonical quota key: "pods" for core resources (also
// written count/pods), count/RESOURCE.GROUP for others. A core resource is
// one of the core API group's namespaced resources, which no API adds to:
// "deployments" (count/deployments.apps) would count nothing.
var coreResource = regexp.MustCompile(`^[a-z0-9]+$`)

// coreResources are the core API group's namespaced resources.
var coreResources = []string{
	"bindings", "configmaps", "endpoints", "events", "limitranges", "persistentvolumeclaims", "pods",
	"podtemplates", "replicationcontrollers", "resourcequotas", "secrets", "serviceaccounts", "services",
}

func quotaKey(key string) (string, bool) {
	if rest, ok := strings.CutPrefix(key, "count/"); ok {
		if coreResource.MatchString(rest) {
			return rest, slices.Contains(coreResources, rest)
		}
		res, group, ok := strings.Cut(rest, ".")
		return key, ok && coreResource.MatchString(res) && len(validation.IsDNS1123Subdomain(group)) == 0
	}
	return key, slices.Contains(coreResources, key)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
