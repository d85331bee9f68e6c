package quota

import "fmt"

// MostHostsHeld is the most hosts one tenant's requests hold at a time: in
// local mode those of its objects admitted and not seen serving them yet
// (or being decided), in strict mode those it added to the ledger of hosts
// within the reservation TTL. Without it one tenant could take every
// replica's memory, or the whole ledger of hosts (a ConfigMap, at most
// 1 MiB), with Ingresses naming thousands of hosts that the API server then
// refuses (a name taken, a ResourceQuota full) and that are never seen.
// Hosts an update's object served before it are not counted.
const MostHostsHeld = 1000

// TooManyHostsError is the error of a request that would have its tenant
// hold more than Most hosts.
type TooManyHostsError struct {
	Tenant string
	// Held is how many hosts the tenant's other requests hold, Asked how
	// many this one would add.
	Held, Asked, Most int
}

func (e *TooManyHostsError) Error() string {
	return fmt.Sprintf("tenant %q holds %d hosts and this request would hold %d more, over the %d one tenant holds at a time", e.Tenant, e.Held, e.Asked, e.Most)
}
