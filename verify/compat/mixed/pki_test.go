package mixed

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"keeper/verify/compat/internal/pkitest"
)

// storePass protects every store the quorum TLS tests make.
const storePass = "keeper-quorum-tls"

// quorumPKI is a test CA whose certificates name 127.0.0.1 (both servers
// check a quorum peer's address against its certificate), and a rogue CA
// no member trusts. Key stores are PKCS12 (openssl), the trust store JKS
// (keytool): the same files serve keeper and ZooKeeper members.
type quorumPKI struct {
	dir     string
	ca      *pkitest.Cert
	rogueCA *pkitest.Cert
	trust   string // JKS trust store holding the CA
}

func newQuorumPKI(t *testing.T) *quorumPKI {
	t.Helper()
	pkitest.RequireTools(t, "openssl", "keytool")
	p := &quorumPKI{dir: t.TempDir()}
	p.ca = p.issue(t, "ca", "keeper quorum CA", nil)
	p.rogueCA = p.issue(t, "rogue-ca", "rogue CA", nil)
	p.trust = filepath.Join(p.dir, "trust.jks")
	pkitest.TrustStore(t, p.ca, p.trust, "JKS", storePass)
	return p
}

// issue makes a certificate for cn signed by ca (a CA certificate when ca
// is nil) and writes its PEM files.
func (p *quorumPKI) issue(t *testing.T, name, cn string, ca *pkitest.Cert) *pkitest.Cert {
	t.Helper()
	r := pkitest.Request{Name: name, Subject: pkix.Name{CommonName: cn, Organization: []string{"keeper tests"}}.ToRDNSequence(),
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	if ca == nil {
		r.IsCA, r.KeyUsage, r.ExtKeyUsage = true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature, nil
	}
	return pkitest.Issue(t, p.dir, r, ca)
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
	pkitest.PKCS12(t, c, ca, name, path, storePass)
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
