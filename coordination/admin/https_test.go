package admin_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"keeper/coordination/clienttls"
	"keeper/coordination/server"
	"keeper/coordination/zkcore"
)

// pkiCert is a key and its certificate, for the admin TLS tests.
type pkiCert struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
}

var pkiSerial atomic.Int64

// issue makes a certificate for cn on 127.0.0.1, signed by ca
// (self-signed, and a CA, when ca is nil).
func issue(t *testing.T, cn string, ca *pkiCert) *pkiCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(pkiSerial.Add(1)),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  ca == nil,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
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
	return &pkiCert{key: key, cert: cert}
}

// keyPEM writes c's key and certificate as a PEM key store in dir.
func (c *pkiCert) keyPEM(t *testing.T, dir, name string) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		t.Fatal(err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw})...)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// certPEM writes c's certificate as a PEM trust store in dir.
func (c *pkiCert) certPEM(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tlsPair returns c as a tls.Certificate, for a client.
func (c *pkiCert) tlsPair() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{c.cert.Raw}, PrivateKey: c.key, Leaf: c.cert}
}

// adminPKI is a CA, the admin server's stores issued by it, a client
// certificate it vouches for and one from a CA it does not know.
type adminPKI struct {
	ca               *pkiCert
	keyStore, trust  string
	client, stranger *pkiCert
}

func newAdminPKI(t *testing.T) adminPKI {
	dir := t.TempDir()
	ca := issue(t, "admin test ca", nil)
	return adminPKI{
		ca:       ca,
		keyStore: issue(t, "admin server", ca).keyPEM(t, dir, "server.pem"),
		trust:    ca.certPEM(t, dir, "ca.pem"),
		client:   issue(t, "operator", ca),
		stranger: issue(t, "stranger", issue(t, "other ca", nil)),
	}
}

// adminTLS is the server configuration ConfigFromZoo makes of
// admin.forceHttps or admin.portUnification with the ssl.quorum stores.
func (p adminPKI) adminTLS(need bool) *clienttls.Config {
	auth := clienttls.None
	if need {
		auth = clienttls.Need
	}
	return &clienttls.Config{
		Prefix:           "ssl.quorum.",
		KeyStore:         clienttls.Store{Location: p.keyStore, Type: "PEM"},
		TrustStore:       clienttls.Store{Location: p.trust, Type: "PEM"},
		ClientAuth:       auth,
		EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"},
	}
}

// fetch GETs url with a client that trusts roots and offers certs; it
// returns the status and the Strict-Transport-Security header, or err.
func fetch(url string, roots *x509.CertPool, certs ...tls.Certificate) (int, string, error) {
	client := http.Client{Timeout: testTimeout, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs},
	}}
	resp, err := client.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	if resp.StatusCode == http.StatusOK && !strings.Contains(string(body), `"command" : "ruok"`) &&
		!strings.Contains(string(body), `"command": "ruok"`) {
		return 0, "", &unexpectedBody{string(body)}
	}
	return resp.StatusCode, resp.Header.Get("Strict-Transport-Security"), nil
}

type unexpectedBody struct{ body string }

func (e *unexpectedBody) Error() string { return "unexpected body: " + e.body }

