package quota

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/internal/usage"
)

// Names and labels of the strict ledger's ConfigMaps.
const (
	// NamePrefix starts the name of a tenant's ledger: NamePrefix + tenant
	// (StrictLedger.WithNamePrefix sets another).
	NamePrefix = "tenantguard-quota-"
	// TenantLabel names the tenant of a ledger.
	TenantLabel = "tenantguard.io/quota-ledger"
	// claimsKey is the ConfigMap key holding the entries, as JSON.
	claimsKey = "claims"
)

// ConfigMaps is what the strict ledger calls on the API server: the
// ConfigMaps of one namespace, as client-go's
// kubernetes.Interface.CoreV1().ConfigMaps(namespace) serves them. Named
// here, it keeps client-go's clientset out of the packages that import this
// one (the view, the engine) and lets a test stand in for the API server.
type ConfigMaps interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error)
	Create(ctx context.Context, cm *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error)
	Update(ctx context.Context, cm *corev1.ConfigMap, opts metav1.UpdateOptions) (*corev1.ConfigMap, error)
	// List and Delete are Prune's.
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// entry is one admitted create in a ledger; in a ledger of usage
// (usageSuffix), one admitted request with what it adds to the tenant's
// sums and the usage its object will be seen with.
type entry struct {
	Key       string    `json:"key"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name"`
	Expires   time.Time `json:"expires"`
	// UID is the uid of the object the request creates or changes
	// (WithObjectUID), "" when unknown: a ledger written before the field.
	UID string `json:"uid,omitempty"`
	// Adds is for replicas of earlier versions, which count it (this
	// one writes Expect there); this one counts Expect over the usage the
	// object is seen with.
	Adds   usage.List `json:"adds,omitempty"`
	Expect usage.List `json:"expect,omitempty"`
}

func (e entry) claim() Claim { return Claim{e.Key, e.Namespace, e.Name} }

// same reports whether x is e as written: the same claim, uid and expiry
// (a later write of the same claim has another).
func (e entry) same(x entry) bool {
	return x.claim() == e.claim() && x.UID == e.UID && x.Expires.Equal(e.Expires)
}

// page is one tenant's ledger as read.
type page struct {
	tenant string
	// suffix follows the tenant in the ledger's name: "" for counts,
	// usageSuffix for sums of resources.
	suffix  string
	cm      *corev1.ConfigMap // nil when it does not exist yet
	entries []entry
}

// usageSuffix ends the name of a tenant's ledger of usage. Tenant names
// are DNS labels, without dots, so no tenant's ledger of counts has it.
const usageSuffix = ".usage"

func (l *StrictLedger) read(ctx context.Context, tenant, suffix string) (*page, error) {
	cm, err := l.get(ctx, tenant+suffix)
	if err != nil {
		return nil, fmt.Errorf("reading the quota ledger of tenant %q: %w", tenant, err)
	}
	return &page{tenant: tenant, suffix: suffix, cm: cm, entries: entriesOf[entry](cm)}, nil
}

// get reads the ledger named l.prefix+name, nil when it does not exist yet.
func (l *StrictLedger) get(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	cm, err := l.configMaps.Get(ctx, l.prefix+name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cm, err
}

// entriesOf decodes a ledger's entries: none for a ledger that does not
// exist, or one someone broke, which then holds nothing in force: read and
// readHosts start it again (the informers alone count, which can only miss
// what was in flight), and Prune deletes it.
func entriesOf[E any](cm *corev1.ConfigMap) []E {
	if cm == nil {
		return nil
	}
	var entries []E
	if raw := cm.Data[claimsKey]; raw != "" && json.Unmarshal([]byte(raw), &entries) != nil {
		return nil
	}
	return entries
}

// maxLedgerBytes is the most a ledger's entries take: the API server refuses
// a ConfigMap whose data is over 1 MiB (its names and labels aside).
const maxLedgerBytes = 1<<20 - 1024

// put writes raw as the claims of the ledger named l.prefix+name: it
// creates the ConfigMap when existing is nil, else updates existing (the
// version read), so that a write that lost a race is ErrStale.
func (l *StrictLedger) put(ctx context.Context, existing *corev1.ConfigMap, name, suffix string, raw []byte) error {
	if len(raw) > maxLedgerBytes {
		return fmt.Errorf("ConfigMap %s would hold %d bytes of entries, over the %d a ConfigMap holds: more admissions than it can keep came within --quota-reservation-ttl (%s) before the informers saw them", l.prefix+name+suffix, len(raw), maxLedgerBytes, l.ttl)
	}
	var err error
	if existing == nil {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:   l.prefix + name + suffix,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "tenantguard", TenantLabel: name},
			},
			Data: map[string]string{claimsKey: string(raw)},
		}
		_, err = l.configMaps.Create(ctx, cm, metav1.CreateOptions{})
	} else {
		cm := existing.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[claimsKey] = string(raw)
		_, err = l.configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	}
	// NotFound: Prune deleted the ledger since it was read.
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || (existing != nil && apierrors.IsNotFound(err)) {
		return ErrStale
	}
	return err
}

// write stores a page with e added (its time set) and returns e as
// written; a write that lost a race is ErrStale.
func (l *StrictLedger) write(ctx context.Context, p *page, e entry) (entry, error) {
	c := e.claim()
	entries := slices.DeleteFunc(slices.Clone(p.entries), func(x entry) bool { return x.claim() == c })
	e.Expires = l.now().Add(l.ttl).UTC()
	entries = append(entries, e)
	return e, l.putEntries(ctx, p, entries)
}

// putEntries stores entries as the page's ledger; a write that lost a race
// is ErrStale.
func (l *StrictLedger) putEntries(ctx context.Context, p *page, entries []entry) error {
	raw, err := json.Marshal(entries)
	if err != nil {
		return err
	}
	if err = l.put(ctx, p.cm, p.tenant, p.suffix, raw); err != nil && !errors.Is(err, ErrStale) {
		return fmt.Errorf("writing the quota ledger of tenant %q: %w", p.tenant, err)
	}
	return err
}

// withdrawTries bounds how many times a withdrawal reads and writes a
// ledger that other requests keep changing; past them, its entries expire.
const withdrawTries = 5

// withdraw removes the entries of a tenant's ledger (and suffix) that ours
// matches; the caller holds no lock of the ledger.
func (l *StrictLedger) withdraw(ctx context.Context, tenant, suffix string, ours func(entry) bool) error {
	err := l.rewrite(tenant+suffix, func() error {
		p, err := l.read(ctx, tenant, suffix)
		if err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(p.entries), ours)
		if len(kept) == len(p.entries) {
			return nil
		}
		return l.putEntries(ctx, p, kept)
	})
	if err != nil {
		return fmt.Errorf("withdrawing from the quota ledger of tenant %q: %w", tenant, err)
	}
	return nil
}

// rewrite runs write, which reads a ledger and writes it, under the
// replica's lock of the ledger (lock names it as StrictLedger.lock does)
// until it no longer loses a race (ErrStale), withdrawTries times at most.
func (l *StrictLedger) rewrite(lock string, write func() error) error {
	m := l.lock(lock)
	m.Lock()
	defer m.Unlock()
	for range withdrawTries {
		if err := write(); !errors.Is(err, ErrStale) {
			return err
		}
	}
	return ErrStale
}
