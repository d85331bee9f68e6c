package clusterview

import (
	"context"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/usage"
)

// NamespacesKey is the count key of a tenant's namespaces.
const NamespacesKey = "namespaces"

// Object is what the view keeps of a cluster object: its identity, labels
// (namespaces only) and, for PriorityClasses, their value.
type Object struct {
	Group     string
	Kind      string
	Resource  string
	Namespace string
	Name      string
	Labels    map[string]string
	// PriorityClass is set for scheduling.k8s.io PriorityClasses.
	PriorityClass *PriorityClass
	// Hosts are the hosts an object of a kind that serves hosts
	// (HostKinds) serves, normalized (NormalizeHosts).
	Hosts []string
	// Usage is what a pod or claim adds to its tenant's sums of quota
	// resources (package usage).
	Usage usage.List
	// UID is the object's metadata.uid, which the view keeps only while it
	// remembers visits (RememberVisits).
	UID string
	// Uncounted marks a pod that ResourceQuota no longer counts: finished,
	// or past the grace period of its deletion (usage.Charged), as
	// FromManifest finds it in a file. Upsert takes such a pod out of the
	// view, as serve's informers leave it out, so that counts and sums
	// read from `kubectl get -o yaml` are the server's.
	Uncounted bool
}

// PriorityClass is what the priority-class mutation needs of a class.
type PriorityClass struct {
	Value            int32
	PreemptionPolicy string
}

// objectID stands for an object the view has seen: a 128-bit keyed hash of
// the quota.Claim that names it (the name a create reserves under). A
// cluster has 100,000s of objects; as hashes they hold no pointers, so the
// garbage collector never walks them, and the informer's strings are not
// kept alive. Of n objects two share an ID with a chance of
// about n²/2¹²⁹: 1 in 10²⁶ for a million objects.
type objectID [2]uint64

// id is the objectID of k under the view's seeds.
func (v *View) id(k quota.Claim) objectID {
	return objectID{v.hash(v.seeds[0], k), v.hash(v.seeds[1], k)}
}

func (v *View) hash(seed maphash.Seed, k quota.Claim) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, s := range [...]string{k.Key, k.Namespace, k.Name} {
		// Length-prefixed, so that no two keys write the same bytes.
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		_, _ = h.Write(n[:])
		_, _ = h.WriteString(s)
	}
	return h.Sum64()
}

// View is safe for concurrent use. The zero value is not usable; call New.
//
// mu guards what the informers (and a new tenant label) change; a request
// only reads it. The reservations have their own lock, in their table,
// since requests change them (and an informer, when it sees the object of
// a hold): a create's hold and its release do not stop the other requests'
// reads. A goroutine holding both takes mu first: the view calls the table
// under mu.
type View struct {
	mu          sync.RWMutex
	tenantLabel string
	namespaces  map[string]*namespace
	// objects are the namespaced objects seen, each with its usage's
	// reference in usages.
	objects map[objectID]uint32
	usages  *usages
	seeds   [2]maphash.Seed
	// perNamespace counts objects by namespace and quota key, so that a
	// namespace moving between tenants moves its counts in one step; one
	// map, not one per namespace, keyed by hash (namespaceKey) so that it
	// holds no pointers. quotaKeys counts its entries by key.
	perNamespace    map[objectID]int
	quotaKeys       map[string]int
	perTenant       map[string]map[string]int
	priorityClasses map[string]PriorityClass
	// reservations are the creates being decided or admitted and not seen
	// yet, which Count adds to the objects seen (package quota).
	reservations *quota.Table
	// hosts are the hosts Ingresses and routes serve, and the requests'
	// holds of hosts; it has its own lock, taken after mu.
	hosts *hostIndex
	// visits are the objects' recent arrivals and goings, for the strict
	// ledger (RememberVisits); nil until it asks.
	visits *visits
}

// New returns an empty view that assigns namespaces to tenants by tenantLabel.
func New(tenantLabel string) *View {
	return &View{
		tenantLabel:     tenantLabel,
		namespaces:      map[string]*namespace{},
		objects:         map[objectID]uint32{},
		usages:          newUsages(),
		seeds:           [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		perNamespace:    map[objectID]int{},
		quotaKeys:       map[string]int{},
		perTenant:       map[string]map[string]int{},
		priorityClasses: map[string]PriorityClass{},
		reservations:    quota.NewTable(),
		hosts:           newHostIndex(),
	}
}

// QuotaKey is the tenant quota key of a resource: the resource for the core
// API ("pods"), count/RESOURCE.GROUP otherwise.
func QuotaKey(group, resource string) string {
	if group == "" {
		return resource
	}
	return "count/" + resource + "." + group
}

// Upsert adds or updates an object. Repeated upserts of the same object
// count once. An object seen takes over its create's reservation, in the
// same step, so that it is never counted zero times. An object of a kind
// that serves hosts adds its hosts to the host index (UpdateHosts, which
// informers call, also takes hosts an object no longer serves away). An
// Uncounted object is deleted instead.
func (v *View) Upsert(o Object) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if o.Uncounted {
		v.delete(&o)
		return
	}
	switch {
	case o.Group == "" && o.Kind == "Namespace":
		claim := quota.Claim{Key: NamespacesKey, Name: o.Name}
		if _, had := v.namespaces[o.Name]; !had {
			v.arrived(v.id(claim), o.UID)
		}
		v.upsertNamespace(o.Name, o.Labels)
		v.reservations.TakeOver(claim, o.UID)
	case o.PriorityClass != nil:
		v.priorityClasses[o.Name] = *o.PriorityClass
	case o.Namespace != "":
		if len(o.Hosts) > 0 {
			v.updateHosts(nil, &o)
		}
		k := quota.Claim{Key: QuotaKey(o.Group, o.Resource), Namespace: o.Namespace, Name: o.Name}
		v.reservations.TakeOverObject(k, o.UID, o.Usage)
		id := v.id(k)
		ref := v.usages.intern(o.Usage)
		before, seen := v.objects[id]
		switch {
		case !seen:
			v.add(o.Namespace, k.Key, 1)
			v.arrived(id, o.UID)
		case before == ref:
			v.usages.release(ref)
			return
		default:
			v.addUsage(o.Namespace, v.usages.lists[before], -1)
			v.usages.release(before)
		}
		v.objects[id] = ref
		v.addUsage(o.Namespace, o.Usage, 1)
	}
}

