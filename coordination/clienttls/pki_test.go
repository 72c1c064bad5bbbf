package clienttls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// testCert is a key and its certificate.
type testCert struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
}

var serial int64

// newCert issues a certificate for cn, signed by ca (self-signed when ca
// is nil).
func newCert(t *testing.T, cn string, ca *testCert, isCA bool) *testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"keeper"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  isCA,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCert{key: key, cert: cert}
}

func writeFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// pemKeyStore writes key and chain into one PEM file.
func pemKeyStore(t *testing.T, path string, c *testCert, chain ...*x509.Certificate) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		t.Fatal(err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	for _, cert := range append([]*x509.Certificate{c.cert}, chain...) {
		data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
	}
	return writeFile(t, path, data)
}

func pemTrustStore(t *testing.T, path string, certs ...*x509.Certificate) string {
	t.Helper()
	var data []byte
	for _, cert := range certs {
		data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
	}
	return writeFile(t, path, data)
}

func p12KeyStore(t *testing.T, path, pass string, c *testCert, chain ...*x509.Certificate) string {
	t.Helper()
	data, err := pkcs12.Modern.Encode(c.key, c.cert, chain, pass)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, path, data)
}

func p12TrustStore(t *testing.T, path, pass string, certs ...*x509.Certificate) string {
	t.Helper()
	data, err := pkcs12.Modern.EncodeTrustStore(certs, pass)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, path, data)
}

func jksKeyStore(t *testing.T, path, pass string, c *testCert, chain ...*x509.Certificate) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		t.Fatal(err)
	}
	ks := keystore.New()
	entry := keystore.PrivateKeyEntry{CreationTime: time.Now(), PrivateKey: der}
	for _, cert := range append([]*x509.Certificate{c.cert}, chain...) {
		entry.CertificateChain = append(entry.CertificateChain, keystore.Certificate{Type: "X509", Content: cert.Raw})
	}
	if err := ks.SetPrivateKeyEntry("server", entry, []byte(pass)); err != nil {
		t.Fatal(err)
	}
	return writeJKS(t, path, pass, ks)
}

func jksTrustStore(t *testing.T, path, pass string, certs ...*x509.Certificate) string {
	t.Helper()
	ks := keystore.New()
	for i, cert := range certs {
		e := keystore.TrustedCertificateEntry{CreationTime: time.Now(), Certificate: keystore.Certificate{Type: "X509", Content: cert.Raw}}
		if err := ks.SetTrustedCertificateEntry(string(rune('a'+i)), e); err != nil {
			t.Fatal(err)
		}
	}
	return writeJKS(t, path, pass, ks)
}

func writeJKS(t *testing.T, path, pass string, ks keystore.KeyStore) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ks.Store(f, []byte(pass)); err != nil {
		t.Fatal(err)
	}
	return path
}

// testPKI is a CA, a server certificate it issued, and a directory.
type testPKI struct {
	dir        string
	ca, server *testCert
}

func newPKI(t *testing.T) *testPKI {
	ca := newCert(t, "keeper test CA", nil, true)
	return &testPKI{dir: t.TempDir(), ca: ca, server: newCert(t, "server", ca, false)}
}

func (p *testPKI) path(name string) string { return filepath.Join(p.dir, name) }

type x509Cert = x509.Certificate

var errClosedPipe = io.ErrClosedPipe

// pipe is an in-memory connection pair.
func pipe() (net.Conn, net.Conn) { return net.Pipe() }

func pemChain(c tls.Certificate) []byte {
	var out []byte
	for _, der := range c.Certificate {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	return out
}

func pemKey(t *testing.T, c *testCert) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}
