package secmatrix

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"keeper/internal/keeperbin"
	"keeper/verify/compat/internal/mitkdc"
	"keeper/verify/compat/internal/pkitest"
	"keeper/verify/compat/zkreal"
)

// keeperBin is the keeper binary TestMain builds for the whole run.
var keeperBin string

var binFlag = flag.String("keeper-bin", "", "run this keeper binary instead of building ./cmd/keeper")

func TestMain(m *testing.M) {
	os.Exit(keeperbin.RunTests(m, binFlag, &keeperBin))
}

// storePass protects every key and trust store.
const storePass = "keeper-secmatrix"

// servicePrincipal is the ticket a GSSAPI client asks for when it
// connects to localhost; alice's sasl ACL lets her read, eve's ticket is
// good but names another principal.
const (
	servicePrincipal = "zookeeper/localhost@" + mitkdc.Realm
	alice            = "alice@" + mitkdc.Realm
	eve              = "eve@" + mitkdc.Realm
)

// clientDN is the trusted client certificate's subject as Java's
// X500Principal.getName formats it.
const clientDN = "CN=matrix client,O=keeper tests"

// fixture is what every cell shares: one CA and the stores it made, one
// KDC with its keytabs and credential caches, and the JAAS files.
type fixture struct {
	dir string
	ca  *pkitest.Cert
	// serverStore is the server's PKCS12 key store, trust the JKS trust
	// store of the CA; the client's PEM files are for kazoo.
	serverStore, trust    string
	clientCert, clientKey string

	kdc                  *mitkdc.KDC
	aliceCache, eveCache string // KRB5CCNAME of each client principal
	digestJAAS, krbJAAS  string // the Server section of each mechanism, and the quorum sections
	// rogueStore is a member key store of a CA nobody trusts; wrongJAAS
	// a member logging in to its peers with a wrong password.
	rogueStore, wrongJAAS string
	// quorumKrbJAAS has the quorum sections of a member that is
	// zkquorum/127.0.0.1 on both sides; outsiderJAAS's learner is a
	// principal of another host.
	quorumKrbJAAS, outsiderJAAS string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if err := zkreal.Available(); err != nil {
		zkreal.Start(t, zkreal.Options{}) // skips, or fails under KEEPER_REQUIRE_ZK
	}
	pkitest.RequireTools(t, "openssl", "keytool")
	if err := exec.Command(zkreal.KazooPython, "-c", "import kazoo, puresasl, kerberos").Run(); err != nil {
		if v := os.Getenv(zkreal.RequireEnv); v != "" && v != "0" {
			t.Fatalf("kazoo with pure-sasl and pykerberos is required: %v", err)
		}
		t.Skipf("kazoo with pure-sasl and pykerberos not available: %v", err)
	}
	f := &fixture{dir: t.TempDir()}
	f.ca = f.issue(t, "ca", "matrix CA", nil)
	server := f.issue(t, "server", "localhost", f.ca)
	client := f.issue(t, "client", "matrix client", f.ca)
	f.clientCert, f.clientKey = client.CertPEM, client.KeyPEM
	f.serverStore = filepath.Join(f.dir, "server.p12")
	pkitest.PKCS12(t, server, f.ca, "server", f.serverStore, storePass)
	f.trust = filepath.Join(f.dir, "trust.jks")
	pkitest.TrustStore(t, f.ca, f.trust, "JKS", storePass)

	f.kdc = mitkdc.Start(t)
	for _, p := range []string{"zookeeper/localhost", "alice", "eve"} {
		f.kdc.AddPrincipal(t, p)
	}
	serviceTab := f.kdc.Keytab(t, "zookeeper/localhost", "zk.keytab")
	f.aliceCache = f.kdc.Kinit(t, alice, f.kdc.Keytab(t, "alice", "alice.keytab"))
	f.eveCache = f.kdc.Kinit(t, eve, f.kdc.Keytab(t, "eve", "eve.keytab"))
	f.digestJAAS = f.write(t, "digest.jaas", `Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_bob="bob-secret";
};
`+quorumSections("test"))
	f.krbJAAS = f.write(t, "kerberos.jaas", `Server {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true keyTab="`+serviceTab+`" storeKey=true useTicketCache=false
    principal="`+servicePrincipal+`";
};
`)
	f.makeRogue(t)
	f.makeQuorumKerberos(t)
	return f
}

// quorumSections are ZooKeeper's documented quorum DIGEST-MD5 sections:
// the member accepts user test (password test) and logs in as test with
// password.
func quorumSections(password string) string {
	return `QuorumServer {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_test="test";
};
QuorumLearner {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="test"
    password="` + password + `";
};
`
}

func (f *fixture) write(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// issue makes a certificate for cn, signed by ca (a CA certificate when
// ca is nil), for servers and clients alike; it names 127.0.0.1 and
// localhost.
func (f *fixture) issue(t *testing.T, name, cn string, ca *pkitest.Cert) *pkitest.Cert {
	t.Helper()
	subject := pkix.Name{CommonName: cn, Organization: []string{"keeper tests"}}.ToRDNSequence()
	r := pkitest.Request{Name: name, Subject: subject, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	if ca == nil {
		r.IsCA, r.KeyUsage, r.ExtKeyUsage = true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature, nil
	}
	return pkitest.Issue(t, f.dir, r, ca)
}

// jvmFlags are the flags that name the cell's JAAS file and krb5.conf: on
// java's command line for ZooKeeper, in SERVER_JVMFLAGS for keeper.
func (f *fixture) jvmFlags(jaas string) []string {
	if jaas == "" {
		return nil
	}
	return []string{"-Djava.security.auth.login.config=" + jaas, "-Djava.security.krb5.conf=" + f.kdc.Krb5Conf}
}

// TestSecurityMatrix runs every cell: the client port's, then the
// quorum's, all sharing one PKI and one KDC.
func TestSecurityMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a ZooKeeper JVM per cell")
	}
	f := newFixture(t)
	t.Run("client", func(t *testing.T) { clientMatrix(t, f) })
	t.Run("quorum", func(t *testing.T) { quorumMatrix(t, f) })
}