// Delete removes an object.
func (v *View) Delete(o Object) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.delete(&o)
}

// delete is Delete with the view locked.
func (v *View) delete(o *Object) {
	switch {
	case o.Group == "" && o.Kind == "Namespace":
		if _, ok := v.namespaces[o.Name]; ok {
			v.moveNamespace(o.Name, v.tenantOf(o.Name), "")
			delete(v.namespaces, o.Name)
			v.left(v.id(quota.Claim{Key: NamespacesKey, Name: o.Name}))
		}
	case o.PriorityClass != nil:
		delete(v.priorityClasses, o.Name)
	case o.Namespace != "":
		if len(o.Hosts) > 0 {
			v.updateHosts(o, nil)
		}
		k := quota.Claim{Key: QuotaKey(o.Group, o.Resource), Namespace: o.Namespace, Name: o.Name}
		id := v.id(k)
		ref, seen := v.objects[id]
		if !seen {
			return
		}
		delete(v.objects, id)
		v.reservations.UsageGone(quota.UsageClaim(k), o.UID)
		v.left(id)
		v.add(o.Namespace, k.Key, -1)
		v.addUsage(o.Namespace, v.usages.lists[ref], -1)
		v.usages.release(ref)
	}
}

func (v *View) upsertNamespace(name string, labels map[string]string) {
	before := v.tenantOf(name) // "" for a namespace not seen yet
	v.namespaces[name] = &namespace{name: name, labels: NewLabels(labels)}
	v.moveNamespace(name, before, v.tenantOf(name))
}

// namespaceKey stands for a quota key in a namespace, as objectID stands
// for an object: a count per namespace and key, 50,000 at 10,000 namespaces
// counting pods and four resource sums, which as two strings each the
// garbage collector would walk on every cycle.
func (v *View) namespaceKey(namespace, key string) objectID {
	return v.id(quota.Claim{Key: key, Namespace: namespace})
}

// moveNamespace moves a namespace (and everything counted in it) from one
// tenant to another; "" is no tenant.
func (v *View) moveNamespace(name, from, to string) {
	if from == to {
		return
	}
	v.bump(from, NamespacesKey, -1)
	v.bump(to, NamespacesKey, 1)
	for key := range v.quotaKeys {
		if n := v.perNamespace[v.namespaceKey(name, key)]; n != 0 {
			v.bump(from, key, -n)
			v.bump(to, key, n)
		}
	}
}

func (v *View) add(namespace, key string, n int) {
	k := v.namespaceKey(namespace, key)
	before := v.perNamespace[k]
	switch after := before + n; {
	case after == 0:
		delete(v.perNamespace, k)
		if v.quotaKeys[key]--; v.quotaKeys[key] == 0 {
			delete(v.quotaKeys, key)
		}
	case before == 0:
		v.perNamespace[k] = after
		v.quotaKeys[key]++
	default:
		v.perNamespace[k] = after
	}
	v.bump(v.tenantOf(namespace), key, n)
}

func (v *View) bump(tenant, key string, n int) {
	if tenant != "" {
		increment(v.perTenant, tenant, key, n)
	}
}

// increment adds n to counts[outer][key], dropping entries that reach zero.
func increment(counts map[string]map[string]int, outer, key string, n int) {
	per := counts[outer]
	if per == nil {
		per = map[string]int{}
		counts[outer] = per
	}
	per[key] += n
	if per[key] == 0 {
		delete(per, key)
		if len(per) == 0 {
			// Names seen once (a namespace label naming no tenant)
			// leave nothing behind.
			delete(counts, outer)
		}
	}
}

func (v *View) tenantOf(namespace string) string {
	if ns := v.namespaces[namespace]; ns != nil {
		return ns.labels.Get(v.tenantLabel)
	}
	return ""
}

