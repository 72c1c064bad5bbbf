package clienttls

import (
	"crypto/tls"
	"errors"
	"os"
	"strings"
	"testing"
)

const storePass = "s3cret-pass"

// TestLoadKeyPair reads the server's key and chain from each store type,
// by declared type and by extension, and checks the leaf comes first.
func TestLoadKeyPair(t *testing.T) {
	p := newPKI(t)
	tests := []struct {
		name  string
		store Store
	}{
		{"pem by extension", Store{Location: pemKeyStore(t, p.path("ks.pem"), p.server, p.ca.cert)}},
		{"pem declared", Store{Location: pemKeyStore(t, p.path("ks.key"), p.server), Type: "pem"}},
		{"pkcs12 by extension", Store{Location: p12KeyStore(t, p.path("ks.p12"), storePass, p.server, p.ca.cert), Password: storePass}},
		{"pkcs12 declared", Store{Location: p12KeyStore(t, p.path("ks.pfx"), storePass, p.server), Password: storePass, Type: "PKCS12"}},
		{"jks by extension", Store{Location: jksKeyStore(t, p.path("ks.jks"), storePass, p.server, p.ca.cert), Password: storePass}},
		{"jks declared", Store{Location: jksKeyStore(t, p.path("ks.store"), storePass, p.server), Password: storePass, Type: "JKS"}},
		// Java 9 and later read either binary format under either type.
		{"pkcs12 file declared jks", Store{Location: p.path("ks.p12"), Password: storePass, Type: "JKS"}},
		{"jks file declared pkcs12", Store{Location: p.path("ks.jks"), Password: storePass, Type: "PKCS12"}},
		{"password from a file", Store{Location: p.path("ks.p12"), PasswordPath: writeFile(t, p.path("pass"), []byte(storePass+"\n"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.store.Key = "ssl.keyStore"
			cert, err := LoadKeyPair(tt.store)
			if err != nil {
				t.Fatal(err)
			}
			if !cert.Leaf.Equal(p.server.cert) {
				t.Errorf("leaf is %s, want the server certificate", cert.Leaf.Subject)
			}
			if _, err := tls.X509KeyPair(pemChain(cert), pemKey(t, p.server)); err != nil {
				t.Errorf("the pair does not match: %v", err)
			}
		})
	}
}

// TestLoadTrusted reads trust stores of each type.
func TestLoadTrusted(t *testing.T) {
	p := newPKI(t)
	other := newCert(t, "other CA", nil, true)
	tests := []struct {
		name  string
		store Store
		want  int
	}{
		{"pem", Store{Location: pemTrustStore(t, p.path("ts.pem"), p.ca.cert, other.cert)}, 2},
		{"pkcs12", Store{Location: p12TrustStore(t, p.path("ts.p12"), storePass, p.ca.cert), Password: storePass}, 1},
		{"jks", Store{Location: jksTrustStore(t, p.path("ts.jks"), storePass, p.ca.cert, other.cert), Password: storePass}, 2},
		// A key store used as trust store: Java trusts the key entry's certificate.
		{"pkcs12 key store", Store{Location: p12KeyStore(t, p.path("ks.p12"), storePass, p.server), Password: storePass}, 1},
		{"jks key store", Store{Location: jksKeyStore(t, p.path("ks.jks"), storePass, p.server), Password: storePass}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.store.Key = "ssl.trustStore"
			certs, err := LoadTrusted(tt.store)
			if err != nil {
				t.Fatal(err)
			}
			if len(certs) != tt.want {
				t.Errorf("%d certificates, want %d", len(certs), tt.want)
			}
		})
	}
}

// TestStoreErrors checks that each misconfiguration is an error naming the
// key and the file, and never the password.
func TestStoreErrors(t *testing.T) {
	p := newPKI(t)
	p12 := p12KeyStore(t, p.path("ks.p12"), storePass, p.server)
	jks := jksKeyStore(t, p.path("ks.jks"), storePass, p.server)
	trustOnly := p12TrustStore(t, p.path("ts.p12"), storePass, p.ca.cert)
	tests := []struct {
		name  string
		store Store
		want  []string
	}{
		{"missing file", Store{Location: p.path("nope.p12"), Password: storePass}, []string{"ssl.keyStore.location", "nope.p12", "no such file"}},
		{"wrong pkcs12 password", Store{Location: p12, Password: "not-" + storePass}, []string{"ssl.keyStore.location", p12, "wrong password"}},
		{"wrong jks password", Store{Location: jks, Password: "not-" + storePass}, []string{"ssl.keyStore.location", jks, "wrong password"}},
		{"no private key", Store{Location: trustOnly, Password: storePass}, []string{"ssl.keyStore.location", trustOnly}},
		{"pem without a key", Store{Location: pemTrustStore(t, p.path("certs.pem"), p.server.cert)}, []string{"ssl.keyStore.location", "no private key"}},
		{"unknown extension", Store{Location: p.path("ks.bin")}, []string{"ssl.keyStore.location", "ks.bin", "set ssl.keyStore.type"}},
		{"unknown type", Store{Location: p12, Type: "PKCS11"}, []string{"ssl.keyStore.type", "PKCS11"}},
		{"bcfks", Store{Location: p.path("ks.bcfks")}, []string{"BCFKS"}},
		{"missing password file", Store{Location: p12, PasswordPath: p.path("nope.pass")}, []string{"ssl.keyStore.passwordPath", "nope.pass"}},
		{"pem key with a password", Store{Location: pemKeyStore(t, p.path("ks.pem"), p.server), Password: storePass}, []string{"ssl.keyStore.location", "not encrypted"}},
		{"mismatched key", Store{Location: mismatched(t, p)}, []string{"no certificate matches the private key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.store.Key = "ssl.keyStore"
			_, err := LoadKeyPair(tt.store)
			if err == nil {
				t.Fatal("LoadKeyPair succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if strings.Contains(err.Error(), storePass) {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

func mismatched(t *testing.T, p *testPKI) string {
	other := newCert(t, "other", p.ca, false)
	return pemKeyStore(t, p.path("mismatch.pem"), &testCert{key: other.key, cert: p.server.cert})
}

// TestNewRefuses checks the configurations New refuses at start.
func TestNewRefuses(t *testing.T) {
	p := newPKI(t)
	ks := Store{Location: pemKeyStore(t, p.path("ks.pem"), p.server)}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no key store", Config{}, "ssl.keyStore.location: not set"},
		{"missing trust store", Config{KeyStore: ks, TrustStore: Store{Location: p.path("ts.jks")}}, "ssl.trustStore.location"},
		{"sslv3", Config{KeyStore: ks, EnabledProtocols: []string{"SSLv3", "TLSv1.2"}}, "ssl.enabledProtocols: keeper cannot enable SSLv3"},
		{"bad protocol", Config{KeyStore: ks, Protocol: "TLS"}, "ssl.protocol: keeper cannot enable TLS"},
		{"gap", Config{KeyStore: ks, EnabledProtocols: []string{"TLSv1", "TLSv1.2"}}, "cannot leave a gap"},
		{"unknown suites", Config{KeyStore: ks, CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}},
			"keeper cannot provide TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384, TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"},
		{"some tls 1.3 suites", Config{KeyStore: ks, EnabledProtocols: []string{"TLSv1.3"}, CipherSuites: []string{"TLS_AES_128_GCM_SHA256"}}, "list all three"},
		{"no tls 1.2 suite", Config{KeyStore: ks, EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"},
			CipherSuites: []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}}, "lists no suite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestNewVersionsAndSuites checks how protocols and suites map onto Go's
// configuration.
func TestNewVersionsAndSuites(t *testing.T) {
	p := newPKI(t)
	ks := Store{Location: pemKeyStore(t, p.path("ks.pem"), p.server)}
	tests := []struct {
		name       string
		cfg        Config
		min, max   uint16
		suites     []uint16
		clientAuth tls.ClientAuthType
	}{
		{"zookeeper's defaults", Config{KeyStore: ks}, tls.VersionTLS12, tls.VersionTLS12, nil, tls.RequireAndVerifyClientCert},
		{"protocol alone", Config{KeyStore: ks, Protocol: "TLSv1.3", ClientAuth: Want}, tls.VersionTLS13, tls.VersionTLS13, nil, tls.VerifyClientCertIfGiven},
		{"enabled protocols win", Config{KeyStore: ks, Protocol: "TLSv1.3", EnabledProtocols: []string{"TLSv1.3", "TLSv1.2"}, ClientAuth: None},
			tls.VersionTLS12, tls.VersionTLS13, nil, tls.NoClientCert},
		{"java suite names", Config{KeyStore: ks, CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_EMPTY_RENEGOTIATION_INFO_SCSV", "SSL_RSA_WITH_3DES_EDE_CBC_SHA"}},
			tls.VersionTLS12, tls.VersionTLS12, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA}, tls.RequireAndVerifyClientCert},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			c := s.TLSConfig()
			if c.MinVersion != tt.min || c.MaxVersion != tt.max || c.ClientAuth != tt.clientAuth {
				t.Errorf("versions %x-%x auth %v, want %x-%x %v", c.MinVersion, c.MaxVersion, c.ClientAuth, tt.min, tt.max, tt.clientAuth)
			}
			if tt.suites != nil && !equalSuites(c.CipherSuites, tt.suites) {
				t.Errorf("suites %x, want %x", c.CipherSuites, tt.suites)
			}
			if tt.suites == nil && len(c.CipherSuites) != len(defaultCipherSuites) {
				t.Errorf("%d default suites, want %d", len(c.CipherSuites), len(defaultCipherSuites))
			}
		})
	}
}

func equalSuites(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseClientAuth(t *testing.T) {
	tests := []struct {
		in   string
		want ClientAuth
		err  bool
	}{
		{"", Need, false}, {"need", Need, false}, {"NEED", Need, false},
		{"want", Want, false}, {"None", None, false}, {"optional", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseClientAuth(tt.in)
		if (err != nil) != tt.err || (!tt.err && got != tt.want) {
			t.Errorf("ParseClientAuth(%q) = %v, %v", tt.in, got, err)
		}
	}
}

// TestReload checks that with Reload a handshake after the key store was
// replaced gets the new certificate, that a broken replacement keeps the
// old one, and that without Reload nothing changes.
func TestReload(t *testing.T) {
	for _, reload := range []bool{true, false} {
		t.Run(map[bool]string{true: "reload", false: "no reload"}[reload], func(t *testing.T) {
			p := newPKI(t)
			path := p12KeyStore(t, p.path("ks.p12"), storePass, p.server)
			s, err := New(Config{KeyStore: Store{Location: path, Password: storePass}, ClientAuth: None, Reload: reload})
			if err != nil {
				t.Fatal(err)
			}
			if got := serverCert(t, s); !got.Equal(p.server.cert) {
				t.Fatal("first handshake: not the first certificate")
			}
			// A broken file first: the old certificate stays.
			replace(t, path, []byte("not a store"))
			if got := serverCert(t, s); !got.Equal(p.server.cert) {
				t.Fatal("a broken store replaced the certificate")
			}
			renewed := newCert(t, "server renewed", p.ca, false)
			data, err := os.ReadFile(p12KeyStore(t, p.path("new.p12"), storePass, renewed))
			if err != nil {
				t.Fatal(err)
			}
			replace(t, path, data)
			want := p.server.cert
			if reload {
				want = renewed.cert
			}
			if got := serverCert(t, s); !got.Equal(want) {
				t.Errorf("after the replacement: %s, want %s", got.Subject, want.Subject)
			}
		})
	}
}

// replace swaps path's content the way deployment tools do: a new file
// renamed over the old one.
func replace(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// serverCert runs a handshake against s over an in-memory pipe and returns
// the certificate the server presented.
func serverCert(t *testing.T, s *Server) *x509Cert {
	t.Helper()
	c, srv := pipe()
	done := make(chan error, 1)
	go func() {
		done <- tls.Server(srv, s.TLSConfig()).Handshake()
		srv.Close()
	}()
	client := tls.Client(c, &tls.Config{InsecureSkipVerify: true})
	if err := client.Handshake(); err != nil {
		t.Fatal(err)
	}
	certs := client.ConnectionState().PeerCertificates
	c.Close()
	if err := <-done; err != nil && !errors.Is(err, errClosedPipe) {
		t.Fatal(err)
	}
	return certs[0]
}
