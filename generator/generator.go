package generator

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tenantguard/tenantguard/internal/registry"
)

// The label every companion carries, which the managed-resource rule protects.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "tenantguard"
)

// Names of the default instance's objects (Instance has every instance's).
const (
	ResourceQuotaName = "tenantguard-quota"
	LimitRangeName    = "tenantguard-limits"
	NetworkPolicyName = "tenantguard-isolation"
	// NamespaceCreatorRole lets owners create namespaces (cluster-wide).
	NamespaceCreatorRole = "tenantguard-namespace-creator"
	// NamespaceDeleterRole, bound in each tenant namespace, lets its owners delete it.
	NamespaceDeleterRole = "tenantguard-namespace-deleter"
	// OwnersBinding binds NamespaceCreatorRole to every owner of every tenant.
	OwnersBinding = "tenantguard-owners"
)

// Namespace is what the generator needs of a namespace.
type Namespace struct {
	Name   string
	Labels map[string]string
}

// Generate is Default.Generate.
func Generate(snap *registry.Snapshot, namespaces []Namespace) []client.Object {
	return Default.Generate(snap, namespaces)
}

// Namespaced is Default.Namespaced.
func Namespaced(snap *registry.Snapshot, namespaces []Namespace) []client.Object {
	return Default.Namespaced(snap, namespaces)
}

// Cluster is Default.Cluster.
func Cluster(snap *registry.Snapshot) []client.Object { return Default.Cluster(snap) }

// ForNamespace is Default.ForNamespace.
func ForNamespace(snap *registry.Snapshot, ns Namespace) []client.Object {
	return Default.ForNamespace(snap, ns)
}

// Generate returns the cluster-wide objects, then the companions of each
// tenant namespace (Namespaced).
func (i Instance) Generate(snap *registry.Snapshot, namespaces []Namespace) []client.Object {
	return append(i.Cluster(snap), i.Namespaced(snap, namespaces)...)
}

// Namespaced returns the companions of each namespace, namespaces sorted by
// name. Namespaces without the tenant label or naming a tenant not in the
// registry get none.
func (i Instance) Namespaced(snap *registry.Snapshot, namespaces []Namespace) []client.Object {
	var out []client.Object
	sorted := slices.SortedFunc(slices.Values(namespaces), func(a, b Namespace) int { return strings.Compare(a.Name, b.Name) })
	for _, ns := range sorted {
		out = append(out, i.ForNamespace(snap, ns)...)
	}
	return out
}

// TenantOf is the registry tenant of a namespace, if any.
func TenantOf(snap *registry.Snapshot, ns Namespace) (*registry.Tenant, bool) {
	name, ok := ns.Labels[snap.TenantLabel()]
	if !ok {
		return nil, false
	}
	return snap.Tenant(name)
}

// Cluster is the cluster-wide RBAC: the two ClusterRoles and the binding of
// the creator role to every owner of every tenant.
func (i Instance) Cluster(snap *registry.Snapshot) []client.Object {
	var owners []rbacv1.Subject
	seen := map[rbacv1.Subject]bool{}
	for _, t := range snap.Registry().Tenants {
		for _, s := range subjects(t.Owners) {
			if !seen[s] {
				seen[s] = true
				owners = append(owners, s)
			}
		}
	}
	slices.SortFunc(owners, compareSubjects)
	creator := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: i.meta(i.NamespaceCreatorRole(), "", ""),
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"create"}}},
	}
	deleter := &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: i.meta(i.NamespaceDeleterRole(), "", ""),
		// Bound by a RoleBinding in a namespace, this grants deleting that
		// namespace only: the API server authorizes a namespace's own
		// requests in the namespace itself.
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "delete"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: i.meta(i.OwnersBinding(), "", ""),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: i.NamespaceCreatorRole()},
		Subjects:   owners,
	}
	return []client.Object{creator, deleter, binding}
}