// TestAdminHTTPS walks the admin server's TLS modes: what a plaintext
// client, an HTTPS client without a certificate, one with a certificate
// the trust store vouches for and one with a stranger's certificate get.
// "ok" is a 200 with ruok's JSON; "refused" is a failed handshake or
// connection, or a non-200 answer.
func TestAdminHTTPS(t *testing.T) {
	p := newAdminPKI(t)
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.cert)
	const ok, refused = "ok", "refused"
	tests := []struct {
		name                             string
		plaintextToo, need               bool
		plain, noCert, trusted, stranger string
	}{
		{name: "forceHttps", plain: refused, noCert: ok, trusted: ok, stranger: ok},
		{name: "portUnification", plaintextToo: true, plain: ok, noCert: ok, trusted: ok, stranger: ok},
		{name: "forceHttps needClientAuth", need: true, plain: refused, noCert: refused, trusted: ok, stranger: refused},
		{name: "portUnification needClientAuth", plaintextToo: true, need: true, plain: ok, noCert: refused, trusted: ok, stranger: refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, func(c *server.Config) {
				c.AdminTLS = p.adminTLS(tt.need)
				c.AdminPlaintextToo = tt.plaintextToo
			})
			addr := s.AdminAddr().String()
			https := "https://" + addr + "/commands/ruok"
			outcome := func(code int, sts string, err error, wantSTS bool) string {
				if err != nil || code != http.StatusOK {
					return refused
				}
				if got := sts != ""; got != wantSTS {
					t.Errorf("Strict-Transport-Security = %q, want it set: %v", sts, wantSTS)
				}
				return ok
			}
			code, sts, err := fetch("http://"+addr+"/commands/ruok", nil)
			if got := outcome(code, sts, err, false); got != tt.plain {
				t.Errorf("plaintext: %s (status %d, err %v), want %s", got, code, err, tt.plain)
			}
			if !tt.plaintextToo && code != http.StatusBadRequest {
				t.Errorf("plaintext to an HTTPS-only port: status %d (err %v), want 400", code, err)
			}
			code, sts, err = fetch(https, roots)
			if got := outcome(code, sts, err, true); got != tt.noCert {
				t.Errorf("https without a certificate: %s (err %v), want %s", got, err, tt.noCert)
			}
			code, sts, err = fetch(https, roots, p.client.tlsPair())
			if got := outcome(code, sts, err, true); got != tt.trusted {
				t.Errorf("https with a trusted certificate: %s (err %v), want %s", got, err, tt.trusted)
			}
			code, sts, err = fetch(https, roots, p.stranger.tlsPair())
			if got := outcome(code, sts, err, true); got != tt.stranger {
				t.Errorf("https with an untrusted certificate: %s (err %v), want %s", got, err, tt.stranger)
			}
			// A client that does not trust the server's certificate
			// refuses it, whatever the mode.
			if _, _, err := fetch(https, x509.NewCertPool()); err == nil {
				t.Error("a client without the server's CA was served")
			}
			// The one plaintext connection a unified port served is
			// counted; nothing is on an HTTPS-only port.
			want := "0"
			if tt.plaintextToo {
				want = "1"
			}
			if got := mntrLine(flw(t, s.Addr(), "mntr", nil), "zk_insecure_admin_count"); got != want {
				t.Errorf("zk_insecure_admin_count = %q, want %s", got, want)
			}
		})
	}
}

// TestAdminHTTPSBadStore checks that an admin key store that cannot be
// loaded fails the start with an error naming the ssl.quorum key.
func TestAdminHTTPSBadStore(t *testing.T) {
	dir := t.TempDir()
	cfg := server.Config{
		ClientAddr: "127.0.0.1:0",
		Core:       zkcore.DefaultConfig(),
		DataDir:    dir,
		DataLogDir: dir,
		AdminAddr:  "127.0.0.1:0",
		AdminTLS:   &clienttls.Config{Prefix: "ssl.quorum.", KeyStore: clienttls.Store{Location: filepath.Join(dir, "missing.pem")}},
	}
	s, err := server.New(cfg)
	if err == nil {
		err = s.Start()
		defer s.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "ssl.quorum.keyStore.location") {
		t.Fatalf("start error = %v, want one naming ssl.quorum.keyStore.location", err)
	}
}

