package quorumnet

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"keeper/coordination/zab"
)

// quorumTypes are the messages sent over an established quorum link.
var quorumTypes = map[zab.MsgType]bool{
	zab.MsgRequest: true, zab.MsgProposal: true, zab.MsgAck: true, zab.MsgCommit: true,
	zab.MsgPing: true, zab.MsgRevalidate: true, zab.MsgSync: true, zab.MsgInform: true, zab.MsgNewLeader: true,
	zab.MsgUpToDate: true, zab.MsgDiff: true, zab.MsgTrunc: true, zab.MsgSnap: true,
	zab.MsgLeaderInfo: true, zab.MsgAckEpoch: true, zab.MsgSyncRequest: true,
	zab.MsgCommitAndActivate: true, zab.MsgInformAndActivate: true,
}

// ioBufferBytes sizes each quorum connection's read and write buffers:
// enough to batch many small packets per system call.
const ioBufferBytes = 64 << 10

// quorumLink is one quorum connection with a peer: dialled by this server
// as a learner (learner set), or accepted from a learner. A link is never
// reused: when it goes down, the learner opens a new one with FOLLOWERINFO.
//
// One writer goroutine drains q, so messages leave in Send order; one
// reader goroutine delivers what arrives, in order, then reports the link
// down.
type quorumLink struct {
	t       *Transport
	peer    zab.PeerID
	learner bool
	q       *queue
	done    chan struct{} // closed when the link is dropped
	// keeperPeer is set once the peer announced zab.DialectKeeper (its
	// FOLLOWERINFO or OBSERVERINFO, or the leader's LEADERINFO): only then
	// may the writer cut a run of ACKs or COMMITs to its last.
	keeperPeer atomic.Bool

	// prev is closed once the peer's previous link (or "no link" report)
	// has delivered everything, its MsgDisconnected included; the reader
	// delivers nothing before. Without it a leader could see a learner's
	// new FOLLOWERINFO before the MsgDisconnected of its old link, and
	// forget the learner it just registered. finished is this link's
	// element of that chain.
	prev     <-chan struct{}
	finished chan struct{}

	// Guarded by t.mu.
	conn        net.Conn
	established time.Time // when conn was attached
	dropped     bool
	report      bool // deliver MsgDisconnected once the reader stops
}

// newLinkLocked makes l the peer's link, dropping the current one. A
// learner starting over drops its old link quietly (zab is already looking
// again); a leader reports the old link of a learner that reconnected, so
// zab forgets it before the new FOLLOWERINFO arrives.
func (t *Transport) newLinkLocked(peer zab.PeerID, learner bool) *quorumLink {
	if old := t.quorum[peer]; old != nil {
		old.dropLocked(!learner, errReplaced)
	}
	l := &quorumLink{t: t, peer: peer, learner: learner, q: newQueue(t.cfg.QueueMessages),
		done: make(chan struct{}), finished: make(chan struct{})}
	if t.cfg.Metrics != nil && !learner {
		l.q.markEvery = MarkerEvery
	}
	l.prev = t.chainLocked(peer, l.finished)
	t.quorum[peer] = l
	return l
}

// chainLocked appends mine to the peer's chain of quorum events and
// returns the previous element (nil if none).
func (t *Transport) chainLocked(peer zab.PeerID, mine chan struct{}) <-chan struct{} {
	prev := t.lastQuorum[peer]
	t.lastQuorum[peer] = mine
	if prev == nil {
		return nil
	}
	return prev
}

var (
	errReplaced = errors.New("replaced by a new link")
	errOverflow = errors.New("send queue full (Config.QueueMessages)")
	errNoAddr   = errors.New("no quorum address for peer")
)

