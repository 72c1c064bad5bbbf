package quorumnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"keeper/coordination/zab"
)

// Defaults for Config's zero values.
const (
	// DefaultQueueMessages bounds each peer's quorum send queue. A sync by
	// DIFF sends up to two messages per txn in zab's in-memory log tail
	// (zab.Config.MaxRecentEntries, 10,000 by default) in one batch, plus
	// the proposals in flight; the queue must hold a whole sync, or a
	// learner that is a little behind could never catch up. The queue
	// grows with use, so an idle link costs nothing.
	DefaultQueueMessages = 32 << 10
	// DefaultDialTimeout bounds a dial, the handshake on an accepted
	// connection (a peer that connects and stays silent is dropped), and
	// one write on an election connection.
	DefaultDialTimeout = 5 * time.Second
)

const (
	// recvBufferMessages is the capacity of the Recv channel. When it is
	// full, connection readers stop reading and TCP pushes back on the
	// senders, whose queues fill and drop their links: a stalled consumer
	// costs links, never unbounded memory.
	recvBufferMessages = 1024
	// electionQueueMessages bounds each peer's election send queue. A
	// notification states the sender's whole current vote, so only the
	// newest matters (ZooKeeper keeps one); when the queue is full the
	// oldest is dropped, which FLE tolerates because it retransmits.
	electionQueueMessages = 16
	// electionBackoffMin and electionBackoffMax bound the wait before
	// dialling a peer's election port again after a failed dial: soon
	// enough that a restarted peer is reached within a couple of election
	// retries, rarely enough that a dead one is not dialled per message.
	electionBackoffMin = 50 * time.Millisecond
	electionBackoffMax = 2 * time.Second
	// acceptRetryDelay is the pause after a failed Accept (out of file
	// descriptors, say), so the accept loop does not spin.
	acceptRetryDelay = 50 * time.Millisecond
)

// PeerAddrs are a server's addresses (zoo.cfg server.N=host:quorumPort:electionPort).
type PeerAddrs struct {
	Quorum   string // host:port learners dial to reach this server as leader
	Election string // host:port for fast leader election
}

// Config configures a Transport.
type Config struct {
	// ID is this server's id.
	ID zab.PeerID
	// Peers are the servers of the ensemble, this one included if its
	// advertised election address should differ from the bound one.
	// Connections from ids not listed here are refused, unless
	// AcceptUnknown.
	Peers map[zab.PeerID]PeerAddrs
	// ListenQuorum and ListenElection are the host:port to listen on.
	// Port 0 picks a free port; QuorumAddr and ElectionAddr report it.
	ListenQuorum   string
	ListenElection string
	// QueueMessages bounds each peer's quorum send queue (0: the default).
	QueueMessages int
	// DialTimeout bounds dials and handshakes (0: the default).
	DialTimeout time.Duration
	// MaxPacketDataBytes bounds a received QuorumPacket's data (0:
	// DefaultMaxPacketDataBytes). MaxSnapshotBytes bounds a received
	// snapshot (0: DefaultMaxSnapshotBytes).
	MaxPacketDataBytes int
	MaxSnapshotBytes   int64
	// TLS secures both ports (nil: plaintext only).
	TLS *TLS
	// AcceptUnknown lets servers that are not in Peers connect, as an
	// ensemble with reconfigEnabled must (a server joins by connecting
	// before any configuration names it): an unknown server's election
	// address is learned from its handshake. At most MaxLearnedPeers
	// servers are learned so; then unknown ids are refused again.
	AcceptUnknown bool
	// SASL authenticates members to each other on both ports, after any
	// TLS handshake (nil: no authentication; quorum.auth.*). An unknown
	// server (AcceptUnknown) is learned only once it passed.
	SASL *SASL
	// Listen and Dial, if set, open the ports' listeners and the
	// connections to peers instead of the operating system's TCP (tests:
	// an in-memory network, internal/memnet, that a testing/synctest
	// bubble can wait on). Dial is still bounded by DialTimeout.
	Listen func(network, address string) (net.Listener, error)
	Dial   func(ctx context.Context, network, address string) (net.Conn, error)
	// Logger receives the transport's logs (nil: discard).
	Logger *slog.Logger
	// Metrics receives the leader's per-learner send queue figures (nil:
	// none are kept).
	Metrics *LinkMetrics
}

