package quorumnet

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"keeper/coordination/zab"
	"keeper/coordination/zxid"
	"keeper/internal/testhost"
)

// waitTimeout bounds every wait in these tests: generous, because -race on
// a loaded machine is slow, and a passing test never waits for it.
const waitTimeout = 20 * time.Second

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return nil
}

// startTransports starts transports with ids 1..n on 127.0.0.1 ephemeral
// ports, each knowing the others, closed when the test ends.
func startTransports(t *testing.T, n int, mutate func(*Config)) []*Transport {
	t.Helper()
	trs := make([]*Transport, n)
	for i := range trs {
		cfg := Config{ID: zab.PeerID(i + 1), ListenQuorum: "127.0.0.1:0", ListenElection: "127.0.0.1:0", Logger: testLogger(t)}
		if mutate != nil {
			mutate(&cfg)
		}
		tr, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		trs[i] = tr
	}
	for _, tr := range trs {
		for j, other := range trs {
			tr.SetPeer(zab.PeerID(j+1), PeerAddrs{Quorum: other.QuorumAddr(), Election: other.ElectionAddr()})
		}
	}
	return trs
}

// next returns the next message tr receives.
func next(t *testing.T, tr *Transport) zab.Message {
	t.Helper()
	select {
	case m, ok := <-tr.Recv():
		if !ok {
			t.Fatalf("server %d: Recv closed", tr.cfg.ID)
		}
		return m
	case <-time.After(waitTimeout):
		t.Fatalf("server %d: nothing received in %v", tr.cfg.ID, waitTimeout)
	}
	return zab.Message{}
}

// expect fails unless the next message tr receives has the type and sender
// of want (and, where want sets them, its zxid and epoch).
func expect(t *testing.T, tr *Transport, want zab.Message) zab.Message {
	t.Helper()
	m := next(t, tr)
	if m.Type != want.Type || m.From != want.From || m.To != tr.cfg.ID ||
		(want.Zxid != 0 && m.Zxid != want.Zxid) || (want.Epoch != 0 && m.Epoch != want.Epoch) {
		t.Fatalf("server %d received %v, want %v", tr.cfg.ID, m, want)
	}
	return m
}

// eventually polls cond until it holds, failing after waitTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s after %v", what, waitTimeout)
		}
		<-poll.C
	}
}

func followerInfo(from, to zab.PeerID) zab.Message {
	return zab.Message{Type: zab.MsgFollowerInfo, From: from, To: to, Zxid: zxid.Make(1, 0), Epoch: 1}
}

// openLink makes learner open a quorum link to leader and waits until the
// leader has its FOLLOWERINFO.
func openLink(t *testing.T, learner, leader *Transport) {
	t.Helper()
	learner.Send([]zab.Message{followerInfo(learner.cfg.ID, leader.cfg.ID)})
	expect(t, leader, zab.Message{Type: zab.MsgFollowerInfo, From: learner.cfg.ID, Epoch: 1})
}

func TestNotificationsExchange(t *testing.T) {
	trs := startTransports(t, 3, nil)
	for _, tr := range trs {
		var msgs []zab.Message
		for _, other := range trs {
			if other != tr {
				msgs = append(msgs, zab.Message{Type: zab.MsgNotification, From: tr.cfg.ID, To: other.cfg.ID,
					State: zab.Looking, Round: 3, Vote: zab.Vote{Leader: tr.cfg.ID, Zxid: 0x100000007, Epoch: 1}})
			}
		}
		tr.Send(msgs)
	}
	for _, tr := range trs {
		got := map[zab.PeerID]bool{}
		for range 2 {
			m := next(t, tr)
			want := zab.Message{Type: zab.MsgNotification, From: m.From, To: tr.cfg.ID, State: zab.Looking, Round: 3,
				Vote: zab.Vote{Leader: m.From, Zxid: 0x100000007, Epoch: 1}}
			if !reflect.DeepEqual(m, want) || m.From == tr.cfg.ID || got[m.From] {
				t.Fatalf("server %d received %v", tr.cfg.ID, m)
			}
			got[m.From] = true
		}
	}
}

