package mixed

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestMixedEnsembleOverTLS runs TestMixedEnsemble's phases with every
// member on sslQuorum, the same PKCS12 key stores and JKS trust store for
// the Java and the keeper members: keeper leads two ZooKeeper followers
// over TLS, then follows the ZooKeeper leader elected when it is killed.
func TestMixedEnsembleOverTLS(t *testing.T) {
	t.Parallel()
	e := NewEnsemble(t, ZooKeeper, ZooKeeper, Keeper)
	p := newQuorumPKI(t)
	for _, m := range e.Members {
		e.SetExtra(m, p.tlsLines(p.keyStore(t, fmt.Sprintf("m%d", m.ID), false), true, false)...)
	}
	runMixed(t, e)
	for _, m := range e.Members {
		want := "Creating TLS-only quorum server socket"
		if m.Kind == Keeper {
			want = "tls=only"
		}
		if !logHas(m, want) {
			t.Errorf("member %d (%s): its log does not say %q", m.ID, m.Kind, want)
		}
	}
}

// TestKeeperEnsembleOverTLS: three keeper members on sslQuorum elect a
// leader and replicate; a member that speaks plaintext, then one whose
// certificate no member trusts, cannot join and does not disturb the
// two that serve; with a good certificate it joins; the leader's death
// brings a new election over TLS.
func TestKeeperEnsembleOverTLS(t *testing.T) {
	t.Parallel()
	e := NewEnsemble(t, Keeper, Keeper, Keeper)
	p := newQuorumPKI(t)
	good := map[int][]string{}
	for _, m := range e.Members {
		good[m.ID] = p.tlsLines(p.keyStore(t, fmt.Sprintf("m%d", m.ID), false), true, false)
		e.SetExtra(m, good[m.ID]...)
	}
	m1, m2, m3 := e.Member(1), e.Member(2), e.Member(3)
	ack := acked{}
	e.Start(m1)
	e.Start(m2)
	e.WaitServing()
	writeAndRead(t, []*Member{m1, m2}, []*Member{m1, m2}, "pair", ack)

	bad := []struct {
		name  string
		lines []string
	}{
		{"plaintext", nil},
		{"untrusted", p.tlsLines(p.keyStore(t, "rogue3", true), true, false)},
	}
	for _, b := range bad {
		before := refusals(m1) + refusals(m2)
		e.SetExtra(m3, b.lines...)
		e.Start(m3)
		e.waitFor(electTimeout, "member 3 ("+b.name+") refused", func() (bool, string) {
			n := refusals(m1) + refusals(m2)
			return n > before, fmt.Sprintf("%d refusals logged", n-before)
		})
		if mode := m3.Mode(); mode != "" {
			t.Fatalf("member 3 (%s) serves as %q", b.name, mode)
		}
		writeAndRead(t, []*Member{m1, m2}, []*Member{m1, m2}, "with-"+b.name, ack)
		checkAlive(t, e, m1, m2)
		e.Kill(m3)
	}

	e.SetExtra(m3, good[3]...)
	e.Start(m3)
	leader := e.WaitServing()
	writeAndRead(t, e.Members, e.Members, "three", ack)

	e.Kill(leader)
	e.WaitServing()
	var alive []*Member
	for _, m := range e.Members {
		if m.Running() {
			alive = append(alive, m)
		}
	}
	writeAndRead(t, alive, alive, "after-leader", ack)
	e.Start(leader)
	e.WaitServing()
	checkTrees(t, e, ack)
}

// TestRollingUpgradeToTLS moves a running keeper ensemble from plaintext
// to TLS between members, restarting one member at a time while a client
// writes all along: first every member accepts both (portUnification),
// then every member dials in TLS too (sslQuorum), then every member
// refuses plaintext. No acknowledged write is lost, and writes go on in
// every phase. It runs with keeper members only, and with two ZooKeeper
// members beside a keeper one.
func TestRollingUpgradeToTLS(t *testing.T) {
	t.Parallel()
	for _, kinds := range [][]Kind{{Keeper, Keeper, Keeper}, {ZooKeeper, ZooKeeper, Keeper}} {
		t.Run(fmt.Sprint(kinds), func(t *testing.T) { rollingUpgrade(t, kinds) })
	}
}

