package bench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// This file is the null ensemble: the floor under an ensemble's write is
// what three members reach that do only what a quorum write cannot do
// without. A write goes from the client's member to the leader, from the
// leader to both followers, is appended and fdatasynced by every member
// (each in its own file, all on one disk, as three servers on one machine
// share it), and is answered once the leader holds two of the three syncs
// (its own counts) and the client's member has the leader's commit: the
// hops and syncs of a Zab write, with no tree, no sessions and no checks.

const (
	// nullEnsembleMaxInflight bounds the writes a member has taken from
	// its clients and not yet seen committed; a client that sends more
	// waits. The leader's event queue and the logs' queues are sized from
	// it so that nothing that the leader's loop waits on waits for long on
	// the loop.
	nullEnsembleMaxInflight = 4096
	// nullEnsembleQueueSlots bounds the replies a client connection has
	// queued and not written.
	nullEnsembleQueueSlots = 1024
	// nullLogMaxBatchBytes bounds what one write+sync of a log carries.
	nullLogMaxBatchBytes = 1 << 20
	// nullLogPreallocBytes is the step by which a log file grows ahead of
	// its writes (ZooKeeper's default preAllocSize), so that a sync
	// flushes data and not the file's size.
	nullLogPreallocBytes = 64 << 20
	// nullLogPreallocMarginBytes: the file grows when a batch would end
	// within this much of its size.
	nullLogPreallocMarginBytes = 4096
)

// Messages between members, each a frame: u32 length of the rest, u8 kind,
// u8 origin (the member whose client sent the write), u64 a, u64 b, then
// the payload (the client's request) for forward and propose.
const (
	nullMsgForward = iota + 1 // follower to leader: a = tag
	nullMsgPropose            // leader to follower: a = seq, b = tag
	nullMsgAck                // follower to leader: a = the last seq synced
	nullMsgCommit             // leader to follower: a = the last seq committed
)

const nullMsgHeaderLen = 4 + 1 + 1 + 8 + 8

// nullLeader is the index of the leading member; members 0 and 2 follow,
// so that a client of the first address is a follower's, as the ensemble
// benchmarks' single client is.
const nullLeader = 1

// NullEnsemble is the members of a null ensemble that run in this
// process: all three, or one each in three processes, as the ensembles
// it is measured beside run. They speak the ZooKeeper client protocol as
// NullServer does (every reply empty and successful, nothing stored, no
// watches), except that a write is answered only after it has been
// replicated as a Zab write is: forwarded to the leader, proposed to both
// followers, appended with fdatasync to a log file by every member,
// committed by the leader with two syncs of three, and the commit seen by
// the client's member. Members talk over TCP even in one process. It is a
// floor for benchmarks, not an ensemble: nothing is recovered, elected or
// checked, and a lost member link stops it.
type NullEnsemble struct {
	members [3]*nullMember // nil where the member runs in another process
	session atomic.Int64   // the last session id handed out
	quit    chan struct{}
	failed  chan struct{} // closed at the first failure
	wg      sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // every connection: clients' and members'
	closed bool                  // mu guards conns and closed
	err    error                 // the first failure of a log or a member link
}

// NullEnsembleConfig says where a null ensemble's members run.
type NullEnsembleConfig struct {
	// Host is the address the clients' listeners take free ports on.
	Host string
	// Dir holds the members' log files, member<N>.log (created; a file
	// that exists refuses the start).
	Dir string
	// Members are the members (1, 2 or 3; 2 leads) that run in this
	// process; none means all three.
	Members []int
	// PeerAddr is where the leader listens for its followers' links and
	// where they dial it; empty (only when every member is here) takes a
	// free port on Host.
	PeerAddr string
	// LinkTimeout bounds how long a follower retries its dial and the
	// leader waits for its followers (default 60 s).
	LinkTimeout time.Duration
}