func TestLearnerLink(t *testing.T) {
	trs := startTransports(t, 3, nil)
	leader, learner := trs[0], trs[1]
	openLink(t, learner, leader)
	leader.Send([]zab.Message{{Type: zab.MsgLeaderInfo, From: 1, To: 2, Zxid: zxid.Make(2, 0)}})
	expect(t, learner, zab.Message{Type: zab.MsgLeaderInfo, From: 1, Zxid: zxid.Make(2, 0)})
	learner.Send([]zab.Message{{Type: zab.MsgAckEpoch, From: 2, To: 1, Zxid: 0x100000004, Epoch: 1}})
	expect(t, leader, zab.Message{Type: zab.MsgAckEpoch, From: 2, Zxid: 0x100000004, Epoch: 1})

	// zab's PING carries no data; a learner sends an empty touch list, as
	// ZooKeeper's leader requires, and a leader sends none.
	leader.Send([]zab.Message{{Type: zab.MsgPing, From: 1, To: 2, Zxid: 0x100000004}})
	if m := expect(t, learner, zab.Message{Type: zab.MsgPing, From: 1}); m.Data != nil {
		t.Fatalf("leader's ping carries %x", m.Data)
	}
	learner.Send([]zab.Message{{Type: zab.MsgPing, From: 2, To: 1, Zxid: 0x100000004}})
	if m := expect(t, leader, zab.Message{Type: zab.MsgPing, From: 2}); m.Data == nil || len(m.Data) != 0 {
		t.Fatalf("learner's ping carries %#v, want empty touches", m.Data)
	}

	// The leader never dials: server 3 opened no link, so a message for it
	// is dropped and reported.
	leader.Send([]zab.Message{{Type: zab.MsgProposal, From: 1, To: 3, Zxid: 0x200000001}})
	expect(t, leader, zab.Message{Type: zab.MsgDisconnected, From: 3})
}

func TestFIFO(t *testing.T) {
	const count = 10000
	trs := startTransports(t, 2, nil)
	leader, learner := trs[0], trs[1]
	openLink(t, learner, leader)
	var wg sync.WaitGroup
	send := func(tr *Transport, typ zab.MsgType, to zab.PeerID) {
		defer wg.Done()
		var batch []zab.Message
		for i := 1; i <= count; i++ {
			batch = append(batch, zab.Message{Type: typ, From: tr.cfg.ID, To: to, Zxid: zxid.Make(2, uint32(i)), Data: []byte(fmt.Sprint(i))})
			if len(batch) == 100 {
				tr.Send(batch)
				batch = nil
			}
		}
	}
	wg.Add(2)
	go send(leader, zab.MsgProposal, 2)
	go send(learner, zab.MsgAck, 1)
	check := func(tr *Transport, typ zab.MsgType) {
		for i := 1; i <= count; i++ {
			m := next(t, tr)
			if m.Type != typ || m.Zxid != zxid.Make(2, uint32(i)) {
				t.Fatalf("server %d: message %d is %v", tr.cfg.ID, i, m)
			}
			if typ == zab.MsgProposal && string(m.Data) != fmt.Sprint(i) {
				t.Fatalf("proposal %d carries %q", i, m.Data)
			}
		}
	}
	check(learner, zab.MsgProposal)
	// ACKs are cumulative: a run of them queued together leaves as its
	// last one, so the leader sees increasing ACKs ending at the last.
	var acks int
	for last := zxid.ID(0); last != zxid.Make(2, count); acks++ {
		m := next(t, leader)
		if m.Type != zab.MsgAck || m.Zxid <= last {
			t.Fatalf("after ACK %s: %v", last, m)
		}
		last = m.Zxid
	}
	t.Logf("%d ACKs sent, %d delivered", count, acks)
	wg.Wait()
}

