package certrotate_test

import (
	"crypto/tls"
	"crypto/x509"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tenantguard/tenantguard/webhook/certrotate"
	"github.com/tenantguard/tenantguard/webhook/selfsigned"
)

var (
	hosts    = []string{"tenantguard.tenantguard-system.svc", "127.0.0.1"}
	validity = certrotate.Validity{CA: 90 * time.Hour, Cert: 30 * time.Hour}
	start    = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
)

// plan is certrotate.Plan that fails the test on an error.
func plan(t *testing.T, now time.Time, data map[string][]byte) (map[string][]byte, bool, []string) {
	t.Helper()
	next, changed, reasons, err := certrotate.Plan(now, data, hosts, validity)
	if err != nil {
		t.Fatalf("Plan at %s: %v", now, err)
	}
	return next, changed, reasons
}

// verify is nil when the Secret's serving certificate is valid at now for
// every host under the given bundle.
func verify(now time.Time, data map[string][]byte, bundle []byte) error {
	pair, err := tls.X509KeyPair(data[certrotate.KeyCert], data[certrotate.KeyKey])
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	for _, h := range hosts {
		if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, DNSName: h}); err != nil {
			return err
		}
	}
	return nil
}

func count(bundle []byte) int { return strings.Count(string(bundle), "BEGIN CERTIFICATE") }

func issuer(t *testing.T, data map[string][]byte) string {
	t.Helper()
	c, err := selfsigned.ParseCertificate(data[certrotate.KeyCert])
	if err != nil {
		t.Fatal(err)
	}
	return string(c.AuthorityKeyId)
}

func TestPlanSchedule(t *testing.T) {
	first, changed, _ := plan(t, start, nil)
	if !changed {
		t.Fatal("an empty Secret was not filled")
	}
	if err := verify(start, first, first[certrotate.KeyBundle]); err != nil {
		t.Fatalf("the first certificate does not verify under its bundle: %v", err)
	}
	tests := []struct {
		name        string
		at          time.Duration
		data        map[string][]byte
		wantChanged bool
		wantBundle  int
		wantNewCert bool
		wantSigner  bool // the signer changed
	}{
		{name: "a fresh secret is left alone", at: time.Hour, data: first, wantBundle: 1},
		{name: "a certificate with more than a third of its life left is kept", at: 19 * time.Hour, data: first, wantBundle: 1},
		{name: "a certificate with less than a third left is renewed by the same CA", at: 21 * time.Hour, data: first, wantChanged: true, wantBundle: 1, wantNewCert: true},
		{name: "a CA with less than a third left gets a successor in the bundle", at: 61 * time.Hour, data: first, wantChanged: true, wantBundle: 2, wantNewCert: true},
		{name: "a CA with less than a sixth left hands signing to its successor", at: 76 * time.Hour, data: first, wantChanged: true, wantBundle: 2, wantNewCert: true, wantSigner: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := start.Add(tt.at)
			data := tt.data
			if tt.wantSigner {
				// stage the successor first, as the schedule does
				data, _, _ = plan(t, start.Add(61*time.Hour), data)
			}
			got, changed, reasons := plan(t, now, data)
			if changed != tt.wantChanged {
				t.Fatalf("changed = %v, want %v (reasons %q)", changed, tt.wantChanged, reasons)
			}
			if n := count(got[certrotate.KeyBundle]); n != tt.wantBundle {
				t.Errorf("bundle holds %d CAs, want %d", n, tt.wantBundle)
			}
			if newCert := string(got[certrotate.KeyCert]) != string(data[certrotate.KeyCert]); newCert != tt.wantNewCert {
				t.Errorf("new certificate = %v, want %v (reasons %q)", newCert, tt.wantNewCert, reasons)
			}
			if newSigner := string(got[certrotate.KeySignerCert]) != string(data[certrotate.KeySignerCert]); newSigner != tt.wantSigner {
				t.Errorf("new signer = %v, want %v", newSigner, tt.wantSigner)
			}
			if err := verify(now, got, got[certrotate.KeyBundle]); err != nil {
				t.Errorf("the certificate does not verify under the bundle: %v", err)
			}
			if changed && len(reasons) == 0 {
				t.Error("a change without a reason")
			}
		})
	}
}