// Validate reports the first problem in c.
func (c *Config) Validate() error {
	switch {
	case c.ID <= 0:
		return fmt.Errorf("quorumnet: id %d must be positive", c.ID)
	case c.ListenQuorum == "" || c.ListenElection == "":
		return errors.New("quorumnet: both listen addresses are required")
	case c.QueueMessages < 0 || c.DialTimeout < 0 || c.MaxPacketDataBytes < 0 || c.MaxSnapshotBytes < 0:
		return errors.New("quorumnet: negative limit")
	case c.TLS != nil && c.TLS.Certificates == nil:
		return errors.New("quorumnet: TLS without certificates")
	}
	if c.SASL != nil {
		if err := c.SASL.validate(); err != nil {
			return err
		}
	}
	for id := range c.Peers {
		if id <= 0 {
			return fmt.Errorf("quorumnet: peer id %d must be positive", id)
		}
	}
	return nil
}

// Transport carries zab messages between servers over TCP: election
// notifications on the election port, quorum packets on the quorum port
// (see the package comment). It is safe for concurrent use.
type Transport struct {
	cfg    Config
	logger *slog.Logger
	lim    limits
	recv   chan zab.Message
	done   chan struct{} // closed by Close
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// kerberosMu serializes the steps of Kerberos exchanges: the
	// acceptor's replay cache is not safe for concurrent use.
	kerberosMu sync.Mutex

	// mu guards everything below.
	mu            sync.Mutex
	started       bool
	closed        bool
	peers         map[zab.PeerID]PeerAddrs
	quorumLn      net.Listener
	electionLn    net.Listener
	conns         map[net.Conn]struct{} // every open connection, so Close can close them
	quorum        map[zab.PeerID]*quorumLink
	lastQuorum    map[zab.PeerID]chan struct{} // see quorumLink.prev
	noLinkPending map[zab.PeerID]bool          // a "no link" MsgDisconnected is on its way
	election      map[zab.PeerID]*electionPeer
	learned       int // peers let in by AcceptUnknown
}

// MaxLearnedPeers bounds the servers a transport with AcceptUnknown lets
// in without a configuration naming them, so that a stream of made-up
// ids costs a bounded amount of memory.
const MaxLearnedPeers = 64

// New returns a transport; Start makes it listen.
func New(cfg Config) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.QueueMessages == 0 {
		cfg.QueueMessages = DefaultQueueMessages
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	lim := defaultLimits
	if cfg.MaxPacketDataBytes > 0 {
		lim.dataBytes = cfg.MaxPacketDataBytes
	}
	if cfg.MaxSnapshotBytes > 0 {
		lim.snapshotBytes = cfg.MaxSnapshotBytes
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	peers := make(map[zab.PeerID]PeerAddrs, len(cfg.Peers))
	for id, a := range cfg.Peers {
		peers[id] = a
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Transport{
		cfg: cfg, logger: logger.With("server", cfg.ID), lim: lim,
		recv: make(chan zab.Message, recvBufferMessages), done: make(chan struct{}),
		ctx: ctx, cancel: cancel, peers: peers, conns: map[net.Conn]struct{}{},
		quorum: map[zab.PeerID]*quorumLink{}, lastQuorum: map[zab.PeerID]chan struct{}{},
		noLinkPending: map[zab.PeerID]bool{}, election: map[zab.PeerID]*electionPeer{},
	}, nil
}

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("quorumnet: closed")

// Start listens on both ports and accepts connections until Close.
func (t *Transport) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return ErrClosed
	case t.started:
		return errors.New("quorumnet: already started")
	}
	qln, err := t.listen(t.cfg.ListenQuorum)
	if err != nil {
		return fmt.Errorf("quorumnet: listen on quorum port: %w", err)
	}
	eln, err := t.listen(t.cfg.ListenElection)
	if err != nil {
		qln.Close()
		return fmt.Errorf("quorumnet: listen on election port: %w", err)
	}
	t.started, t.quorumLn, t.electionLn = true, qln, eln
	t.spawnLocked(func() { t.accept(qln, t.serveQuorum) })
	t.spawnLocked(func() { t.accept(eln, t.serveElection) })
	t.logger.Info("transport listening", "quorum", qln.Addr().String(), "election", eln.Addr().String(), "tls", t.cfg.TLS.mode(), "sasl", t.cfg.SASL.mode())
	return nil
}