func rollingUpgrade(t *testing.T, kinds []Kind) {
	e := NewEnsemble(t, kinds...)
	p := newQuorumPKI(t)
	stores := map[int]string{}
	for _, m := range e.Members {
		stores[m.ID] = p.keyStore(t, fmt.Sprintf("m%d", m.ID), false)
		e.Start(m)
	}
	e.WaitServing()
	w := startTLSWriter(t, e)
	phases := []struct {
		name                       string
		sslQuorum, portUnification bool
	}{
		{"unified, plaintext dials", false, true},
		{"unified, tls dials", true, true},
		{"tls only", true, false},
	}
	for _, ph := range phases {
		for _, m := range e.Members {
			e.Kill(m)
			e.SetExtra(m, p.tlsLines(stores[m.ID], ph.sslQuorum, ph.portUnification)...)
			e.Start(m)
			e.WaitServing()
			w.progress(t, e, fmt.Sprintf("%s, member %d restarted", ph.name, m.ID))
		}
	}
	ack := w.stop(t)
	for _, m := range e.Members {
		want := "Creating TLS-only quorum server socket"
		if m.Kind == Keeper {
			want = "tls=only"
		}
		if !logHas(m, want) {
			t.Errorf("member %d (%s) does not say it serves TLS only", m.ID, m.Kind)
		}
	}
	// Every member lives, and no Java log shows a complaint but ZooKeeper's
	// own bugs: the leader is killed at every restart under constant
	// writes, and Java followers of a Java leader then hit them.
	checkAliveTolerating(t, []string{javaLeaderBug, javaShutdownBug, javaRevalidateBug}, e.Members...)
	checkTrees(t, e, ack)
}

// writeAndRead creates a node through each writer, then reads every one
// through each reader after a sync.
func writeAndRead(t *testing.T, writers, readers []*Member, tag string, ack acked) {
	t.Helper()
	var paths []string
	for _, m := range writers {
		c := dial(t, m)
		for _, p := range []string{"/tls", "/tls/" + tag} {
			if _, err := c.Create(p, nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatalf("member %d: create %s: %v", m.ID, p, err)
			}
		}
		p := fmt.Sprintf("/tls/%s/m%d", tag, m.ID)
		if _, err := c.Create(p, []byte(p), 0, openACL); err != nil {
			t.Fatalf("member %d: create %s: %v", m.ID, p, err)
		}
		ack[p] = []byte(p)
		paths = append(paths, p)
		c.Close()
	}
	for _, m := range readers {
		c := dial(t, m)
		if _, err := c.Sync("/tls"); err != nil {
			t.Fatalf("member %d: sync: %v", m.ID, err)
		}
		for _, p := range paths {
			data, _, err := c.Get(p)
			if err != nil || string(data) != p {
				t.Fatalf("member %d: get %s: %q %v", m.ID, p, data, err)
			}
		}
		c.Close()
	}
}

// refusals counts the connections m's current run refused on its quorum
// ports.
func refusals(m *Member) int {
	b, _ := os.ReadFile(m.LogPath())
	return strings.Count(string(b), "refused connection")
}

// logHas reports whether m's current run logged s.
func logHas(m *Member, s string) bool {
	b, _ := os.ReadFile(m.LogPath())
	return strings.Contains(string(b), s)
}

// tlsWriter creates sequential nodes through a session with every member,
// one at a time, until stopped, and records those acknowledged.
type tlsWriter struct {
	mu    sync.Mutex
	acked acked
	count int
	done  chan struct{}
	ended chan struct{}
}

func startTLSWriter(t *testing.T, e *Ensemble) *tlsWriter {
	t.Helper()
	var addrs []string
	for _, m := range e.Members {
		addrs = append(addrs, m.Addr)
	}
	c, _, err := zk.Connect(addrs, sessionTimeout, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if _, err := c.Create("/rolling", nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	w := &tlsWriter{acked: acked{}, done: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(w.ended)
		// Paced as the rolling writer is: unpaced, this writer made the
		// two rolling upgrades that use it the costliest tests of the
		// package (130 s of CPU, half of it the members' fsyncs) for no
		// more coverage, and the trees it left took seconds to compare.
		tick := time.NewTicker(writePace)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
			data := []byte(fmt.Sprint(i))
			p, err := c.Create("/rolling/n-", data, zk.FlagSequence, openACL)
			if err != nil {
				// Connection loss during a restart: the outcome is
				// unknown, so nothing is recorded; the next tick tries
				// again.
				continue
			}
			w.mu.Lock()
			w.acked[p] = data
			w.count++
			w.mu.Unlock()
		}
	}()
	return w
}

// progress waits until the writer has had a few more writes acknowledged.
func (w *tlsWriter) progress(t *testing.T, e *Ensemble, what string) {
	t.Helper()
	w.mu.Lock()
	before := w.count
	w.mu.Unlock()
	e.waitFor(electTimeout, "writes to go on ("+what+")", func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.count >= before+20, fmt.Sprintf("%d writes since", w.count-before)
	})
}

// stop stops the writer and returns what was acknowledged.
func (w *tlsWriter) stop(t *testing.T) acked {
	close(w.done)
	<-w.ended
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("%d writes acknowledged during the upgrade", w.count)
	return w.acked
}