// dropLocked closes the link. report says whether this side's zab should
// hear of it; the first drop decides.
func (l *quorumLink) dropLocked(report bool, why error) {
	if l.dropped {
		return
	}
	l.dropped, l.report = true, report
	if l.t.quorum[l.peer] == l {
		delete(l.t.quorum, l.peer)
	}
	close(l.done)
	if l.conn != nil {
		l.t.closeConnLocked(l.conn)
	}
	level := slog.LevelInfo // a state change: peers come and go
	if why == errOverflow || errors.Is(why, ErrMalformed) || errors.Is(why, ErrTooLarge) || errors.Is(why, ErrUnsupported) {
		level = slog.LevelWarn // a stalled or misbehaving peer
	}
	l.t.logger.Log(context.Background(), level, "quorum link down", "peer", l.peer, "learner", l.learner, "reason", why)
}

func (l *quorumLink) drop(report bool, why error) {
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	l.dropLocked(report, why)
}

// sendQuorumLocked queues m on the peer's link.
func (t *Transport) sendQuorumLocked(m zab.Message) {
	l := t.quorum[m.To]
	if l == nil {
		t.logger.Debug("dropped message: no quorum link", "type", m.Type, "to", m.To)
		t.reportNoLinkLocked(m.To)
		return
	}
	if !l.q.push(m) {
		l.dropLocked(true, errOverflow)
	}
}

// reportNoLinkLocked reports MsgDisconnected for a peer that has no link,
// at most one report at a time, in the peer's chain of quorum events.
func (t *Transport) reportNoLinkLocked(peer zab.PeerID) {
	if t.noLinkPending[peer] {
		return
	}
	mine := make(chan struct{})
	prev := t.chainLocked(peer, mine)
	t.noLinkPending[peer] = true
	ok := t.spawnLocked(func() {
		defer close(mine)
		if t.wait(prev) {
			t.deliver(zab.Message{Type: zab.MsgDisconnected, From: peer, To: t.cfg.ID}, nil)
		}
		t.mu.Lock()
		delete(t.noLinkPending, peer)
		t.mu.Unlock()
	})
	if !ok {
		close(mine)
	}
}

// openLearnerLinkLocked starts a link to the leader m.To with m
// (FOLLOWERINFO or OBSERVERINFO) as its first message.
func (t *Transport) openLearnerLinkLocked(m zab.Message) {
	addr := t.peers[m.To].Quorum
	l := t.newLinkLocked(m.To, true)
	l.q.push(m)
	if !t.spawnLocked(func() { l.runLearner(addr) }) {
		close(l.finished)
	}
}

// Dialling the leader. A learner whose dial fails tries again every
// leaderDialRetry for up to leaderDialWindow, as Apache ZooKeeper's
// learner does (it tries 5 times, 100 ms apart): a Java leader opens its
// quorum port only once it has waited out its election's finalize wait,
// some hundreds of milliseconds after keeper's election decided, and a
// learner that gave up at the first refusal would vote again and keep a
// mixed ensemble from forming (docs/zookeeper-protocol.md §10.5).
const (
	leaderDialRetry  = 100 * time.Millisecond
	leaderDialWindow = 2 * time.Second
)

// runLearner dials the leader, then reads from it.
func (l *quorumLink) runLearner(addr string) {
	var conn net.Conn
	err := errNoAddr
	if addr != "" {
		conn, err = l.dialLeader(addr)
	}
	if err == nil {
		if err = l.t.learnerAuth(conn, addr); err != nil {
			l.t.closeConn(conn)
			if !l.t.closing() {
				l.t.logger.Warn("quorum sasl to the leader failed", "peer", l.peer, "err", err)
			}
		}
	}
	if err == nil {
		err = l.attach(conn)
	}
	if err != nil {
		l.drop(true, err)
		conn = nil
	}
	var br *bufio.Reader
	if conn != nil {
		br = bufio.NewReaderSize(conn, ioBufferBytes)
	}
	l.read(br, nil)
}

