package secmatrix

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/verify/compat/internal/launcher"
	"keeper/verify/compat/zkreal"
)

// clientCell is one server configuration of the client-port matrix.
type clientCell struct {
	tls      string // off (the plaintext port), want or need (ssl.clientAuth on the TLS port)
	sasl     string // none, digest or kerberos: the JAAS file's Server section
	required bool   // sessionRequireClientSASLAuth=true
	// enforce is enforce.auth.schemes, with enforce.auth.enabled=true;
	// "" leaves both out.
	enforce string
}

func (c clientCell) String() string {
	s := "tls=" + c.tls + ",sasl=" + c.sasl
	if c.required {
		s += ",required"
	}
	if c.enforce != "" {
		s += ",enforce=" + c.enforce
	}
	return s
}

// clientCells is every TLS × SASL pair, SASL required over TLS and over
// plaintext, and enforced authentication with schemes other than sasl:
// digest (addauth digest) over plaintext, x509 (a client certificate) on
// a want port, and both.
func clientCells() []clientCell {
	var cells []clientCell
	for _, tls := range []string{"off", "want", "need"} {
		for _, sasl := range []string{"none", "digest", "kerberos"} {
			cells = append(cells, clientCell{tls: tls, sasl: sasl})
		}
	}
	return append(cells, clientCell{tls: "need", sasl: "digest", required: true}, clientCell{tls: "off", sasl: "kerberos", required: true},
		clientCell{tls: "off", sasl: "none", enforce: "digest"},
		clientCell{tls: "want", sasl: "none", enforce: "x509"},
		clientCell{tls: "want", sasl: "none", enforce: "x509,digest"})
}

// keys are the cell's zoo.cfg lines, the same for both servers but for
// the TLS port's number, which the caller adds.
func (c clientCell) keys(f *fixture) map[string]string {
	keys := map[string]string{}
	if c.tls != "off" {
		// ZooKeeper serves TLS only on Netty; keeper accepts the key.
		keys["serverCnxnFactory"] = "org.apache.zookeeper.server.NettyServerCnxnFactory"
		keys["secureClientPortAddress"] = "127.0.0.1"
		keys["ssl.keyStore.location"] = f.serverStore
		keys["ssl.keyStore.password"] = storePass
		keys["ssl.trustStore.location"] = f.trust
		keys["ssl.trustStore.password"] = storePass
		keys["ssl.clientAuth"] = c.tls
	}
	if c.sasl != "none" {
		keys["authProvider.1"] = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
	}
	if c.required {
		keys["sessionRequireClientSASLAuth"] = "true"
	}
	if c.enforce != "" {
		keys["enforce.auth.enabled"] = "true"
		keys["enforce.auth.schemes"] = c.enforce
	}
	return keys
}

func (c clientCell) jaas(f *fixture) string {
	switch c.sasl {
	case "digest":
		return f.digestJAAS
	case "kerberos":
		return f.krbJAAS
	}
	return ""
}

// client is one kazoo client of a cell.
type client struct {
	tls, cert bool
	creds     string // "", "bob", "bob-wrong", "alice" or "eve"
	// digest is the client's addauth digest: "", "bob" (bob:bob-secret)
	// or "bob-wrong" (bob:guess, which the digest scheme takes as another
	// identity).
	digest string
}

func (c client) String() string {
	s := "plaintext"
	if c.tls {
		s = "tls without certificate"
		if c.cert {
			s = "tls with certificate"
		}
	}
	if c.digest != "" {
		s += ", digest " + c.digest
	}
	if c.creds == "" {
		return s + ", no sasl"
	}
	return s + ", sasl " + c.creds
}

