package quotaledger

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
)

// Names and labels of the ledger ConfigMaps.
const (
	// NamePrefix starts the name of a tenant's ledger: NamePrefix + tenant.
	NamePrefix = "tenantguard-quota-"
	// TenantLabel names the tenant of a ledger.
	TenantLabel = "tenantguard.io/quota-ledger"
	// claimsKey is the ConfigMap key holding the claims, as JSON.
	claimsKey = "claims"
)

// claim is one admitted create in a ledger.
type claim struct {
	Key       string    `json:"key"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name"`
	Expires   time.Time `json:"expires"`
}

func (c claim) is(o clusterview.Claim) bool {
	return c.Key == o.Key && c.Namespace == o.Namespace && c.Name == o.Name
}

// Ledger implements engine.Ledger on the API server.
type Ledger struct {
	client    kubernetes.Interface
	namespace string
	view      *clusterview.View
	ttl       time.Duration
	now       func() time.Time

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// New returns a ledger keeping its ConfigMaps in namespace, counting the
// objects view has seen. ttl bounds how long an admitted create holds its
// place unseen; engine.DefaultReservationTTL when 0.
func New(client kubernetes.Interface, namespace string, view *clusterview.View, ttl time.Duration) *Ledger {
	if ttl <= 0 {
		ttl = engine.DefaultReservationTTL
	}
	return &Ledger{client: client, namespace: namespace, view: view, ttl: ttl, now: time.Now, locks: map[string]*sync.Mutex{}}
}

// lock serializes this replica's creates of one tenant, so that only
// other replicas can make a write conflict.
func (l *Ledger) lock(tenant string) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.locks[tenant]
	if m == nil {
		m = &sync.Mutex{}
		l.locks[tenant] = m
	}
	return m
}

// Reserve implements engine.Ledger: it reads every tenant's ledger and
// counts the objects seen plus the admitted creates not seen yet.
func (l *Ledger) Reserve(ctx context.Context, c clusterview.Claim, tenants []string) (map[string]int, engine.Hold, error) {
	tenants = slices.Sorted(slices.Values(tenants))
	h := &hold{ledger: l, claim: c}
	for _, t := range tenants {
		m := l.lock(t)
		m.Lock()
		h.locked = append(h.locked, m)
	}
	counts := make(map[string]int, len(tenants))
	now := l.now()
	for _, t := range tenants {
		page, err := l.read(ctx, t)
		if err != nil {
			h.Release()
			return nil, nil, err
		}
		n := l.view.Count(t, c.Key)
		page.claims = slices.DeleteFunc(page.claims, func(x claim) bool { return now.After(x.Expires) })
		for _, x := range page.claims {
			if x.Key == c.Key && !x.is(c) && !l.view.Seen(clusterview.Claim{Key: x.Key, Namespace: x.Namespace, Name: x.Name}) {
				n++
			}
		}
		counts[t] = n
		h.pages = append(h.pages, page)
	}
	return counts, h, nil
}

// page is one tenant's ledger as read.
type page struct {
	tenant string
	cm     *corev1.ConfigMap // nil when it does not exist yet
	claims []claim
}

func (l *Ledger) read(ctx context.Context, tenant string) (*page, error) {
	p := &page{tenant: tenant}
	cm, err := l.client.CoreV1().ConfigMaps(l.namespace).Get(ctx, NamePrefix+tenant, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the quota ledger of tenant %q: %w", tenant, err)
	}
	p.cm = cm
	if raw := cm.Data[claimsKey]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &p.claims); err != nil {
			// A ledger someone broke: start it again. Counting from the
			// informers alone can only overshoot by what was in flight.
			p.claims = nil
		}
	}
	return p, nil
}

// write stores a page with c added; a write that lost a race is ErrStale.
func (l *Ledger) write(ctx context.Context, p *page, c clusterview.Claim) error {
	claims := slices.DeleteFunc(slices.Clone(p.claims), func(x claim) bool { return x.is(c) })
	claims = append(claims, claim{Key: c.Key, Namespace: c.Namespace, Name: c.Name, Expires: l.now().Add(l.ttl).UTC()})
	raw, err := json.Marshal(claims)
	if err != nil {
		return err
	}
	cms := l.client.CoreV1().ConfigMaps(l.namespace)
	if p.cm == nil {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:      NamePrefix + p.tenant,
				Namespace: l.namespace,
				Labels:    map[string]string{"app.kubernetes.io/managed-by": "tenantguard", TenantLabel: p.tenant},
			},
			Data: map[string]string{claimsKey: string(raw)},
		}
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	} else {
		cm := p.cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[claimsKey] = string(raw)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return engine.ErrStale
	}
	if err != nil {
		return fmt.Errorf("writing the quota ledger of tenant %q: %w", p.tenant, err)
	}
	return nil
}

// hold is a create's place while it is decided: the tenants' locks and the
// ledgers as read.
type hold struct {
	ledger *Ledger
	claim  clusterview.Claim
	locked []*sync.Mutex
	pages  []*page
	once   sync.Once
}

// Keep writes the claim into every tenant's ledger, each write conditional
// on the ledger being unchanged since it was read.
func (h *hold) Keep(ctx context.Context) error {
	for _, p := range h.pages {
		if err := h.ledger.write(ctx, p, h.claim); err != nil {
			return err
		}
	}
	h.Release()
	return nil
}

// Release lets the tenants' next creates be decided.
func (h *hold) Release() {
	h.once.Do(func() {
		for _, m := range slices.Backward(h.locked) {
			m.Unlock()
		}
	})
}