// A run of ACKs or COMMITs is cut to its last only on a link to a peer
// that announced keeper's dialect; Apache ZooKeeper counts each of them.
func TestRunsCutOnlyForKeeperPeers(t *testing.T) {
	for _, dialect := range []zab.Dialect{zab.DialectZooKeeper, zab.DialectKeeper} {
		t.Run(dialect.String(), func(t *testing.T) {
			trs := startTransports(t, 2, nil)
			leader, learner := trs[0], trs[1]
			fi := followerInfo(2, 1)
			fi.Dialect = dialect
			learner.Send([]zab.Message{fi})
			expect(t, leader, zab.Message{Type: zab.MsgFollowerInfo, From: 2, Epoch: 1})
			leader.Send([]zab.Message{{Type: zab.MsgLeaderInfo, From: 1, To: 2, Zxid: zxid.Make(2, 0), Dialect: dialect}})
			if m := expect(t, learner, zab.Message{Type: zab.MsgLeaderInfo, From: 1}); m.Dialect != dialect {
				t.Fatalf("LEADERINFO announces %s, want %s", m.Dialect, dialect)
			}
			const count = 200
			var commits, acks []zab.Message
			for i := 1; i <= count; i++ {
				commits = append(commits, zab.Message{Type: zab.MsgCommit, From: 1, To: 2, Zxid: zxid.Make(2, uint32(i))})
				acks = append(acks, zab.Message{Type: zab.MsgAck, From: 2, To: 1, Zxid: zxid.Make(2, uint32(i))})
			}
			leader.Send(commits)
			learner.Send(acks)
			for _, tr := range []*Transport{learner, leader} {
				got := 0
				for last := zxid.ID(0); last != zxid.Make(2, count); got++ {
					m := next(t, tr)
					every := dialect == zab.DialectZooKeeper && last != 0
					if m.Zxid <= last || (every && m.Zxid != last+1) {
						t.Fatalf("server %d: %v after %s", tr.cfg.ID, m, last)
					}
					last = m.Zxid
				}
				if dialect == zab.DialectZooKeeper && got != count {
					t.Fatalf("server %d received %d of %d", tr.cfg.ID, got, count)
				}
				t.Logf("server %d received %d of %d", tr.cfg.ID, got, count)
			}
		})
	}
}

// silentLeader listens like a leader's quorum port, accepts one
// connection and never reads from it.
func silentLeader(t *testing.T) (addr string, accepted <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			t.Cleanup(func() { c.Close() })
			ch <- c
		}
	}()
	return ln.Addr().String(), ch
}

func TestFullQueueDropsLink(t *testing.T) {
	addr, accepted := silentLeader(t)
	tr := startTransports(t, 1, func(c *Config) { c.ID = 2; c.QueueMessages = 4 })[0]
	tr.SetPeer(1, PeerAddrs{Quorum: addr, Election: "127.0.0.1:1"})
	tr.Send([]zab.Message{followerInfo(2, 1)})
	conn := <-accepted

	// The peer reads nothing, so the socket buffers fill, the writer
	// blocks, and the queue overflows.
	big := make([]byte, 1<<20)
	deadline := time.Now().Add(waitTimeout)
	for dropped := false; !dropped; {
		if time.Now().After(deadline) {
			t.Fatal("the queue never overflowed")
		}
		tr.Send([]zab.Message{{Type: zab.MsgRequest, From: 2, To: 1, Zxid: zxid.None, Data: big}})
		select {
		case m := <-tr.Recv():
			if m.Type != zab.MsgDisconnected || m.From != 1 {
				t.Fatalf("received %v", m)
			}
			dropped = true
		default:
		}
	}
	// The link is closed: the peer reads until the end of the stream.
	conn.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := io.Copy(io.Discard, conn); err != nil && !isReset(err) {
		t.Fatalf("the dropped link was not closed: %v", err)
	}
	// Without a link, a message is dropped and reported at once.
	tr.Send([]zab.Message{{Type: zab.MsgAck, From: 2, To: 1, Zxid: 1}})
	expect(t, tr, zab.Message{Type: zab.MsgDisconnected, From: 1})
}

func isReset(err error) bool {
	ne, ok := err.(*net.OpError)
	return ok && !ne.Timeout()
}

// TestOverflowBeforeDial overflows the queue inside one Send, before the
// link can even connect.
func TestOverflowBeforeDial(t *testing.T) {
	trs := startTransports(t, 2, func(c *Config) { c.QueueMessages = 4 })
	msgs := []zab.Message{followerInfo(2, 1)}
	for i := range 4 {
		msgs = append(msgs, zab.Message{Type: zab.MsgAck, From: 2, To: 1, Zxid: zxid.ID(i)})
	}
	trs[1].Send(msgs)
	expect(t, trs[1], zab.Message{Type: zab.MsgDisconnected, From: 1})
}

func TestCloseReportsDisconnect(t *testing.T) {
	trs := startTransports(t, 4, nil)
	leader := trs[0]
	for _, learner := range trs[1:] {
		openLink(t, learner, leader)
	}
	// A learner that goes away is reported to the leader.
	trs[3].Close()
	expect(t, leader, zab.Message{Type: zab.MsgDisconnected, From: 4})
	if _, ok := <-trs[3].Recv(); ok {
		t.Fatal("Recv of a closed transport is not closed")
	}
	// A leader that goes away is reported to every learner.
	leader.Close()
	for _, learner := range trs[1:3] {
		expect(t, learner, zab.Message{Type: zab.MsgDisconnected, From: 1})
	}
}