// dialLeader dials the leader until it answers, leaderDialWindow passes,
// or the link is dropped (zab moved on) or the transport closed.
func (l *quorumLink) dialLeader(addr string) (net.Conn, error) {
	deadline := time.Now().Add(leaderDialWindow)
	for {
		conn, err := l.t.dial(addr)
		if err == nil || errors.Is(err, ErrClosed) || time.Now().Add(leaderDialRetry).After(deadline) {
			return conn, err
		}
		retry := time.NewTimer(leaderDialRetry)
		select {
		case <-retry.C:
		case <-l.done:
			retry.Stop()
			return nil, err
		case <-l.t.done:
			retry.Stop()
			return nil, err
		}
	}
}

// attach makes conn the link's connection and starts its writer, unless
// the link was dropped meanwhile.
func (l *quorumLink) attach(conn net.Conn) error {
	t := l.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if l.dropped {
		t.closeConnLocked(conn)
		return errReplaced
	}
	l.conn, l.established = conn, time.Now()
	if !t.spawnLocked(func() { l.write(conn) }) {
		return ErrClosed
	}
	t.logger.Info("quorum link up", "peer", l.peer, "learner", l.learner, "remote", conn.RemoteAddr().String())
	return nil
}

// serveQuorum handles a connection on the quorum port: its first packet
// must be FOLLOWERINFO or OBSERVERINFO from a known peer, whose link it
// then becomes.
func (t *Transport) serveQuorum(raw net.Conn) {
	conn, err := t.secureAccepted(raw)
	if err != nil {
		t.refused("quorum", raw, 0, err)
		return
	}
	br := bufio.NewReaderSize(conn, ioBufferBytes)
	err = t.serverAuth("quorum", conn, br)
	if err != nil {
		t.refused("quorum", conn, 0, err)
		return
	}
	// The learner's id comes after its authentication, in FOLLOWERINFO:
	// readLearnerInfo refuses an id outside the configuration.
	first, err := t.readLearnerInfo(conn, br)
	if err != nil {
		t.refused("quorum", conn, 0, err)
		return
	}
	t.mu.Lock()
	l := t.newLinkLocked(first.From, false)
	t.mu.Unlock()
	l.keeperPeer.Store(first.Dialect == zab.DialectKeeper)
	if err := l.attach(conn); err != nil {
		l.drop(true, err)
		br = nil
	}
	l.read(br, &first)
}

var errNotLearnerInfo = errors.New("first quorum packet is not FOLLOWERINFO or OBSERVERINFO")

// readLearnerInfo reads the first packet of an accepted quorum connection.
func (t *Transport) readLearnerInfo(conn net.Conn, br *bufio.Reader) (zab.Message, error) {
	if err := conn.SetReadDeadline(time.Now().Add(t.cfg.DialTimeout)); err != nil {
		return zab.Message{}, err
	}
	m, err := readQuorumPacket(br, t.lim)
	switch {
	case err != nil:
		return zab.Message{}, err
	case m.Type != zab.MsgFollowerInfo && m.Type != zab.MsgObserverInfo:
		return zab.Message{}, errNotLearnerInfo
	case !t.admitPeer(m.From):
		return zab.Message{}, errors.New("learner is not a peer")
	}
	m.To = t.cfg.ID
	return m, conn.SetReadDeadline(time.Time{})
}

// read delivers first (if not nil) and then every packet read from br,
// until the link drops; then it reports the drop if it should. br is nil
// when the link never got a connection.
func (l *quorumLink) read(br *bufio.Reader, first *zab.Message) {
	t := l.t
	defer close(l.finished)
	if !t.wait(l.prev) {
		l.drop(false, ErrClosed) // the writer must not outlive us
		return
	}
	ok := br != nil
	if ok && first != nil {
		ok = t.deliver(*first, l.done)
	}
	for ok {
		m, err := readQuorumPacket(br, t.lim)
		if err == nil && (m.Type == zab.MsgFollowerInfo || m.Type == zab.MsgObserverInfo) {
			err = errors.New("learner info on an established link")
		}
		if err != nil {
			l.drop(true, err)
			break
		}
		if m.Type == zab.MsgLeaderInfo {
			l.keeperPeer.Store(m.Dialect == zab.DialectKeeper)
		}
		m.From, m.To = l.peer, t.cfg.ID
		ok = t.deliver(m, l.done)
	}
	t.mu.Lock()
	report := l.report
	t.mu.Unlock()
	if report {
		t.deliver(zab.Message{Type: zab.MsgDisconnected, From: l.peer, To: t.cfg.ID}, nil)
	}
}

