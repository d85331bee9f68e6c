//go:build !linux

package auditloop

// lowPriority does nothing where threads have no priority of their own
// that tenantguard sets.
func lowPriority() error { return nil }
