package quorumnet

import (
	"bufio"
	"errors"
	"net"
	"time"

	"keeper/coordination/zab"
)

// electionPeer is what the transport keeps for fast leader election with
// one peer: a queue that outlives connections, and at most one connection,
// the one the larger id dialled (docs/zookeeper-protocol.md §10.1).
type electionPeer struct {
	id zab.PeerID
	q  *queue

	// Guarded by t.mu.
	conn    *electionConn
	dialing bool
	retryAt time.Time // no dial before this, after a failed one
	backoff time.Duration
}

// electionConn is one election connection. A writer goroutine drains the
// peer's queue into it; a reader delivers the notifications it carries.
type electionConn struct {
	peer *electionPeer
	c    net.Conn
	br   *bufio.Reader // the connection's reader (read by readElection only)
	done chan struct{} // closed when the connection is closed
}

func (t *Transport) electionPeerLocked(id zab.PeerID) *electionPeer {
	ep := t.election[id]
	if ep == nil {
		ep = &electionPeer{id: id, q: newQueue(electionQueueMessages), backoff: electionBackoffMin}
		t.election[id] = ep
	}
	return ep
}

// sendElectionLocked queues a notification and dials the peer if there is
// no connection. Notifications for unknown peers are dropped: FLE only
// writes to the ensemble.
func (t *Transport) sendElectionLocked(m zab.Message) {
	if _, ok := t.peers[m.To]; !ok {
		t.logger.Debug("dropped notification for unknown peer", "to", m.To)
		return
	}
	ep := t.electionPeerLocked(m.To)
	ep.q.pushDropOldest(m)
	t.dialElectionLocked(ep, false)
}

// dialElectionLocked starts a dial to the peer's election port unless
// there is a connection or a dial already, or (unless now) a failed dial
// is too recent.
func (t *Transport) dialElectionLocked(ep *electionPeer, now bool) {
	addr := t.peers[ep.id].Election
	if ep.conn != nil || ep.dialing || addr == "" || (!now && time.Now().Before(ep.retryAt)) {
		return
	}
	ep.dialing = true
	if !t.spawnLocked(func() { t.dialElection(ep, addr) }) {
		ep.dialing = false
	}
}

