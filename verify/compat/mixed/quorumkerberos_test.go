package mixed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"keeper/verify/compat/internal/launcher"
	"keeper/verify/compat/internal/mitkdc"
)

// quorumKerberos is a realm with the principal every member is, on both
// sides: zkquorum/127.0.0.1, the host of every server.N line the launcher
// writes, so that ZooKeeper's host check lets it in.
type quorumKerberos struct {
	kdc    *mitkdc.KDC
	keytab string
}

const quorumPrincipal = "zkquorum/127.0.0.1@" + mitkdc.Realm

// quorumKerberosLines are zoo.cfg's lines of a member that requires
// Kerberos of its peers and authenticates to them: the service principal
// of each server is zkquorum/<its host>.
var quorumKerberosLines = append(append([]string{}, quorumSASLLines...), "quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST")

func startQuorumKerberos(t *testing.T) *quorumKerberos {
	t.Helper()
	k := mitkdc.Start(t)
	k.AddPrincipal(t, quorumPrincipal)
	return &quorumKerberos{kdc: k, keytab: k.Keytab(t, quorumPrincipal, "quorum.keytab")}
}

// flags writes a JAAS file whose QuorumServer section accepts as
// quorumPrincipal and whose QuorumLearner section logs in as learner with
// learnerKeytab, and returns the JVM flags that name it and krb5.conf.
func (q *quorumKerberos) flags(t *testing.T, name, learner, learnerKeytab string) []string {
	t.Helper()
	text := `QuorumServer {
       com.sun.security.auth.module.Krb5LoginModule required
       useKeyTab=true
       keyTab="` + q.keytab + `"
       storeKey=true
       useTicketCache=false
       principal="` + quorumPrincipal + `";
};
QuorumLearner {
       com.sun.security.auth.module.Krb5LoginModule required
       useKeyTab=true
       keyTab="` + learnerKeytab + `"
       storeKey=true
       useTicketCache=false
       principal="` + learner + `";
};
`
	path := filepath.Join(t.TempDir(), name+".jaas")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"-Djava.security.auth.login.config=" + path, "-Djava.security.krb5.conf=" + q.kdc.Krb5Conf}
}

