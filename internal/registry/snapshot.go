package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/usage"
)

// DefaultProtectedNamespaces apply when settings.protectedNamespaces is omitted.
var DefaultProtectedNamespaces = []string{"^kube-", "^default$", "^tenantguard-system$"}

// DefaultAdministrators apply when settings.administrators is omitted.
var DefaultAdministrators = []Subject{{Kind: "Group", Name: "system:masters"}}

// DefaultProtectedLabels apply when settings.protectedLabels is omitted.
var DefaultProtectedLabels = []string{"pod-security.kubernetes.io/"}

// Snapshot is a validated registry with defaults applied and indexes built.
// It is immutable: a changed registry is a new Snapshot.
type Snapshot struct {
	registry Registry
	revision string
	tenants  map[string]*Tenant
	byUser   map[string][]string
	byGroup  map[string][]string
	admins   map[Subject]bool
	// file and enforcementLines say where settings.enforcement names each
	// rule id (lines of the file, 0 when unknown), for CheckRules.
	file             string
	enforcementLines map[string]int
}

// compile applies defaults to a validated registry and indexes it.
func compile(reg *Registry, raw []byte, src *source, loc *locator) *Snapshot {
	applyDefaults(reg)
	sum := sha256.Sum256(raw)
	s := &Snapshot{
		file:             src.file,
		enforcementLines: map[string]int{},
		registry:         *reg,
		revision:         hex.EncodeToString(sum[:8]),
		tenants:          make(map[string]*Tenant, len(reg.Tenants)),
		byUser:           map[string][]string{},
		byGroup:          map[string][]string{},
		admins:           map[Subject]bool{},
	}
	for i := range reg.Tenants {
		t := &reg.Tenants[i]
		s.tenants[t.Name] = t
		if q := t.ResourceQuota; q != nil {
			q.limits = make([]ResourceLimit, 0, len(q.Hard))
			for _, key := range sortedKeys(q.Hard) {
				if n, err := resource.ParseQuantity(q.Hard[key]); err == nil { // validated
					q.limits = append(q.limits, ResourceLimit{Key: key, Canonical: usage.Canonical(key), Amount: usage.Scaled(key, n)})
				}
			}
		}
		for _, o := range t.Owners {
			index := s.byUser
			if o.Kind == "Group" {
				index = s.byGroup
			}
			if !slices.Contains(index[o.Name], t.Name) {
				index[o.Name] = append(index[o.Name], t.Name)
			}
		}
	}
	for _, a := range reg.Settings.Administrators {
		s.admins[userOrGroup(a)] = true
	}
	for id, line := range loc.keyLines("settings", "enforcement") {
		s.enforcementLines[id] = line + src.offset
	}
	return s
}

// CheckRules refuses a registry whose settings.enforcement names a rule id
// that is not among ids, the rules of the policy in force: a *Error with
// each such id, where it is and the ids there are.
func (s *Snapshot) CheckRules(ids []string) error {
	src := source{file: s.file}
	for _, id := range sortedKeys(s.registry.Settings.Enforcement) {
		if !slices.Contains(ids, id) {
			src.problems = append(src.problems, Problem{File: s.file, Line: s.enforcementLines[id], Path: "settings.enforcement." + id, Message: fmt.Sprintf("unknown rule id %q; the rules in force are %s", id, strings.Join(ids, ", "))})
		}
	}
	if len(src.problems) > 0 {
		return src.err()
	}
	return nil
}

