package mixed

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
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

// storePass protects every store the quorum TLS tests make.
const storePass = "keeper-quorum-tls"

var certSerial atomic.Int64

// quorumPKI is a test CA whose certificates name 127.0.0.1 (both servers
// check a quorum peer's address against its certificate), and a rogue CA
// no member trusts. Key stores are PKCS12 (openssl), the trust store JKS
// (keytool): the same files serve keeper and ZooKeeper members.
type quorumPKI struct {
	dir     string
	ca      *issued
	rogueCA *issued
	trust   string // JKS trust store holding the CA
}

// issued is a key and its certificate in PEM files.
type issued struct {
	key             *ecdsa.PrivateKey
	cert            *x509.Certificate
	certPEM, keyPEM string
}

func newQuorumPKI(t *testing.T) *quorumPKI {
	t.Helper()
	for _, tool := range []string{"openssl", "keytool"} {
		if _, err := exec.LookPath(tool); err != nil {
			if v := os.Getenv(zkreal.RequireEnv); v != "" && v != "0" {
				t.Fatalf("%s is required: %v", tool, err)
			}
			t.Skipf("%s not available: %v", tool, err)
		}
	}
	p := &quorumPKI{dir: t.TempDir()}
	p.ca = p.issue(t, "ca", "keeper quorum CA", nil)
	p.rogueCA = p.issue(t, "rogue-ca", "rogue CA", nil)
	p.trust = filepath.Join(p.dir, "trust.jks")
	run(t, "keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", p.ca.certPEM,
		"-keystore", p.trust, "-storetype", "JKS", "-storepass", storePass)
	return p
}

// issue makes a certificate for cn signed by ca (a CA certificate when ca
// is nil) and writes its PEM files.
func (p *quorumPKI) issue(t *testing.T, name, cn string, ca *issued) *issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(certSerial.Add(1)), Subject: pkix.Name{CommonName: cn, Organization: []string{"keeper tests"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	parent, signer := tmpl, key
	if ca == nil {
		tmpl.IsCA, tmpl.KeyUsage, tmpl.ExtKeyUsage = true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature, nil
	} else {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	out := &issued{key: key}
	if out.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	out.certPEM = filepath.Join(p.dir, name+".crt")
	out.keyPEM = filepath.Join(p.dir, name+".key")
	writeFile(t, out.certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeFile(t, out.keyPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	return out
}

// keyStore issues a member certificate (by the rogue CA when rogue) and
// packs it into a PKCS12 key store.
func (p *quorumPKI) keyStore(t *testing.T, name string, rogue bool) string {
	t.Helper()
	ca := p.ca
	if rogue {
		ca = p.rogueCA
	}
	c := p.issue(t, name, "keeper member "+name, ca)
	path := filepath.Join(p.dir, name+".p12")
	run(t, "openssl", "pkcs12", "-export", "-in", c.certPEM, "-inkey", c.keyPEM, "-certfile", ca.certPEM,
		"-name", name, "-out", path, "-passout", "pass:"+storePass)
	return path
}

// tlsLines are a member's zoo.cfg lines for quorum TLS with keyStore:
// sslQuorum and portUnification as given.
func (p *quorumPKI) tlsLines(keyStore string, sslQuorum, portUnification bool) []string {
	return []string{
		fmt.Sprintf("sslQuorum=%v", sslQuorum),
		fmt.Sprintf("portUnification=%v", portUnification),
		"ssl.quorum.keyStore.location=" + keyStore,
		"ssl.quorum.keyStore.password=" + storePass,
		"ssl.quorum.keyStore.type=PKCS12",
		"ssl.quorum.trustStore.location=" + p.trust,
		"ssl.quorum.trustStore.password=" + storePass,
		"ssl.quorum.trustStore.type=JKS",
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}