// nullMember is one member: its client listener, its log and the pending
// writes of its clients.
type nullMember struct {
	e     *NullEnsemble
	index int
	ln    net.Listener
	log   *nullLog
	sem   chan struct{} // one token per write taken and not committed

	mu      sync.Mutex
	pending map[uint64]*nullSlot // mu guards pending: tag to the reply it releases
	nextTag atomic.Uint64

	// A follower's link to the leader; writes to it hold linkMu.
	link   net.Conn
	linkMu sync.Mutex

	// The leader's state, owned by its loop.
	events    chan nullEvent
	peers     [3]*bufio.Writer // the followers' links (nil at the leader's own index)
	seq       uint64
	synced    [3]uint64
	committed uint64
	own       []nullOwn // the leader's own clients' writes, by seq
}

// nullOwn is a write proposed for one of the member's own clients.
type nullOwn struct{ seq, tag uint64 }

// nullSlot is one reply a client connection writes in its turn: at once
// for a read, after the commit for a write.
type nullSlot struct {
	reply   []byte
	done    chan struct{} // closed when reply may be written
	closing bool
	write   bool // holds a token of the member's sem until written
}

// nullEvent is what the leader's loop handles: a write from a member's
// client, or a member's sync.
type nullEvent struct {
	kind    int // nullMsgForward or nullMsgAck
	member  int
	tag     uint64
	seq     uint64
	payload []byte
}

var closedNullDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// StartNullEnsemble starts the configured members. A follower dials the
// leader until it answers; the leader returns once both followers are
// linked.
func StartNullEnsemble(cfg NullEnsembleConfig) (*NullEnsemble, error) {
	local := cfg.Members
	if len(local) == 0 {
		local = []int{1, 2, 3}
	}
	if cfg.LinkTimeout <= 0 {
		cfg.LinkTimeout = 60 * time.Second
	}
	e := &NullEnsemble{quit: make(chan struct{}), failed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	fail := func(err error) (*NullEnsemble, error) {
		e.Close()
		return nil, fmt.Errorf("bench: null ensemble: %w", err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fail(err)
	}
	for _, id := range local {
		if id < 1 || id > 3 || e.members[id-1] != nil {
			return fail(fmt.Errorf("members %v: each is 1, 2 or 3, once", local))
		}
		i := id - 1
		// Sessions are numbered apart per member, so that members in
		// separate processes never hand out the same id.
		e.session.Store(0x4e454e53<<24 | int64(id)<<20)
		m := &nullMember{e: e, index: i, sem: make(chan struct{}, nullEnsembleMaxInflight), pending: map[uint64]*nullSlot{}}
		e.members[i] = m
		l, err := openNullLog(filepath.Join(cfg.Dir, fmt.Sprintf("member%d.log", id)))
		if err != nil {
			return fail(err)
		}
		m.log = l
		if m.ln, err = net.Listen("tcp", net.JoinHostPort(cfg.Host, "0")); err != nil {
			return fail(err)
		}
	}
	lead := e.members[nullLeader]
	var peerLn *net.TCPListener
	switch {
	case lead != nil:
		addr := cfg.PeerAddr
		if addr == "" {
			addr = net.JoinHostPort(cfg.Host, "0")
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fail(err)
		}
		peerLn = ln.(*net.TCPListener)
		defer peerLn.Close()
		cfg.PeerAddr = peerLn.Addr().String()
		lead.events = make(chan nullEvent, 16*nullEnsembleMaxInflight)
	case cfg.PeerAddr == "":
		return fail(errors.New("the followers need the leader's address"))
	}
	deadline := time.Now().Add(cfg.LinkTimeout)
	for _, m := range e.members {
		if m == nil || m.index == nullLeader {
			continue
		}
		if err := m.dialLeader(cfg.PeerAddr, deadline); err != nil {
			return fail(err)
		}
	}
	if lead != nil {
		if err := lead.acceptFollowers(peerLn, deadline); err != nil {
			return fail(err)
		}
	}
	for _, m := range e.members {
		if m == nil {
			continue
		}
		m.log.synced = m.logSynced
		e.wg.Go(func() { m.log.run(e) })
		e.wg.Go(m.accept)
	}
	if lead != nil {
		e.wg.Go(lead.loop)
	}
	return e, nil
}

// dialLeader links a follower to the leader, retrying until deadline
// while the leader is not up yet.
func (m *nullMember) dialLeader(addr string, deadline time.Time) error {
	for {
		nc, err := net.DialTimeout("tcp", addr, time.Until(deadline))
		if err == nil {
			if !m.e.track(nc) {
				return net.ErrClosed
			}
			noDelay(nc)
			if _, err := nc.Write([]byte{byte(m.index)}); err != nil {
				return err
			}
			m.e.mu.Lock()
			m.link = nc // fail reads it under mu
			m.e.mu.Unlock()
			m.e.wg.Go(func() { m.readLeader(bufio.NewReaderSize(nc, nullBufferBytes)) })
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("member %d: the leader at %s: %w", m.index+1, addr, err)
		}
		time.Sleep(50 * time.Millisecond) // a process start, not a condition in a test
	}
}

// acceptFollowers takes the two followers' links, each introduced by its
// member index.
func (m *nullMember) acceptFollowers(ln *net.TCPListener, deadline time.Time) error {
	if err := ln.SetDeadline(deadline); err != nil {
		return err
	}
	for m.peers[0] == nil || m.peers[2] == nil {
		nc, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("leader: waiting for its followers: %w", err)
		}
		if !m.e.track(nc) {
			return net.ErrClosed
		}
		_ = nc.SetReadDeadline(deadline)
		var id [1]byte
		if _, err := io.ReadFull(nc, id[:]); err != nil {
			return fmt.Errorf("leader: a follower's link: %w", err)
		}
		_ = nc.SetReadDeadline(time.Time{})
		i := int(id[0])
		if i == nullLeader || i > 2 || m.peers[i] != nil {
			return fmt.Errorf("leader: a link introduced as member %d", i+1)
		}
		noDelay(nc)
		m.peers[i] = bufio.NewWriterSize(nc, nullBufferBytes)
		m.e.wg.Go(func() { m.readFollower(i, bufio.NewReaderSize(nc, nullBufferBytes)) })
	}
	return nil
}

// Addrs returns the client addresses of the members in this process, in
// member order (with all three, the second is the leader's).
func (e *NullEnsemble) Addrs() []string {
	var out []string
	for _, m := range e.members {
		if m != nil {
			out = append(out, m.ln.Addr().String())
		}
	}
	return out
}

// Err returns the first failure of a log or a member link, after which
// no write is answered.
func (e *NullEnsemble) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Failed is closed at the ensemble's first failure (Err says what).
func (e *NullEnsemble) Failed() <-chan struct{} { return e.failed }

// Close stops every member, closes every connection and log, and returns
// once every goroutine is done.
func (e *NullEnsemble) Close() error {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.quit)
	}
	for nc := range e.conns {
		nc.Close()
	}
	e.mu.Unlock()
	for _, m := range e.members {
		if m != nil && m.ln != nil {
			m.ln.Close()
		}
	}
	e.wg.Wait()
	var err error
	for _, m := range e.members {
		if m != nil && m.log != nil {
			err = errors.Join(err, m.log.f.Close())
		}
	}
	return err
}

// track adds nc to the connections Close closes; false when closed.
func (e *NullEnsemble) track(nc net.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		nc.Close()
		return false
	}
	e.conns[nc] = struct{}{}
	return true
}

func (e *NullEnsemble) untrack(nc net.Conn) {
	e.mu.Lock()
	delete(e.conns, nc)
	e.mu.Unlock()
	nc.Close()
}