// clients are the cell's clients: each transport the cell has, with no
// SASL, with the right credentials and with wrong ones (for Kerberos: a
// good ticket of another principal). A server without SASL gets no SASL
// client: kazoo's DIGEST-MD5 never ends its exchange against a server
// that answers with no challenge, which says nothing of the server.
func (c clientCell) clients() []client {
	transports := []client{{}}
	if c.tls != "off" {
		transports = []client{{tls: true}, {tls: true, cert: true}}
	}
	creds := map[string][]string{"none": {""}, "digest": {"", "bob", "bob-wrong"}, "kerberos": {"", "alice", "eve"}}[c.sasl]
	digests := []string{""}
	if c.enforces("digest") {
		digests = []string{"", "bob", "bob-wrong"}
	}
	var out []client
	for _, tr := range transports {
		for _, cr := range creds {
			for _, d := range digests {
				tr.creds, tr.digest = cr, d
				out = append(out, tr)
			}
		}
	}
	return out
}

// enforces reports whether scheme is one of the cell's enforced schemes.
func (c clientCell) enforces(scheme string) bool {
	return slices.Contains(strings.Split(c.enforce, ","), scheme)
}

// setup is the client that creates the nodes: the cell's strongest
// credentials.
func (c clientCell) setup() client {
	s := client{tls: c.tls != "off", cert: c.tls != "off"}
	if c.enforces("digest") {
		s.digest = "bob"
	}
	switch c.sasl {
	case "digest":
		s.creds = "bob"
	case "kerberos":
		s.creds = "alice"
	}
	return s
}

// nodes are created by the setup client, each readable by one identity
// only, and read by every client.
var nodes = [][3]string{
	{"/sasl-bob", "sasl", "bob"},
	{"/sasl-alice", "sasl", alice},
	{"/x509", "x509", clientDN},
	{"/digest-bob", "digest", digestID("bob", "bob-secret")},
}