// ForNamespace is the companions of one namespace, none if it belongs to no
// registry tenant: ResourceQuota, LimitRange, NetworkPolicy, then the
// RoleBindings.
func (i Instance) ForNamespace(snap *registry.Snapshot, ns Namespace) []client.Object {
	t, ok := TenantOf(snap, ns)
	if !ok {
		return nil
	}
	label := snap.TenantLabel()
	c := t.Companions
	var out []client.Object
	if c.ResourceQuota != nil {
		out = append(out, &corev1.ResourceQuota{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
			ObjectMeta: i.meta(i.ResourceQuotaName(), ns.Name, t.Name, label),
			Spec:       corev1.ResourceQuotaSpec{Hard: resources(c.ResourceQuota.Hard)},
		})
	}
	if c.LimitRange != nil {
		items := make([]corev1.LimitRangeItem, len(c.LimitRange.Limits))
		for i, l := range c.LimitRange.Limits {
			items[i] = corev1.LimitRangeItem{
				Type: corev1.LimitType(l.Type), Max: resources(l.Max), Min: resources(l.Min),
				Default: resources(l.Default), DefaultRequest: resources(l.DefaultRequest),
				MaxLimitRequestRatio: resources(l.MaxLimitRequestRatio),
			}
		}
		out = append(out, &corev1.LimitRange{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
			ObjectMeta: i.meta(i.LimitRangeName(), ns.Name, t.Name, label),
			Spec:       corev1.LimitRangeSpec{Limits: items},
		})
	}
	if c.NetworkIsolation == nil || *c.NetworkIsolation {
		out = append(out, &networkingv1.NetworkPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
			ObjectMeta: i.meta(i.NetworkPolicyName(), ns.Name, t.Name, label),
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: t.Name}},
				}}}},
			},
		})
	}
	owners := subjects(t.Owners)
	for _, role := range c.OwnerClusterRoles {
		out = append(out, i.roleBinding(i.OwnerBinding(role), ns.Name, t.Name, label, role, owners))
	}
	out = append(out, i.roleBinding(i.NamespaceDeleterRole(), ns.Name, t.Name, label, i.NamespaceDeleterRole(), owners))
	for n, rb := range c.AdditionalRoleBindings {
		out = append(out, i.roleBinding(i.AdditionalBinding(rb.ClusterRole, n), ns.Name, t.Name, label, rb.ClusterRole, subjects(rb.Subjects)))
	}
	return out
}

func (i Instance) roleBinding(name, namespace, tenant, label, role string, subjects []rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: i.meta(name, namespace, tenant, label),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

// meta is the metadata of a companion: the instance's labels, and the tenant
// label for a tenant's objects (label is the tenant label key).
func (i Instance) meta(name, namespace, tenant string, label ...string) metav1.ObjectMeta {
	labels := i.Labels()
	if tenant != "" {
		labels[label[0]] = tenant
	}
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}
}

// subjects turns registry subjects into RBAC subjects; a ServiceAccount's
// user name system:serviceaccount:NS:NAME becomes its namespace and name.
func subjects(in []registry.Subject) []rbacv1.Subject {
	out := make([]rbacv1.Subject, 0, len(in))
	for _, s := range in {
		if s.Kind == "ServiceAccount" {
			parts := strings.SplitN(s.Name, ":", 4)
			out = append(out, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: parts[2], Name: parts[3]})
			continue
		}
		out = append(out, rbacv1.Subject{Kind: s.Kind, APIGroup: rbacv1.GroupName, Name: s.Name})
	}
	return out
}

func compareSubjects(a, b rbacv1.Subject) int {
	return strings.Compare(a.Kind+"/"+a.Namespace+"/"+a.Name, b.Kind+"/"+b.Namespace+"/"+b.Name)
}

// resources parses quantities the registry has already validated.
func resources(in map[string]string) corev1.ResourceList {
	if len(in) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(in))
	for _, k := range slices.Sorted(maps.Keys(in)) {
		out[corev1.ResourceName(k)] = resource.MustParse(in[k])
	}
	return out
}