// dialElection connects to a peer's election port and sends the
// handshake. The connection survives only if our id is the larger: if not,
// we close it and the peer, told we want to talk, dials us back.
func (t *Transport) dialElection(ep *electionPeer, addr string) {
	conn, err := t.dial(addr)
	if err == nil {
		err = t.writeHandshake(conn)
	}
	if err == nil {
		if err = t.learnerAuth(conn, addr); err != nil && !t.closing() {
			// A refused password is a misconfiguration an operator must
			// see; the backoff bounds how often it is logged.
			t.logger.Warn("quorum sasl on the election port failed", "peer", ep.id, "err", err)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ep.dialing = false
	if err != nil || ep.id > t.cfg.ID {
		if conn != nil {
			t.closeConnLocked(conn)
		}
		// A dial-back resets this; otherwise do not dial again at once.
		ep.retryAt = time.Now().Add(ep.backoff)
		ep.backoff = min(2*ep.backoff, electionBackoffMax)
		if err != nil {
			ep.q.clear() // stale by the next dial; FLE retransmits
			t.logger.Debug("election dial failed", "peer", ep.id, "err", err)
		}
		return
	}
	t.installElectionLocked(ep, conn, nil)
}

func (t *Transport) writeHandshake(conn net.Conn) error {
	t.mu.Lock()
	addr := t.peers[t.cfg.ID].Election
	if addr == "" && t.electionLn != nil {
		addr = t.electionLn.Addr().String()
	}
	t.mu.Unlock()
	if addr == "" {
		addr = t.cfg.ListenElection
	}
	hs, err := EncodeElectionHandshake(t.cfg.ID, addr)
	if err != nil {
		return err
	}
	if err := conn.SetWriteDeadline(time.Now().Add(t.cfg.DialTimeout)); err != nil {
		return err
	}
	_, err = conn.Write(hs)
	return err
}

// installElectionLocked makes conn the peer's election connection, closing
// the one it replaces, and starts its writer (and, on a connection this
// server dialled, which has no reader yet (br nil), its reader).
func (t *Transport) installElectionLocked(ep *electionPeer, conn net.Conn, br *bufio.Reader) *electionConn {
	if ep.conn != nil {
		t.closeElectionLocked(ep.conn)
	}
	ec := &electionConn{peer: ep, c: conn, done: make(chan struct{})}
	startReader := br == nil
	if startReader {
		br = bufio.NewReader(conn)
	}
	ec.br = br
	ep.conn = ec
	ep.backoff, ep.retryAt = electionBackoffMin, time.Time{}
	t.spawnLocked(func() { t.writeElection(ec) })
	if startReader {
		t.spawnLocked(func() { t.readElection(ec) })
	}
	t.logger.Debug("election connection up", "peer", ep.id, "remote", conn.RemoteAddr().String())
	return ec
}

func (t *Transport) closeElectionLocked(ec *electionConn) {
	select {
	case <-ec.done:
		return
	default:
	}
	close(ec.done)
	t.closeConnLocked(ec.c)
	if ec.peer.conn == ec {
		ec.peer.conn = nil
	}
}

func (t *Transport) closeElection(ec *electionConn, why error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if why != nil {
		t.logger.Debug("election connection down", "peer", ec.peer.id, "err", why)
	}
	t.closeElectionLocked(ec)
}

var errUnknownPeer = errors.New("unknown or own server id")

// serveElection handles a connection on the election port: the handshake
// names the peer; only a connection from a larger id is kept, and a smaller
// one is answered by dialling it (docs/zookeeper-protocol.md §10.1).
func (t *Transport) serveElection(raw net.Conn) {
	conn, err := t.secureAccepted(raw)
	if err != nil {
		t.refused("election", raw, 0, err)
		return
	}
	sid, addr, err := t.readHandshake(conn)
	if err == nil && !t.mayAdmit(sid) {
		err = errUnknownPeer
	}
	// Authenticate before a server the configuration does not name is
	// learned (AcceptUnknown): one that fails costs no slot. A valid user
	// name and password alone never let in an id the transport would
	// refuse without SASL.
	br := bufio.NewReader(conn)
	if err == nil {
		err = t.serverAuth("election", conn, br)
	}
	t.mu.Lock()
	if err == nil && !t.admitPeerLocked(sid, addr) {
		err = errUnknownPeer
	}
	if err != nil {
		t.mu.Unlock()
		t.refused("election", conn, sid, err)
		return
	}
	ep := t.electionPeerLocked(sid)
	if sid < t.cfg.ID {
		t.closeConnLocked(conn)
		t.dialElectionLocked(ep, true)
		t.mu.Unlock()
		return
	}
	ec := t.installElectionLocked(ep, conn, br)
	t.mu.Unlock()
	t.readElection(ec)
}

func (t *Transport) readHandshake(conn net.Conn) (zab.PeerID, string, error) {
	if err := conn.SetReadDeadline(time.Now().Add(t.cfg.DialTimeout)); err != nil {
		return 0, "", err
	}
	sid, addr, err := readElectionHandshake(conn) // reads exactly the handshake: no buffer to hand on
	if err != nil {
		return sid, addr, err
	}
	return sid, addr, conn.SetReadDeadline(time.Time{})
}

// readElection delivers the notifications that arrive on ec until it
// fails or carries something malformed; only ec is closed then.
func (t *Transport) readElection(ec *electionConn) {
	br := ec.br
	var buf []byte
	for {
		payload, err := readElectionFrame(br, buf)
		var m zab.Message
		if err == nil {
			m, err = DecodeNotification(payload)
		}
		if err != nil {
			t.closeElection(ec, err)
			return
		}
		buf = payload
		m.From, m.To = ec.peer.id, t.cfg.ID
		if !t.deliver(m, ec.done) {
			t.closeElection(ec, nil)
			return
		}
	}
}

// writeElection sends the peer's queued notifications over ec, each write
// bounded by DialTimeout: a peer that stops reading costs the connection,
// and the next notification dials again.
func (t *Transport) writeElection(ec *electionConn) {
	var out []byte
	for {
		batch, ok := ec.peer.q.wait(ec.done)
		if !ok {
			return
		}
		out = out[:0]
		for _, m := range batch {
			p, err := EncodeNotification(m)
			if err != nil {
				t.logger.Error("cannot encode notification", "peer", ec.peer.id, "err", err)
				continue
			}
			out = appendElectionFrame(out, p)
		}
		err := ec.c.SetWriteDeadline(time.Now().Add(t.cfg.DialTimeout))
		if err == nil {
			_, err = ec.c.Write(out)
		}
		if err != nil {
			t.closeElection(ec, err)
			return
		}
	}
}
