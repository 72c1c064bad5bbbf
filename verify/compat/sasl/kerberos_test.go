package sasl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/verify/compat/zkreal"
)

const zkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

// kerberosJAAS is the Server section (the service's keytab) and the
// Client section zkCli.sh logs in with.
const kerberosJAAS = `Server {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true keyTab="%s" storeKey=true useTicketCache=false
    principal="` + servicePrincipal + `";
};
Client {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true keyTab="%s" storeKey=true useTicketCache=false
    principal="%s";
};
`

func (k *kdc) jaasFile(t *testing.T, name, serverKeytab, clientKeytab, clientPrincipal string) string {
	t.Helper()
	return k.jaasFileOpts(t, name, serverKeytab, clientKeytab, clientPrincipal, "")
}

// jaasFileOpts is jaasFile with more options for the Server section's
// module.
func (k *kdc) jaasFileOpts(t *testing.T, name, serverKeytab, clientKeytab, clientPrincipal, serverOpts string) string {
	t.Helper()
	p := filepath.Join(k.dir, name)
	text := fmt.Sprintf(kerberosJAAS, serverKeytab, clientKeytab, clientPrincipal)
	text = strings.Replace(text, "useTicketCache=false\n", "useTicketCache=false "+serverOpts+"\n", 1)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// zkCli runs a zkCli.sh session as the JAAS file's Client, and
// returns its output.
func (k *kdc) zkCli(t *testing.T, jaas, addr, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(90*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, zkCliPath, "-server", addr)
	cmd.Stdin = strings.NewReader(script)
	cmd.Env = append(os.Environ(), "ZOO_LOG_DIR="+t.TempDir(),
		"CLIENT_JVMFLAGS=-Djava.security.auth.login.config="+jaas+" -Djava.security.krb5.conf="+k.krb5Conf+
			" -Dzookeeper.server.principal="+servicePrincipal)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exitErr *exec.ExitError
	if ctx.Err() != nil || (err != nil && !errors.As(err, &exitErr)) {
		t.Fatalf("zkCli.sh: %v (%v)\n%s", err, ctx.Err(), out.String())
	}
	return out.String()
}

// outcome reduces a zkCli session's output to what the test compares: the
// lines that show what each command did.
func outcome(out string) []string {
	var got []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		for _, mark := range []string{"Created /", "secret-data", "'sasl,'", "cdrwa", "AuthFailed", "Insufficient permission", "NoAuth", "Node already exists"} {
			if strings.Contains(line, mark) && !strings.Contains(line, " INFO ") && !strings.Contains(line, " WARN ") && !strings.Contains(line, " ERROR ") {
				got = append(got, line)
				break
			}
		}
	}
	return got
}