// TestMixedTLSRefusals: in an ensemble of two ZooKeeper members and a
// keeper one on sslQuorum, a keeper member whose certificate no member
// trusts cannot join the ZooKeeper pair, and a ZooKeeper member that
// speaks plaintext cannot join ZooKeeper and keeper; neither disturbs the
// two that serve, and each joins once configured like the others.
func TestMixedTLSRefusals(t *testing.T) {
	t.Parallel()
	e := NewEnsemble(t, ZooKeeper, ZooKeeper, Keeper)
	p := newQuorumPKI(t)
	good := map[int][]string{}
	for _, m := range e.Members {
		good[m.ID] = p.tlsLines(p.keyStore(t, fmt.Sprintf("m%d", m.ID), false), true, false)
		e.SetExtra(m, good[m.ID]...)
	}
	zk1, zk2, kp := e.Member(1), e.Member(2), e.Member(3)
	ack := acked{}

	e.Start(zk1)
	e.Start(zk2)
	e.WaitServing()
	e.SetExtra(kp, p.tlsLines(p.keyStore(t, "rogue3", true), true, false)...)
	e.Start(kp)
	e.waitFor(electTimeout, "the untrusted keeper member's handshakes to fail", func() (bool, string) {
		return logHas(kp, "tls handshake"), "no failed handshake logged yet"
	})
	if mode := kp.Mode(); mode != "" {
		t.Fatalf("the untrusted keeper member serves as %q", mode)
	}
	writeAndRead(t, []*Member{zk1, zk2}, []*Member{zk1, zk2}, "untrusted-keeper", ack)
	checkAlive(t, e, zk1, zk2)
	e.Kill(kp)
	e.SetExtra(kp, good[3]...)
	e.Start(kp)
	e.WaitServing()
	writeAndRead(t, e.Members, e.Members, "all-tls", ack)

	e.Kill(zk1)
	e.WaitServing()
	before := refusals(kp)
	e.SetExtra(zk1)
	e.Start(zk1)
	e.waitFor(electTimeout, "the plaintext ZooKeeper member refused", func() (bool, string) {
		return refusals(kp) > before, "no refusal logged yet"
	})
	if mode := zk1.Mode(); mode != "" {
		t.Fatalf("the plaintext ZooKeeper member serves as %q", mode)
	}
	writeAndRead(t, []*Member{zk2, kp}, []*Member{zk2, kp}, "plaintext-zookeeper", ack)
	e.Kill(zk1)
	e.SetExtra(zk1, good[1]...)
	e.Start(zk1)
	e.WaitServing()
	writeAndRead(t, e.Members, e.Members, "all-tls-again", ack)
	checkAlive(t, e, e.Members...)
	checkTrees(t, e, ack)
}

// TestMixedTLSWantUntrusted: under ssl.quorum.clientAuth=want, a member
// whose certificate no member trusts joins an ensemble of the other kind,
// both ways round, as a ZooKeeper member joins ZooKeeper ones: the
// accepting member names its trust store's CA, the dialling member then
// presents no certificate, and want lets it in (docs/tls.md, "Between
// servers"). It dials the others (its id is the highest), so every link
// it needs is one it opens.
func TestMixedTLSWantUntrusted(t *testing.T) {
	t.Parallel()
	for _, kinds := range [][3]Kind{{ZooKeeper, ZooKeeper, Keeper}, {Keeper, Keeper, ZooKeeper}} {
		t.Run(fmt.Sprintf("%s-joins-%s", kinds[2], kinds[0]), func(t *testing.T) {
			e := NewEnsemble(t, kinds[0], kinds[1], kinds[2])
			p := newQuorumPKI(t)
			want := "ssl.quorum.clientAuth=want"
			for _, m := range e.Members[:2] {
				e.SetExtra(m, append(p.tlsLines(p.keyStore(t, fmt.Sprintf("m%d", m.ID), false), true, false), want)...)
			}
			odd := e.Member(3)
			e.SetExtra(odd, append(p.tlsLines(p.keyStore(t, "rogue3", true), true, false), want)...)
			ack := acked{}
			e.Start(e.Member(1))
			e.Start(e.Member(2))
			e.WaitServing()
			e.Start(odd)
			e.waitFor(electTimeout, "the untrusted member to join", func() (bool, string) {
				mode := odd.Mode()
				return mode == "follower" || mode == "leader", fmt.Sprintf("member 3: %q", mode)
			})
			writeAndRead(t, e.Members, e.Members, "want-untrusted", ack)
			checkAlive(t, e, e.Members...)
			checkTrees(t, e, ack)
		})
	}
}
