package secmatrix

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/verify/compat/internal/launcher"
	"keeper/verify/compat/internal/mitkdc"
	"keeper/verify/compat/internal/pkitest"
	"keeper/verify/compat/zkreal"
)

// quorumCell is one ensemble configuration of the quorum matrix: two
// members configured alike, and a third that differs from them in one
// way.
type quorumCell struct {
	tls  string // off, need or want: sslQuorum with ssl.quorum.clientAuth
	sasl string // none, digest or kerberos: quorum.auth.enableSasl, learnerRequireSasl and serverRequireSasl
	odd  string // what the third member gets wrong ("nothing": it joins)
}

func (c quorumCell) String() string {
	return "tls=" + c.tls + ",sasl=" + c.sasl + ",odd=" + strings.ReplaceAll(c.odd, " ", "-")
}

// quorumCells are the cells. Under want, a member that speaks plaintext
// is refused as under need, and a member whose certificate an untrusted
// CA issued joins: the accepting member names its trust store's CAs in
// its CertificateRequest, and the dialling member, of either kind, holds
// back a certificate none of them issued and goes on without one
// (TestCertificateRequest). One want cell is left out because the
// kinds differ there for a reason outside the handshake: a member without
// a key store (ZooKeeper starts it and it dials without a certificate,
// which want lets in; keeper refuses to start it, docs/tls.md).
func quorumCells() []quorumCell {
	return []quorumCell{
		{tls: "need", sasl: "none", odd: "plaintext"},
		{tls: "need", sasl: "none", odd: "untrusted certificate"},
		{tls: "want", sasl: "none", odd: "plaintext"},
		{tls: "want", sasl: "none", odd: "untrusted certificate"},
		{tls: "off", sasl: "digest", odd: "wrong password"},
		{tls: "off", sasl: "digest", odd: "no sasl"},
		{tls: "need", sasl: "digest", odd: "wrong password"},
		// The control: a third member configured as the others joins.
		{tls: "need", sasl: "digest", odd: "nothing"},
		{tls: "off", sasl: "kerberos", odd: "no sasl"},
		{tls: "need", sasl: "kerberos", odd: "principal of another host"},
	}
}

// member is what one member's zoo.cfg lines and JVM flags are.
type memberConf struct {
	lines []string
	flags []string
}

// conf is the configuration of a member that is good (alike the cell's
// others) or, when odd, gets the cell's odd thing wrong.
func (c quorumCell) conf(f *fixture, odd bool) memberConf {
	var m memberConf
	tls, sasl := c.tls, c.sasl
	store := f.serverStore
	jaas := f.digestJAAS
	if c.sasl == "kerberos" {
		jaas = f.quorumKrbJAAS
	}
	if odd {
		switch c.odd {
		case "plaintext":
			tls = "off"
		case "untrusted certificate":
			store = f.rogueStore
		case "wrong password":
			jaas = f.wrongJAAS
		case "no sasl":
			sasl = "none"
		case "principal of another host":
			jaas = f.outsiderJAAS
		}
	}
	if tls != "off" {
		m.lines = append(m.lines, "sslQuorum=true",
			"ssl.quorum.keyStore.location="+store, "ssl.quorum.keyStore.password="+storePass, "ssl.quorum.keyStore.type=PKCS12",
			"ssl.quorum.trustStore.location="+f.trust, "ssl.quorum.trustStore.password="+storePass, "ssl.quorum.trustStore.type=JKS",
			"ssl.quorum.clientAuth="+tls)
	}
	if sasl != "none" {
		m.lines = append(m.lines, "quorum.auth.enableSasl=true", "quorum.auth.learnerRequireSasl=true", "quorum.auth.serverRequireSasl=true")
		m.flags = f.jvmFlags(jaas)
	}
	if sasl == "kerberos" {
		// Each member's service principal is zkquorum/<its server.N host>.
		m.lines = append(m.lines, "quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST")
	}
	return m
}

// Timing, as verify/compat/mixed has it: a tick of 100 ms keeps elections
// short, the limits leave room for a JVM's pauses on a busy machine.
var quorumTiming = launcher.Config{TickMs: 100, InitLimit: 100, SyncLimit: 20, MaxSessionTimeoutMs: 60000}

// quorumMatrix runs every cell, an ensemble of keeper members and one of
// ZooKeeper members side by side, and compares what happened.
func quorumMatrix(t *testing.T, f *fixture) {
	for _, cell := range quorumCells() {
		t.Run(cell.String(), func(t *testing.T) {
			got, logs := map[string]string{}, map[string]string{}
			var mu sync.Mutex
			t.Run("run", func(t *testing.T) {
				for _, kind := range []string{"keeper", "zookeeper"} {
					t.Run(kind, func(t *testing.T) {
						t.Parallel()
						outcome, log := runQuorumCell(t, f, cell, kind)
						mu.Lock()
						got[kind], logs[kind] = outcome, log
						mu.Unlock()
					})
				}
			})
			t.Logf("keeper: %s; zookeeper: %s", got["keeper"], got["zookeeper"])
			if cell.odd == "nothing" && got["zookeeper"] != "formed=true joined=true" {
				t.Errorf("the control cell: %s; a cell where nobody joins compares nothing", got["zookeeper"])
			}
			if got["keeper"] != got["zookeeper"] {
				t.Errorf("keeper: %s, zookeeper: %s\n--- keeper ---\n%s\n--- zookeeper ---\n%s", got["keeper"], got["zookeeper"], logs["keeper"], logs["zookeeper"])
			}
		})
	}
}

