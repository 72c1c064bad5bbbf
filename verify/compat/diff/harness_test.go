package diff

import (
	"crypto/sha1"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/server"
	"keeper/coordination/session"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/verify/compat/zkreal"
)

// closeWait bounds the wait for a server to close a connection it must
// close (after closeSession, an unknown opcode, a refused auth).
const closeWait = 5 * time.Second

// expireWait bounds the wait for a session to expire: its timeout plus a
// tick, with room for a slow machine.
const expireWait = 30 * time.Second

// Server configuration shared by both sides, so that session timeouts
// negotiate alike.
const (
	tickTime         = 2 * time.Second
	minSessionMs     = 2 * 2000  // 2 ticks, ZooKeeper's default
	maxSessionMs     = 20 * 2000 // 20 ticks
	defaultTimeoutMs = 30000

	// The super user: its digest is configured on both servers.
	superUser = "super"
	superPass = "s3cret"
)

// containerCheckJavaOpts stops ZooKeeper's container and TTL reaper from
// running during a test: it would delete nodes (and consume zxids) at a
// moment keeper's reaper does not, and the runs would drift apart. The
// setting is a JVM system property, which zoo.cfg cannot set, so it is a
// flag of the JVM that zkreal starts (not the environment, which would keep
// the seeds from running side by side).
const containerCheckJavaOpts = "-Dznode.container.checkIntervalMs=2147483647"