// TestEnsembleQuorumKerberos runs three keeper members that require
// Kerberos of each other, from ZooKeeper's configuration, against an MIT
// KDC; then restarts the third in ways that must keep it out while the
// other two serve on, and finally as it should be, when it joins:
//   - its learner logs in as a principal of the KDC whose host is not a
//     server.N host (ZooKeeper's host check, CVE-2023-44981);
//   - it asks tickets for a service principal the KDC does not know;
//   - it sends no authentication at all (quorum SASL off);
//   - its learner's keytab is stale: it does not start;
//   - a fourth server, with a good principal and keytab but an id outside
//     the others' configuration, is refused too.
func TestEnsembleQuorumKerberos(t *testing.T) {
	t.Parallel()
	q := startQuorumKerberos(t)
	e := NewEnsemble(t, Keeper, Keeper, Keeper)
	good := q.flags(t, "good", quorumPrincipal, q.keytab)
	for _, m := range e.Members {
		m.JVMFlags = good
		e.SetExtra(m, quorumKerberosLines...)
	}
	m1, m2, m3 := e.Member(1), e.Member(2), e.Member(3)
	ack := acked{}
	for _, m := range e.Members {
		e.Start(m)
	}
	e.WaitServing()
	writeAndRead(t, e.Members, e.Members, "kerberos", ack)
	for _, m := range e.Members {
		if !logHas(m, keeperSASLAccepted) && !logHas(m, keeperSASLOpened) {
			t.Errorf("member %d: its log does not say it authenticated a peer", m.ID)
		}
	}
	if t.Failed() {
		return
	}

	outsider := "zkquorum/elsewhere.example.com@" + mitkdc.Realm
	q.kdc.AddPrincipal(t, outsider)
	outsiderKeytab := q.kdc.Keytab(t, outsider, "outsider.keytab")
	for _, tc := range []struct {
		name  string
		flags []string
		lines []string
		// logged is what the refused member's own log shows.
		logged string
	}{
		{"principal of another host", q.flags(t, "outsider", outsider, outsiderKeytab), quorumKerberosLines, "is not authorized to connect"},
		{"service principal not in the KDC", good,
			append(append([]string{}, quorumSASLLines...), "quorum.auth.kerberos.servicePrincipal=zkquorum/nosuchhost"), "ticket for zkquorum/nosuchhost"},
		{"plaintext", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.Kill(m3)
			e.WaitServing()
			before1, before2 := refusals(m1), refusals(m2)
			m3.JVMFlags = tc.flags
			e.SetExtra(m3, tc.lines...)
			e.Start(m3)
			e.waitFor(electTimeout, "the others to refuse member 3", func() (bool, string) {
				return refusals(m1) > before1 && refusals(m2) > before2, "no refusal logged yet on both"
			})
			if mode := m3.Mode(); mode != "" {
				t.Fatalf("member 3 serves as %q", mode)
			}
			if tc.logged != "" && !logHas(m3, tc.logged) && !logHas(m1, tc.logged) {
				t.Errorf("neither member 3 nor member 1 logged %q", tc.logged)
			}
			writeAndRead(t, []*Member{m1, m2}, []*Member{m1, m2}, "without-3-"+strings.ReplaceAll(tc.name, " ", "-"), ack)
			checkAlive(t, e, m1, m2)
		})
	}

	e.Kill(m3)
	m3.JVMFlags = good
	e.SetExtra(m3, quorumKerberosLines...)

	t.Run("stale keytab", func(t *testing.T) {
		// Exporting a keytab rekeys the principal: the first export is
		// stale. The learner's login at start fails, as Java's does.
		stale := "zkquorum/stale@" + mitkdc.Realm
		q.kdc.AddPrincipal(t, stale)
		staleKeytab := q.kdc.Keytab(t, stale, "stale1.keytab")
		q.kdc.Keytab(t, stale, "stale2.keytab")
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, keeperBin, "server", m3.CfgPath())
		cmd.Env = append(os.Environ(), "SERVER_JVMFLAGS="+strings.Join(q.flags(t, "stale", stale, staleKeytab), " "))
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "could not log in to Kerberos as "+stale) {
			t.Fatalf("keeper with a stale learner keytab: %v\n%s", err, out)
		}
	})

	t.Run("id outside the configuration", func(t *testing.T) {
		// Server 4 names itself and the three, with the good principal
		// and keytab; the three name only themselves.
		m4 := launcher.Layout(t, t.TempDir(), 4, func(id int) string { return fmt.Sprintf("m%d-outsider", id) })[3]
		all := []*launcher.Member{m1.Member, m2.Member, m3.Member, m4}
		c := launcher.Config{TickMs: tickMs, InitLimit: initLimit, SyncLimit: syncLimit, MaxSessionTimeoutMs: maxSessionTimeoutMs}
		if err := launcher.WriteConfig(m4, all, c, quorumKerberosLines); err != nil {
			t.Fatal(err)
		}
		before1, before2 := refusals(m1), refusals(m2)
		cmd := exec.Command(keeperBin, "server", m4.CfgPath())
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		cmd.Env = append(os.Environ(), "SERVER_JVMFLAGS="+strings.Join(good, " "))
		t.Cleanup(m4.Kill)
		m4.Start(t, cmd, func(int) string { return "outsider.log" }, startTimeout, pollInterval)
		e.waitFor(electTimeout, "the others to refuse server 4", func() (bool, string) {
			return refusals(m1) > before1 && refusals(m2) > before2, "no refusal logged yet on both"
		})
		if s, _ := m4.Srvr(); s.Mode != "" {
			t.Fatalf("server 4 serves as %q", s.Mode)
		}
		writeAndRead(t, []*Member{m1, m2}, []*Member{m1, m2}, "without-4", ack)
		checkAlive(t, e, m1, m2)
	})

	e.Start(m3)
	e.WaitServing()
	writeAndRead(t, e.Members, e.Members, "kerberos-again", ack)
	checkAlive(t, e, e.Members...)
	checkTrees(t, e, ack)
}

// TestMixedEnsembleQuorumKerberos runs TestMixedEnsemble's phases with
// every member requiring Kerberos of the others, from the same JAAS file,
// keytab and krb5.conf: keeper leads two ZooKeeper followers, then follows
// a ZooKeeper leader. Each member's log shows it authenticated peers.
func TestMixedEnsembleQuorumKerberos(t *testing.T) {
	t.Parallel()
	q := startQuorumKerberos(t)
	e := NewEnsemble(t, ZooKeeper, ZooKeeper, Keeper)
	flags := q.flags(t, "good", quorumPrincipal, q.keytab)
	for _, m := range e.Members {
		m.JVMFlags = flags
		e.SetExtra(m, quorumKerberosLines...)
	}
	runMixed(t, e)
	for _, m := range e.Members {
		ok := logHas(m, javaSASLDone)
		if m.Kind == Keeper {
			ok = logHas(m, keeperSASLAccepted) || logHas(m, keeperSASLOpened)
		}
		if !ok {
			t.Errorf("member %d (%s): its log does not say it authenticated a peer", m.ID, m.Kind)
		}
	}
}