// TestAdminCommandsNeedNoAuth pins the admin commands' authentication as
// ZooKeeper 3.9 has it for the commands keeper has: none. 3.9 asks for an
// Authorization header only on snapshot and restore, which are not among
// them (docs/tls.md, "The admin server"). Every listed command answers
// 200 with its JSON without the header, and with a header whose
// credentials are wrong, since 3.9 never reads it for these commands.
func TestAdminCommandsNeedNoAuth(t *testing.T) {
	s := startServer(t)
	list := get(t, s, "/commands")
	names := regexp.MustCompile(`href="/commands/([a-z_]+)"`).FindAllStringSubmatch(list, -1)
	if len(names) < 20 {
		t.Fatalf("only %d commands listed: %s", len(names), list)
	}
	headers := []string{"", "digest nobody:wrong", "x509", "garbage"}
	client := http.Client{Timeout: testTimeout}
	for _, m := range names {
		for _, h := range headers {
			req, err := http.NewRequest(http.MethodGet, "http://"+s.AdminAddr().String()+"/commands/"+m[1], nil)
			if err != nil {
				t.Fatal(err)
			}
			if h != "" {
				req.Header.Set("Authorization", h)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"command": "`+m[1]+`"`) {
				t.Errorf("%s with Authorization %q: status %d, body %.200s", m[1], h, resp.StatusCode, body)
			}
		}
	}
}

// TestAdminHTTPSBadConnections opens, on a port-unification admin port,
// a connection that never speaks, one that starts a TLS record and sends
// garbage, and one that sends a plaintext request line and stops; each
// holds only its own connection: HTTPS and HTTP requests are served while
// they stay open, and the garbled handshake is closed by the server.
func TestAdminHTTPSBadConnections(t *testing.T) {
	p := newAdminPKI(t)
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.cert)
	s := startServer(t, func(c *server.Config) {
		c.AdminTLS = p.adminTLS(false)
		c.AdminPlaintextToo = true
	})
	addr := s.AdminAddr().String()
	dial := func(first []byte) net.Conn {
		c, err := net.DialTimeout("tcp", addr, testTimeout)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write(first); err != nil {
			t.Fatal(err)
		}
		return c
	}
	dial(nil)
	garbled := dial([]byte{0x16, 0x03, 0x01, 0x00, 0x05, 0xde, 0xad, 0xbe, 0xef, 0x00})
	dial([]byte("GET /commands/ruok HTTP/1.1\r\n"))

	for _, url := range []string{"https://" + addr + "/commands/ruok", "http://" + addr + "/commands/ruok"} {
		if code, _, err := fetch(url, roots); err != nil || code != http.StatusOK {
			t.Errorf("%s beside the bad connections: status %d, err %v", url, code, err)
		}
	}
	// The server answers the garbled handshake with an alert, or just
	// closes: either way the connection ends.
	if err := garbled.SetReadDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	// A reset counts as an end too; only the deadline passing does not.
	var ne net.Error
	if _, err := io.Copy(io.Discard, garbled); errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("garbled handshake: the server did not close the connection: %v", err)
	}
}

// TestAdminHTTPSReload checks that with Reload (sslQuorumReloadCertFiles)
// the admin port serves, from the next handshake on, the key store that
// replaced the one it started with.
func TestAdminHTTPSReload(t *testing.T) {
	p := newAdminPKI(t)
	cfg := p.adminTLS(false)
	cfg.Reload = true
	s := startServer(t, func(c *server.Config) { c.AdminTLS = cfg })
	url := "https://" + s.AdminAddr().String() + "/commands/ruok"
	pool := func(c *pkiCert) *x509.CertPool {
		roots := x509.NewCertPool()
		roots.AddCert(c.cert)
		return roots
	}
	if code, _, err := fetch(url, pool(p.ca)); err != nil || code != http.StatusOK {
		t.Fatalf("before the reload: status %d, err %v", code, err)
	}
	newCA := issue(t, "new admin ca", nil)
	// Written beside and renamed over, so the file is another one.
	next := issue(t, "admin server", newCA).keyPEM(t, filepath.Dir(p.keyStore), "next.pem")
	if err := os.Rename(next, p.keyStore); err != nil {
		t.Fatal(err)
	}
	if code, _, err := fetch(url, pool(newCA)); err != nil || code != http.StatusOK {
		t.Errorf("after the reload, trusting the new CA: status %d, err %v", code, err)
	}
	if _, _, err := fetch(url, pool(p.ca)); err == nil {
		t.Error("after the reload, a client trusting only the old CA was served")
	}
}

// mntrLine returns a key's value in a mntr answer, or "".
func mntrLine(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok && k == key {
			return v
		}
	}
	return ""
}
