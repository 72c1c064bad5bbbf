package tlscompat

import (
	"fmt"
	"strings"
	"testing"
)

// TestSideBySide runs the same connection cells against keeper and Apache
// ZooKeeper, configured with the same store files, for each ssl.clientAuth:
// a TLS client without a certificate, with a trusted one, an untrusted one
// and an expired one, and a plaintext client on the TLS port. Both servers
// must serve or refuse each cell alike, and as ZooKeeper's rules say.
func TestSideBySide(t *testing.T) {
	p := newPKI(t)
	keyStore := p.p12(t, p.server, "server")
	trustStore := p.trustStore(t, "PKCS12", ".p12")
	type cell struct {
		name   string
		client *cert // nil: no certificate
		plain  bool  // a plaintext client on the TLS port
	}
	cells := []cell{
		{name: "no certificate"},
		{name: "trusted certificate", client: p.client},
		{name: "untrusted certificate", client: p.untrusted},
		{name: "expired certificate", client: p.expired},
		{name: "plaintext client", plain: true},
	}
	// served says which cells ZooKeeper's rules serve, by clientAuth.
	served := map[string]map[string]bool{
		"none": {"no certificate": true, "trusted certificate": true, "untrusted certificate": true, "expired certificate": true},
		"want": {"no certificate": true, "trusted certificate": true},
		"need": {"trusted certificate": true},
	}
	for _, auth := range []string{"none", "want", "need"} {
		t.Run("clientAuth="+auth, func(t *testing.T) {
			keys := storeKeys(keyStore, trustStore, auth)
			servers := []tlsServer{startKeeper(t, keys, nil)}
			if !testing.Short() {
				servers = append(servers, startZooKeeper(t, keys))
			}
			for _, c := range cells {
				t.Run(c.name, func(t *testing.T) {
					outcome := map[string]bool{}
					for _, s := range servers {
						var err error
						if c.plain {
							err = probePlain(s.secure)
						} else {
							err = probeTLS(s.secure, p.clientTLS(t, c.client))
						}
						outcome[s.name] = err == nil
						t.Logf("%s: served=%v (%v)", s.name, err == nil, err)
					}
					want := served[auth][c.name]
					for name, got := range outcome {
						if got != want {
							t.Errorf("%s: served=%v, want %v", name, got, want)
						}
					}
				})
			}
		})
	}
}

// TestX509IdentitySideBySide checks, on both servers, the identity a
// trusted client certificate gives: an auth ACL expands to x509:<DN> with
// the DN formatted as Java formats it, a second client with the same
// certificate may write, one with another certificate may not, and
// "addauth x509" succeeds with a certificate and fails without one.
func TestX509IdentitySideBySide(t *testing.T) {
	p := newPKI(t)
	other := issue(t, p.dir, "other", rdn("CN", "other client"), p.ca, p.ca.Cert.NotAfter, false)
	keys := storeKeys(p.p12(t, p.server, "server"), p.trustStore(t, "JKS", ".jks"), "want")
	servers := []tlsServer{startKeeper(t, keys, nil)}
	if !testing.Short() {
		servers = append(servers, startZooKeeper(t, keys))
	}
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			owner := connectZK(t, s.secure, p.clientTLS(t, p.client))
			path := fmt.Sprintf("/x509-%s", s.name)
			if _, err := owner.Create(path, []byte("x"), 0, zkAuthACL()); err != nil {
				t.Fatalf("create with an auth ACL: %v", err)
			}
			acls, _, err := owner.GetACL(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(acls) != 1 || acls[0].Scheme != "x509" || acls[0].ID != clientDN {
				t.Errorf("ACL %+v, want x509:%s", acls, clientDN)
			}
			if err := owner.AddAuth("x509", nil); err != nil {
				t.Errorf("addauth x509 with a certificate: %v", err)
			}
			if _, err := connectZK(t, s.secure, p.clientTLS(t, p.client)).Set(path, []byte("y"), -1); err != nil {
				t.Errorf("same certificate: set: %v", err)
			}
			if _, err := connectZK(t, s.secure, p.clientTLS(t, other)).Set(path, []byte("z"), -1); err == nil {
				t.Errorf("another certificate could write")
			}
			anon := connectZK(t, s.secure, p.clientTLS(t, nil))
			if err := anon.AddAuth("x509", nil); err == nil {
				t.Errorf("addauth x509 without a certificate succeeded")
			}
		})
	}
}

// TestX509SuperUser checks X509AuthenticationProvider.superUser: that
// certificate passes every ACL.
func TestX509SuperUser(t *testing.T) {
	p := newPKI(t)
	other := issue(t, p.dir, "other", rdn("CN", "other client"), p.ca, p.ca.Cert.NotAfter, false)
	keys := storeKeys(p.p12(t, p.server, "server"), p.trustStore(t, "PKCS12", ".p12"), "need")
	// zoo.cfg is a properties file: a backslash in a value is doubled.
	keys["X509AuthenticationProvider.superUser"] = strings.ReplaceAll(clientDN, `\`, `\\`)
	s := startKeeper(t, keys, nil)
	owner := connectZK(t, s.secure, p.clientTLS(t, other))
	if _, err := owner.Create("/private", nil, 0, zkAuthACL()); err != nil {
		t.Fatal(err)
	}
	if _, err := connectZK(t, s.secure, p.clientTLS(t, p.client)).Set("/private", []byte("super"), -1); err != nil {
		t.Errorf("the super user could not write: %v", err)
	}
}

// TestJKSKeyStore: a server whose key store is JKS (converted by keytool
// from the PKCS12 one) serves a trusted client, on keeper and on Apache
// ZooKeeper alike.
func TestJKSKeyStore(t *testing.T) {
	p := newPKI(t)
	keys := storeKeys(p.jks(t, p.p12(t, p.server, "server"), "server"), p.trustStore(t, "JKS", ".jks"), "need")
	servers := []tlsServer{startKeeper(t, keys, nil)}
	if !testing.Short() {
		servers = append(servers, startZooKeeper(t, keys))
	}
	for _, s := range servers {
		if err := probeTLS(s.secure, p.clientTLS(t, p.client)); err != nil {
			t.Errorf("%s with a JKS key store: %v", s.name, err)
		}
	}
}
