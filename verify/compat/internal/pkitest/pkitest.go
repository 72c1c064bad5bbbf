// Package pkitest issues test certificates and packs them into the key
// and trust stores keeper and Apache ZooKeeper both read (docs/tls.md):
// PEM files written with the standard library, PKCS12 key stores with
// openssl, JKS and PKCS12 trust stores with keytool. A test on a machine
// without those tools is skipped, or failed when zkreal.RequireEnv is set.
package pkitest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
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

// serial numbers every certificate issued in the process differently.
var serial atomic.Int64

// Cert is a key and its certificate, with their PEM files.
type Cert struct {
	Key     *ecdsa.PrivateKey
	Cert    *x509.Certificate
	CertPEM string // certificate file, dir/name.crt
	KeyPEM  string // PKCS#8 key file, dir/name.key
}

// Request is a certificate to issue. Every certificate names 127.0.0.1
// and localhost, which the servers check a peer's address against.
type Request struct {
	Name                string // the files' base name
	Subject             pkix.RDNSequence
	NotBefore, NotAfter time.Time
	IsCA                bool
	KeyUsage            x509.KeyUsage
	ExtKeyUsage         []x509.ExtKeyUsage // none: any use
}

// Issue makes r's certificate with a fresh P-256 key, signed by ca
// (self-signed when ca is nil), and writes its PEM files into dir.
func Issue(t testing.TB, dir string, r Request, ca *Cert) *Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rawSubject, err := asn1.Marshal(r.Subject)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		RawSubject:            rawSubject,
		NotBefore:             r.NotBefore,
		NotAfter:              r.NotAfter,
		IsCA:                  r.IsCA,
		BasicConstraintsValid: true,
		KeyUsage:              r.KeyUsage,
		ExtKeyUsage:           r.ExtKeyUsage,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.Cert, ca.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cert{Key: key}
	if c.Cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	c.CertPEM = write(t, filepath.Join(dir, r.Name+".crt"), certPEM)
	c.KeyPEM = write(t, filepath.Join(dir, r.Name+".key"), keyPEM)
	return c
}

func write(t testing.TB, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// RequireTools skips t (or fails it, with zkreal.RequireEnv set) unless
// every one of the named programs is installed.
func RequireTools(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			if v := os.Getenv(zkreal.RequireEnv); v != "" && v != "0" {
				t.Fatalf("%s is required: %v", name, err)
			}
			t.Skipf("%s not available: %v", name, err)
		}
	}
}

// Tool runs openssl or keytool (RequireTools first), failing t with its
// output if it fails.
func Tool(t testing.TB, name string, args ...string) {
	t.Helper()
	RequireTools(t, name)
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// PKCS12 packs c, with the CA certificate ca, into a PKCS12 key store at
// path under the alias name, protected by pass.
func PKCS12(t testing.TB, c, ca *Cert, name, path, pass string) {
	t.Helper()
	Tool(t, "openssl", "pkcs12", "-export", "-in", c.CertPEM, "-inkey", c.KeyPEM, "-certfile", ca.CertPEM,
		"-name", name, "-out", path, "-passout", "pass:"+pass)
}

// TrustStore makes a trust store of storeType (JKS or PKCS12) at path
// holding ca's certificate, protected by pass.
func TrustStore(t testing.TB, ca *Cert, path, storeType, pass string) {
	t.Helper()
	Tool(t, "keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", ca.CertPEM,
		"-keystore", path, "-storetype", storeType, "-storepass", pass)
}