// namespace is what the view keeps of a namespace: its labels, and nothing
// built from them for the policy. Its input term, kept per namespace, would
// be about 19 objects and 0.8 kB for a namespace with one label: 7.9 MB
// and 190,000 objects at 10,000 namespaces once requests or an audit have
// read each, which every collection marks, to save a request about 700
// bytes. It is replaced, never changed, when the namespace changes.
type namespace struct {
	// name is the view's own copy, which the host index's holders share:
	// the caller's may share a whole request body.
	name   string
	labels Labels
}

// NamespaceLabels returns a namespace's labels. ok is false for a
// namespace the view has not seen.
func (v *View) NamespaceLabels(name string) (labels Labels, ok bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if ns := v.namespaces[name]; ns != nil {
		return ns.labels, true
	}
	return Labels{}, false
}

// NamedLabels is a namespace's name and labels.
type NamedLabels struct {
	Name   string
	Labels Labels
}

// TenantNamespaces returns the namespaces labelled for a tenant (the
// tenant label set, not empty), sorted by name.
func (v *View) TenantNamespaces() []NamedLabels {
	v.mu.RLock()
	out := make([]NamedLabels, 0, len(v.namespaces))
	for name, ns := range v.namespaces {
		if v.tenantOf(name) != "" {
			out = append(out, NamedLabels{Name: name, Labels: ns.labels})
		}
	}
	v.mu.RUnlock()
	slices.SortFunc(out, func(a, b NamedLabels) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Count returns how many objects of a quota key a tenant has: the objects
// seen and the creates reserved (admitted or being decided, not seen yet).
func (v *View) Count(tenant, key string) int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.count(tenant, key)
}

// count is Count; the caller holds v.mu.
func (v *View) count(tenant, key string) int {
	return v.perTenant[tenant][key] + v.reservations.Reserved(tenant, key)
}

// CountAdmitted is Count without the creates being decided, which may yet
// be refused: the objects seen plus the creates admitted and not seen yet.
// An object the cluster has already is judged against it (the audit), so
// that a burst of creates refused at a tenant's quota does not make the
// objects the tenant holds look over it meanwhile.
func (v *View) CountAdmitted(tenant, key string) int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.perTenant[tenant][key] + v.reservations.Admitted(tenant, key)
}

// seenCount is how many objects of a quota key the view has seen of a
// tenant; the caller holds v.mu.
func (v *View) seenCount(tenant, key string) int {
	return v.perTenant[tenant][key]
}

// Reserve holds a create's place in tenants' counts of c.Key while it is
// decided (quota.Reservation.Take), and returns each tenant's count as the
// decision must see it: the objects seen plus the places held, this one left
// out. ttl bounds how long an admitted create holds its place without being
// seen.
//
// It reads the counts of objects seen under the view's read lock, which only
// the view's writers (informers) contend for, and the table holds its own
// lock for the hold itself; the claim's copies, the hold and the counts are
// allocated before either lock (quota.Table.Prepare), so that other
// requests seldom wait on an allocation (or the garbage collector's assist
// it may run).
func (v *View) Reserve(c quota.Claim, uid string, tenants []string, ttl time.Duration) (map[string]int, *quota.Reservation) {
	r := v.reservations.Prepare(c, uid, tenants, ttl)
	v.mu.RLock()
	defer v.mu.RUnlock()
	return r.Take(v.seenCount), r
}

// Reserved returns how many creates hold a place in tenant's count of key.
func (v *View) Reserved(tenant, key string) int {
	return v.reservations.Reserved(tenant, key)
}

// Seen reports whether the view has seen the object a claim names.
func (v *View) Seen(c quota.Claim) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.seen(c)
}

// CountUnseen is Count plus the claims whose objects the view has not seen
// (nor seen come and go), in one read (quota.Counter).
func (v *View) CountUnseen(tenant, key string, claims []quota.Pending) int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	n := v.count(tenant, key)
	for _, c := range claims {
		if !v.seen(c.Claim) && !v.cameAndWent(c) {
			n++
		}
	}
	return n
}

// seen is Seen; the caller holds v.mu.
func (v *View) seen(c quota.Claim) bool {
	if c.Key == NamespacesKey && c.Namespace == "" {
		_, ok := v.namespaces[c.Name]
		return ok
	}
	_, ok := v.objects[v.id(c)]
	return ok
}

// PriorityClass returns a PriorityClass by name.
func (v *View) PriorityClass(name string) (PriorityClass, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	pc, ok := v.priorityClasses[name]
	return pc, ok
}

// SetTenantLabel changes the label that assigns namespaces to tenants and
// recomputes the tenant counts.
func (v *View) SetTenantLabel(label string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if label == v.tenantLabel {
		return
	}
	v.tenantLabel = label
	v.perTenant = map[string]map[string]int{}
	for name := range v.namespaces {
		v.moveNamespace(name, "", v.tenantOf(name))
	}
}

// WaitNamespace waits until the view has seen a namespace or ctx is done,
// and reports whether it has. A namespace created a moment ago reaches the
// view a little after the API server starts admitting requests in it.
func (v *View) WaitNamespace(ctx context.Context, name string) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, ok := v.NamespaceLabels(name); ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}