func applyDefaults(reg *Registry) {
	st := &reg.Settings
	if st.TenantLabel == "" {
		st.TenantLabel = DefaultTenantLabel
	}
	if st.ProtectedNamespaces == nil {
		st.ProtectedNamespaces = DefaultProtectedNamespaces
	}
	if st.CordonExempt == nil {
		st.CordonExempt = []Subject{}
	}
	if st.Administrators == nil {
		st.Administrators = DefaultAdministrators
	}
	if st.ProtectedLabels == nil {
		st.ProtectedLabels = DefaultProtectedLabels
	}
	if st.ProtectedAnnotations == nil {
		st.ProtectedAnnotations = []string{}
	}
	if st.Enforcement == nil {
		st.Enforcement = map[string]string{}
	}
	for i := range reg.Tenants {
		t := &reg.Tenants[i]
		quotas := make(map[string]int64, len(t.Quotas))
		for k, v := range t.Quotas {
			key, _ := quotaKey(k)
			quotas[key] = v
		}
		t.Quotas = quotas
		if t.Pods.AllowedHostPaths == nil {
			t.Pods.AllowedHostPaths = []HostPathGrant{}
		}
		for _, p := range []*ClassPolicy{t.PriorityClasses, t.StorageClasses, t.RuntimeClasses} {
			if p != nil && p.Allowed == nil {
				p.Allowed = []string{}
			}
		}
		if p := t.Images; p != nil {
			p.AllowedRegistries = orEmpty(p.AllowedRegistries)
			p.AllowedPullPolicies = orEmpty(p.AllowedPullPolicies)
		}
		if p := t.Ingress; p != nil {
			for _, c := range []*ClassPolicy{p.Classes, p.GatewayClasses} {
				if c != nil && c.Allowed == nil {
					c.Allowed = []string{}
				}
			}
			if p.Hostnames != nil {
				p.Hostnames.Allowed = orEmpty(p.Hostnames.Allowed)
			}
			if p.HostnameCollision == "" {
				p.HostnameCollision = CollisionOff
			}
		}
		if p := t.NodePlacement; p != nil {
			if p.NodeSelector == nil {
				p.NodeSelector = map[string]string{}
			}
			if p.Tolerations == nil {
				p.Tolerations = []Toleration{}
			}
			for j := range p.Tolerations {
				if p.Tolerations[j].Operator == "" {
					p.Tolerations[j].Operator = "Equal"
				}
			}
		}
		if t.Companions.NetworkIsolation == nil {
			on := true
			t.Companions.NetworkIsolation = &on
		}
		if t.Companions.OwnerClusterRoles == nil {
			t.Companions.OwnerClusterRoles = []string{"admin"}
		}
	}
}

// userOrGroup folds ServiceAccounts into users: both match the user name.
func userOrGroup(s Subject) Subject {
	if s.Kind == "ServiceAccount" {
		return Subject{Kind: "User", Name: s.Name}
	}
	return s
}

// Administrator reports whether a subject is one of settings.administrators
// (a ServiceAccount as the user it authenticates as).
func (s *Snapshot) Administrator(subject Subject) bool { return s.admins[userOrGroup(subject)] }

// Administers reports whether a requester, by user name and groups, is one
// of settings.administrators.
func (s *Snapshot) Administers(user string, groups []string) bool {
	return s.Administrator(Subject{Kind: "User", Name: user}) ||
		slices.ContainsFunc(groups, func(g string) bool { return s.Administrator(Subject{Kind: "Group", Name: g}) })
}

// Registry returns the registry with defaults applied. Callers must not modify it.
func (s *Snapshot) Registry() *Registry { return &s.registry }

// Revision identifies the registry's content.
func (s *Snapshot) Revision() string { return s.revision }

// TenantLabel is the namespace label naming a namespace's tenant.
func (s *Snapshot) TenantLabel() string { return s.registry.Settings.TenantLabel }

// ResourceQuotas reports whether some tenant has a tenant-wide resource
// quota.
func (s *Snapshot) ResourceQuotas() bool {
	for _, t := range s.registry.Tenants {
		if t.ResourceQuota != nil && len(t.ResourceQuota.Hard) > 0 {
			return true
		}
	}
	return false
}

// Tenant returns a tenant by name.
func (s *Snapshot) Tenant(name string) (*Tenant, bool) {
	t, ok := s.tenants[name]
	return t, ok
}

// Len is the number of tenants.
func (s *Snapshot) Len() int { return len(s.tenants) }

// OwnedBy returns the tenants a requester owns, by user name and groups,
// sorted. Its cost depends on the requester's groups, not the tenant count.
func (s *Snapshot) OwnedBy(user string, groups []string) []string {
	var owned []string
	add := func(names []string) {
		for _, n := range names {
			if !slices.Contains(owned, n) {
				owned = append(owned, n)
			}
		}
	}
	add(s.byUser[user])
	for _, g := range groups {
		add(s.byGroup[g])
	}
	slices.Sort(owned)
	return owned
}

