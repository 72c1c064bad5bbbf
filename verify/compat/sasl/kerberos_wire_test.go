package sasl

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"keeper/coordination/zkproto"
	"keeper/verify/compat/zkreal"
)

// mintAPReq is pykerberos' first GSSAPI token for service@host, printed
// in base64: as puresasl makes it (mutual authentication asked), or with
// "nomutual" as Java's client makes it (without).
const mintAPReq = `
import kerberos, sys
flags = kerberos.GSS_C_SEQUENCE_FLAG
if sys.argv[2] != "nomutual":
    flags |= kerberos.GSS_C_MUTUAL_FLAG
_, ctx = kerberos.authGSSClientInit(sys.argv[1], gssflags=flags)
kerberos.authGSSClientStep(ctx, "")
print(kerberos.authGSSClientResponse(ctx))
`

// apReq mints a context token as alice for service (service@host), with
// mutual authentication unless mode is "nomutual".
func (k *kdc) apReq(t *testing.T, ccache, service, mode string) []byte {
	t.Helper()
	cmd := exec.Command(zkreal.KazooPython, "-c", mintAPReq, service, mode)
	cmd.Env = append(append(os.Environ(), k.env...), "KRB5CCNAME="+ccache)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("minting a token for %s: %v\n%s", service, err, out)
	}
	tok, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// okWithToken hides an AP-REP (a context token, 0x60 after the length),
// which differs between servers by nature (the acceptor's random sequence
// number, the encryption's confounder), keeping that there was one. A
// wrap token made from the same AP-REQ is the same on both and stays.
var okWithToken = regexp.MustCompile(`^err=OK zxid=0 body=[0-9a-f]{8}60[0-9a-f]*$`)

// TestKerberosWireSideBySide sends raw GSSAPI first tokens to Apache
// ZooKeeper and keeper started from the same files: a good one, the same
// one again (a replay), one without mutual authentication, one for
// another service principal, and garbage.
// Both must answer alike and close the same connections, and a
// connection beside them must keep being served.
func TestKerberosWireSideBySide(t *testing.T) {
	require(t, "pykerberos", exec.Command(zkreal.KazooPython, "-c", "import kerberos").Run())
	if err := zkreal.Available(); err != nil {
		require(t, "Apache ZooKeeper", err)
	}
	if _, err := lookPath("kinit"); err != nil {
		require(t, "kinit (Debian's krb5-user)", err)
	}
	k := startKDC(t)
	for _, p := range []string{"zookeeper/localhost", "zookeeper/otherhost", "alice"} {
		k.addPrincipal(t, p)
	}
	service := k.keytab(t, "zookeeper/localhost", "zk.keytab")
	alice := k.keytab(t, "alice", "alice.keytab")
	jaas := k.jaasFile(t, "server.jaas", service, alice, "alice@"+realm)
	ccache := k.Kinit(t, "alice@"+realm, alice)
	krbFlag := "-Djava.security.krb5.conf=" + k.krb5Conf
	servers := map[string]string{
		"zookeeper": zkreal.Start(t, zkreal.Options{
			ExtraConfig: map[string]string{"authProvider.1": saslProvider},
			JVMFlags:    []string{"-Djava.security.auth.login.config=" + jaas, krbFlag},
		}).Addr(),
		"keeper": startKeeperFlags(t, "-Djava.security.auth.login.config="+jaas+" "+krbFlag, nil),
	}
	good := k.apReq(t, ccache, "zookeeper@localhost", "mutual")
	noMutual := k.apReq(t, ccache, "zookeeper@localhost", "nomutual")
	other := k.apReq(t, ccache, "zookeeper@otherhost", "mutual")
	cut := good[:len(good)/2]
	flipped := slices.Clone(good)
	flipped[len(flipped)-20] ^= 0xff
	scenarios := []struct {
		name   string
		tokens [][]byte // one connection each, in order
	}{
		{"good, then replayed", [][]byte{good, good}},
		// Java's client asks for no mutual authentication: with no AP-REP
		// to send, the answer is already the wrapped security-layer offer.
		{"good without mutual authentication", [][]byte{noMutual}},
		{"another service principal", [][]byte{other}},
		{"garbage", [][]byte{[]byte("\x00\x01garbage")}},
		{"cut", [][]byte{cut}},
		{"flipped byte", [][]byte{flipped}},
		{"empty", [][]byte{{}}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			got := map[string][]string{}
			for name, addr := range servers {
				bystander := dial(t, addr)
				var out []string
				for i, tok := range sc.tokens {
					c := dial(t, addr)
					d, _ := c.request(zkproto.OpSASL, saslToken(tok))
					if okWithToken.MatchString(d) {
						d = "err=OK zxid=0 body=<AP-REP>"
					}
					out = append(out, fmt.Sprintf("#%d %s closed=%v", i, d, c.closedNow()))
				}
				d, _ := bystander.request(zkproto.OpExists, append(saslToken([]byte("/")), 0))
				got[name] = append(out, "bystander "+d)
			}
			if !slices.Equal(got["keeper"], got["zookeeper"]) {
				t.Fatalf("keeper:\n  %s\nzookeeper:\n  %s", strings.Join(got["keeper"], "\n  "), strings.Join(got["zookeeper"], "\n  "))
			}
			t.Logf("both: %s", strings.Join(got["keeper"], " | "))
		})
	}
}

