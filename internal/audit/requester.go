package audit

import "github.com/tenantguard/tenantguard/internal/registry"

// GroupMember is the user name the audit acts as when the identity it
// takes is a Group: a user of that group.
const GroupMember = "tenantguard:audit"

// managedBy is the label of the companions tenantguard writes.
const managedBy = "app.kubernetes.io/managed-by"

// Requester is who the audit creates the object as: see requester.
func (a *Auditor) Requester(o *Object) (user string, groups []string) {
	return a.requester(o, a.tenantOf(o))
}

// requester is who the audit creates the object as: tenantguard itself for
// its companions (labelled managed-by tenantguard), which it writes; else
// the first owner of the tenant the object's namespace (or the Namespace)
// is labelled for who is not an administrator (the rules an administrator
// passes would find nothing), the first owner when all are; else, for a
// namespace of no known tenant, the first administrator. A Group is a user
// GroupMember in that group.
func (a *Auditor) requester(o *Object, tenant string) (user string, groups []string) {
	if o.label(managedBy) == "tenantguard" && !o.isNamespace() {
		return a.manager, nil
	}
	reg := a.engine.Registry()
	if t, ok := reg.Tenant(tenant); ok && len(t.Owners) > 0 {
		for _, owner := range t.Owners {
			if !reg.Administrator(owner) {
				return acting(owner)
			}
		}
		return acting(t.Owners[0])
	}
	if admins := reg.Registry().Settings.Administrators; len(admins) > 0 {
		return acting(admins[0])
	}
	return acting(registry.DefaultAdministrators[0])
}

// acting is the user name and groups of a subject acting.
func acting(s registry.Subject) (string, []string) {
	if s.Kind == "Group" {
		return GroupMember, []string{s.Name}
	}
	return s.Name, nil
}
