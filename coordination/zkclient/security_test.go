package zkclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keeper/coordination/clienttls"
	"keeper/coordination/server"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zoocfg"
)

// testPKI is a directory of PEM stores: a CA's trust store, the server's
// key store, a client's, and a stranger's (issued by another CA).
type testPKI struct {
	dir                                      string
	trust, serverKey, clientKey, strangerKey string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	ca, caKey := issue(t, "keeper test CA", nil, nil)
	other, otherKey := issue(t, "another CA", nil, nil)
	p := testPKI{dir: dir, trust: filepath.Join(dir, "trust.pem")}
	writePEM(t, p.trust, nil, ca)
	for _, k := range []struct {
		path  *string
		name  string
		ca    *x509.Certificate
		caKey *ecdsa.PrivateKey
	}{{&p.serverKey, "server", ca, caKey}, {&p.clientKey, "client", ca, caKey}, {&p.strangerKey, "stranger", other, otherKey}} {
		cert, key := issue(t, k.name, k.ca, k.caKey)
		*k.path = filepath.Join(dir, k.name+".pem")
		writePEM(t, *k.path, key, cert)
	}
	return p
}

// issue makes a certificate for cn valid for 127.0.0.1 and localhost,
// signed by ca (self-signed, as a CA, when ca is nil).
func issue(t *testing.T, cn string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: ca == nil, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca, caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func writePEM(t *testing.T, path string, key *ecdsa.PrivateKey, cert *x509.Certificate) {
	t.Helper()
	var data []byte
	if key != nil {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		data = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	data = append(data, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// startSecureServer runs a keeper server whose only port is TLS with
// ssl.clientAuth=need, and which requires SASL DIGEST-MD5 (user bob,
// password secret) of every session, as sessionRequireClientSASLAuth
// does. It returns the TLS port's address.
func startSecureServer(t *testing.T, p testPKI) string {
	t.Helper()
	cfg := server.Config{
		SecureClientAddr: "127.0.0.1:0",
		ClientTLS: &clienttls.Config{
			KeyStore:   clienttls.Store{Key: "ssl.keyStore", Location: p.serverKey},
			TrustStore: clienttls.Store{Key: "ssl.trustStore", Location: p.trust},
			ClientAuth: clienttls.Need,
		},
		Core: zkcore.DefaultConfig(),
	}
	cfg.Core.Auth = zkcore.AuthConfig{SASLUsers: map[string]string{"bob": "secret"}, Entropy: rand.Reader,
		SASLProvider: true, EnforceSchemes: []string{"sasl"}}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.SecureAddr().String()
}

// clientSecurity loads the security that -D flags, as CLIENT_JVMFLAGS
// would hold them, ask for.
func clientSecurity(t *testing.T, flags string) (Security, error) {
	t.Helper()
	cs, err := zoocfg.ParseClientSecurity(zoocfg.ClientEnvProperties(func(string) string { return flags }, "CLIENT_JVMFLAGS"))
	if err != nil {
		t.Fatal(err)
	}
	return NewSecurity(cs)
}

func writeJAAS(t *testing.T, dir, user, password string) string {
	t.Helper()
	path := filepath.Join(dir, "jaas.conf")
	data := "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  username=\"" + user +
		"\"\n  password=\"" + password + "\";\n};\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSecureDial connects keeper's client to a server that needs a
// client certificate and SASL: with the right stores and credentials the
// session works; a wrong password is AuthFailed, and a missing or
// untrusted certificate, or a server the trust store does not vouch for,
// fails the TLS handshake, never reaching the session.
func TestSecureDial(t *testing.T) {
	p := newTestPKI(t)
	addr := startSecureServer(t, p)
	good := writeJAAS(t, t.TempDir(), "bob", "secret")
	bad := writeJAAS(t, t.TempDir(), "bob", "wrong")
	tlsFlags := func(key string) string {
		f := " -Dzookeeper.client.secure=true -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty" +
			" -Dzookeeper.ssl.trustStore.location=" + p.trust
		if key != "" {
			f += " -Dzookeeper.ssl.keyStore.location=" + key
		}
		return f
	}
	tests := []struct {
		name    string
		flags   string
		wantErr error  // errors.Is the dial's error
		wantMsg string // or a part of its message
	}{
		{"tls and sasl", tlsFlags(p.clientKey) + " -Djava.security.auth.login.config=" + good, nil, ""},
		{"wrong password", tlsFlags(p.clientKey) + " -Djava.security.auth.login.config=" + bad, zkproto.ErrAuthFailed, ""},
		{"no client certificate", tlsFlags("") + " -Djava.security.auth.login.config=" + good, nil, "tls: "},
		{"untrusted client certificate", tlsFlags(p.strangerKey) + " -Djava.security.auth.login.config=" + good, nil, "tls: "},
		{"server not trusted", strings.Replace(tlsFlags(p.clientKey), p.trust, p.strangerKey, 1) +
			" -Djava.security.auth.login.config=" + good, nil, "x509"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sec, err := clientSecurity(t, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			var opts Options
			sec.Apply(&opts)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			c, err := Dial(ctx, addr, opts)
			if tt.wantErr == nil && tt.wantMsg == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, _, err := c.Create(ctx, "/secure", []byte("x"), CreateOptions{}); err != nil {
					t.Fatalf("create after SASL: %v", err)
				}
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			t.Log(err)
			if tt.wantErr != nil && !errors.Is(err, ErrSASLRefused) {
				t.Fatalf("%v does not wrap ErrSASLRefused", err)
			}
			if tt.wantMsg != "" && (errors.Is(err, zkproto.ErrAuthFailed) || !strings.Contains(err.Error(), tt.wantMsg)) {
				t.Fatalf("got %v, want a TLS failure mentioning %q", err, tt.wantMsg)
			}
		})
	}
}

// TestSecureSession checks that a Session over TLS and SASL works, and
// that one whose credentials the server refuses gives up at once with
// AuthFailed, as the Java client's AUTH_FAILED state is final, instead of
// trying the servers until its ctx ends.
func TestSecureSession(t *testing.T) {
	p := newTestPKI(t)
	addr := startSecureServer(t, p)
	flags := " -Dzookeeper.client.secure=true -Dzookeeper.ssl.trustStore.location=" + p.trust +
		" -Dzookeeper.ssl.keyStore.location=" + p.clientKey + " -Djava.security.auth.login.config="
	for _, tc := range []struct {
		name, password string
		wantErr        error
	}{{"right password", "secret", nil}, {"wrong password", "guess", zkproto.ErrAuthFailed}} {
		t.Run(tc.name, func(t *testing.T) {
			sec, err := clientSecurity(t, flags+writeJAAS(t, t.TempDir(), "bob", tc.password))
			if err != nil {
				t.Fatal(err)
			}
			var opts SessionOptions
			sec.Apply(&opts.Options)
			s, err := OpenSession(testCtx(t), []string{addr, addr}, opts)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("got %v, want %v at once", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, _, err := s.Create(testCtx(t), "/session", nil, CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSASLWithoutServerSASL checks that a client asked to authenticate
// refuses a server that offers no SASL (it answers sasl(102) with no
// token): the server never proved it knows the password, so the client
// fails with AuthFailed as the Java client does, rather than carry on
// unauthenticated.
func TestSASLWithoutServerSASL(t *testing.T) {
	addr := startServer(t)
	opts := Options{SASL: DigestMD5("bob", "secret")}
	_, err := Dial(testCtx(t), addr, opts)
	if !errors.Is(err, zkproto.ErrAuthFailed) {
		t.Fatalf("got %v, want AuthFailed", err)
	}
}

// TestSecurityConfigErrors checks that a configuration keeper's clients
// cannot honour fails when it is loaded, naming what is wrong.
func TestSecurityConfigErrors(t *testing.T) {
	p := newTestPKI(t)
	dir := t.TempDir()
	krb := filepath.Join(dir, "krb.conf")
	if err := os.WriteFile(krb, []byte(`Client { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k" principal="zk"; };`), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	krb5 := write("krb5.conf", "[libdefaults]\n default_realm = EXAMPLE.COM\n")
	krbPrompt := write("prompt.jaas", `Client { com.sun.security.auth.module.Krb5LoginModule required doNotPrompt=true; };`)
	krbCache := write("cache.jaas", `Client { com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true ticketCache="`+
		filepath.Join(dir, "no-cache")+`"; };`)
	tests := []struct{ name, flags, want string }{
		{"missing trust store", "-Dzookeeper.client.secure=true -Dzookeeper.ssl.trustStore.location=" + filepath.Join(dir, "none.pem"),
			"zookeeper.ssl.trustStore.location"},
		{"key store without key", "-Dzookeeper.client.secure=true -Dzookeeper.ssl.keyStore.location=" + p.trust,
			"zookeeper.ssl.keyStore.location"},
		{"missing JAAS file", "-Djava.security.auth.login.config=" + filepath.Join(dir, "none.conf"), "java.security.auth.login.config"},
		{"kerberos keytab missing", "-Djava.security.auth.login.config=" + krb + " -Djava.security.krb5.conf=" + krb5, "/k"},
		{"kerberos without credentials", "-Djava.security.auth.login.config=" + krbPrompt + " -Djava.security.krb5.conf=" + krb5,
			"cannot prompt"},
		{"kerberos cache missing", "-Djava.security.auth.login.config=" + krbCache + " -Djava.security.krb5.conf=" + krb5,
			filepath.Join(dir, "no-cache")},
		{"krb5.conf missing", "-Djava.security.auth.login.config=" + krb + " -Djava.security.krb5.conf=" + filepath.Join(dir, "none"),
			"krb5.conf"},
		{"no such section", "-Dzookeeper.sasl.clientconfig=Other -Djava.security.auth.login.config=" + writeJAAS(t, dir, "bob", "x"),
			"no section Other"},
		{"bad protocol", "-Dzookeeper.client.secure=true -Dzookeeper.ssl.protocol=SSLv3", "zookeeper.ssl.protocol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := clientSecurity(t, tt.flags)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error naming %q", err, tt.want)
			}
		})
	}
	sec, err := clientSecurity(t, "-Dzookeeper.sasl.client=false -Djava.security.auth.login.config="+krb)
	if err != nil || sec.SASL != nil || sec.TLS != nil {
		t.Fatalf("zookeeper.sasl.client=false: got %+v, %v; want no SASL", sec, err)
	}
}

// TestServerPrincipal: the principal a Kerberos client asks a ticket for,
// as ZooKeeper's Java client names it.
func TestServerPrincipal(t *testing.T) {
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2181}
	lookup := func(names ...string) func(context.Context, string) ([]string, error) {
		return func(_ context.Context, ip string) ([]string, error) {
			if ip != "127.0.0.1" {
				t.Fatalf("reverse lookup of %s", ip)
			}
			if names == nil {
				return nil, errors.New("no such host")
			}
			return names, nil
		}
	}
	tests := []struct {
		name   string
		props  map[string]string
		addr   string
		lookup func(context.Context, string) ([]string, error)
		want   string
	}{
		{"canonical name", nil, "127.0.0.1:2181", lookup("localhost."), "zookeeper/localhost"},
		{"first of several names", nil, "10.0.0.1:2181", lookup("zk1.example.com.", "zk1"), "zookeeper/zk1.example.com"},
		{"no reverse name", nil, "zk1:2181", lookup(), "zookeeper/zk1"},
		{"the address itself", nil, "zk1:2181", lookup("127.0.0.1"), "zookeeper/zk1"},
		{"not canonicalized", map[string]string{canonicalizeKey: "false"}, "zk1:2181", lookup("localhost"), "zookeeper/zk1"},
		{"not canonicalized, any other word", map[string]string{canonicalizeKey: "no"}, "zk1:2181", lookup("localhost"), "zookeeper/zk1"},
		{"canonicalized in any case", map[string]string{canonicalizeKey: "TRUE"}, "zk1:2181", lookup("localhost"), "zookeeper/localhost"},
		{"another service", map[string]string{saslUsernameKey: "zk"}, "zk1:2181", lookup("localhost"), "zk/localhost"},
		{"named outright", map[string]string{serverPrincipalKey: "zookeeper/zk.example.com@EXAMPLE.COM", saslUsernameKey: "zk"},
			"zk1:2181", lookup("localhost"), "zookeeper/zk.example.com@EXAMPLE.COM"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := serverPrincipal(tc.props, tc.addr, remote, tc.lookup); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
