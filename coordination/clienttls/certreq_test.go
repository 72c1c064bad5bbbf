package clienttls

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"slices"
	"testing"
)

// TestCertificateRequest checks what a server asks of a client: with
// want and need, a CertificateRequest naming the subject of every
// certificate of the trust store (as a Java server names its trust
// manager's accepted issuers), in TLS 1.2 and 1.3; with none, no request.
// A Java client, and keeper's quorum members, present a certificate only
// when its issuer is among the names (docs/tls.md, "Between servers").
func TestCertificateRequest(t *testing.T) {
	p := newPKI(t)
	other := newCert(t, "another CA", nil, true)
	one := pemTrustStore(t, p.path("one.pem"), p.ca.cert)
	two := pemTrustStore(t, p.path("two.pem"), p.ca.cert, other.cert)
	ks := pemKeyStore(t, p.path("ks.pem"), p.server)
	caOnly, both := subjects(p.ca.cert), subjects(p.ca.cert, other.cert)
	tests := []struct {
		name    string
		auth    ClientAuth
		trust   string
		version string
		asked   bool
		names   [][]byte
	}{
		{"want", Want, one, "TLSv1.2", true, caOnly},
		{"need", Need, one, "TLSv1.2", true, caOnly},
		{"want, two CAs", Want, two, "TLSv1.2", true, both},
		{"want, TLS 1.3", Want, two, "TLSv1.3", true, both},
		{"need, TLS 1.3", Need, one, "TLSv1.3", true, caOnly},
		{"none", None, one, "TLSv1.2", false, nil},
	}
	// Without a trust store, the system's roots, where the machine has
	// them. On Linux a SystemCertPool's Subjects are the roots read from
	// the system's files, which is what the server names.
	//lint:ignore SA1019 the deprecation concerns platforms whose roots live outside the pool.
	if system, err := x509.SystemCertPool(); err == nil && len(system.Subjects()) > 0 {
		tests = append(tests, tests[0])
		last := &tests[len(tests)-1]
		//lint:ignore SA1019 as above.
		last.name, last.trust, last.names = "want, the system's roots", "", system.Subjects()
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{KeyStore: Store{Location: ks}, TrustStore: Store{Location: tt.trust},
				ClientAuth: tt.auth, Protocol: tt.version})
			if err != nil {
				t.Fatal(err)
			}
			asked, names := certificateRequest(t, s.Current())
			if asked != tt.asked {
				t.Fatalf("asked for a certificate: %v, want %v", asked, tt.asked)
			}
			if !sameNames(names, tt.names) {
				t.Errorf("%d CA names %q, want %d", len(names), names, len(tt.names))
			}
		})
	}
}

// TestCertificateRequestReload checks that with Reload the names follow a
// replaced trust store from the next handshake on, through Current (the
// quorum ports') and TLSConfig (the client port's).
func TestCertificateRequestReload(t *testing.T) {
	p := newPKI(t)
	renewed := newCert(t, "renewed CA", nil, true)
	trust := pemTrustStore(t, p.path("trust.pem"), p.ca.cert)
	s, err := New(Config{KeyStore: Store{Location: pemKeyStore(t, p.path("ks.pem"), p.server)},
		TrustStore: Store{Location: trust}, ClientAuth: Want, Reload: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		name  string
		trust *x509.Certificate
	}{
		{"first", p.ca.cert},
		{"replaced", renewed.cert},
		{"put back", p.ca.cert},
	} {
		if step.name != "first" {
			data, err := os.ReadFile(pemTrustStore(t, p.path("new.pem"), step.trust))
			if err != nil {
				t.Fatal(err)
			}
			replace(t, trust, data)
		}
		want := subjects(step.trust)
		for name, cfg := range map[string]func() *tls.Config{"Current": s.Current, "TLSConfig": s.TLSConfig} {
			if _, names := certificateRequest(t, cfg()); !sameNames(names, want) {
				t.Errorf("%s, %s: CA names %q, want %q", step.name, name, names, want)
			}
		}
	}
}

// certificateRequest runs a handshake against a server with cfg over an
// in-memory pipe, answering its CertificateRequest without a
// certificate, and returns whether the server sent one and the CA names
// it held.
func certificateRequest(t *testing.T, cfg *tls.Config) (asked bool, names [][]byte) {
	t.Helper()
	c, srv := pipe()
	done := make(chan error, 1)
	go func() {
		done <- tls.Server(srv, cfg).Handshake()
		srv.Close()
	}()
	client := tls.Client(c, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS13,
		GetClientCertificate: func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			asked, names = true, cri.AcceptableCAs
			return &tls.Certificate{}, nil
		}})
	err := client.Handshake()
	if err == nil && client.ConnectionState().Version == tls.VersionTLS13 {
		// In TLS 1.3 the server reads the client's answer after the
		// client's handshake is done.
		_, err = client.Read(make([]byte, 1))
	}
	c.Close()
	srvErr := <-done
	if cfg.ClientAuth == tls.RequireAndVerifyClientCert {
		if srvErr == nil {
			t.Error("need: the server let a client without a certificate in")
		}
		return asked, names
	}
	if srvErr != nil && !errors.Is(srvErr, errClosedPipe) {
		t.Fatalf("server: %v (client: %v)", srvErr, err)
	}
	return asked, names
}

func subjects(certs ...*x509.Certificate) [][]byte {
	var out [][]byte
	for _, c := range certs {
		out = append(out, c.RawSubject)
	}
	return out
}

// sameNames compares two lists of names as sets.
func sameNames(a, b [][]byte) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, bytes.Compare)
	slices.SortFunc(b, bytes.Compare)
	return slices.EqualFunc(a, b, bytes.Equal)
}
