package tlscompat

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"path/filepath"
	"testing"
	"time"

	"keeper/verify/compat/internal/pkitest"
)

// storePass protects every store the tests make.
const storePass = "keeper-tls-test"

// clientDN is the trusted client's subject as Java's X500Principal.getName
// formats it: several RDNs, a multi-valued one, escaped characters.
const clientDN = `OU=x509+CN=tls client,O=Keeper\, Inc.,C=US`

// cert is a key and its certificate, with their PEM files.
type cert = pkitest.Cert

// pki is a test CA, certificates it issued, a rogue self-signed client,
// and the stores made of them.
type pki struct {
	dir                        string
	ca, server                 *cert
	client, expired, untrusted *cert
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	p := &pki{dir: dir}
	p.ca = issue(t, dir, "ca", rdn("CN", "keeper test CA"), nil, time.Now().Add(24*time.Hour), true)
	p.server = issue(t, dir, "server", rdn("CN", "localhost"), p.ca, time.Now().Add(24*time.Hour), false)
	p.client = issue(t, dir, "client", clientSubject(t), p.ca, time.Now().Add(24*time.Hour), false)
	p.expired = issue(t, dir, "expired", rdn("CN", "expired client"), p.ca, time.Now().Add(-time.Hour), false)
	p.untrusted = issue(t, dir, "untrusted", rdn("CN", "rogue"), nil, time.Now().Add(24*time.Hour), false)
	return p
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

var attrOIDs = map[string]asn1.ObjectIdentifier{
	"CN": {2, 5, 4, 3}, "O": {2, 5, 4, 10}, "OU": {2, 5, 4, 11}, "C": {2, 5, 4, 6},
}

func rdn(typ, value string) pkix.RDNSequence {
	return pkix.RDNSequence{{{Type: attrOIDs[typ], Value: value}}}
}

// clientSubject is C=US, O=Keeper, Inc., then OU=x509 and CN=tls client in
// one RDN.
func clientSubject(t *testing.T) pkix.RDNSequence {
	return pkix.RDNSequence{
		{{Type: attrOIDs["C"], Value: "US"}},
		{{Type: attrOIDs["O"], Value: "Keeper, Inc."}},
		{{Type: attrOIDs["OU"], Value: "x509"}, {Type: attrOIDs["CN"], Value: "tls client"}},
	}
}

// issue makes a certificate for subject signed by ca (self-signed when
// nil), valid for the 48 hours before notAfter, and writes its PEM files
// into dir.
func issue(t *testing.T, dir, name string, subject pkix.RDNSequence, ca *cert, notAfter time.Time, isCA bool) *cert {
	t.Helper()
	return pkitest.Issue(t, dir, pkitest.Request{Name: name, Subject: subject, NotBefore: notAfter.Add(-48 * time.Hour),
		NotAfter: notAfter, IsCA: isCA, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}, ca)
}

// p12 packs c (and the CA certificate) into a PKCS12 key store with
// openssl.
func (p *pki) p12(t *testing.T, c *cert, name string) string {
	path := p.path(name + ".p12")
	pkitest.PKCS12(t, c, p.ca, name, path, storePass)
	return path
}

// jks converts a PKCS12 key store to JKS with keytool.
func (p *pki) jks(t *testing.T, p12 string, name string) string {
	path := p.path(name + ".jks")
	pkitest.Tool(t, "keytool", "-importkeystore", "-noprompt", "-srckeystore", p12, "-srcstoretype", "PKCS12",
		"-srcstorepass", storePass, "-destkeystore", path, "-deststoretype", "JKS",
		"-deststorepass", storePass, "-destkeypass", storePass)
	return path
}

// trustStore makes a trust store of the CA certificate with keytool:
// storeType PKCS12 or JKS.
func (p *pki) trustStore(t *testing.T, storeType, ext string) string {
	path := p.path("trust-" + storeType + ext)
	pkitest.TrustStore(t, p.ca, path, storeType, storePass)
	return path
}

// clientTLS is a Go client configuration trusting the CA, presenting c
// when it is not nil and the server asks for a certificate.
func (p *pki) clientTLS(t *testing.T, c *cert) *tls.Config {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.Cert)
	cfg := &tls.Config{RootCAs: roots, ServerName: "localhost", MaxVersion: tls.VersionTLS12}
	if c != nil {
		pair, err := tls.LoadX509KeyPair(c.CertPEM, c.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		// Present it whatever CAs the server names: a Go (or Java) client
		// would otherwise hold back a certificate the server's CAs did not
		// issue, and the server would never see the untrusted one.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	return cfg
}
