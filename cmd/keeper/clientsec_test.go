package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keeper/coordination/clienttls"
	"keeper/coordination/server"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/internal/testhost"
	"keeper/ledgerstore/bookietls/bookietlstest"
	"keeper/ledgerstore/metadata"
)

// secureFiles are a CA's trust store, a server's and a client's key
// stores (PEM), and JAAS files with bob's right and wrong password.
type secureFiles struct {
	trust, serverKey, clientKey, goodJAAS, badJAAS string
}

func newSecureFiles(t *testing.T) secureFiles {
	t.Helper()
	dir := t.TempDir()
	ca := bookietlstest.CA(t, dir, "test-ca")
	f := secureFiles{trust: filepath.Join(dir, "trust.pem"), serverKey: filepath.Join(dir, "server.pem"),
		clientKey: filepath.Join(dir, "client.pem"), goodJAAS: filepath.Join(dir, "good.conf"), badJAAS: filepath.Join(dir, "bad.conf")}
	// The stores are PEM files named .pem: the CA's certificate, and a
	// key with its certificate in one file.
	concat := func(path string, parts ...string) {
		var store []byte
		for _, part := range parts {
			b, err := os.ReadFile(part)
			if err != nil {
				t.Fatal(err)
			}
			store = append(store, b...)
		}
		writeSecureFile(t, path, store)
	}
	concat(f.trust, ca.CertPEM)
	for _, path := range []string{f.serverKey, f.clientKey} {
		c := bookietlstest.Issue(t, dir, strings.TrimSuffix(filepath.Base(path), ".pem"), ca, bookietlstest.Options{})
		concat(path, c.KeyPEM, c.CertPEM)
	}
	jaas := func(pw string) []byte {
		return []byte("Client {\n org.apache.zookeeper.server.auth.DigestLoginModule required username=\"bob\" password=\"" + pw + "\";\n};\n")
	}
	writeSecureFile(t, f.goodJAAS, jaas("secret"))
	writeSecureFile(t, f.badJAAS, jaas("guess"))
	return f
}

func writeSecureFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// flags are the -D flags that connect with TLS and SASL using jaas.
func (f secureFiles) flags(jaas string) string {
	return "-Dzookeeper.client.secure=true -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty" +
		" -Dzookeeper.ssl.keyStore.location=" + f.clientKey + " -Dzookeeper.ssl.trustStore.location=" + f.trust +
		" -Djava.security.auth.login.config=" + jaas
}