// Rebind moves the quorum and election listeners to the addresses given
// (host:port, as the configuration names them), as a member whose own
// server line a reconfiguration changed must: each new address is opened
// before the old listener is closed, so a failure keeps the old one and
// is returned; connections already open stay. An address equal to the
// one asked for before is left alone.
func (t *Transport) Rebind(quorum, election string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.started || t.closed {
		return ErrClosed
	}
	var qln, eln net.Listener
	var err error
	if quorum != t.cfg.ListenQuorum {
		if qln, err = t.listen(quorum); err != nil {
			return fmt.Errorf("quorumnet: listen on quorum port: %w", err)
		}
	}
	if election != t.cfg.ListenElection {
		if eln, err = t.listen(election); err != nil {
			if qln != nil {
				qln.Close()
			}
			return fmt.Errorf("quorumnet: listen on election port: %w", err)
		}
	}
	if qln != nil {
		old := t.quorumLn
		t.cfg.ListenQuorum, t.quorumLn = quorum, qln
		old.Close()
		t.spawnLocked(func() { t.accept(qln, t.serveQuorum) })
	}
	if eln != nil {
		old := t.electionLn
		t.cfg.ListenElection, t.electionLn = election, eln
		old.Close()
		t.spawnLocked(func() { t.accept(eln, t.serveElection) })
	}
	if qln != nil || eln != nil {
		t.logger.Info("transport moved", "quorum", t.quorumLn.Addr().String(), "election", t.electionLn.Addr().String())
	}
	return nil
}

// listen opens a listener through Config.Listen, or the system's TCP.
func (t *Transport) listen(address string) (net.Listener, error) {
	if t.cfg.Listen != nil {
		return t.cfg.Listen("tcp", address)
	}
	var lc net.ListenConfig
	return lc.Listen(t.ctx, "tcp", address)
}

// current reports whether ln is one of the transport's listeners (not
// one Rebind replaced).
func (t *Transport) current(ln net.Listener) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return ln == t.quorumLn || ln == t.electionLn
}

// QuorumAddr returns the bound quorum address, "" before Start.
func (t *Transport) QuorumAddr() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.quorumLn == nil {
		return ""
	}
	return t.quorumLn.Addr().String()
}

// ElectionAddr returns the bound election address, "" before Start.
func (t *Transport) ElectionAddr() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.electionLn == nil {
		return ""
	}
	return t.electionLn.Addr().String()
}

// SetPeer adds a peer or changes its addresses: for ensembles whose ports
// are known only once every server has started. Existing connections are
// kept.
func (t *Transport) SetPeer(id zab.PeerID, addrs PeerAddrs) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.peers[id] = addrs
}

// Close closes the listeners and every connection (peers see their links
// go down), waits for the transport's goroutines to end, then closes the
// Recv channel. Messages not yet delivered are dropped.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.done)
	t.cancel()
	if t.quorumLn != nil {
		t.quorumLn.Close()
		t.electionLn.Close()
	}
	for _, l := range t.quorum {
		l.dropLocked(false, ErrClosed)
	}
	for _, ep := range t.election {
		if ep.conn != nil {
			t.closeElectionLocked(ep.conn)
		}
	}
	for c := range t.conns { // those still in their handshake
		c.Close()
	}
	clear(t.conns)
	t.mu.Unlock()
	t.wg.Wait()
	close(t.recv)
	return nil
}

// Recv returns the channel of received messages, in FIFO order per
// connection, with MsgDisconnected{From: peer} after the last message of a
// quorum link that went down (see the package comment). It is closed by
// Close.
func (t *Transport) Recv() <-chan zab.Message { return t.recv }

// Send queues msgs for their peers and returns at once: notifications go
// over the election port, everything else over the peer's quorum link.
// A quorum message for a peer with no link, or whose queue is full, is
// dropped and MsgDisconnected is reported on Recv (for a full queue, after
// closing the link). FOLLOWERINFO and OBSERVERINFO open a new link to their
// peer, closing any current one without reporting it.
//
// Carry out zab.Ready.Disconnect before sending Ready.Messages: a
// FOLLOWERINFO in the same batch opens the link that Disconnect must not
// close.
func (t *Transport) Send(msgs []zab.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	for _, m := range msgs {
		t.sendLocked(m)
	}
}

func (t *Transport) sendLocked(m zab.Message) {
	switch {
	case m.To == t.cfg.ID:
		t.logger.Debug("dropped message to self", "type", m.Type)
	case m.Type == zab.MsgNotification:
		t.sendElectionLocked(m)
	case m.Type == zab.MsgFollowerInfo || m.Type == zab.MsgObserverInfo:
		t.openLearnerLinkLocked(m)
	case quorumTypes[m.Type]:
		t.sendQuorumLocked(m)
	default:
		t.logger.Debug("dropped message that never crosses a link", "type", m.Type, "to", m.To)
	}
}

// Disconnect closes the quorum link to peer, if there is one
// (zab.Ready.Disconnect). The peer sees MsgDisconnected; this side does
// not, since it asked.
func (t *Transport) Disconnect(peer zab.PeerID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.quorum[peer]; l != nil {
		l.dropLocked(false, errDisconnect)
	}
}

