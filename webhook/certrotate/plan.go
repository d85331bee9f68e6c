package certrotate

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/tenantguard/tenantguard/webhook/selfsigned"
)

// Keys of the Secret. It is a kubernetes.io/tls Secret, so tls.crt, tls.key
// and ca.crt mean what they mean everywhere.
const (
	// KeyCert and KeyKey are the serving certificate and its key.
	KeyCert = "tls.crt"
	KeyKey  = "tls.key"
	// KeyBundle is every CA the webhook configurations trust (PEM).
	KeyBundle = "ca.crt"
	// KeySignerCert and KeySignerKey are the CA that signs serving certificates.
	KeySignerCert = "ca-signer.crt"
	KeySignerKey  = "ca-signer.key"
	// KeyNextCert and KeyNextKey are the CA that signs next, already in the
	// bundle; absent outside the last third of the signer's lifetime.
	KeyNextCert = "ca-next.crt"
	KeyNextKey  = "ca-next.key"
)

// caName is the common name of the CAs.
const caName = "tenantguard-webhook-ca"

// Validity is how long the CA and the serving certificate last. Each is
// renewed when a third of its lifetime is left.
type Validity struct {
	CA, Cert time.Duration
}

// Check refuses lifetimes the renewal schedule cannot keep: the CA must last
// at least three serving certificates, so that a certificate is never cut
// short by its CA.
func (v Validity) Check() error {
	switch {
	case v.Cert <= 0 || v.CA <= 0:
		return errors.New("certificate lifetimes must be positive")
	case v.CA < 3*v.Cert:
		return fmt.Errorf("the CA lifetime (%s) must be at least three times the serving certificate's (%s)", v.CA, v.Cert)
	}
	return nil
}

// Plan is what the Secret must hold at now for the serving certificate to be
// valid for hosts: data itself when nothing is due (changed is false), else a
// copy with what was due renewed, and why.
func Plan(now time.Time, data map[string][]byte, hosts []string, v Validity) (next map[string][]byte, changed bool, reasons []string, err error) {
	next = maps.Clone(data)
	if next == nil {
		next = map[string][]byte{}
	}
	signer, err := selfsigned.LoadCA(data[KeySignerCert], data[KeySignerKey])
	if err == nil {
		err = validAt(now, signer.Cert)
	}
	if err != nil {
		reasons = append(reasons, fmt.Sprintf("new CA: no usable CA in the Secret (%v)", err))
		if signer, err = selfsigned.GenerateCA(caName, now, now.Add(v.CA)); err != nil {
			return nil, false, nil, err
		}
		delete(next, KeyNextCert)
		delete(next, KeyNextKey)
	}
	upcoming, err := selfsigned.LoadCA(next[KeyNextCert], next[KeyNextKey])
	if err != nil || validAt(now, upcoming.Cert) != nil {
		upcoming = nil
	}
	left := signer.Cert.NotAfter.Sub(now)
	staged := false
	if upcoming == nil && left < v.CA/3 {
		staged = true
		reasons = append(reasons, fmt.Sprintf("next CA added to the bundle: the CA expires in %s", left.Round(time.Second)))
		if upcoming, err = selfsigned.GenerateCA(caName, now, now.Add(v.CA)); err != nil {
			return nil, false, nil, err
		}
	}
	// a successor signs only once an earlier check put it in the bundle
	if upcoming != nil && !staged && left < v.CA/6 {
		reasons = append(reasons, fmt.Sprintf("signing with the next CA: the CA expires in %s", left.Round(time.Second)))
		signer, upcoming = upcoming, nil
	}
	next[KeySignerCert], next[KeySignerKey] = signer.PEM, signer.KeyPEM
	if upcoming != nil {
		next[KeyNextCert], next[KeyNextKey] = upcoming.PEM, upcoming.KeyPEM
	} else {
		delete(next, KeyNextCert)
		delete(next, KeyNextKey)
	}
	if why := servingProblem(now, next[KeyCert], next[KeyKey], signer, hosts, v.Cert); why != "" {
		reasons = append(reasons, "new serving certificate: "+why)
		notAfter := now.Add(v.Cert)
		if signer.Cert.NotAfter.Before(notAfter) {
			notAfter = signer.Cert.NotAfter
		}
		if next[KeyCert], next[KeyKey], err = signer.Issue(now, notAfter, hosts...); err != nil {
			return nil, false, nil, err
		}
	}
	next[KeyBundle] = bundle(now, next[KeyBundle], signer, upcoming)
	for _, k := range []string{KeyCert, KeyKey, KeyBundle, KeySignerCert, KeySignerKey, KeyNextCert, KeyNextKey} {
		if !bytes.Equal(next[k], data[k]) {
			changed = true
		}
	}
	if !changed {
		return data, false, nil, nil
	}
	return next, true, reasons, nil
}

// servingProblem is why the serving certificate must be renewed, or "".
func servingProblem(now time.Time, certPEM, keyPEM []byte, signer *selfsigned.CA, hosts []string, validity time.Duration) string {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return "none usable in the Secret"
	}
	leaf := pair.Leaf
	switch {
	case validAt(now, leaf) != nil:
		return validAt(now, leaf).Error()
	case leaf.CheckSignatureFrom(signer.Cert) != nil:
		return "not signed by the current CA"
	case !slices.Equal(names(leaf), sorted(hosts)):
		return fmt.Sprintf("it is for %v, not %v", names(leaf), sorted(hosts))
	case leaf.NotAfter.Sub(now) < validity/3:
		return fmt.Sprintf("it expires in %s", leaf.NotAfter.Sub(now).Round(time.Second))
	}
	return ""
}

// skew is how far ahead of this replica's clock another replica's may be
// before what it issued counts as issued in the future.
const skew = 5 * time.Minute

// validAt is nil when c is valid at now: a certificate from the future (a
// clock set back, a replica's clock ahead by more than skew) is as unusable
// as an expired one.
func validAt(now time.Time, c *x509.Certificate) error {
	switch {
	case now.Add(skew).Before(c.NotBefore):
		return fmt.Errorf("it is not valid before %s", c.NotBefore.UTC().Format(time.RFC3339))
	case !now.Before(c.NotAfter):
		return errors.New("it expired")
	}
	return nil
}

// bundle is the signer, the next CA and every other CA of the old bundle
// that has not expired (a replica may still serve what it signed), in that
// order and without repeats.
func bundle(now time.Time, old []byte, signer, upcoming *selfsigned.CA) []byte {
	first := signer.PEM
	if upcoming != nil {
		first = append(slices.Clone(first), upcoming.PEM...)
	}
	return merge(now, first, old)
}

// merge is the CA certificates of the PEM bundles that have not expired, in
// order and without repeats.
func merge(now time.Time, bundles ...[]byte) []byte {
	var out bytes.Buffer
	seen := map[string]bool{}
	for _, rest := range bundles {
		for {
			var block *pem.Block
			if block, rest = pem.Decode(rest); block == nil {
				break
			}
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil || !c.IsCA || !now.Before(c.NotAfter) || seen[string(c.Raw)] {
				continue
			}
			seen[string(c.Raw)] = true
			_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
		}
	}
	return out.Bytes()
}

func names(c *x509.Certificate) []string {
	out := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return sorted(out)
}

func sorted(hosts []string) []string {
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		out = append(out, h)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