// TestKerberosLayerSideBySide runs the security-layer step of GSSAPI
// (testdata/gssapi_layer.py, with pykerberos) against Apache ZooKeeper and
// keeper: the wrapped offer, the answers to a good choice, an
// authorization id, a layer that was not offered, a short answer and a
// non-empty token where the empty one belongs, and the identity a node
// created with the auth ACL then holds. Both must print the same.
func TestKerberosLayerSideBySide(t *testing.T) {
	require(t, "pykerberos", exec.Command(zkreal.KazooPython, "-c", "import kerberos").Run())
	if err := zkreal.Available(); err != nil {
		require(t, "Apache ZooKeeper", err)
	}
	if _, err := lookPath("kinit"); err != nil {
		require(t, "kinit (Debian's krb5-user)", err)
	}
	k := startKDC(t)
	for _, p := range []string{"zookeeper/localhost", "alice"} {
		k.addPrincipal(t, p)
	}
	service := k.keytab(t, "zookeeper/localhost", "zk.keytab")
	alice := k.keytab(t, "alice", "alice.keytab")
	jaas := k.jaasFile(t, "server.jaas", service, alice, "alice@"+realm)
	ccache := k.Kinit(t, "alice@"+realm, alice)
	env := append(append(os.Environ(), k.env...), "KRB5CCNAME="+ccache)
	krbFlag := "-Djava.security.krb5.conf=" + k.krb5Conf
	servers := map[string]string{
		"zookeeper": zkreal.Start(t, zkreal.Options{
			ExtraConfig: map[string]string{"authProvider.1": saslProvider},
			JVMFlags:    []string{"-Djava.security.auth.login.config=" + jaas, krbFlag},
		}).Addr(),
		"keeper": startKeeperFlags(t, "-Djava.security.auth.login.config="+jaas+" "+krbFlag, nil),
	}
	script, err := filepath.Abs(filepath.Join("testdata", "gssapi_layer.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []string{"auth", "authz", "privacy", "both", "short", "nonempty"} {
		t.Run(sc, func(t *testing.T) {
			got := map[string]string{}
			for name, addr := range servers {
				_, port, _ := strings.Cut(addr, ":")
				cmd := exec.Command(zkreal.KazooPython, script, "localhost", port, sc)
				cmd.Env = env
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s", name, err, out)
				}
				got[name] = strings.TrimSpace(string(out))
			}
			if got["keeper"] != got["zookeeper"] {
				t.Fatalf("keeper:\n%s\nzookeeper:\n%s", got["keeper"], got["zookeeper"])
			}
			t.Logf("both:\n%s", got["keeper"])
		})
	}
}