// PrefixTenant returns the tenant whose name followed by "-" is the longest
// prefix of a namespace name. Its cost depends on the name, not the tenant count.
// The name returned is the registry's, not a part of namespace, which may
// share a whole request body that a hold or a lock would keep alive.
func (s *Snapshot) PrefixTenant(namespace string) (string, bool) {
	for i := strings.LastIndexByte(namespace, '-'); i > 0; i = strings.LastIndexByte(namespace[:i], '-') {
		if t, ok := s.tenants[namespace[:i]]; ok {
			return t.Name, true
		}
	}
	return "", false
}

// heldNamespace is the namespace whose holder can act as the subject: a
// ServiceAccount's, or the one of a group of all ServiceAccounts of a
// namespace (system:serviceaccounts:NAMESPACE).
func heldNamespace(subject Subject) (string, bool) {
	switch subject.Kind {
	case "ServiceAccount":
		return serviceAccountNamespace(subject.Name)
	case "Group":
		ns, ok := strings.CutPrefix(subject.Name, "system:serviceaccounts:")
		return ns, ok && ns != "" && !strings.Contains(ns, ":")
	}
	return "", false
}

// serviceAccountNamespace is the namespace of a service account's user name
// (system:serviceaccount:NAMESPACE:NAME).
func serviceAccountNamespace(user string) (string, bool) {
	ns, name, ok := splitServiceAccount(user)
	return ns, ok && ns != "" && name != ""
}

// Data is the registry as the Rego rules read it (data.tenantguard.registry):
// tenants keyed by name, owner and administrator indexes, settings, and the
// restrictive defaults for a tenant missing from the registry. Each call
// builds a new copy, which the caller owns: the snapshot does not keep one,
// because the engine holds the registry as OPA values and a second, generic
// copy per snapshot would only add to the heap the collector scans.
func (s *Snapshot) Data() map[string]any { return s.buildData() }

type dataTenant struct {
	Name                     string               `json:"name"`
	NamespaceQuota           *int64               `json:"namespaceQuota,omitempty"`
	ProtectedLabels          []string             `json:"protectedLabels"`
	ProtectedAnnotations     []string             `json:"protectedAnnotations"`
	Pods                     PodPolicy            `json:"pods"`
	PriorityClasses          *ClassPolicy         `json:"priorityClasses,omitempty"`
	StorageClasses           *ClassPolicy         `json:"storageClasses,omitempty"`
	Images                   *ImagePolicy         `json:"images,omitempty"`
	RuntimeClasses           *ClassPolicy         `json:"runtimeClasses,omitempty"`
	NodePlacement            *NodePlacement       `json:"nodePlacement,omitempty"`
	Ingress                  *IngressPolicy       `json:"ingress,omitempty"`
	Cordoned                 bool                 `json:"cordoned"`
	PreventNamespaceDeletion bool                 `json:"preventNamespaceDeletion"`
	Services                 ServicePolicy        `json:"services"`
	Quotas                   map[string]int64     `json:"quotas"`
	ResourceQuota            *TenantResourceQuota `json:"resourceQuota,omitempty"`
	Extensions               map[string]any       `json:"extensions,omitempty"`
}

func (s *Snapshot) dataTenant(t *Tenant) dataTenant {
	st := s.registry.Settings
	return dataTenant{
		Name:                     t.Name,
		NamespaceQuota:           t.NamespaceQuota,
		ProtectedLabels:          union(st.ProtectedLabels, t.ProtectedLabels),
		ProtectedAnnotations:     union(st.ProtectedAnnotations, t.ProtectedAnnotations),
		Pods:                     t.Pods,
		PriorityClasses:          t.PriorityClasses,
		StorageClasses:           t.StorageClasses,
		Images:                   t.Images,
		RuntimeClasses:           t.RuntimeClasses,
		NodePlacement:            t.NodePlacement,
		Ingress:                  t.Ingress,
		Cordoned:                 t.Cordoned,
		PreventNamespaceDeletion: t.PreventNamespaceDeletion,
		Services:                 t.Services,
		Quotas:                   t.Quotas,
		ResourceQuota:            t.ResourceQuota,
		Extensions:               t.Extensions,
	}
}

