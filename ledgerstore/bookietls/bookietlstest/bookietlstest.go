// Package bookietlstest issues certificates for tests of TLS between
// bookies and ledger clients: a CA, and certificates it signs, written as
// PEM files (a PKCS#8 key and a certificate chain, as BookKeeper's
// tlsKeyStore and tlsCertificatePath name them).
package bookietlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"keeper/ledgerstore/bookietls"
)

var serial atomic.Int64

// Cert is a key and certificate with their PEM files.
type Cert struct {
	Key     *ecdsa.PrivateKey
	Cert    *x509.Certificate
	KeyPEM  string // dir/name.key
	CertPEM string // dir/name.crt: the certificate, then its issuer's
}

// Options shape a certificate; the zero value is valid for a day and
// names 127.0.0.1 and localhost.
type Options struct {
	NotBefore, NotAfter time.Time
	NoNames             bool // name neither 127.0.0.1 nor localhost
}

// CA issues a self-signed CA certificate into dir.
func CA(t testing.TB, dir, name string) *Cert {
	t.Helper()
	return issue(t, dir, name, nil, true, Options{})
}

// Issue issues a leaf certificate signed by ca into dir.
func Issue(t testing.TB, dir, name string, ca *Cert, o Options) *Cert {
	t.Helper()
	return issue(t, dir, name, ca, false, o)
}

func issue(t testing.TB, dir, name string, ca *Cert, isCA bool, o Options) *Cert {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"keeper"}},
		NotBefore:             o.NotBefore,
		NotAfter:              o.NotAfter,
		IsCA:                  isCA,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	if !o.NoNames {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.Cert, ca.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cert{Key: key, Cert: cert, KeyPEM: filepath.Join(dir, name+".key"), CertPEM: filepath.Join(dir, name+".crt")}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	chain := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if ca != nil {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})...)
	}
	write(t, c.KeyPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}))
	write(t, c.CertPEM, chain)
	return c
}

// write replaces path's content through a rename, so that a reader never
// sees half a file.
func write(t testing.TB, path string, data []byte) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// Bookie returns a bookie's settings serving c's key, trusting ca's
// clients when clientAuth is set.
func Bookie(c, ca *Cert, clientAuth bool) bookietls.Settings {
	s := bookietls.Settings{Enabled: true, KeyStoreType: "PEM", KeyStore: c.KeyPEM, CertificatePath: c.CertPEM}
	if clientAuth {
		s.ClientAuthentication = true
		s.TrustStoreType, s.TrustStore = "PEM", ca.CertPEM
	}
	return s
}

// Client returns a client's settings trusting ca, presenting c's key when
// c is not nil.
func Client(ca, c *Cert) bookietls.Settings {
	s := bookietls.Settings{Enabled: true, TrustStoreType: "PEM", TrustStore: ca.CertPEM}
	if c != nil {
		s.ClientAuthentication = true
		s.KeyStoreType, s.KeyStore, s.CertificatePath = "PEM", c.KeyPEM, c.CertPEM
	}
	return s
}