func TestDisconnect(t *testing.T) {
	trs := startTransports(t, 2, nil)
	leader, learner := trs[0], trs[1]
	openLink(t, learner, leader)
	leader.Disconnect(2)
	expect(t, learner, zab.Message{Type: zab.MsgDisconnected, From: 1})
	// The leader asked, so it hears nothing: the next thing it receives is
	// the learner's next FOLLOWERINFO.
	openLink(t, learner, leader)
	learner.Disconnect(1)
	expect(t, leader, zab.Message{Type: zab.MsgDisconnected, From: 2})
	openLink(t, learner, leader)
}

// TestLearnerReconnects: a learner's new FOLLOWERINFO replaces its link;
// the leader hears of the old link's end before the new FOLLOWERINFO, and
// the learner hears nothing of it.
func TestLearnerReconnects(t *testing.T) {
	trs := startTransports(t, 2, nil)
	leader, learner := trs[0], trs[1]
	openLink(t, learner, leader)
	learner.Send([]zab.Message{followerInfo(2, 1)})
	expect(t, leader, zab.Message{Type: zab.MsgDisconnected, From: 2})
	expect(t, leader, zab.Message{Type: zab.MsgFollowerInfo, From: 2})
	leader.Send([]zab.Message{{Type: zab.MsgLeaderInfo, From: 1, To: 2, Zxid: zxid.Make(2, 0)}})
	expect(t, learner, zab.Message{Type: zab.MsgLeaderInfo, From: 1})
}

// rawConn dials addr, writes b, and returns the connection.
func rawConn(t *testing.T, addr string, b []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	return c
}

// expectClosed fails unless the peer closes c.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(waitTimeout))
	var buf [64]byte
	for {
		_, err := c.Read(buf[:])
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("connection still open")
		}
		if err != nil {
			return
		}
	}
}

func TestGarbageClosesConnectionOnly(t *testing.T) {
	trs := startTransports(t, 3, nil)
	a, b := trs[0], trs[1]
	// Server 9 is a peer of a's that speaks nonsense after its handshake.
	a.SetPeer(9, PeerAddrs{Quorum: "127.0.0.1:1", Election: "127.0.0.1:1"})
	openLink(t, b, a)
	hs, _ := EncodeElectionHandshake(9, "127.0.0.1:1")
	fi, _ := EncodeQuorumPacket(followerInfo(9, 1))
	for _, tc := range []struct {
		name string
		addr string
		b    []byte
	}{
		{"election: garbage", a.ElectionAddr(), []byte("GET / HTTP/1.1\r\n\r\n")},
		{"election: unknown server", a.ElectionAddr(), mustHandshake(t, 42)},
		{"election: frame over 512 KB", a.ElectionAddr(), append(hs, hexBytes(t, "00080001")...)},
		{"election: bad notification", a.ElectionAddr(), append(hs, appendElectionFrame(nil, []byte("short"))...)},
		{"quorum: garbage", a.QuorumAddr(), []byte("GET / HTTP/1.1\r\n\r\n")},
		{"quorum: first packet not FOLLOWERINFO", a.QuorumAddr(), mustPacket(t, zab.Message{Type: zab.MsgAck, Zxid: 1})},
		{"quorum: unknown learner", a.QuorumAddr(), mustPacket(t, followerInfo(42, 1))},
	} {
		t.Run(tc.name, func(t *testing.T) { expectClosed(t, rawConn(t, tc.addr, tc.b)) })
	}
	// A learner that turns to garbage is reported like any lost link.
	c := rawConn(t, a.QuorumAddr(), append(fi, hexBytes(t, "00000002 0000000100000001 7fffffff")...))
	expect(t, a, zab.Message{Type: zab.MsgFollowerInfo, From: 9})
	expect(t, a, zab.Message{Type: zab.MsgDisconnected, From: 9})
	expectClosed(t, c)

	// Everything else still works: b's link and the election connections.
	a.Send([]zab.Message{{Type: zab.MsgCommit, From: 1, To: 2, Zxid: 5}})
	expect(t, b, zab.Message{Type: zab.MsgCommit, From: 1, Zxid: 5})
	for _, tr := range trs {
		for _, other := range trs {
			if other != tr {
				tr.Send([]zab.Message{{Type: zab.MsgNotification, From: tr.cfg.ID, To: other.cfg.ID}})
			}
		}
	}
	for _, tr := range trs {
		for range len(trs) - 1 {
			if m := next(t, tr); m.Type != zab.MsgNotification {
				t.Fatalf("server %d received %v", tr.cfg.ID, m)
			}
		}
	}
}