// startSecureKeeper runs a keeper server with only a secure client port
// (ssl.clientAuth=need) that requires SASL DIGEST-MD5 of every session
// (sessionRequireClientSASLAuth=true), and returns that port's address.
func startSecureKeeper(t *testing.T, f secureFiles) string {
	t.Helper()
	cfg := server.Config{SecureClientAddr: "127.0.0.1:0", Core: zkcore.DefaultConfig(),
		ClientTLS: &clienttls.Config{KeyStore: clienttls.Store{Key: "ssl.keyStore", Location: f.serverKey},
			TrustStore: clienttls.Store{Key: "ssl.trustStore", Location: f.trust}, ClientAuth: clienttls.Need}}
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

// TestShellSecure runs the shell against a server that needs a client
// certificate and SASL: with the settings in a --client-conf file, or in
// CLIENT_JVMFLAGS, it works (and whoami shows the sasl identity); with
// the wrong password it cannot connect and says AuthFailed; without TLS
// it cannot connect at all.
func TestShellSecure(t *testing.T) {
	f := newSecureFiles(t)
	addr := startSecureKeeper(t, f)
	conf := filepath.Join(t.TempDir(), "client.properties")
	writeSecureFile(t, conf, []byte(strings.ReplaceAll(strings.TrimPrefix(f.flags(f.goodJAAS), "-D"), " -D", "\n")+"\n"))

	run := func(jvmflags string, args ...string) (string, error) {
		t.Setenv("CLIENT_JVMFLAGS", jvmflags)
		var out bytes.Buffer
		root := newRootCmd()
		root.SetArgs(append([]string{"shell", "--server", addr, "--timeout", "10s"}, args...))
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		return out.String(), err
	}
	out, err := run("", "--client-conf", conf, "whoami")
	if err != nil || !strings.Contains(out, "sasl: bob") {
		t.Fatalf("--client-conf: %v\n%s", err, out)
	}
	out, err = run(f.flags(f.goodJAAS), "create", "/viaenv", "x")
	if err != nil || !strings.Contains(out, "Created /viaenv") {
		t.Fatalf("CLIENT_JVMFLAGS: %v\n%s", err, out)
	}
	var errOut bytes.Buffer
	sec, err := loadClientSecurity(func(string) string { return f.flags(f.badJAAS) }, "", "CLIENT_JVMFLAGS")
	if err != nil {
		t.Fatal(err)
	}
	code := runShell(context.Background(), shellOptions{server: addr, timeout: 10 * time.Second, security: sec},
		[]string{"ls", "/"}, nil, &bytes.Buffer{}, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "AuthFailed") {
		t.Fatalf("wrong password: exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	code = runShell(context.Background(), shellOptions{server: addr, timeout: 5 * time.Second},
		[]string{"ls", "/"}, nil, &bytes.Buffer{}, &errOut)
	if code != 1 || !strings.HasPrefix(errOut.String(), "Cannot connect to ") {
		t.Fatalf("plaintext to the TLS port: exit %d, stderr %q", code, errOut.String())
	}
	if _, err := run("-Dzookeeper.ssl.crl=true", "ls", "/"); err == nil || !strings.Contains(err.Error(), "zookeeper.ssl.crl") {
		t.Fatalf("a revocation check was not refused: %v", err)
	}
}

// TestBenchZKSecure runs bench zk with CLIENT_JVMFLAGS against the secure
// server: every request is answered, none fails.
func TestBenchZKSecure(t *testing.T) {
	f := newSecureFiles(t)
	addr := startSecureKeeper(t, f)
	t.Setenv("CLIENT_JVMFLAGS", f.flags(f.goodJAAS))
	out, err := runKeeper(t, t.Context(), "bench", "zk", "--servers", addr, "--op", "set", "--clients", "2",
		"--inflight", "2", "--duration", benchWindow(200*time.Millisecond).String(), "--warmup", "0s", "--keyspace", "10",
		"--progress=false")
	if err != nil {
		t.Fatal(err)
	}
	m := decodeLine(t, out)
	if m["ops"].(float64) <= 0 || m["errors"] != 0.0 {
		t.Fatalf("result %v", m)
	}
	t.Setenv("CLIENT_JVMFLAGS", f.flags(f.badJAAS))
	if _, err := runKeeper(t, t.Context(), "bench", "zk", "--servers", addr, "--op", "get", "--duration", "100ms",
		"--warmup", "0s", "--progress=false"); !errors.Is(err, zkproto.ErrAuthFailed) {
		t.Fatalf("wrong password: got %v, want AuthFailed", err)
	}
}

// TestMetadataSessionSecure opens the ledger store's metadata session as
// a bookie does (metadata.Dial with BOOKIE_EXTRA_OPTS's settings) against
// the secure server, formats the ledgers tree over it, and checks that a
// wrong password fails the dial with AuthFailed at once rather than
// retrying until the connect timeout.
func TestMetadataSessionSecure(t *testing.T) {
	f := newSecureFiles(t)
	addr := startSecureKeeper(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(20*time.Second))
	defer cancel()
	t.Setenv(bookieExtraOptsEnv, f.flags(f.goodJAAS))
	sec, err := metadataSecurity()
	if err != nil {
		t.Fatal(err)
	}
	st, closeStore, err := openStore(ctx, []string{addr}, "/ledgers", testhost.Scale(10*time.Second), sec, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Init(ctx); err != nil {
		t.Fatalf("format the ledgers tree over TLS and SASL: %v", err)
	}
	closeStore()
	t.Setenv(bookieExtraOptsEnv, f.flags(f.badJAAS))
	if sec, err = metadataSecurity(); err != nil {
		t.Fatal(err)
	}
	_, err = metadata.Dial(ctx, metadata.DialConfig{Servers: []string{addr}, Security: sec,
		ConnectTimeout: testhost.Scale(20 * time.Second)})
	if !errors.Is(err, zkproto.ErrAuthFailed) || ctx.Err() != nil {
		t.Fatalf("wrong password: got %v, want AuthFailed at once", err)
	}
}
