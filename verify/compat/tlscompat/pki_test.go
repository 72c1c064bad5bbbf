package tlscompat

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"keeper/verify/compat/zkreal"
)

// storePass protects every store the tests make.
const storePass = "keeper-tls-test"

// clientDN is the trusted client's subject as Java's X500Principal.getName
// formats it: several RDNs, a multi-valued one, escaped characters.
const clientDN = `OU=x509+CN=tls client,O=Keeper\, Inc.,C=US`

var serial atomic.Int64

// cert is a key and its certificate, with their PEM files.
type cert struct {
	key      *ecdsa.PrivateKey
	cert     *x509.Certificate
	certPEM  string // certificate file
	keyPEM   string // PKCS#8 key file
	chainPEM string // key and certificate in one file: a PEM key store
}

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
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rawSubject, err := asn1.Marshal(subject)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		RawSubject:            rawSubject,
		NotBefore:             notAfter.Add(-48 * time.Hour),
		NotAfter:              notAfter,
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
	c := &cert{key: key}
	if c.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	c.certPEM = write(t, filepath.Join(dir, name+".crt"), certPEM)
	c.keyPEM = write(t, filepath.Join(dir, name+".key"), keyPEM)
	c.chainPEM = write(t, filepath.Join(dir, name+".pem"), append(append([]byte{}, keyPEM...), certPEM...))
	return c
}

func write(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tool runs openssl or keytool, skipping the test when it is missing (or
// failing it under KEEPER_REQUIRE_ZK).
func tool(t *testing.T, name string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if v := os.Getenv(zkreal.RequireEnv); v != "" && v != "0" {
			t.Fatalf("%s is required: %v", name, err)
		}
		t.Skipf("%s not available: %v", name, err)
	}
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// p12 packs c (and the CA certificate) into a PKCS12 key store with
// openssl.
func (p *pki) p12(t *testing.T, c *cert, name string) string {
	path := p.path(name + ".p12")
	tool(t, "openssl", "pkcs12", "-export", "-in", c.certPEM, "-inkey", c.keyPEM, "-certfile", p.ca.certPEM,
		"-name", name, "-out", path, "-passout", "pass:"+storePass)
	return path
}

// jks converts a PKCS12 key store to JKS with keytool.
func (p *pki) jks(t *testing.T, p12 string, name string) string {
	path := p.path(name + ".jks")
	tool(t, "keytool", "-importkeystore", "-noprompt", "-srckeystore", p12, "-srcstoretype", "PKCS12",
		"-srcstorepass", storePass, "-destkeystore", path, "-deststoretype", "JKS",
		"-deststorepass", storePass, "-destkeypass", storePass)
	return path
}

// trustStore makes a trust store of the CA certificate with keytool:
// storeType PKCS12 or JKS.
func (p *pki) trustStore(t *testing.T, storeType, ext string) string {
	path := p.path("trust-" + storeType + ext)
	tool(t, "keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", p.ca.certPEM,
		"-keystore", path, "-storetype", storeType, "-storepass", storePass)
	return path
}

// clientTLS is a Go client configuration trusting the CA, presenting c
// when it is not nil and the server asks for a certificate.
func (p *pki) clientTLS(t *testing.T, c *cert) *tls.Config {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.cert)
	cfg := &tls.Config{RootCAs: roots, ServerName: "localhost", MaxVersion: tls.VersionTLS12}
	if c != nil {
		pair, err := tls.LoadX509KeyPair(c.certPEM, c.keyPEM)
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