// byKind is subjects by user name ("users", ServiceAccounts as the users
// they authenticate as) and group ("groups"), as the rules look them up.
func byKind(subjects []Subject) map[string]map[string]bool {
	out := map[string]map[string]bool{"users": {}, "groups": {}}
	for _, s := range subjects {
		s = userOrGroup(s)
		out[strings.ToLower(s.Kind)+"s"][s.Name] = true
	}
	return out
}

// ownerNamespaces are the namespaces holding tenants' ServiceAccount
// owners (by account or by a group of a namespace's accounts), each with
// the tenants they own, sorted: whoever holds such a namespace can act as
// those owners.
func ownerNamespaces(tenants []Tenant) map[string][]string {
	out := map[string][]string{}
	for _, t := range tenants {
		for _, o := range t.Owners {
			if ns, ok := heldNamespace(o); ok && !slices.Contains(out[ns], t.Name) {
				out[ns] = append(out[ns], t.Name)
			}
		}
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

func (s *Snapshot) buildData() map[string]any {
	tenants := make(map[string]dataTenant, len(s.tenants))
	for name, t := range s.tenants {
		tenants[name] = s.dataTenant(t)
	}
	// namespaces whose holder can act as a ServiceAccount owner (with the
	// tenants it owns), administrator or cordon-exempt requester
	saNamespaces, adminNamespaces := ownerNamespaces(s.registry.Tenants), map[string]bool{}
	for _, a := range slices.Concat(s.registry.Settings.Administrators, s.registry.Settings.CordonExempt) {
		if ns, ok := heldNamespace(a); ok {
			adminNamespaces[ns] = true
		}
	}
	doc := map[string]any{
		"settings":       s.registry.Settings,
		"administrators": byKind(s.registry.Settings.Administrators),
		"cordonExempt":   byKind(s.registry.Settings.CordonExempt),
		"owners":         map[string]any{"users": s.byUser, "groups": s.byGroup},
		// whoever holds such a namespace can act as the owner,
		// administrator or cordon-exempt requester, so it is reserved for
		// the owners' tenants, or for administrators (namespace-ownership)
		"serviceAccountNamespaces": saNamespaces,
		"administratorNamespaces":  adminNamespaces,
		"tenants":                  tenants,
		"defaultTenant":            s.dataTenant(defaultTenant()),
	}
	return toGeneric(doc)
}

// toGeneric turns typed values into the map/slice/json.Number form OPA stores.
func toGeneric(v any) map[string]any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs, maps and slices go in
	}
	var out map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		panic(err)
	}
	return out
}

func orEmpty(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, v := range b {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// QuotaResources are the resources that some tenant's quotas count, or whose
// resources some tenant's resourceQuota sums (pods, PersistentVolumeClaims,
// ResourceClaims), sorted, each as
// {Group, Resource}; the core group is "".
func (s *Snapshot) QuotaResources() []schema.GroupResource {
	seen := map[schema.GroupResource]bool{}
	for _, t := range s.registry.Tenants {
		for key := range t.Quotas {
			canonical, _ := quotaKey(key)
			rest := strings.TrimPrefix(canonical, "count/")
			resource, group, _ := strings.Cut(rest, ".")
			seen[schema.GroupResource{Group: group, Resource: resource}] = true
		}
		if t.ResourceQuota != nil {
			for key := range t.ResourceQuota.Hard {
				// The objects whose resources the quota sums.
				seen[usage.Summed(key)] = true
			}
		}
	}
	out := slices.Collect(maps.Keys(seen))
	slices.SortFunc(out, func(a, b schema.GroupResource) int {
		return strings.Compare(a.String(), b.String())
	})
	return out
}

// defaultTenant is the configuration of a tenant a namespace label names but
// the registry lacks: the most restrictive, so no host access, no Service
// exposure and no host published at the edge.
func defaultTenant() *Tenant {
	return &Tenant{
		Quotas: map[string]int64{},
		Pods:   PodPolicy{AllowedHostPaths: []HostPathGrant{}},
		Ingress: &IngressPolicy{
			Hostnames:         &HostnamePolicy{Allowed: []string{}},
			HostnameCollision: CollisionOff,
		},
	}
}