// digestID is the identity a digest auth of user:pass gives (docs/zookeeper-protocol.md §7.4).
func digestID(user, pass string) string {
	sum := sha1.Sum([]byte(user + ":" + pass))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

var diskFlag = flag.Bool("diff.disk", false, "keeper keeps its txn log and snapshots on disk (as ZooKeeper does) instead of in memory")

// serverOptions configures one pair of servers.
type serverOptions struct {
	extendedTypes bool
	enforceQuota  bool // refuse writes past quota hard limits (enforceQuota=true)
}

// startZooKeeper starts Apache ZooKeeper and returns its address.
func startZooKeeper(t *testing.T, o serverOptions) string {
	t.Helper()
	opts := zkreal.Options{
		JVMFlags:      []string{containerCheckJavaOpts},
		ExtendedTypes: o.extendedTypes,
		SuperDigest:   digestID(superUser, superPass),
		TickTime:      tickTime,
	}
	if o.enforceQuota {
		// ZooKeeper turns the unknown zoo.cfg key into the system property
		// zookeeper.enforceQuota, read when the server class loads.
		opts.ExtraConfig = map[string]string{"enforceQuota": "true"}
	}
	zk := zkreal.Start(t, opts)
	return zk.Addr()
}

// startKeeper starts an in-process keeper configured like startZooKeeper's
// server and returns its address.
func startKeeper(t *testing.T, o serverOptions) string {
	t.Helper()
	cfg := server.Config{
		ClientAddr:          "127.0.0.1:0",
		Core:                zkserverConfig(o),
		FourLetterWhitelist: []string{"*"},
	}
	if *diskFlag {
		// Small log files and frequent snapshots: both happen while serving.
		cfg.Storage = server.StorageConfig{DataDir: t.TempDir(), PreAllocSizeBytes: 1 << 20, SnapCount: 1000}
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr().String()
}

// side is one server, or one ensemble, and the sessions the test holds on
// it, one per slot. Slot i's sessions connect to addrs[i%len(addrs)]: with
// an ensemble's members listed, every member takes requests.
type side struct {
	name   string
	addrs  []string
	conns  []*wireConn
	base   int64            // the zxid once slot 0's session exists
	labels map[int64]string // session id -> slot label, for ephemeralOwner
	gens   []int            // sessions opened so far, per slot
	ended  []credentials    // per slot: the last session closed there
	// syncBarrier makes the barrier sync every connection before its
	// ping. In an ensemble a member applies a write made through another
	// member a little later; sync makes it catch up with the leader's
	// commit point first, and the notifications those writes fire arrive
	// before the sync's reply.
	syncBarrier bool
	// data rewrites node data before it is compared (nil: as it is).
	data *strings.Replacer
}

// credentials identify a session to reattach to.
type credentials struct {
	sid    int64
	passwd []byte
}

func newSide(name string, addrs []string, slots int) *side {
	return &side{
		name:   name,
		addrs:  addrs,
		conns:  make([]*wireConn, slots),
		labels: make(map[int64]string),
		gens:   make([]int, slots),
		ended:  make([]credentials, slots),
	}
}

// addr is the server slot's sessions connect to.
func (s *side) addr(slot int) string { return s.addrs[slot%len(s.addrs)] }

// connected is a handshake's outcome.
type connected struct {
	slot int
	resp zkproto.ConnectResponse
}

// openSlot creates a new session in slot, replacing its connection.
func (s *side) openSlot(slot int, timeoutMs int32) (connected, error) {
	c, resp, err := dialSession(s.addr(slot), connectReq{timeoutMs: timeoutMs})
	if err != nil {
		return connected{}, fmt.Errorf("%s: open slot %d: %w", s.name, slot, err)
	}
	c.nudge = s.syncBarrier
	s.conns[slot].close()
	s.conns[slot] = c
	s.labels[resp.SessionID] = fmt.Sprintf("s%d.%d", slot, s.gens[slot])
	s.gens[slot]++
	return connected{slot: slot, resp: resp}, nil
}

// reattach opens a new connection to slot's session, as a client does after
// losing its connection. If the server refuses the session, a new one is
// opened in the slot (and both handshakes are reported).
func (s *side) reattach(slot int) ([]connected, error) {
	old := s.conns[slot]
	old.close()
	c, resp, err := dialSession(s.addr(slot), connectReq{
		timeoutMs: defaultTimeoutMs, sid: old.sid, passwd: old.passwd, lastZxid: old.lastZxid,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: reattach slot %d: %w", s.name, slot, err)
	}
	c.nudge = s.syncBarrier
	out := []connected{{slot: slot, resp: resp}}
	if resp.TimeoutMs != 0 {
		c.xid = old.xid
		s.conns[slot] = c
		return out, nil
	}
	c.close()
	fresh, err := s.openSlot(slot, defaultTimeoutMs)
	return append(out, fresh), err
}

// start opens every slot's session and records the base zxid.
func (s *side) start() error {
	if _, err := s.openSlot(0, defaultTimeoutMs); err != nil {
		return err
	}
	r, err := s.conns[0].call(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"})
	if err != nil {
		return fmt.Errorf("%s: read base zxid: %w", s.name, err)
	}
	s.base = r.hdr.Zxid
	for slot := 1; slot < len(s.conns); slot++ {
		if _, err := s.openSlot(slot, defaultTimeoutMs); err != nil {
			return err
		}
	}
	if s.syncBarrier {
		// Every member has applied every session's creation before the
		// first step (see syncAfterConnects).
		o := &outcome{closed: make([]bool, len(s.conns)), gone: make([]bool, len(s.conns))}
		if err := s.roundTrip(o, zkproto.OpSync, &zkproto.SyncRequest{Path: "/"}); err != nil {
			return fmt.Errorf("%s: sync after opening the sessions: %w", s.name, err)
		}
	}
	return nil
}

func (s *side) closeAll() {
	for _, c := range s.conns {
		c.close()
	}
}

// outcome is everything one side showed for one step.
type outcome struct {
	reply     reply
	hasReply  bool
	lost      bool        // the connection closed before the reply came
	readCheck *reply      // getData after an exists refused for lack of READ
	watchRep  *reply      // the setWatches reply of a reconnect step
	connects  []connected // handshakes, in order
	closed    []bool      // per slot: the server closed the connection
	notClosed bool        // st.expectClose, but the connection stayed open
	gone      []bool      // per slot: the test dropped the connection and left the session to expire
	attempt   *attempt    // kindBadReattach: what the refused handshake got
	events    [][]event   // per slot, in arrival order
	unordered bool        // compare events as multisets (session close)
}

// exec runs st on this side: the request, then a barrier on every
// connection, then reattaching (or, after closeSession, replacing) the
// sessions whose connections the server closed. An error means the harness
// itself failed (a timeout or a protocol violation), not a difference.
func (s *side) exec(st *step) (*outcome, error) {
	o := &outcome{
		closed: make([]bool, len(s.conns)),
		gone:   make([]bool, len(s.conns)),
		events: make([][]event, len(s.conns)),
	}
	var err error
	switch st.kind {
	case kindRequest:
		err = s.execRequest(st, o)
	case kindClose:
		err = s.execClose(st, o)
	case kindReconnect:
		err = s.execReconnect(st, o)
	case kindExpire:
		err = s.execExpire(st, o)
	case kindBadReattach:
		err = s.execBadReattach(st, o)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	if err := s.barrier(o); err != nil {
		return nil, fmt.Errorf("%s: barrier: %w", s.name, err)
	}
	for slot, closed := range o.closed {
		if !closed && !o.gone[slot] {
			continue
		}
		var cs []connected
		if (st.kind == kindClose || st.kind == kindExpire) && slot == st.slot {
			var c connected
			c, err = s.openSlot(slot, st.timeoutMs)
			cs = []connected{c}
		} else {
			cs, err = s.reattach(slot)
		}
		if err != nil {
			return nil, err
		}
		o.connects = append(o.connects, cs...)
	}
	if s.syncBarrier && len(o.connects) > 0 {
		if err := s.syncAfterConnects(o); err != nil {
			return nil, fmt.Errorf("%s: sync after reconnecting: %w", s.name, err)
		}
	}
	return o, nil
}

// syncAfterConnects syncs every connection again after sessions were made
// or reattached past the barrier: a new session is a txn, and a read on
// another member in the next step would show its zxid or not depending on
// whether that member had applied it yet. Every connection is open now;
// notifications that arrive are added to o's.
func (s *side) syncAfterConnects(o *outcome) error {
	again := &outcome{closed: make([]bool, len(s.conns)), gone: make([]bool, len(s.conns))}
	if err := s.roundTrip(again, zkproto.OpSync, &zkproto.SyncRequest{Path: "/"}); err != nil {
		return err
	}
	for slot, closed := range again.closed {
		if closed {
			return fmt.Errorf("slot %d: the server closed the connection", slot)
		}
	}
	for slot, c := range s.conns {
		o.events[slot] = append(o.events[slot], c.takeEvents()...)
	}
	return nil
}

func (s *side) execRequest(st *step, o *outcome) error {
	c := s.conns[st.slot]
	r, err := c.call(st.op, st.req)
	switch {
	case isClosedErr(err):
		o.lost = true
		return nil
	case err != nil:
		return fmt.Errorf("%v: %w", st.op, err)
	}
	o.reply, o.hasReply = r, true
	if st.expectClose {
		// The server answers and then closes the connection. Apache
		// ZooKeeper answers such requests outside its pipeline, so a
		// barrier request could be answered before the close: wait for the
		// close instead.
		closed, err := c.drainToEOF(closeWait)
		if err != nil {
			return fmt.Errorf("after %v: %w", st.op, err)
		}
		o.closed[st.slot] = closed
		if !closed {
			o.notClosed = true
		}
		return nil
	}
	if st.noRead {
		path := st.req.(*zkproto.ExistsRequest).Path
		rc, err := c.call(zkproto.OpGetData, &zkproto.GetDataRequest{Path: path})
		if err != nil {
			return fmt.Errorf("read check: %w", err)
		}
		o.readCheck = &rc
	}
	return nil
}

func (s *side) execClose(st *step, o *outcome) error {
	c := s.conns[st.slot]
	s.ended[st.slot] = credentials{sid: c.sid, passwd: c.passwd}
	r, err := c.call(zkproto.OpCloseSession, nil)
	switch {
	case isClosedErr(err):
		o.lost = true
	case err != nil:
		return fmt.Errorf("closeSession: %w", err)
	default:
		o.reply, o.hasReply = r, true
	}
	closed, err := c.drainToEOF(closeWait)
	if err != nil {
		return fmt.Errorf("after closeSession: %w", err)
	}
	o.closed[st.slot] = closed
	o.unordered = true
	return nil
}

// execBadReattach tries to reattach to a session it may not have: the
// slot's live session with a wrong password, or the slot's last closed
// session. The server refuses (timeout 0) and closes that connection; for a
// live session it first kicks the session's own connection (docs/zookeeper-protocol.md §1.3),
// which the barrier then finds closed.
func (s *side) execBadReattach(st *step, o *outcome) error {
	live := s.conns[st.slot]
	cred := credentials{sid: live.sid, passwd: slices.Clone(live.passwd)}
	cred.passwd[0] ^= 0xff
	if st.stale && s.ended[st.slot].sid != 0 {
		cred = s.ended[st.slot]
	}
	c, resp, err := dialSession(s.addr(st.slot), connectReq{timeoutMs: defaultTimeoutMs, sid: cred.sid, passwd: cred.passwd})
	if err != nil {
		return fmt.Errorf("reattach attempt: %w", err)
	}
	defer c.close()
	closed, err := c.drainToEOF(closeWait)
	if err != nil {
		return fmt.Errorf("after the reattach attempt: %w", err)
	}
	o.attempt = &attempt{resp: resp, closed: closed}
	if cred.sid == live.sid {
		// The server should have kicked the session's own connection
		// (docs/zookeeper-protocol.md §1.3), and keeper always does; Apache ZooKeeper 3.8 has
		// been seen to leave it open under load (its session-to-connection
		// map can lose the entry). Close it here either way, so that both
		// sides reattach the slot and go on from the same state.
		live.close()
		o.closed[st.slot] = true
	}
	return nil
}

// attempt is the outcome of a reattach the server must refuse.
type attempt struct {
	resp   zkproto.ConnectResponse
	closed bool // the server closed the connection after answering
}

// execExpire drops the slot's connection without closing its session and
// waits until the watcher slot receives a notification, which the session's
// expiry (deleting its ephemerals) must cause.
func (s *side) execExpire(st *step, o *outcome) error {
	s.conns[st.slot].close()
	o.gone[st.slot] = true
	o.unordered = true
	if err := s.conns[st.watcher].awaitEvent(expireWait); err != nil {
		return fmt.Errorf("waiting for slot %d's session to expire: %w", st.slot, err)
	}
	return nil
}

func (s *side) execReconnect(st *step, o *outcome) error {
	cs, err := s.reattach(st.slot)
	if err != nil {
		return err
	}
	o.connects = append(o.connects, cs...)
	if st.watches == nil {
		return nil
	}
	w := *st.watches
	if w.RelativeZxid > 0 {
		w.RelativeZxid += s.base
	}
	var rec jute.Record = &w
	if st.op == zkproto.OpSetWatches {
		rec = &zkproto.SetWatches{RelativeZxid: w.RelativeZxid, DataWatches: w.DataWatches,
			ExistWatches: w.ExistWatches, ChildWatches: w.ChildWatches}
	}
	r, err := s.conns[st.slot].call(st.op, rec)
	if isClosedErr(err) {
		o.lost = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("%v: %w", st.op, err)
	}
	o.watchRep = &r
	return nil
}

// barrier pings every open connection (after a sync, with syncBarrier)
// and waits for the replies, so that every notification sent before them
// has arrived. A connection the server closed is marked in o.closed.
// Events are then taken from every connection.
func (s *side) barrier(o *outcome) error {
	if s.syncBarrier {
		if err := s.roundTrip(o, zkproto.OpSync, &zkproto.SyncRequest{Path: "/"}); err != nil {
			return fmt.Errorf("sync: %w", err)
		}
	}
	if err := s.roundTrip(o, zkproto.OpPing, nil); err != nil {
		return err
	}
	for slot, c := range s.conns {
		if !o.gone[slot] {
			o.events[slot] = c.takeEvents()
		}
	}
	return nil
}

// roundTrip sends op on every open connection, then waits for every
// reply. A connection the server closed is marked in o.closed.
func (s *side) roundTrip(o *outcome, op zkproto.Op, rec jute.Record) error {
	xids := make([]int32, len(s.conns))
	for slot, c := range s.conns {
		if o.closed[slot] || o.gone[slot] {
			continue
		}
		xid, err := c.send(op, rec)
		switch {
		case isClosedErr(err):
			o.closed[slot] = true
		case err != nil:
			return err
		}
		xids[slot] = xid
	}
	for slot, c := range s.conns {
		if o.closed[slot] || o.gone[slot] {
			continue
		}
		r, err := c.await(xids[slot], op)
		switch {
		case isClosedErr(err):
			o.closed[slot] = true
		case err != nil:
			return fmt.Errorf("slot %d: %w", slot, err)
		case r.hdr.Err != zkproto.CodeOK:
			return fmt.Errorf("slot %d: %v answered %v", slot, op, r.hdr.Err)
		}
	}
	return nil
}

// pair is keeper and ZooKeeper with the same slots.
type pair struct {
	keeper, zk *side
	slots      int
	runMatch   string // the -run pattern that replays a seed on this pair ("": TestDifferential)
}

// startPair starts both servers and opens every slot's session on each.
func startPair(t *testing.T, slots int, o serverOptions) *pair {
	t.Helper()
	p := &pair{
		zk:     newSide("zookeeper", []string{startZooKeeper(t, o)}, slots),
		keeper: newSide("keeper", []string{startKeeper(t, o)}, slots),
		slots:  slots,
	}
	t.Cleanup(func() { p.keeper.closeAll(); p.zk.closeAll() })
	if err := closeStraySessions(p.zk.addrs[0]); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*side{p.keeper, p.zk} {
		if err := s.start(); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// run executes st on both sides at once.
func (p *pair) run(st *step) (k, z *outcome, err error) {
	var wg sync.WaitGroup
	var kerr error
	wg.Go(func() { k, kerr = p.keeper.exec(st) })
	z, zerr := p.zk.exec(st)
	wg.Wait()
	if kerr != nil || zerr != nil {
		return nil, nil, fmt.Errorf("harness failure: keeper: %v; zookeeper: %v", kerr, zerr)
	}
	return k, z, nil
}

// probeExists asks keeper alone whether it refuses st (an exists) for lack
// of READ. If so, the step is sent without a watch and marked noRead: 3.8.0
// would register the watch and answer, keeper (3.8.4+) neither.
func (p *pair) probeExists(st *step) error {
	req, ok := st.req.(*zkproto.ExistsRequest)
	if st.kind != kindRequest || st.op != zkproto.OpExists || !ok {
		return nil
	}
	r, err := p.keeper.conns[st.slot].call(zkproto.OpExists, &zkproto.ExistsRequest{Path: req.Path})
	if err != nil {
		return fmt.Errorf("keeper: exists probe: %w", err)
	}
	if r.hdr.Err == zkproto.CodeNoAuth {
		st.noRead = true
		st.req = &zkproto.ExistsRequest{Path: req.Path}
	}
	return nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// zkserverConfig is keeper's core configuration matching startZooKeeper's
// zoo.cfg: the tick, session bounds, super digest, extended types and quota
// enforcement, and a reaper that never runs during a test (see
// containerCheckJavaOpts).
func zkserverConfig(o serverOptions) zkcore.Config {
	c := zkcore.DefaultConfig()
	c.TickMs = tickTime.Milliseconds()
	c.MinSessionTimeoutMs = minSessionMs
	c.MaxSessionTimeoutMs = maxSessionMs
	c.ExtendedTypes = o.extendedTypes
	c.EnforceQuota = o.enforceQuota
	c.SuperDigest = digestID(superUser, superPass)
	c.ContainerCheckMs = 1 << 40
	c.StartWallMs = time.Now().UnixMilli()
	return c
}

// closeStraySessions closes any session the server has before the test
// opens its own. zkreal's readiness probe opens and closes sessions; one it
// could not close would expire in the middle of a run and shift every later
// zxid. The sessions are listed by the dump four-letter word and closed by
// reattaching with their password, which is derived from the id (docs/zookeeper-protocol.md §6.2).
func closeStraySessions(addr string) error {
	out, err := fourLetter(addr, "dump")
	if err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	head, _, _ := strings.Cut(out, "ephemeral nodes dump:")
	for _, line := range strings.Split(head, "\n") {
		text, ok := strings.CutPrefix(strings.TrimSpace(line), "0x")
		if !ok {
			continue
		}
		id, err := strconv.ParseUint(text, 16, 64)
		if err != nil {
			return fmt.Errorf("dump: session id %q: %w", line, err)
		}
		passwd := session.Password(int64(id))
		c, resp, err := dialSession(addr, connectReq{timeoutMs: defaultTimeoutMs, sid: int64(id), passwd: passwd[:]})
		if err != nil {
			return fmt.Errorf("reattach stray session %#x: %w", id, err)
		}
		if resp.TimeoutMs != 0 {
			_, err = c.call(zkproto.OpCloseSession, nil)
		}
		c.close()
		if err != nil {
			return fmt.Errorf("close stray session %#x: %w", id, err)
		}
	}
	return nil
}

// fourLetter sends a four-letter word and returns the reply.
func fourLetter(addr, word string) (string, error) {
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(nc, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(nc, 1<<20))
	return string(b), err
}