// TestKerberosZkCliSideBySide authenticates zkCli.sh with GSSAPI against
// Apache ZooKeeper and against keeper started from the same files, with a
// real MIT KDC: the sasl ACL of the client's principal lets it in, another
// principal gets no access. A keeper server with a stale keytab fails the
// login (AuthFailed); ZooKeeper refuses to start with one (docs/sasl.md).
func TestKerberosZkCliSideBySide(t *testing.T) {
	if _, err := os.Stat(zkCliPath); err != nil {
		require(t, "zkCli.sh", err)
	}
	if err := zkreal.Available(); err != nil {
		require(t, "Apache ZooKeeper", err)
	}
	u := startKDCUsers(t)
	k := u.kdc
	stale := u.stale
	service, alice, eve := u.service, u.alice, u.eve
	aliceJAAS := k.jaasFile(t, "alice.jaas", service, alice, "alice@"+realm)
	eveJAAS := k.jaasFile(t, "eve.jaas", service, eve, "eve@"+realm)
	// isInitiator=false: the server does not log in to the KDC at start,
	// so ZooKeeper starts with a stale keytab too.
	staleJAAS := k.jaasFileOpts(t, "stale.jaas", stale, alice, "alice@"+realm, "isInitiator=false")
	krbFlag := "-Djava.security.krb5.conf=" + k.krb5Conf

	const aliceScript = "create /k secret-data sasl:alice@" + realm + ":cdrwa\nget /k\ngetAcl /k\nquit\n"
	const eveScript = "get /k\nquit\n"
	const staleScript = "create /s x\nquit\n"
	servers := []struct {
		name  string
		start func(jaas string) string
	}{
		{"zookeeper", func(jaas string) string {
			return zkreal.Start(t, zkreal.Options{
				ExtraConfig: map[string]string{"authProvider.1": saslProvider},
				JVMFlags:    []string{"-Djava.security.auth.login.config=" + jaas, krbFlag},
			}).Addr()
		}},
		{"keeper", func(jaas string) string {
			return startKeeperFlags(t, "-Djava.security.auth.login.config="+jaas+" "+krbFlag, nil)
		}},
	}
	results := map[string][][]string{}
	for _, s := range servers {
		addr := s.start(aliceJAAS)
		a := k.zkCli(t, aliceJAAS, addr, aliceScript)
		e := k.zkCli(t, eveJAAS, addr, eveScript)
		st := k.zkCli(t, staleJAAS, s.start(staleJAAS), staleScript)
		results[s.name] = [][]string{outcome(a), outcome(e), outcome(st)}
		t.Logf("%s: alice %q, eve %q, stale keytab %q", s.name, outcome(a), outcome(e), outcome(st))
		if testing.Verbose() {
			t.Logf("%s alice output:\n%s", s.name, a)
		}
	}
	// With the default isInitiator=true the server logs in to the KDC at
	// start: on a stale keytab ZooKeeper stops ("Checksum failed", seen
	// with 3.8.0) and keeper refuses to start too.
	staleLogin := k.jaasFile(t, "stale-login.jaas", stale, alice, "alice@"+realm)
	if err := keeperAuthErr(t, "-Djava.security.auth.login.config="+staleLogin+" "+krbFlag); err == nil ||
		!strings.Contains(err.Error(), "could not log in to Kerberos") {
		t.Errorf("keeper with a stale keytab, isInitiator=true: %v, want a refusal to start", err)
	}
	if err := keeperAuthErr(t, "-Djava.security.auth.login.config="+aliceJAAS+" "+krbFlag); err != nil {
		t.Errorf("keeper with a current keytab: %v", err)
	}
	zk, kp := results["zookeeper"], results["keeper"]
	for i, what := range []string{"alice", "eve", "stale keytab"} {
		if strings.Join(zk[i], "\n") != strings.Join(kp[i], "\n") {
			t.Errorf("%s: zookeeper %q, keeper %q", what, zk[i], kp[i])
		}
	}
	// What both must show, not only agree on.
	if got := strings.Join(zk[0], "\n"); !strings.Contains(got, "secret-data") || !strings.Contains(got, "'sasl,'alice@"+realm) {
		t.Errorf("alice could not use her sasl ACL: %q", zk[0])
	}
	if got := strings.Join(kp[1], "\n"); strings.Contains(got, "secret-data") || !strings.Contains(got, "Insufficient permission") {
		t.Errorf("eve was not refused: %q", kp[1])
	}
	if got := strings.Join(kp[2], "\n"); !strings.Contains(got, "AuthFailed") {
		t.Errorf("a stale server keytab did not fail the login: %q", kp[2])
	}
}

// kazooGSSAPI is a kazoo session with GSSAPI (puresasl over pykerberos,
// from the credential cache kinit filled): it prints the node's data and
// ACL, or how it failed.
const kazooGSSAPI = `
import sys
from kazoo.client import KazooClient
from kazoo.exceptions import AuthFailedError, NoAuthError
hosts, path = sys.argv[1], sys.argv[2]
zk = KazooClient(hosts=hosts, timeout=30, sasl_options={"mechanism": "GSSAPI", "service": "zookeeper"})
try:
    zk.start(timeout=60)
except AuthFailedError:
    print("AuthFailed")
    sys.exit(0)
try:
    data, _ = zk.get(path)
    print("data", data.decode())
    acls, _ = zk.get_acls(path)
    print("acl", ",".join("%s:%s:%d" % (a.id.scheme, a.id.id, a.perms) for a in acls))
except NoAuthError:
    print("NoAuth")
except AuthFailedError:
    print("AuthFailed")
zk.stop()
`