// fail records the ensemble's first failure and stops it answering:
// every member's links close, so nothing more commits.
func (e *NullEnsemble) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil && !e.closed {
		e.err = err
		close(e.failed)
	}
	for _, m := range e.members {
		if m != nil && m.link != nil {
			m.link.Close()
		}
	}
}

func noDelay(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
}

func (m *nullMember) accept() {
	for {
		nc, err := m.ln.Accept()
		if err != nil {
			return
		}
		if !m.e.track(nc) {
			return
		}
		m.e.wg.Go(func() {
			defer m.e.untrack(nc)
			m.serve(nc)
		})
	}
}

// serve reads one client's requests and queues their replies in order for
// its writer; a write's reply waits for its commit.
func (m *nullMember) serve(nc net.Conn) {
	noDelay(nc)
	br := bufio.NewReaderSize(nc, nullBufferBytes)
	if done := nullHandshake(nc, br, &m.e.session); done {
		return
	}
	slots := make(chan *nullSlot, nullEnsembleQueueSlots)
	writerDone := make(chan struct{})
	m.e.wg.Go(func() {
		defer close(writerDone)
		m.writeReplies(nc, slots)
	})
	defer func() {
		close(slots)
		<-writerDone
	}()
	buf := make([]byte, 0, nullBufferBytes)
	for {
		frame, err := zkproto.ReadFrame(br, buf, jute.DefaultMaxBuffer)
		if err != nil {
			return
		}
		reply, closing, err := appendNullReply(nil, frame)
		if err != nil {
			return
		}
		s := &nullSlot{reply: reply, done: closedNullDone, closing: closing}
		if zkproto.Op(int32(binary.BigEndian.Uint32(frame[4:8]))).IsWrite() {
			select {
			case m.sem <- struct{}{}:
			case <-m.e.quit:
				return
			}
			s.write, s.done = true, make(chan struct{})
			m.submit(slices.Clone(frame), s)
		}
		select {
		case slots <- s:
		case <-writerDone:
			return
		}
		if closing {
			return
		}
	}
}

// writeReplies writes the replies in order, each once it is done, those
// ready together in one write; the connection closes after closeSession's.
func (m *nullMember) writeReplies(nc net.Conn, slots chan *nullSlot) {
	out := make([]byte, 0, nullBufferBytes)
	broken := false
	for s := range slots {
		select {
		case <-s.done:
		case <-m.e.quit:
			broken = true
		}
		if s.write {
			<-m.sem
		}
		if broken {
			continue // drain, so that the reader is never left waiting
		}
		out = append(out, s.reply...)
		if s.closing || len(out) >= nullBufferBytes || len(slots) == 0 {
			if _, err := nc.Write(out); err != nil || s.closing {
				broken = true
				nc.Close() // the reader sees it and stops
			}
			out = out[:0]
		}
	}
}

// submit hands a client's write to the leader.
func (m *nullMember) submit(frame []byte, s *nullSlot) {
	tag := m.nextTag.Add(1)
	m.mu.Lock()
	m.pending[tag] = s
	m.mu.Unlock()
	m.toLeader(nullEvent{kind: nullMsgForward, member: m.index, tag: tag, payload: frame})
}

// toLeader delivers a forward or an ack: to the loop at the leader, over
// the link at a follower (tag and seq are the message's a).
func (m *nullMember) toLeader(ev nullEvent) {
	if m.index == nullLeader {
		select {
		case m.events <- ev:
		case <-m.e.quit:
		}
		return
	}
	m.linkMu.Lock()
	_, err := m.link.Write(appendNullMsg(nil, ev.kind, m.index, ev.tag|ev.seq, 0, ev.payload))
	m.linkMu.Unlock()
	if err != nil {
		m.e.fail(fmt.Errorf("member %d: to the leader: %w", m.index+1, err))
	}
}

// release lets the replies of the given tags be written.
func (m *nullMember) release(tags ...uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, tag := range tags {
		if s, ok := m.pending[tag]; ok {
			delete(m.pending, tag)
			close(s.done)
		}
	}
}