// TestPlanNeverStrandsAReplica walks three CA lifetimes an hour at a time,
// as the replicas would, and checks at each step what keeps requests
// flowing: the certificate a replica starts serving was issued by a CA the
// webhook configurations already trusted (written one step earlier), and
// the certificate a replica that has not caught up still serves is trusted
// by the new bundle.
func TestPlanNeverStrandsAReplica(t *testing.T) {
	data, _, _ := plan(t, start, nil)
	signers := map[string]bool{}
	renewals := 0
	for h := 1; h <= 3*90; h++ {
		now := start.Add(time.Duration(h) * time.Hour)
		next, changed, _ := plan(t, now, data)
		if !changed {
			continue
		}
		renewals++
		signers[issuer(t, next)] = true
		if err := verify(now, data, next[certrotate.KeyBundle]); err != nil {
			t.Fatalf("hour %d: the previous certificate is not trusted by the new bundle: %v", h, err)
		}
		if issuer(t, next) != issuer(t, data) {
			if err := verify(now, next, data[certrotate.KeyBundle]); err != nil {
				t.Fatalf("hour %d: signing moved to a CA the webhook configurations did not trust yet: %v", h, err)
			}
		}
		if n := count(next[certrotate.KeyBundle]); n > 3 {
			t.Fatalf("hour %d: the bundle grew to %d CAs", h, n)
		}
		if _, again, reasons := plan(t, now, next); again {
			t.Fatalf("hour %d: a second check right after a renewal renews again (%q): the replicas would thrash", h, reasons)
		}
		data = next
	}
	// a certificate every 20 hours, a CA staged and promoted every 75
	if len(signers) < 3 || renewals < 12 || renewals > 24 {
		t.Errorf("three CA lifetimes saw %d signers and %d renewals; want 3+ signers and 12-24 renewals", len(signers), renewals)
	}
}

// TestPlanStagesBeforePromoting: a CA found with less than a sixth of its
// life left and no successor (a longer --tls-ca-validity, a successor lost)
// gets one staged in the bundle, and signs with it only at the next check.
func TestPlanStagesBeforePromoting(t *testing.T) {
	first, _, _ := plan(t, start, nil)
	late := start.Add(80 * time.Hour)
	staged, changed, _ := plan(t, late, first)
	if !changed || count(staged[certrotate.KeyBundle]) != 2 {
		t.Fatalf("no successor staged: changed %v, %d CAs", changed, count(staged[certrotate.KeyBundle]))
	}
	if string(staged[certrotate.KeySignerCert]) != string(first[certrotate.KeySignerCert]) {
		t.Fatal("the successor signs in the same check that put it in the bundle")
	}
	promoted, _, _ := plan(t, late.Add(time.Minute), staged)
	if string(promoted[certrotate.KeySignerCert]) != string(staged[certrotate.KeyNextCert]) {
		t.Error("the staged successor was not promoted at the next check")
	}
	if err := verify(late, promoted, staged[certrotate.KeyBundle]); err != nil {
		t.Errorf("the promoted CA's certificate is not trusted by the bundle of the previous check: %v", err)
	}
}

