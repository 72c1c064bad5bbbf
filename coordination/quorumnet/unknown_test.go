package quorumnet

import (
	"net"
	"testing"

	"keeper/coordination/zab"
)

// With AcceptUnknown, a server that no configuration names yet (one
// joining through reconfiguration) is let in on both ports: its
// notifications arrive, the reply goes back to the election address its
// handshake gave, and its FOLLOWERINFO opens a link the leader answers on.
func TestAcceptUnknownServer(t *testing.T) {
	trs := startTransports(t, 1, func(c *Config) { c.AcceptUnknown = true })
	a := trs[0]
	joiner, err := New(Config{ID: 7, ListenQuorum: "127.0.0.1:0", ListenElection: "127.0.0.1:0", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := joiner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { joiner.Close() })
	joiner.SetPeer(1, PeerAddrs{Quorum: a.QuorumAddr(), Election: a.ElectionAddr()})
	joiner.SetPeer(7, PeerAddrs{Quorum: joiner.QuorumAddr(), Election: joiner.ElectionAddr()})

	joiner.Send([]zab.Message{{Type: zab.MsgNotification, From: 7, To: 1, State: zab.Looking, Round: 1}})
	expect(t, a, zab.Message{Type: zab.MsgNotification, From: 7})
	a.Send([]zab.Message{{Type: zab.MsgNotification, From: 1, To: 7, State: zab.Leading, Round: 1}})
	expect(t, joiner, zab.Message{Type: zab.MsgNotification, From: 1})

	openLink(t, joiner, a)
	a.Send([]zab.Message{{Type: zab.MsgCommit, From: 1, To: 7, Zxid: 9}})
	expect(t, joiner, zab.Message{Type: zab.MsgCommit, From: 1, Zxid: 9})
}

// Without AcceptUnknown an unknown server is refused on both ports; with
// it, only MaxLearnedPeers of them are learned, then the rest are refused
// and the known servers are still served.
func TestUnknownServersBounded(t *testing.T) {
	closed := startTransports(t, 1, nil)[0]
	expectClosed(t, rawConn(t, closed.ElectionAddr(), mustHandshake(t, 42)))
	expectClosed(t, rawConn(t, closed.QuorumAddr(), mustPacket(t, followerInfo(42, 1))))

	trs := startTransports(t, 2, func(c *Config) { c.AcceptUnknown = true })
	a, b := trs[0], trs[1]
	var open []net.Conn // held open: a learned server stays learned
	for i := range MaxLearnedPeers {
		open = append(open, rawConn(t, a.ElectionAddr(), mustHandshake(t, zab.PeerID(100+i))))
	}
	eventually(t, "every unknown server learned", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.learned == MaxLearnedPeers
	})
	expectClosed(t, rawConn(t, a.ElectionAddr(), mustHandshake(t, 1000)))
	expectClosed(t, rawConn(t, a.QuorumAddr(), mustPacket(t, followerInfo(1001, 1))))
	// The known servers are still served.
	b.Send([]zab.Message{{Type: zab.MsgNotification, From: 2, To: 1}})
	expect(t, a, zab.Message{Type: zab.MsgNotification, From: 2})
	if len(open) != MaxLearnedPeers {
		t.Fatalf("%d connections", len(open))
	}
}
