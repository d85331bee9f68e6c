package selfsigned

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// testValidity is how long NewCA's CA and Serving's certificates last.
const testValidity = 24 * time.Hour

// backdate is how far before the issue time certificates become valid, for
// clocks slightly behind.
const backdate = time.Minute

// CA is a certificate authority held in memory.
type CA struct {
	// Cert is the parsed CA certificate.
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, for a caBundle.
	PEM []byte
	// KeyPEM is the CA's private key.
	KeyPEM []byte
}

// NewCA creates a CA valid for a day.
func NewCA(name string) (*CA, error) {
	now := time.Now()
	return GenerateCA(name, now, now.Add(testValidity))
}

// GenerateCA creates a CA valid from shortly before now until notAfter.
func GenerateCA(name string, now, notAfter time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return LoadCA(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
}

// LoadCA reads a CA certificate and its EC private key from PEM.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, errors.New("the certificate is not a CA")
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM block in the CA key")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA key: %w", err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("the CA key does not match the CA certificate")
	}
	return &CA{Cert: cert, key: key, PEM: certPEM, KeyPEM: keyPEM}, nil
}

// ParseCertificate parses the first certificate of a PEM block.
func ParseCertificate(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// Serving issues a serving certificate for hosts (DNS names or IPs), valid
// for a day, and returns it and its key as PEM.
func (ca *CA) Serving(hosts ...string) (certPEM, keyPEM []byte, err error) {
	now := time.Now()
	return ca.Issue(now, now.Add(testValidity), hosts...)
}

// Issue issues a serving certificate for hosts (DNS names or IPs), valid from
// shortly before now until notAfter, and returns it and its key as PEM.
func (ca *CA) Issue(now, notAfter time.Time, hosts ...string) (certPEM, keyPEM []byte, err error) {
	if len(hosts) == 0 {
		return nil, nil, errors.New("a serving certificate needs at least one host")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := leaf(hosts[0], now, notAfter, x509.ExtKeyUsageServerAuth)
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return ca.sign(tmpl, key)
}

// Client issues a client certificate for name, valid for a day, and returns
// it and its key as PEM: the identity the API server presents to a webhook
// that checks its callers (serve --client-ca-file).
func (ca *CA) Client(name string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	return ca.sign(leaf(name, now, now.Add(testValidity), x509.ExtKeyUsageClientAuth), key)
}

// leaf is the template of a certificate for name with one extended usage.
func leaf(name string, now, notAfter time.Time, usage x509.ExtKeyUsage) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
}

// sign signs tmpl for key and returns the certificate and key as PEM.
func (ca *CA) sign(tmpl *x509.Certificate, key *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// WriteServing issues a serving certificate and writes it to dir as tls.crt
// and tls.key (the names of a kubernetes.io/tls Secret), returning the paths.
func (ca *CA) WriteServing(dir string, hosts ...string) (certFile, keyFile string, err error) {
	certPEM, keyPEM, err := ca.Serving(hosts...)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("writing the key: %w", err)
	}
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("writing the certificate: %w", err)
	}
	return certFile, keyFile, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}
