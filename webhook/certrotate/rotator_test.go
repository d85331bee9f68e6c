package certrotate_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenantguard/tenantguard/tests/live"
	"github.com/tenantguard/tenantguard/webhook/certrotate"
	"github.com/tenantguard/tenantguard/webhook/selfsigned"
)

// allow answers every AdmissionReview with allowed, and counts them.
type allow struct {
	mu    sync.Mutex
	count int
}

func (a *allow) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.count++
	a.mu.Unlock()
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	_ = json.NewEncoder(w).Encode(review)
}

func (a *allow) answered() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count
}

// replica is one rotator serving an always-allow webhook over TLS.
type replica struct {
	rotator *certrotate.Rotator
	url     string
	calls   *allow
}

func startReplica(t *testing.T, ctx context.Context, cp *live.ControlPlane, opts certrotate.Options) *replica {
	t.Helper()
	rot, err := certrotate.New(cp.Admin, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	calls := &allow{}
	// Handshakes fail until the bundle is written; that is expected.
	quiet := log.New(io.Discard, "", 0)
	srv := &http.Server{Handler: calls, ReadHeaderTimeout: 5 * time.Second, ErrorLog: quiet, TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: rot.GetCertificate}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	if err := rot.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return &replica{rotator: rot, url: "https://" + ln.Addr().String(), calls: calls}
}

// controlPlane starts a real API server for the test, with namespace ns.
func controlPlane(t *testing.T, ns string) *live.ControlPlane {
	t.Helper()
	cp, err := live.StartControlPlane(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if _, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return cp
}

// served is the serial and issuer of the certificate a replica serves now.
func (r *replica) served(t *testing.T) (serial, issuer string) {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(r.url, "https://"), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("dialing %s: %v", r.url, err)
	}
	defer func() { _ = conn.Close() }()
	leaf := conn.ConnectionState().PeerCertificates[0]
	return leaf.SerialNumber.String(), string(leaf.AuthorityKeyId)
}

// TestRotationUnderLoad runs two replicas sharing one Secret on a real API
// server, with lifetimes short enough to see serving certificates renewed
// and the CA replaced within seconds, while ConfigMaps are created through a
// failurePolicy Fail webhook calling both replicas: every create must pass.
func TestRotationUnderLoad(t *testing.T) {
	ctx := t.Context()
	const ns, name = "rotation", "rotation-test"
	cp := controlPlane(t, ns)
	opts := certrotate.Options{
		Namespace: ns, Name: "webhook-tls", Hosts: []string{"127.0.0.1"}, WebhookConfiguration: name,
		Validity:      certrotate.Validity{CA: 12 * time.Second, Cert: 4 * time.Second},
		CheckInterval: 250 * time.Millisecond,
		Logger:        slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	replicas := []*replica{startReplica(t, ctx, cp, opts), startReplica(t, ctx, cp, opts)}

	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i, r := range replicas {
		validating.Webhooks = append(validating.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: fmt.Sprintf("replica-%d.rotation.test", i), ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &r.url},
			Rules: rules, FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: selector,
		})
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: []admissionregistrationv1.MutatingWebhook{{
		Name: "mutating.rotation.test", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &replicas[0].url},
		Rules: rules, FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: selector,
	}}}
	api := cp.Client.AdmissionregistrationV1()
	if _, err := api.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	create := func(i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}
		_, err := cp.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	// The configurations were created without a bundle: the replicas'
	// next check (within the retry interval) writes it.
	deadline := time.Now().Add(15 * time.Second)
	for err := create(0); err != nil; err = create(0) {
		if time.Now().After(deadline) {
			t.Fatalf("the CA bundle was not injected: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	serials, issuers := map[string]bool{}, map[string]bool{}
	var failures []string
	creates := 0
	for end := time.Now().Add(16 * time.Second); time.Now().Before(end); {
		creates++
		if err := create(creates); err != nil {
			failures = append(failures, err.Error())
		}
		for _, r := range replicas {
			s, i := r.served(t)
			serials[s], issuers[i] = true, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d creates through the webhooks; %d serving certificates and %d CAs seen", creates, len(serials), len(issuers))
	if len(failures) > 0 {
		t.Errorf("%d of %d creates failed during rotation, first: %s", len(failures), creates, failures[0])
	}
	if len(serials) < 4 || len(issuers) < 2 {
		t.Errorf("saw %d serving certificates and %d CAs; the rotation did not run", len(serials), len(issuers))
	}
	for i, r := range replicas {
		if n := r.calls.answered(); n < creates {
			t.Errorf("replica %d answered %d of %d creates", i, n, creates)
		}
	}
	secret, err := cp.Client.CoreV1().Secrets(ns).Get(ctx, opts.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type %q, want %q", secret.Type, corev1.SecretTypeTLS)
	}
	got, err := api.ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range got.Webhooks {
		if w.ClientConfig.URL == nil || *w.ClientConfig.URL == "" {
			t.Errorf("%s lost its URL when the bundle was written", w.Name)
		}
	}
	if _, err := selfsigned.ParseCertificate(got.Webhooks[0].ClientConfig.CABundle); err != nil {
		t.Errorf("the injected bundle does not parse: %v", err)
	}
}