// runQuorumCell starts the two good members and waits until they form an
// ensemble, then starts the odd one and watches whether it joins, and
// returns "formed=<bool> joined=<bool>", and the tails of the logs of
// member 1 and the odd member, for the report when kinds disagree.
func runQuorumCell(t *testing.T, f *fixture, cell quorumCell, kind string) (outcome, logs string) {
	ms := launcher.Layout(t, t.TempDir(), 3, func(id int) string { return fmt.Sprintf("m%d-%s", id, kind) })
	launcher.Cleanup(t, ms, func(*launcher.Member) string { return kind })
	confs := []memberConf{cell.conf(f, false), cell.conf(f, false), cell.conf(f, true)}
	for i, m := range ms {
		if err := launcher.WriteConfig(m, ms, quorumTiming, confs[i].lines); err != nil {
			t.Fatal(err)
		}
	}
	start := func(i int) {
		m := ms[i]
		var cmd *exec.Cmd
		if kind == "zookeeper" {
			cmd = zkreal.QuorumPeerCommand(t, m.CfgPath(), zkreal.Options{JVMFlags: confs[i].flags})
			cmd.Dir = m.Dir
		} else {
			cmd = exec.Command(keeperBin, "server", m.CfgPath())
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if len(confs[i].flags) > 0 {
				cmd.Env = append(os.Environ(), "SERVER_JVMFLAGS="+strings.Join(confs[i].flags, " "))
			}
		}
		m.Start(t, cmd, func(n int) string { return fmt.Sprintf("run%d.log", n) }, testhost.Scale(60*time.Second), 50*time.Millisecond)
	}
	start(0)
	start(1)
	formed := launcher.Poll(testhost.Scale(60*time.Second), 50*time.Millisecond, func() (bool, string) {
		return servingPair(ms[0], ms[1])
	}) == nil
	start(2)
	// The odd member joins within a few election rounds when it can: a
	// good one does in about a second on an idle machine (ticks of 100
	// ms). It is watched five seconds, scaled, and the pair must keep
	// serving meanwhile.
	joined := launcher.Poll(testhost.Scale(5*time.Second), 50*time.Millisecond, func() (bool, string) {
		mode := mode(ms[2])
		return mode == "follower" || mode == "leader", fmt.Sprintf("member 3: %q", mode)
	}) == nil
	if ok, desc := servingPair(ms[0], ms[1]); formed && !ok && !joined {
		t.Errorf("the pair stopped serving while the odd member tried to join: %s", desc)
	}
	logs = fmt.Sprintf("member 1:\n%s\nmember 3:\n%s", ms[0].LogTail(30), ms[2].LogTail(30))
	return fmt.Sprintf("formed=%v joined=%v", formed, joined), logs
}

// servingPair reports whether a and b serve under one leader.
func servingPair(a, b *launcher.Member) (bool, string) {
	ma, mb := mode(a), mode(b)
	ok := (ma == "leader" && mb == "follower") || (ma == "follower" && mb == "leader")
	return ok, fmt.Sprintf("member 1: %q, member 2: %q", ma, mb)
}

func mode(m *launcher.Member) string {
	s, _ := m.Srvr()
	return s.Mode
}

// rogueStore is a PKCS12 key store whose certificate a CA nobody trusts
// signed.
func (f *fixture) makeRogue(t *testing.T) {
	t.Helper()
	rogueCA := f.issue(t, "rogue-ca", "rogue CA", nil)
	rogue := f.issue(t, "rogue", "localhost", rogueCA)
	f.rogueStore = filepath.Join(f.dir, "rogue.p12")
	pkitest.PKCS12(t, rogue, rogueCA, "rogue", f.rogueStore, storePass)
	f.wrongJAAS = f.write(t, "wrong.jaas", quorumSections("wrong"))
}

// quorumPrincipal is every member's principal on both sides of a quorum
// link: 127.0.0.1 is the host of every server.N line, so ZooKeeper's
// check of a learner's host lets it in. outsider is a principal of the
// KDC whose host is no member's.
const (
	quorumPrincipal = "zkquorum/127.0.0.1@" + mitkdc.Realm
	outsider        = "zkquorum/elsewhere.example.com@" + mitkdc.Realm
)

// makeQuorumKerberos writes the JAAS file of a member that accepts and
// logs in as quorumPrincipal, and of one whose learner logs in as
// outsider.
func (f *fixture) makeQuorumKerberos(t *testing.T) {
	t.Helper()
	f.kdc.AddPrincipal(t, quorumPrincipal)
	f.kdc.AddPrincipal(t, outsider)
	keytab := f.kdc.Keytab(t, quorumPrincipal, "quorum.keytab")
	outsiderTab := f.kdc.Keytab(t, outsider, "outsider.keytab")
	section := func(name, keytab, principal string) string {
		return name + ` {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true keyTab="` + keytab + `" storeKey=true useTicketCache=false
    principal="` + principal + `";
};
`
	}
	f.quorumKrbJAAS = f.write(t, "quorum-kerberos.jaas", section("QuorumServer", keytab, quorumPrincipal)+section("QuorumLearner", keytab, quorumPrincipal))
	f.outsiderJAAS = f.write(t, "outsider.jaas", section("QuorumServer", keytab, quorumPrincipal)+section("QuorumLearner", outsiderTab, outsider))
}