func mustHandshake(t *testing.T, sid zab.PeerID) []byte {
	b, err := EncodeElectionHandshake(sid, "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustPacket(t *testing.T, m zab.Message) []byte {
	b, err := EncodeQuorumPacket(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// electionConns returns, per peer, the local and remote address of tr's
// election connection, and how many connections tr has open.
func electionConns(tr *Transport) (map[zab.PeerID][2]string, int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[zab.PeerID][2]string{}
	for id, ep := range tr.election {
		if ep.conn != nil {
			out[id] = [2]string{ep.conn.c.LocalAddr().String(), ep.conn.c.RemoteAddr().String()}
		}
	}
	return out, len(tr.conns)
}

// TestElectionTieBreak has every server dial every other at once, several
// times: in the end each pair shares one connection, the one the larger id
// dialled.
func TestElectionTieBreak(t *testing.T) {
	const n, rounds = 4, 5
	trs := startTransports(t, n, nil)
	for round := range rounds {
		var wg sync.WaitGroup
		for _, tr := range trs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, other := range trs {
					if other != tr {
						tr.Send([]zab.Message{{Type: zab.MsgNotification, From: tr.cfg.ID, To: other.cfg.ID, Round: uint64(round)}})
					}
				}
			}()
		}
		wg.Wait()
		for _, tr := range trs {
			for range n - 1 {
				if m := next(t, tr); m.Type != zab.MsgNotification || m.Round != uint64(round) {
					t.Fatalf("round %d: server %d received %v", round, tr.cfg.ID, m)
				}
			}
		}
	}
	eventually(t, "one connection per pair", func() bool {
		for _, tr := range trs {
			conns, open := electionConns(tr)
			if len(conns) != n-1 || open != n-1 {
				return false
			}
			for id, addrs := range conns {
				other := trs[id-1]
				back, _ := electionConns(other)
				if back[tr.cfg.ID] != [2]string{addrs[1], addrs[0]} {
					return false
				}
			}
		}
		return true
	})
	for _, tr := range trs {
		conns, _ := electionConns(tr)
		for id, addrs := range conns {
			if id < tr.cfg.ID && addrs[1] != trs[id-1].ElectionAddr() {
				t.Fatalf("server %d's connection to %d goes to %s, not its election port %s: %d did not dial",
					tr.cfg.ID, id, addrs[1], trs[id-1].ElectionAddr(), tr.cfg.ID)
			}
			if id > tr.cfg.ID && addrs[0] != tr.ElectionAddr() {
				t.Fatalf("server %d's connection to %d is not on its election port", tr.cfg.ID, id)
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, cfg := range []Config{
		{ID: 0, ListenQuorum: "a:1", ListenElection: "a:2"},
		{ID: 1, ListenElection: "a:2"},
		{ID: 1, ListenQuorum: "a:1", ListenElection: "a:2", QueueMessages: -1},
		{ID: 1, ListenQuorum: "a:1", ListenElection: "a:2", Peers: map[zab.PeerID]PeerAddrs{-1: {}}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	tr, err := New(Config{ID: 1, ListenQuorum: "127.0.0.1:0", ListenElection: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	if err := tr.Start(); err != ErrClosed {
		t.Fatalf("Start after Close: %v", err)
	}
	tr.Send([]zab.Message{followerInfo(1, 2)}) // no effect, no panic
}

func TestSupersedes(t *testing.T) {
	ack := func(e zxid.Epoch, c uint32) zab.Message { return zab.Message{Type: zab.MsgAck, Zxid: zxid.Make(e, c)} }
	commit := func(e zxid.Epoch, c uint32) zab.Message {
		return zab.Message{Type: zab.MsgCommit, Zxid: zxid.Make(e, c)}
	}
	for _, tc := range []struct {
		name    string
		m, next zab.Message
		want    bool
	}{
		{"later ack", ack(2, 5), ack(2, 6), true},
		{"later commit", commit(2, 5), commit(2, 9), true},
		{"ack of NEWLEADER goes", ack(2, 0), ack(2, 1), false},
		{"other epoch", ack(2, 5), ack(3, 1), false},
		{"not later", ack(2, 5), ack(2, 5), false},
		{"ack then commit", ack(2, 5), commit(2, 6), false},
		{"proposals never", zab.Message{Type: zab.MsgProposal, Zxid: zxid.Make(2, 1)}, zab.Message{Type: zab.MsgProposal, Zxid: zxid.Make(2, 2)}, false},
	} {
		if got := supersedes(tc.next, tc.m); got != tc.want {
			t.Errorf("%s: supersedes = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A reconfiguration's COMMITANDACTIVATE and INFORMANDACTIVATE go over a
// quorum link like any COMMIT and INFORM, with the designated leader.
func TestActivateOverLink(t *testing.T) {
	trs := startTransports(t, 2, nil)
	leader, learner := trs[0], trs[1]
	openLink(t, learner, leader)
	leader.Send([]zab.Message{
		{Type: zab.MsgCommitAndActivate, From: 1, To: 2, Zxid: 0x100000005, Designated: 1},
		{Type: zab.MsgInformAndActivate, From: 1, To: 2, Zxid: 0x100000006, Designated: 2, Data: []byte("txn")},
	})
	if m := expect(t, learner, zab.Message{Type: zab.MsgCommitAndActivate, From: 1, Zxid: 0x100000005}); m.Designated != 1 {
		t.Fatalf("COMMITANDACTIVATE %v", m)
	}
	if m := expect(t, learner, zab.Message{Type: zab.MsgInformAndActivate, From: 1, Zxid: 0x100000006}); m.Designated != 2 || string(m.Data) != "txn" {
		t.Fatalf("INFORMANDACTIVATE %v", m)
	}
}

// A member whose server line a reconfiguration changed moves both
// listeners: the old ports stop accepting, a link already open stays, and
// peers told the new addresses reach it there, for notifications and for
// a new learner link. A port it cannot open keeps the old listener.
func TestRebind(t *testing.T) {
	trs := startTransports(t, 2, nil)
	a, b := trs[0], trs[1]
	openLink(t, b, a)
	oldQuorum, oldElection := a.QuorumAddr(), a.ElectionAddr()
	ports, err := testhost.Reserve(2)
	if err != nil {
		t.Fatal(err)
	}
	q := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	e := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))
	if err := a.Rebind(q, e); err != nil {
		t.Fatal(err)
	}
	if a.QuorumAddr() != q || a.ElectionAddr() != e {
		t.Fatalf("listening on %s and %s, want %s and %s", a.QuorumAddr(), a.ElectionAddr(), q, e)
	}
	for _, old := range []string{oldQuorum, oldElection} {
		if c, err := net.DialTimeout("tcp", old, time.Second); err == nil {
			c.Close()
			t.Fatalf("old address %s still accepts", old)
		}
	}
	// The open link still carries messages.
	a.Send([]zab.Message{{Type: zab.MsgLeaderInfo, From: 1, To: 2, Zxid: zxid.Make(2, 0)}})
	expect(t, b, zab.Message{Type: zab.MsgLeaderInfo, From: 1, Zxid: zxid.Make(2, 0)})
	b.SetPeer(1, PeerAddrs{Quorum: q, Election: e})
	b.Send([]zab.Message{{Type: zab.MsgNotification, From: 2, To: 1, State: zab.Looking, Round: 1, Vote: zab.Vote{Leader: 2}}})
	expect(t, a, zab.Message{Type: zab.MsgNotification, From: 2})
	// A new FOLLOWERINFO dials the new quorum port; the leader sees the old
	// link end first.
	b.Send([]zab.Message{followerInfo(2, 1)})
	expect(t, a, zab.Message{Type: zab.MsgDisconnected, From: 2})
	expect(t, a, zab.Message{Type: zab.MsgFollowerInfo, From: 2, Epoch: 1})

	// A port already taken: the listener stays where it is.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if err := a.Rebind(busy.Addr().String(), e); err == nil {
		t.Fatal("rebinding to a taken port succeeded")
	}
	if a.QuorumAddr() != q {
		t.Fatalf("quorum listener moved to %s after a failed rebind", a.QuorumAddr())
	}
}