// write sends queued messages in order until the link drops.
func (l *quorumLink) write(conn net.Conn) {
	bw := bufio.NewWriterSize(conn, ioBufferBytes)
	for {
		batch, markerWait, ok := l.q.waitMarked(l.done)
		if !ok {
			return
		}
		l.recordQueue(len(batch), markerWait)
		cut := l.keeperPeer.Load()
		for i, m := range batch {
			if cut && i+1 < len(batch) && supersedes(batch[i+1], m) {
				continue
			}
			if err := l.writeMessage(bw, m); err != nil {
				l.drop(true, err)
				return
			}
		}
		if err := bw.Flush(); err != nil {
			l.drop(true, err)
			return
		}
		l.q.recycle(batch)
	}
}

// supersedes reports whether next, queued right behind m, makes m
// redundant: keeper's Zab acknowledges and commits cumulatively (an ACK of
// z acknowledges every proposal up to z, a COMMIT of z commits them), so of
// a run of ACKs, or of COMMITs, of one epoch only the last need go. The
// ACK of NEWLEADER (counter 0) always goes. Apache ZooKeeper counts each
// ACK and each COMMIT on its own, so the writer cuts runs only on a link
// to a peer that announced keeper's dialect (docs/zookeeper-protocol.md
// §10.5).
func supersedes(next, m zab.Message) bool {
	if next.Type != m.Type || (m.Type != zab.MsgAck && m.Type != zab.MsgCommit) {
		return false
	}
	return m.Zxid.Counter() != 0 && next.Zxid.Epoch() == m.Zxid.Epoch() && next.Zxid > m.Zxid
}

// writeMessage encodes m into bw. A learner's PING always carries data
// (its session touches, possibly none): ZooKeeper's leader reads it
// without a null check.
func (l *quorumLink) writeMessage(bw *bufio.Writer, m zab.Message) error {
	if l.learner && m.Type == zab.MsgPing && m.Data == nil {
		m.Data = []byte{}
	}
	head, body, err := encodePacket(m)
	if err != nil {
		l.t.logger.Error("cannot encode quorum message", "peer", l.peer, "type", m.Type, "err", err)
		return err
	}
	bw.Write(head)
	if body != nil {
		bw.Write(body)
		bw.Write(snapTrailer)
	}
	return nil // a write error is sticky in bw and reported by Flush
}

// LinkStats describes the quorum link to a peer, for the admin server's
// observers command.
type LinkStats struct {
	// Remote is the peer's address, as the link's socket sees it.
	Remote net.Addr
	// Established is when the link's connection came up.
	Established time.Time
	// QueuedMessages and QueuedBytes are the messages waiting in the
	// link's send queue and the bytes of their data.
	QueuedMessages int
	QueuedBytes    int64
}

// Link reports the quorum link to peer; false when there is none with a
// connection.
func (t *Transport) Link(peer zab.PeerID) (LinkStats, bool) {
	t.mu.Lock()
	l := t.quorum[peer]
	if l == nil || l.conn == nil || l.dropped {
		t.mu.Unlock()
		return LinkStats{}, false
	}
	st := LinkStats{Remote: l.conn.RemoteAddr(), Established: l.established}
	q := l.q
	t.mu.Unlock()
	st.QueuedMessages, st.QueuedBytes = q.size()
	return st, true
}
