package admintls

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keeper/coordination/server"
	"keeper/coordination/zoocfg"
	"keeper/internal/testhost"
	"keeper/verify/compat/internal/pkitest"
	"keeper/verify/compat/zkreal"
)

// storePass protects the test's stores.
const storePass = "keeper-admin-tls"

// stores makes a CA, a PKCS12 key store for the server (issued by the CA,
// naming 127.0.0.1) and a PKCS12 trust store of the CA, and returns the
// zoo.cfg lines that name them and the CA for the client to trust.
func stores(t *testing.T) (map[string]string, *x509.Certificate) {
	t.Helper()
	pkitest.RequireTools(t, "openssl", "keytool")
	dir := t.TempDir()
	cn := func(v string) pkix.RDNSequence {
		return pkix.RDNSequence{{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: v}}}
	}
	now := time.Now()
	req := func(name string, isCA bool) pkitest.Request {
		return pkitest.Request{Name: name, Subject: cn(name), NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			IsCA: isCA, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	}
	ca := pkitest.Issue(t, dir, req("admin-ca", true), nil)
	srv := pkitest.Issue(t, dir, req("admin-server", false), ca)
	keyStore := filepath.Join(dir, "server.p12")
	pkitest.PKCS12(t, srv, ca, "server", keyStore, storePass)
	trustStore := filepath.Join(dir, "trust.p12")
	pkitest.TrustStore(t, ca, trustStore, "PKCS12", storePass)
	return map[string]string{
		"ssl.quorum.keyStore.location":   keyStore,
		"ssl.quorum.keyStore.password":   storePass,
		"ssl.quorum.keyStore.type":       "PKCS12",
		"ssl.quorum.trustStore.location": trustStore,
		"ssl.quorum.trustStore.password": storePass,
		"ssl.quorum.trustStore.type":     "PKCS12",
	}, ca.Cert
}

// startKeeper runs an in-process keeper from zoo.cfg lines, through the
// parser and ConfigFromZoo as keeper server does, and returns its admin
// server's address.
func startKeeper(t *testing.T, extra map[string]string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=2181\nadmin.serverAddress=127.0.0.1\n", t.TempDir())
	for k, v := range extra {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	zc, _, err := zoocfg.Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := zc.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg := server.ConfigFromZoo(zc, slog.New(slog.DiscardHandler))
	cfg.ClientAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.AdminAddr().String()
}

// startZooKeeper runs Apache ZooKeeper 3.8 with its admin server and the
// same lines; ZooKeeper turns the keys it does not read itself
// (admin.*, ssl.quorum.*) into the system properties its admin server
// reads.
func startZooKeeper(t *testing.T, extra map[string]string) string {
	t.Helper()
	return zkreal.Start(t, zkreal.Options{AdminServer: true, ExtraConfig: extra}).AdminAddr()
}

// answer is what a GET of /commands/ruok got.
type answer struct {
	served bool   // 200 with ruok's JSON
	sts    string // the Strict-Transport-Security header
}

var requestTimeout = testhost.Scale(10 * time.Second)

// ruok GETs url trusting roots (nil: the system's).
func ruok(url string, roots *x509.CertPool) answer {
	client := http.Client{Timeout: requestTimeout, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true,
	}}
	resp, err := client.Get(url)
	if err != nil {
		return answer{}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil || resp.StatusCode != http.StatusOK {
		return answer{}
	}
	return answer{served: strings.Contains(string(body), `"ruok"`), sts: resp.Header.Get("Strict-Transport-Security")}
}

// TestAdminTLSSideBySide runs both servers with admin.forceHttps and with
// admin.portUnification, the same store files, and expects from each:
// HTTPS served with HSTS; plaintext served only with port unification;
// HTTPS refused by a client that does not trust the server's CA.
func TestAdminTLSSideBySide(t *testing.T) {
	keys, ca := stores(t)
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	tests := []struct {
		name      string
		key       string
		wantPlain bool
	}{
		{"forceHttps", "admin.forceHttps", false},
		{"portUnification", "admin.portUnification", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := map[string]string{tt.key: "true"}
			for k, v := range keys {
				cfg[k] = v
			}
			servers := []struct {
				name string
				addr string
			}{
				{"keeper", startKeeper(t, cfg)},
				{"zookeeper", startZooKeeper(t, cfg)},
			}
			for _, s := range servers {
				https := ruok("https://"+s.addr+"/commands/ruok", roots)
				if !https.served || https.sts == "" {
					t.Errorf("%s: https: %+v, want served with Strict-Transport-Security", s.name, https)
				}
				if !strings.HasPrefix(https.sts, "max-age=86400") {
					t.Errorf("%s: Strict-Transport-Security = %q", s.name, https.sts)
				}
				plain := ruok("http://"+s.addr+"/commands/ruok", nil)
				if plain.served != tt.wantPlain {
					t.Errorf("%s: plaintext served = %v, want %v", s.name, plain.served, tt.wantPlain)
				}
				if plain.served && plain.sts != "" {
					t.Errorf("%s: plaintext answer carries Strict-Transport-Security %q", s.name, plain.sts)
				}
				if ruok("https://"+s.addr+"/commands/ruok", x509.NewCertPool()).served {
					t.Errorf("%s: a client that does not trust the CA was served", s.name)
				}
			}
		})
	}
}