func TestPlanRepairs(t *testing.T) {
	first, _, _ := plan(t, start, nil)
	tests := []struct {
		name   string
		edit   func(map[string][]byte)
		hosts  []string
		reason string
	}{
		{name: "a corrupt CA key gets a new CA", edit: func(d map[string][]byte) { d[certrotate.KeySignerKey] = []byte("garbage") }, reason: "new CA"},
		{name: "a missing serving key gets a new certificate", edit: func(d map[string][]byte) { delete(d, certrotate.KeyKey) }, reason: "new serving certificate"},
		{name: "a certificate for other names gets a new one", hosts: []string{"other.svc"}, reason: "not [other.svc]"},
		{name: "an expired CA gets a new CA", edit: func(d map[string][]byte) {
			old, err := selfsigned.GenerateCA("old", start.Add(-2*time.Hour), start.Add(-time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			d[certrotate.KeySignerCert], d[certrotate.KeySignerKey] = old.PEM, old.KeyPEM
		}, reason: "it expired"},
		{name: "a CA from the future (a clock set back) gets a new CA", edit: func(d map[string][]byte) {
			future, err := selfsigned.GenerateCA("future", start.Add(48*time.Hour), start.Add(96*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			d[certrotate.KeySignerCert], d[certrotate.KeySignerKey] = future.PEM, future.KeyPEM
		}, reason: "not valid before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := maps.Clone(first)
			if tt.edit != nil {
				tt.edit(data)
			}
			h := hosts
			if tt.hosts != nil {
				h = tt.hosts
			}
			got, changed, reasons, err := certrotate.Plan(start.Add(time.Hour), data, h, validity)
			if err != nil {
				t.Fatal(err)
			}
			if !changed || !strings.Contains(strings.Join(reasons, "; "), tt.reason) {
				t.Fatalf("changed = %v, reasons %q; want a change for %q", changed, reasons, tt.reason)
			}
			pair, err := tls.X509KeyPair(got[certrotate.KeyCert], got[certrotate.KeyKey])
			if err != nil {
				t.Fatalf("the repaired certificate does not load: %v", err)
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(got[certrotate.KeyBundle])
			if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: start.Add(time.Hour), DNSName: h[0]}); err != nil {
				t.Errorf("the repaired certificate does not verify: %v", err)
			}
		})
	}
}

func TestValidityCheck(t *testing.T) {
	tests := []struct {
		name string
		v    certrotate.Validity
		want string
	}{
		{"a CA shorter than three certificates is refused", certrotate.Validity{CA: 48 * time.Hour, Cert: 24 * time.Hour}, "at least three times"},
		{"a zero lifetime is refused", certrotate.Validity{CA: time.Hour}, "positive"},
		{"the defaults are accepted", certrotate.Validity{CA: certrotate.DefaultCAValidity, Cert: certrotate.DefaultCertValidity}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.v.Check()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Check() = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestPlanRepairsAnyMix builds Secrets whose every key holds one of: its own
// value, another Secret's value for the same key, another key's value, a
// truncated value, garbage, or nothing, at a random hour of two CA
// lifetimes: Plan must always leave a certificate that verifies under the
// bundle it writes.
func TestPlanRepairsAnyMix(t *testing.T) {
	a, _, _ := plan(t, start, nil)
	b, _, _ := plan(t, start.Add(61*time.Hour), a) // holds a next CA
	other, _, _ := plan(t, start, nil)
	keys := []string{certrotate.KeyCert, certrotate.KeyKey, certrotate.KeyBundle, certrotate.KeySignerCert, certrotate.KeySignerKey, certrotate.KeyNextCert, certrotate.KeyNextKey}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		data := map[string][]byte{}
		for _, k := range keys {
			switch rng.IntN(6) {
			case 0:
				data[k] = b[k]
			case 1:
				data[k] = other[k]
			case 2:
				data[k] = a[keys[rng.IntN(len(keys))]]
			case 3:
				data[k] = a[k][:len(a[k])/2]
			case 4:
				data[k] = []byte("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
			}
		}
		now := start.Add(time.Duration(rng.IntN(180)) * time.Hour)
		next, _, _, err := certrotate.Plan(now, data, hosts, validity)
		if err != nil {
			t.Fatalf("mix %d: %v", i, err)
		}
		if err := verify(now, next, next[certrotate.KeyBundle]); err != nil {
			t.Fatalf("mix %d at hour %s: the certificate does not verify under the bundle: %v", i, now.Sub(start), err)
		}
	}
}
