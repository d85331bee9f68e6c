package certrotate

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Defaults of Options.
const (
	DefaultCAValidity    = 3 * 365 * 24 * time.Hour
	DefaultCertValidity  = 90 * 24 * time.Hour
	DefaultCheckInterval = 10 * time.Second
	// retryInterval is the check interval while something failed or the
	// webhook configurations do not exist yet (they are often created just
	// after the Deployment).
	retryInterval = 2 * time.Second
	// attempts bounds the read-plan-write rounds lost to other replicas.
	attempts = 5
)

// Observer is told about certificates put in use, failed checks, and checks
// that pass again.
type Observer interface {
	Loaded(source string, generation int64)
	Rejected(source string, at time.Time)
	Recovered(source string)
}

// Options configure a Rotator.
type Options struct {
	// Namespace and Name of the Secret holding the CA and the certificate.
	Namespace, Name string
	// Hosts are the serving certificate's DNS names and IP addresses.
	Hosts []string
	// WebhookConfiguration names the Validating- and
	// MutatingWebhookConfiguration whose caBundle is kept current; empty
	// keeps none.
	WebhookConfiguration string
	// Validity is the CA's and the serving certificate's lifetime; the
	// defaults when zero.
	Validity Validity
	// CheckInterval is how often the Secret and the bundles are checked.
	CheckInterval time.Duration
	// Source is the metrics source label reported to Observer.
	Source   string
	Observer Observer
	Logger   *slog.Logger
}

// Rotator keeps the serving certificate current; GetCertificate serves it.
type Rotator struct {
	opts    Options
	client  kubernetes.Interface
	dynamic dynamic.Interface
	cert    atomic.Pointer[tls.Certificate]
	// served is the PEM of the certificate in use, to notice changes.
	served []byte
}

// New checks the options.
func New(cfg *rest.Config, opts Options) (*Rotator, error) {
	if opts.Namespace == "" || opts.Name == "" {
		return nil, errors.New("the TLS Secret needs a namespace and a name")
	}
	if len(opts.Hosts) == 0 {
		return nil, errors.New("the serving certificate needs at least one DNS name")
	}
	if opts.Validity == (Validity{}) {
		opts.Validity = Validity{CA: DefaultCAValidity, Cert: DefaultCertValidity}
	}
	if err := opts.Validity.Check(); err != nil {
		return nil, err
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = DefaultCheckInterval
	}
	if opts.CheckInterval > opts.Validity.Cert/6 {
		return nil, fmt.Errorf("the check interval (%s) must be at most a sixth of the serving certificate's lifetime (%s), so that a renewal is never missed", opts.CheckInterval, opts.Validity.Cert)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Rotator{opts: opts, client: client, dynamic: dyn}, nil
}

// Start checks until a certificate is in use, retrying failures until ctx
// ends, then keeps checking in the background.
func (r *Rotator) Start(ctx context.Context) error {
	for {
		err := r.Check(ctx)
		if r.cert.Load() != nil {
			go r.loop(ctx, r.next(err))
			return nil
		}
		if err != nil {
			r.opts.Logger.Error("no serving certificate yet, retrying", "secret", r.opts.Namespace+"/"+r.opts.Name, "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no serving certificate: %w", context.Cause(ctx))
		case <-time.After(retryInterval):
		}
	}
}

// loop checks until ctx ends, the first time after interval.
func (r *Rotator) loop(ctx context.Context, interval time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		err := r.Check(ctx)
		if err != nil && ctx.Err() == nil && !errors.Is(err, errPending) {
			r.opts.Logger.Error("TLS certificate check failed, keeping the current certificate", "error", err.Error())
		}
		interval = r.next(err)
	}
}

// next is the wait before the check after one that returned err.
func (r *Rotator) next(err error) time.Duration {
	if err != nil {
		return min(r.opts.CheckInterval, retryInterval)
	}
	return r.opts.CheckInterval
}

// GetCertificate is the certificate in use, for tls.Config.
func (r *Rotator) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := r.cert.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("no serving certificate yet")
}

// errPending is a check that found a webhook configuration missing: the
// certificate is served, and the check is repeated soon.
var errPending = errors.New("webhook configuration not found yet")

// Check renews what is due in the Secret, writes its CA bundle into the
// webhook configurations, and then puts its certificate in use. A failure
// keeps the certificate in use; a missing webhook configuration is
// errPending, once the certificate is in use.
func (r *Rotator) Check(ctx context.Context) error {
	err := r.check(ctx)
	if r.opts.Observer != nil {
		switch {
		case err == nil || errors.Is(err, errPending):
			r.opts.Observer.Recovered(r.opts.Source)
		default:
			r.opts.Observer.Rejected(r.opts.Source, time.Now())
		}
	}
	return err
}

func (r *Rotator) check(ctx context.Context) error {
	data, err := r.converge(ctx)
	if err != nil {
		return err
	}
	pending, err := r.inject(ctx, data[KeyBundle])
	if err != nil {
		return err
	}
	if pending {
		err = errPending
	}
	if bytes.Equal(data[KeyCert], r.served) {
		return err
	}
	pair, loadErr := tls.X509KeyPair(data[KeyCert], data[KeyKey])
	if loadErr != nil {
		return fmt.Errorf("the serving certificate in the Secret does not load: %w", loadErr)
	}
	r.cert.Store(&pair)
	r.served = data[KeyCert]
	if r.opts.Observer != nil {
		r.opts.Observer.Loaded(r.opts.Source, 0)
	}
	r.opts.Logger.Info("TLS certificate in use", "serial", pair.Leaf.SerialNumber.String(), "notAfter", pair.Leaf.NotAfter.UTC().Format(time.RFC3339))
	return err
}

// converge reads the Secret and writes what Plan says, as many times as
// other replicas win the race, and returns the data the Secret holds.
func (r *Rotator) converge(ctx context.Context) (map[string][]byte, error) {
	secrets := r.client.CoreV1().Secrets(r.opts.Namespace)
	for range attempts {
		secret, err := secrets.Get(ctx, r.opts.Name, metav1.GetOptions{})
		exists := err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading Secret %s/%s: %w", r.opts.Namespace, r.opts.Name, err)
		}
		if !exists {
			secret = &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: r.opts.Name, Labels: map[string]string{"app.kubernetes.io/managed-by": "tenantguard"}},
				Type:       corev1.SecretTypeTLS,
			}
		}
		data, changed, reasons, err := Plan(time.Now(), secret.Data, r.opts.Hosts, r.opts.Validity)
		if err != nil {
			return nil, err
		}
		if !changed {
			return data, nil
		}
		secret.Data = data
		if exists {
			_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{FieldManager: "tenantguard"})
		} else {
			_, err = secrets.Create(ctx, secret, metav1.CreateOptions{FieldManager: "tenantguard"})
		}
		switch {
		case err == nil:
			r.opts.Logger.Info("TLS Secret renewed", "secret", r.opts.Namespace+"/"+r.opts.Name, "reasons", strings.Join(reasons, "; "))
			return data, nil
		case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
			continue // another replica wrote first: plan again on what it wrote
		default:
			return nil, fmt.Errorf("writing Secret %s/%s: %w", r.opts.Namespace, r.opts.Name, err)
		}
	}
	return nil, fmt.Errorf("the Secret %s/%s kept changing under %d attempts", r.opts.Namespace, r.opts.Name, attempts)
}