// logSynced is called by the member's log after each sync.
func (m *nullMember) logSynced(seq uint64) {
	m.toLeader(nullEvent{kind: nullMsgAck, member: m.index, seq: seq})
}

// readLeader handles a follower's messages from the leader: proposals go
// to its log; a commit releases its own clients' writes up to it.
func (m *nullMember) readLeader(r *bufio.Reader) {
	var own []nullOwn
	for {
		kind, origin, a, b, payload, err := readNullMsg(r)
		if err != nil {
			m.e.fail(fmt.Errorf("member %d: from the leader: %w", m.index+1, err))
			return
		}
		switch kind {
		case nullMsgPropose:
			if !m.log.append(a, payload, m.e.quit) {
				return
			}
			if origin == m.index {
				own = append(own, nullOwn{seq: a, tag: b})
			}
		case nullMsgCommit:
			k := 0
			for k < len(own) && own[k].seq <= a {
				k++
			}
			if k > 0 {
				tags := make([]uint64, k)
				for i := range k {
					tags[i] = own[i].tag
				}
				own = own[:copy(own, own[k:])]
				m.release(tags...)
			}
		default:
			m.e.fail(fmt.Errorf("member %d: message kind %d from the leader", m.index+1, kind))
			return
		}
	}
}

// readFollower hands a follower's forwards and acks to the leader's loop.
func (m *nullMember) readFollower(i int, r *bufio.Reader) {
	for {
		kind, _, a, _, payload, err := readNullMsg(r)
		if err != nil {
			m.e.fail(fmt.Errorf("leader: from member %d: %w", i+1, err))
			return
		}
		ev := nullEvent{kind: kind, member: i}
		switch kind {
		case nullMsgForward:
			ev.tag, ev.payload = a, slices.Clone(payload)
		case nullMsgAck:
			ev.seq = a
		default:
			m.e.fail(fmt.Errorf("leader: message kind %d from member %d", kind, i+1))
			return
		}
		select {
		case m.events <- ev:
		case <-m.e.quit:
			return
		}
	}
}

// loop is the leader: it numbers writes, logs and proposes them, and
// commits what two members of three have synced. Its writes to the
// followers' links are flushed once for everything it took together.
func (m *nullMember) loop() {
	for {
		var ev nullEvent
		select {
		case ev = <-m.events:
		case <-m.e.quit:
			return
		}
		for {
			if !m.handle(ev) {
				return
			}
			select {
			case ev = <-m.events:
				continue
			default:
			}
			break
		}
		for i, w := range m.peers {
			if w == nil {
				continue
			}
			if err := w.Flush(); err != nil {
				m.e.fail(fmt.Errorf("leader: to member %d: %w", i+1, err))
				return
			}
		}
	}
}

// handle applies one event to the leader's state; false when the leader
// must stop.
func (m *nullMember) handle(ev nullEvent) bool {
	switch ev.kind {
	case nullMsgForward:
		m.seq++
		if !m.log.append(m.seq, ev.payload, m.e.quit) {
			return false
		}
		if ev.member == m.index {
			m.own = append(m.own, nullOwn{seq: m.seq, tag: ev.tag})
		}
		for _, w := range m.peers {
			if w != nil {
				w.Write(appendNullMsg(nil, nullMsgPropose, ev.member, m.seq, ev.tag, ev.payload))
			}
		}
	case nullMsgAck:
		m.synced[ev.member] = max(m.synced[ev.member], ev.seq)
		s := m.synced
		slices.Sort(s[:])
		if c := s[1]; c > m.committed { // the highest seq two members have synced
			m.committed = c
			for _, w := range m.peers {
				if w != nil {
					w.Write(appendNullMsg(nil, nullMsgCommit, m.index, c, 0, nil))
				}
			}
			k := 0
			for k < len(m.own) && m.own[k].seq <= c {
				k++
			}
			if k > 0 {
				tags := make([]uint64, k)
				for i := range k {
					tags[i] = m.own[i].tag
				}
				m.own = m.own[:copy(m.own, m.own[k:])]
				m.release(tags...)
			}
		}
	}
	return true
}