var errDisconnect = errors.New("disconnect requested")

// spawnLocked runs f in a goroutine Close waits for, unless the transport
// is closed.
func (t *Transport) spawnLocked(f func()) bool {
	if t.closed {
		return false
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f()
	}()
	return true
}

// deliver puts m on Recv. It gives up, returning false, when the transport
// closes or abort (if not nil) is closed.
func (t *Transport) deliver(m zab.Message, abort <-chan struct{}) bool {
	select {
	case <-t.done:
		return false // links torn down by Close are not reported
	default:
	}
	select {
	case t.recv <- m:
		return true
	case <-t.done:
	case <-abort:
	}
	return false
}

// wait waits for ch (nil: nothing to wait for); false means the transport
// closed first.
func (t *Transport) wait(ch <-chan struct{}) bool {
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-t.done:
		return false
	}
}

// dial connects to addr, runs the TLS handshake when the transport dials
// in TLS, and registers the connection for Close.
func (t *Transport) dial(addr string) (net.Conn, error) {
	var c net.Conn
	var err error
	if t.cfg.Dial != nil {
		ctx, cancel := context.WithTimeout(t.ctx, t.cfg.DialTimeout)
		c, err = t.cfg.Dial(ctx, "tcp", addr)
		cancel()
	} else {
		d := net.Dialer{Timeout: t.cfg.DialTimeout}
		c, err = d.DialContext(t.ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	tracked := t.trackLocked(c)
	t.mu.Unlock()
	if !tracked {
		return nil, ErrClosed
	}
	sc, err := t.secureDialed(c)
	if err != nil {
		t.closeConn(c)
		// A peer that refuses this server's certificate, or whose own this
		// server refuses, is a misconfiguration an operator must see; the
		// election's backoff bounds how often it is logged.
		select {
		case <-t.done:
		default:
			t.logger.Warn("tls handshake failed", "addr", addr, "err", err)
		}
		return nil, err
	}
	return sc, nil
}

// trackLocked registers c for Close; if the transport is closed it closes
// c and returns false.
func (t *Transport) trackLocked(c net.Conn) bool {
	if t.closed {
		c.Close()
		return false
	}
	t.conns[c] = struct{}{}
	return true
}

// closeConnLocked closes c and forgets it.
func (t *Transport) closeConnLocked(c net.Conn) {
	delete(t.conns, c)
	c.Close()
}

func (t *Transport) closeConn(c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closeConnLocked(c)
}

// accept hands each connection on ln to serve in its own goroutine.
func (t *Transport) accept(ln net.Listener, serve func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if !t.current(ln) {
				return // replaced by Rebind
			}
			select {
			case <-t.done:
				return
			case <-time.After(acceptRetryDelay):
				t.logger.Warn("accept failed", "addr", ln.Addr().String(), "err", err)
				continue
			}
		}
		t.mu.Lock()
		if t.trackLocked(c) && !t.spawnLocked(func() { serve(c) }) {
			t.closeConnLocked(c)
		}
		t.mu.Unlock()
	}
}

// knownPeerLocked reports whether id may connect to us.
func (t *Transport) knownPeerLocked(id zab.PeerID) bool {
	_, ok := t.peers[id]
	return ok && id != t.cfg.ID
}

// admitPeerLocked reports whether id may connect to us, learning an
// unknown one (with its election address, when the connection carries
// one) if the transport accepts unknown servers and has room.
func (t *Transport) admitPeerLocked(id zab.PeerID, electionAddr string) bool {
	switch {
	case t.knownPeerLocked(id):
		if a := t.peers[id]; a.Election == "" && electionAddr != "" {
			a.Election = electionAddr
			t.peers[id] = a
		}
		return true
	case !t.cfg.AcceptUnknown || id <= 0 || id == t.cfg.ID || t.learned >= MaxLearnedPeers:
		return false
	}
	t.learned++
	t.peers[id] = PeerAddrs{Election: electionAddr}
	t.logger.Info("server not in the configuration connected", "peer", id, "election", electionAddr)
	return true
}

func (t *Transport) admitPeer(id zab.PeerID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.admitPeerLocked(id, "")
}

// refused closes an accepted connection that failed its handshake, and
// logs why unless the transport is closing.
func (t *Transport) refused(port string, conn net.Conn, sid zab.PeerID, err error) {
	t.closeConn(conn)
	select {
	case <-t.done:
	default:
		t.logger.Warn("refused connection", "port", port, "remote", conn.RemoteAddr().String(), "sid", sid, "err", err)
	}
}
