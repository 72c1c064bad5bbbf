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
	p := filepath.Join(k.dir, name)
	if err := os.WriteFile(p, []byte(fmt.Sprintf(kerberosJAAS, serverKeytab, clientKeytab, clientPrincipal)), 0o600); err != nil {
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
	k := startKDC(t)
	for _, p := range []string{"zookeeper/localhost", "alice", "eve"} {
		k.addPrincipal(t, p)
	}
	stale := k.keytab(t, "zookeeper/localhost", "zk-stale.keytab")
	service := k.keytab(t, "zookeeper/localhost", "zk.keytab")
	alice := k.keytab(t, "alice", "alice.keytab")
	eve := k.keytab(t, "eve", "eve.keytab")
	aliceJAAS := k.jaasFile(t, "alice.jaas", service, alice, "alice@"+realm)
	eveJAAS := k.jaasFile(t, "eve.jaas", service, eve, "eve@"+realm)
	staleJAAS := k.jaasFile(t, "stale.jaas", stale, alice, "alice@"+realm)
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
		// Apache ZooKeeper logs in to the KDC with its keytab at start, so
		// a stale keytab stops its start ("Checksum failed"); keeper reads
		// the keytab without a KDC and fails each login instead.
		var st string
		if s.name == "keeper" {
			st = k.zkCli(t, staleJAAS, s.start(staleJAAS), staleScript)
		}
		results[s.name] = [][]string{outcome(a), outcome(e), outcome(st)}
		t.Logf("%s: alice %q, eve %q, stale keytab %q", s.name, outcome(a), outcome(e), outcome(st))
		if testing.Verbose() {
			t.Logf("%s alice output:\n%s", s.name, a)
		}
	}
	zk, kp := results["zookeeper"], results["keeper"]
	for i, what := range []string{"alice", "eve"} {
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