// appendNullMsg appends one message between members.
func appendNullMsg(dst []byte, kind, origin int, a, b uint64, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(nullMsgHeaderLen-4+len(payload)))
	dst = append(dst, byte(kind), byte(origin))
	dst = binary.BigEndian.AppendUint64(dst, a)
	dst = binary.BigEndian.AppendUint64(dst, b)
	return append(dst, payload...)
}

var errNullMsg = errors.New("malformed member message")

// readNullMsg reads one message between members; payload is valid until
// the next read.
func readNullMsg(r *bufio.Reader) (kind, origin int, a, b uint64, payload []byte, err error) {
	var h [nullMsgHeaderLen]byte
	if _, err = io.ReadFull(r, h[:]); err != nil {
		return
	}
	n := int(binary.BigEndian.Uint32(h[:4])) - (nullMsgHeaderLen - 4)
	if n < 0 || n > jute.DefaultMaxBuffer || int(h[5]) >= 3 {
		return 0, 0, 0, 0, nil, errNullMsg
	}
	kind, origin = int(h[4]), int(h[5])
	a, b = binary.BigEndian.Uint64(h[6:14]), binary.BigEndian.Uint64(h[14:22])
	payload = make([]byte, n)
	_, err = io.ReadFull(r, payload)
	return
}

// nullLog is one member's log: records appended to a preallocated file and
// fdatasynced, as many together as are queued.
type nullLog struct {
	f      *os.File
	in     chan nullRecord
	synced func(seq uint64) // called after each sync with the last seq in it
	off    int64
	size   int64
}

type nullRecord struct {
	seq     uint64
	payload []byte
}

func openNullLog(path string) (*nullLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	return &nullLog{f: f, in: make(chan nullRecord, 4*nullEnsembleMaxInflight)}, nil
}

// append queues a record; false when the ensemble is closing.
func (l *nullLog) append(seq uint64, payload []byte, quit chan struct{}) bool {
	select {
	case l.in <- nullRecord{seq: seq, payload: payload}:
		return true
	case <-quit:
		return false
	}
}

// run writes and syncs what is queued until the ensemble closes or the
// file fails (then the ensemble fails: what a failed sync left is unknown).
func (l *nullLog) run(e *NullEnsemble) {
	buf := make([]byte, 0, nullLogMaxBatchBytes)
	for {
		var r nullRecord
		select {
		case r = <-l.in:
		case <-e.quit:
			return
		}
		buf = binary.BigEndian.AppendUint32(buf[:0], uint32(len(r.payload)))
		buf = append(buf, r.payload...)
		last := r.seq
	batch:
		for len(buf) < nullLogMaxBatchBytes {
			select {
			case r = <-l.in:
				buf = binary.BigEndian.AppendUint32(buf, uint32(len(r.payload)))
				buf = append(buf, r.payload...)
				last = r.seq
			default:
				break batch
			}
		}
		if err := l.write(buf); err != nil {
			e.fail(fmt.Errorf("log %s: %w", l.f.Name(), err))
			return
		}
		l.synced(last)
	}
}

// write appends p, growing the file ahead as ZooKeeper's log does, and
// syncs: fdatasync, or fsync when the size changed.
func (l *nullLog) write(p []byte) error {
	grew := false
	for l.off+int64(len(p))+nullLogPreallocMarginBytes > l.size {
		l.size += nullLogPreallocBytes
		if _, err := l.f.WriteAt([]byte{0}, l.size-1); err != nil {
			return err
		}
		grew = true
	}
	if _, err := l.f.WriteAt(p, l.off); err != nil {
		return err
	}
	l.off += int64(len(p))
	if grew {
		return l.f.Sync()
	}
	return datasync(l.f)
}