// digestID is the digest scheme's ACL id of user with password:
// user:base64(sha1(user:password)).
func digestID(user, password string) string {
	sum := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// clientMatrix runs every cell, two at a time, keeper and ZooKeeper side
// by side within a cell.
func clientMatrix(t *testing.T, f *fixture) {
	for _, cell := range clientCells() {
		t.Run(cell.String(), func(t *testing.T) {
			t.Parallel()
			runClientCell(t, f, cell)
		})
	}
}

// addrs are a server's plaintext and TLS client addresses.
type addrs struct{ plain, secure string }

func runClientCell(t *testing.T, f *fixture, cell clientCell) {
	// keeper first: it starts in a moment, the JVM in seconds.
	servers := map[string]addrs{"keeper": startKeeper(t, f, cell), "zookeeper": startZooKeeper(t, f, cell)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	results := map[string]map[string]string{}
	for kind, a := range servers {
		results[kind] = map[string]string{"setup": f.runClient(t, a, cell.setup(), true)}
	}
	clients := cell.clients()
	for kind, a := range servers {
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got := f.runClient(t, a, c, false)
				mu.Lock()
				results[kind][c.String()] = got
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	names := []string{"setup"}
	for _, c := range clients {
		names = append(names, c.String())
	}
	for _, name := range names {
		k, z := results["keeper"][name], results["zookeeper"][name]
		t.Logf("%-40s keeper: %-50s zookeeper: %s", name, k, z)
		if k != z {
			t.Errorf("%s: keeper %q, zookeeper %q", name, k, z)
		}
	}
	// Whatever else they agree on, the setup client must have a session
	// and create its nodes: a cell where nothing connects compares
	// nothing.
	if s := results["zookeeper"]["setup"]; !strings.HasPrefix(s, "session ") {
		t.Errorf("the setup client got no session on ZooKeeper: %q", s)
	}
}

// startKeeper runs "keeper server" on the cell's zoo.cfg, the JAAS file
// and krb5.conf named in SERVER_JVMFLAGS as zkServer.sh names them, and
// waits until srvr reports standalone.
func startKeeper(t *testing.T, f *fixture, cell clientCell) addrs {
	t.Helper()
	m := launcher.Layout(t, t.TempDir(), 1, func(int) string { return "keeper" })[0]
	if err := os.MkdirAll(m.DataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	keys := cell.keys(f)
	a := addrs{plain: m.Addr}
	if cell.tls != "off" {
		port := testhost.Port(t)
		keys["secureClientPort"] = strconv.Itoa(port)
		a.secure = fmt.Sprintf("127.0.0.1:%d", port)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n", m.DataDir, m.ClientPort)
	b.WriteString("maxClientCnxns=0\n4lw.commands.whitelist=*\nadmin.enableServer=false\n")
	for _, k := range slices.Sorted(mapsKeys(keys)) {
		fmt.Fprintf(&b, "%s=%s\n", k, keys[k])
	}
	if err := os.WriteFile(m.CfgPath(), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(keeperBin, "server", m.CfgPath())
	if flags := f.jvmFlags(cell.jaas(f)); len(flags) > 0 {
		cmd.Env = append(os.Environ(), "SERVER_JVMFLAGS="+strings.Join(flags, " "))
	}
	launcher.Cleanup(t, []*launcher.Member{m}, func(*launcher.Member) string { return "keeper" })
	m.Start(t, cmd, func(int) string { return "keeper.log" }, testhost.Scale(60*time.Second), 50*time.Millisecond)
	return a
}

// startZooKeeper runs Apache ZooKeeper standalone with the cell's zoo.cfg
// lines, JAAS file and krb5.conf.
func startZooKeeper(t *testing.T, f *fixture, cell clientCell) addrs {
	t.Helper()
	keys := cell.keys(f)
	secure := ""
	if cell.tls != "off" {
		port := testhost.Port(t)
		keys["secureClientPort"] = strconv.Itoa(port)
		secure = fmt.Sprintf("127.0.0.1:%d", port)
	}
	s := zkreal.Start(t, zkreal.Options{ExtraConfig: keys, JVMFlags: f.jvmFlags(cell.jaas(f)), AuthRequired: cell.required || cell.enforce != "",
		StartTimeout: testhost.Scale(60 * time.Second)})
	return addrs{plain: s.Addr(), secure: secure}
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// runClient runs testdata/client.py as c against the server at a (its
// TLS port when c speaks TLS) and returns the line it printed. The setup
// client creates the nodes first.
func (f *fixture) runClient(t *testing.T, a addrs, c client, setup bool) string {
	addr := a.plain
	if c.tls {
		addr = a.secure
	}
	// localhost, not 127.0.0.1: a GSSAPI client asks for a ticket to
	// zookeeper/<the host it dials>.
	_, port, _ := strings.Cut(addr, ":")
	timeout := testhost.Scale(30 * time.Second)
	spec := map[string]any{"hosts": "localhost:" + port, "timeout": timeout.Seconds(), "tls": c.tls, "ca": f.ca.CertPEM}
	if c.cert {
		spec["cert"], spec["key"] = f.clientCert, f.clientKey
	}
	env := append(os.Environ(), f.kdc.Env...)
	switch c.digest {
	case "bob":
		spec["digest"] = "bob:bob-secret"
	case "bob-wrong":
		spec["digest"] = "bob:guess"
	}
	switch c.creds {
	case "bob", "bob-wrong":
		password := "bob-secret"
		if c.creds == "bob-wrong" {
			password = "guess"
		}
		spec["sasl"] = map[string]string{"mechanism": "DIGEST-MD5", "username": "bob", "password": password}
	case "alice", "eve":
		spec["sasl"] = map[string]string{"mechanism": "GSSAPI", "service": "zookeeper"}
		cache := f.aliceCache
		if c.creds == "eve" {
			cache = f.eveCache
		}
		env = append(env, "KRB5CCNAME="+cache)
	}
	var paths []string
	for _, n := range nodes {
		paths = append(paths, n[0])
	}
	spec["paths"] = paths
	if setup {
		spec["create"] = nodes
	}
	arg, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+testhost.Scale(30*time.Second))
	defer cancel()
	script, err := filepath.Abs(filepath.Join("testdata", "client.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, zkreal.KazooPython, script, string(arg))
	cmd.Env = env
	out, err := cmd.Output()
	line := strings.TrimSpace(string(out))
	if err != nil || line == "" {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Errorf("client %s on %s: %v\n%s%s", c, addr, err, out, stderr)
	}
	return line
}
