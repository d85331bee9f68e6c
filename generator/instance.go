package generator

import (
	"cmp"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultInstance is the instance of a server given no other: its names are
// those of the versions before instances, so that existing installs keep
// their objects.
const DefaultInstance = "tenantguard"

// InstanceLabel names the instance that keeps a companion, on the
// companions of every instance but DefaultInstance. The default instance's
// carry none, as before instances, so that what an earlier version wrote is
// still the default instance's to keep and prune.
const InstanceLabel = "tenantguard.io/instance"

// Instance is one tenantguard server (one Helm release) among those sharing a
// cluster: every name it writes and prunes by derives from its name, so that
// two instances neither overwrite nor prune each other's objects. The zero
// value is DefaultInstance.
type Instance struct {
	name string
}

// Default is the instance named DefaultInstance.
var Default = Instance{}

// NewInstance is the instance called name, a DNS label (the chart passes the
// release's fullname); "" is Default.
func NewInstance(name string) (Instance, error) {
	if name == "" || name == DefaultInstance {
		return Default, nil
	}
	if problems := validation.IsDNS1123Label(name); len(problems) > 0 {
		return Instance{}, fmt.Errorf("instance %q: %s", name, strings.Join(problems, "; "))
	}
	return Instance{name: name}, nil
}

// Name is the instance's name.
func (i Instance) Name() string { return cmp.Or(i.name, DefaultInstance) }

// IsDefault is true for DefaultInstance.
func (i Instance) IsDefault() bool { return i.Name() == DefaultInstance }

// prefixed is NAME-suffix.
func (i Instance) prefixed(suffix string) string { return i.Name() + "-" + suffix }

// ResourceQuotaName names the ResourceQuota of each tenant namespace.
func (i Instance) ResourceQuotaName() string { return i.prefixed("quota") }

// LimitRangeName names the LimitRange of each tenant namespace.
func (i Instance) LimitRangeName() string { return i.prefixed("limits") }

// NetworkPolicyName names the NetworkPolicy of each tenant namespace.
func (i Instance) NetworkPolicyName() string { return i.prefixed("isolation") }

// NamespaceCreatorRole names the ClusterRole letting owners create namespaces.
func (i Instance) NamespaceCreatorRole() string { return i.prefixed("namespace-creator") }

// NamespaceDeleterRole names the ClusterRole letting owners delete the
// namespace it is bound in, and the RoleBinding binding it.
func (i Instance) NamespaceDeleterRole() string { return i.prefixed("namespace-deleter") }

// OwnersBinding names the ClusterRoleBinding of NamespaceCreatorRole to every
// owner of every tenant.
func (i Instance) OwnersBinding() string { return i.prefixed("owners") }

// OwnerBinding names the RoleBinding giving owners the ClusterRole role.
func (i Instance) OwnerBinding(role string) string { return i.prefixed("owner-" + role) }

// AdditionalBinding names a tenant's n-th additional RoleBinding, of role.
func (i Instance) AdditionalBinding(role string, n int) string {
	return i.prefixed(fmt.Sprintf("%s-%d", role, n))
}

// Labels are the labels of every object the instance writes: the managed-by
// label, which the managed-resource rule protects whatever the instance, and
// InstanceLabel unless the instance is the default.
func (i Instance) Labels() map[string]string {
	out := map[string]string{ManagedByLabel: ManagedByValue}
	if !i.IsDefault() {
		out[InstanceLabel] = i.Name()
	}
	return out
}

// Selector selects the instance's objects and no other instance's: the
// managed-by label, and InstanceLabel naming it, or absent for the default.
func (i Instance) Selector() labels.Selector {
	managed, err := labels.NewRequirement(ManagedByLabel, selection.Equals, []string{ManagedByValue})
	if err != nil {
		panic(err) // constant and valid
	}
	var mine *labels.Requirement
	if i.IsDefault() {
		mine, err = labels.NewRequirement(InstanceLabel, selection.DoesNotExist, nil)
	} else {
		mine, err = labels.NewRequirement(InstanceLabel, selection.Equals, []string{i.Name()})
	}
	if err != nil {
		panic(err) // the name is a valid label value: NewInstance checked it
	}
	return labels.NewSelector().Add(*managed, *mine)
}