// kazoo runs kazooGSSAPI as principal, whose keytab kinit reads into a
// fresh credential cache.
func (k *kdc) kazoo(t *testing.T, principal, keytab, addr, path string) string {
	t.Helper()
	ccache := k.Kinit(t, principal, keytab)
	env := append(append(os.Environ(), k.env...), "KRB5CCNAME="+ccache)
	ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(90*time.Second))
	defer cancel()
	// localhost, not 127.0.0.1: puresasl asks for a ticket to
	// zookeeper@<the host it dialled>.
	_, port, _ := strings.Cut(addr, ":")
	cmd := exec.CommandContext(ctx, zkreal.KazooPython, "-c", kazooGSSAPI, "localhost:"+port, path)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kazoo as %s: %v\n%s", principal, err, out)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "data ") || strings.HasPrefix(l, "acl ") || l == "NoAuth" || l == "AuthFailed" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// TestKerberosKazooSideBySide reads a node with a sasl ACL through kazoo's
// GSSAPI against Apache ZooKeeper and keeper, as the ACL's principal and as
// another one; the outcomes must be the same, and keeper with a stale
// keytab fails kazoo's login.
func TestKerberosKazooSideBySide(t *testing.T) {
	require(t, "kazoo with pure-sasl and pykerberos", exec.Command(zkreal.KazooPython, "-c", "import kazoo, puresasl, kerberos").Run())
	if err := zkreal.Available(); err != nil {
		require(t, "Apache ZooKeeper", err)
	}
	if _, err := lookPath("kinit"); err != nil {
		require(t, "kinit (Debian's krb5-user)", err)
	}
	u := startKDCUsers(t)
	k := u.kdc
	stale := u.stale
	service, alice, eve := u.service, u.alice, u.eve
	jaas := k.jaasFile(t, "server.jaas", service, alice, "alice@"+realm)
	krbFlag := "-Djava.security.krb5.conf=" + k.krb5Conf
	aliceACL := "sasl:alice@" + realm + ":cdrwa"

	zk := zkreal.Start(t, zkreal.Options{
		ExtraConfig: map[string]string{"authProvider.1": saslProvider},
		JVMFlags:    []string{"-Djava.security.auth.login.config=" + jaas, krbFlag},
	}).Addr()
	kp := startKeeperFlags(t, "-Djava.security.auth.login.config="+jaas+" "+krbFlag, nil)
	results := map[string][2]string{}
	for name, addr := range map[string]string{"zookeeper": zk, "keeper": kp} {
		// zkCli.sh as alice creates the node the kazoo sessions read.
		k.zkCli(t, jaas, addr, "create /k secret-data "+aliceACL+"\nquit\n")
		results[name] = [2]string{k.kazoo(t, "alice@"+realm, alice, addr, "/k"), k.kazoo(t, "eve@"+realm, eve, addr, "/k")}
		t.Logf("%s: alice %q, eve %q", name, results[name][0], results[name][1])
	}
	if results["zookeeper"] != results["keeper"] {
		t.Errorf("zookeeper %q, keeper %q", results["zookeeper"], results["keeper"])
	}
	if want := "data secret-data\nacl sasl:alice@" + realm + ":31"; results["keeper"][0] != want {
		t.Errorf("alice on keeper: %q, want %q", results["keeper"][0], want)
	}
	if results["keeper"][1] != "NoAuth" {
		t.Errorf("eve on keeper: %q, want NoAuth", results["keeper"][1])
	}
	staleJAAS := k.jaasFileOpts(t, "stale.jaas", stale, alice, "alice@"+realm, "isInitiator=false")
	staleAddr := startKeeperFlags(t, "-Djava.security.auth.login.config="+staleJAAS+" "+krbFlag, nil)
	if got := k.kazoo(t, "alice@"+realm, alice, staleAddr, "/k"); got != "AuthFailed" {
		t.Errorf("alice on keeper with a stale keytab: %q, want AuthFailed", got)
	}
}
