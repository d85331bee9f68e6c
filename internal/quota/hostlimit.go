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

// MostHostBytes is the most of the ledger of hosts one tenant's entries
// take, a quarter of it: an entry of a host and names of ordinary length
// takes about 210 bytes, so MostHostsHeld such entries fit, and long names
// (a host and an object name of 253 characters each) bound a tenant to
// about 320 entries. Four tenants at their bound at once fill the ledger.
const MostHostBytes = maxLedgerBytes / 4

// TooManyHostsError is the error of a request that would have its tenant
// hold more than Most hosts, or, in the ledger of hosts, entries taking
// more than MostBytes (0: not this bound).
type TooManyHostsError struct {
	Tenant string
	// Held is how many hosts the tenant's other requests hold, Asked how
	// many this one would add; Bytes and AskedBytes what their entries take
	// in the ledger of hosts, when MostBytes is the bound gone past.
	Held, Asked, Most            int
	Bytes, AskedBytes, MostBytes int
}

func (e *TooManyHostsError) Error() string {
	if e.MostBytes > 0 {
		return fmt.Sprintf("tenant %q's entries take %d bytes of the ledger of hosts and this request's %d hosts would add %d, over the %d one tenant's take", e.Tenant, e.Bytes, e.Asked, e.AskedBytes, e.MostBytes)
	}
	return fmt.Sprintf("tenant %q holds %d hosts and this request would hold %d more, over the %d one tenant holds at a time", e.Tenant, e.Held, e.Asked, e.Most)
}
