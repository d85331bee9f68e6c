// Package quota keeps tenant-wide counts from being overshot by parallel
// creates: it reserves a create's place in its tenants' counts while the
// create is decided.
//
// # The window it closes
//
// Counts come from the cluster view (package clusterview), which the
// informers fill. A create admitted by the webhook reaches the view only
// when the informer sees the stored object, a few milliseconds to a second
// later. Until then its tenant's count does not include it, and a burst of
// parallel creates would all be decided against the same count and
// overshoot the quota.
//
// # Reservations
//
// A create that counts against a quota (a Claim: its quota key, namespace
// and name) holds a place in its tenants' counts before it is decided, so
// that of a burst each is decided against the ones before it. A refused
// create gives its place back at once; an admitted one keeps it until the
// informer sees the object (the count then includes it as an object) or
// until the hold expires, DefaultReservationTTL (30 s, serve's
// --quota-reservation-ttl) after the decision: the create failed after
// admission, e.g. another webhook refused it, and its tenant's room is short
// by one until then. A namespace create holds a place with every tenant it
// could be meant for. A create the API server retries while the first call
// is being decided is one place. Dry-run creates store nothing and reserve
// nothing.
//
// The engine's Admit drives it through the Ledger and Hold interfaces:
// Reserve returns the counts to decide against and the hold, then exactly
// one of Hold.Keep (admitted) and Hold.Release (refused). Keep may answer
// ErrStale, when the counts changed meanwhile; Admit then decides the create
// again.
//
// # Local mode: LocalLedger and Table
//
// The default mode keeps the places in the replica's memory, in a Table
// that the cluster view holds beside its counts of the objects seen. It is
// exact within one replica and makes no API call. What the view counts and
// what the table holds must agree at every instant, so that an object is
// never counted zero times or twice: the view calls the table under its own
// lock. clusterview.View.Reserve reads the counts of objects seen under the
// view's readers' lock (which only the informers contend for) and the table
// takes its own lock for the hold itself (Reservation.Take); when the
// informer sees an object, clusterview.View.Upsert counts it and hands its
// place back to the table (Table.TakeOver) under the view's writer's lock,
// in one step. A goroutine that holds both locks takes the view's first.
// The table's own lock guards only the reservations, so a hold being written
// does not stop the other requests' reads of the view, and everything a hold
// needs is allocated before either lock (Table.Prepare), so that requests
// seldom wait on an allocation.
//
// Replicas do not see each other's places until their informers see the
// objects (usually well under a second), so a burst spread over R replicas
// can overshoot by up to R-1 times the room left: two replicas, 50 creates
// against room for 10, admitted 17 to 20 from run to run.
//
// # Strict mode: StrictLedger
//
// serve's --quota-mode=strict keeps each tenant's admitted creates not seen
// yet in a ledger ConfigMap on the API server (NamePrefix + tenant, in the
// registry's namespace), read and written with optimistic concurrency on
// every counted create; a write that lost a race to another replica is
// ErrStale, and the create is decided again. It is exact across replicas,
// at the price of two API calls (a read and a write) on every create that
// counts against a quota, and of one tenant's creates being decided one at
// a time in each replica.
//
// # Sums of resources
//
// A pod or claim created, a pod resized or a claim expanded holds what it
// adds to its tenant's sums the same way (Table.PrepareUsage, the
// StrictLedger's ReserveUsage, its ledger named with ".usage"). A hold
// names the usage the object will have once stored and counts it over the
// usage the view has of the object, until the view sees the object with
// it: an object counts at the most it may hold. Two updates of one object,
// the second decided before the view sees the first, hold the larger of
// what each expects, so the second is decided against the first's increase.
//
// # Hosts
//
// The hosts of Ingresses and routes (the hostname-collision rule) are held
// the same way: the view's host index holds a request's hosts while it is
// decided (clusterview.View.ReserveHosts), and in strict mode the
// StrictLedger's ledger of hosts (ReserveHosts, one ConfigMap every replica
// writes the hosts it admits into) makes the other replicas' admitted
// requests holders too, until their objects are seen.
//
// # Layout
//
// The view imports this package (it holds a Table and names objects as
// Claims); the ledgers reach the view only through the small interfaces
// declared here, Reserver and Counter, and the API server through
// ConfigMaps, so there is no import cycle and the view and the engine do
// not link client-go's clientset. The engine's Admit, which decides, stays
// in package engine and uses only this package's types.
package quota
