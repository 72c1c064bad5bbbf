package zab

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"keeper/coordination/zxid"
)

// cluster runs nodes in memory: links are FIFO queues, disks are slices,
// the state machine is the list of applied entries. Time only moves when
// the test ticks.
type cluster struct {
	t     testing.TB
	ids   []PeerID
	cfgs  map[PeerID]Config
	nodes map[PeerID]*Node
	// Each node's disk, as the server keeps it: every txn logged (a
	// snapshot install cuts the log after the snapshot's zxid but keeps
	// what is below), the epoch files, and the snapshots, oldest first.
	// At start-up the state is the newest snapshot plus the log after it.
	logs  map[PeerID][]Entry
	hard  map[PeerID]HardState
	snaps map[PeerID][]snapshot
	// confs is each node's persisted configurations (Ready.Config), once
	// it persisted any; configHook, if set, sees each before it is
	// persisted.
	confs      map[PeerID]ConfigState
	configHook func(id PeerID, old, new ConfigState)
	// applied is each node's state machine.
	applied map[PeerID][]Entry
	queue   []Message
	down    map[PeerID]bool
	// failed holds the nodes that stopped for good, as a server whose
	// storage refused a batch does (peer.Fail), and why.
	failed map[PeerID]error
	cut    map[[2]PeerID]bool
	// trace holds the last messages sent, formatted only when a failure
	// prints them (formatting every message was a fifth of the sweeps' CPU).
	trace []Message
	// ticks counts the rounds of ticks step gave the nodes.
	ticks int
	// lastStepped is the last message delivered to a node.
	lastStepped Message
	// committedHook, if set, sees what a node that serves clients has
	// applied: its whole state when it starts serving (an established
	// leader, a learner after UPTODATE), then each batch it commits. A
	// node that does not serve exposes nothing, so what it applies (its
	// log at start-up, a sync before the leader is established) is not
	// yet known to be committed.
	committedHook func(PeerID, []Entry)
	serving       map[PeerID]bool // per the last Role a batch reported
	recorded      map[PeerID]int  // how much of applied the hook has seen
	// crashMidBatch, if set, is asked for each batch with Early messages
	// and something to persist: true crashes the node after those
	// messages left and before the batch reached its disk.
	crashMidBatch func() bool
	// crashBeforeState, if set, is asked for each batch whose State raises
	// currentEpoch over log work: true crashes the node once the log is
	// durable and before the epoch is.
	crashBeforeState func() bool
	// deliverHook, if set, sees (and may change) each message just before
	// it is delivered.
	deliverHook func(*Message)
}

// snapshot is a snapshot file: the state machine at zxid.
type snapshot struct {
	zxid  zxid.ID
	state []Entry
}

func newCluster(t testing.TB, voters, observers []PeerID, mutate func(PeerID, *Config)) *cluster {
	return newClusterOf(t, append(slices.Clone(voters), observers...), voters, observers, mutate)
}

// newClusterOf runs the nodes ids, configured with voters and observers
// (which mutate may change per node: a server about to join knows itself).
func newClusterOf(t testing.TB, ids, voters, observers []PeerID, mutate func(PeerID, *Config)) *cluster {
	c := &cluster{t: t, cfgs: map[PeerID]Config{}, nodes: map[PeerID]*Node{}, logs: map[PeerID][]Entry{},
		hard: map[PeerID]HardState{}, applied: map[PeerID][]Entry{}, snaps: map[PeerID][]snapshot{},
		down: map[PeerID]bool{}, failed: map[PeerID]error{}, cut: map[[2]PeerID]bool{},
		serving: map[PeerID]bool{}, recorded: map[PeerID]int{}, confs: map[PeerID]ConfigState{}}
	c.ids = slices.Clone(ids)
	slices.Sort(c.ids)
	for _, id := range c.ids {
		cfg := Config{ID: id, Voters: voters, Observers: observers, InitLimitTicks: 10, SyncLimitTicks: 5,
			Rand: rand.New(rand.NewPCG(uint64(id), 1))}
		if mutate != nil {
			mutate(id, &cfg)
		}
		c.cfgs[id] = cfg
		c.logs[id] = slices.Clone(cfg.Recent)
		c.applied[id] = slices.Clone(cfg.Recent)
		c.hard[id] = cfg.HardState
		c.start(id)
	}
	return c
}

// start (re)creates node id from what it made durable. A node that failed
// stays down.
func (c *cluster) start(id PeerID) {
	if c.failed[id] != nil {
		return
	}
	cfg := c.cfgs[id]
	cfg.HardState = c.hard[id]
	if cs, ok := c.confs[id]; ok {
		a := cs.Active.clone()
		cfg.Voters, cfg.Observers, cfg.ConfigVersion, cfg.ConfigText = a.Voters, a.Observers, a.Version, a.Text
		cfg.NextConfig = cs.Next
	}
	// At start-up the state machine is the newest snapshot plus the log
	// after it, as in ZooKeeper.
	state, last, recent, err := replayLog(c.snaps[id], c.logs[id])
	if err != nil {
		c.t.Fatalf("node %d cannot start: %v", id, err)
	}
	cfg.Recent, cfg.LastZxid = recent, last
	if k := len(c.snaps[id]); k > 0 {
		cfg.TruncateFloor = c.snaps[id][k-1].zxid
	}
	c.applied[id] = state
	c.recorded[id] = 0
	c.serving[id] = false
	n, err := New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.nodes[id] = n
	c.down[id] = false
}

// replayLog rebuilds a state machine as the server does: the newest of
// snaps, then the txns of log after it, which must follow one another. It
// returns the state, its last zxid and the txns replayed.
func replayLog(snaps []snapshot, log []Entry) (state []Entry, last zxid.ID, replayed []Entry, err error) {
	if k := len(snaps); k > 0 {
		state, last = slices.Clone(snaps[k-1].state), snaps[k-1].zxid
	}
	for i, e := range log {
		if e.Zxid <= last {
			continue
		}
		if !follows(last, e.Zxid) {
			return nil, 0, nil, fmt.Errorf("txns missing from the log: %s follows %s", e.Zxid, last)
		}
		if replayed == nil {
			replayed = log[i:len(log):len(log)]
		}
		state = append(state, e)
		last = e.Zxid
	}
	return state, last, slices.Clone(replayed), nil
}

// follows reports whether next may come right after last in a log.
func follows(last, next zxid.ID) bool {
	return next == last+1 || (next.Counter() == 1 && next.Epoch() > last.Epoch())
}

// cutAfter returns the txns of log up to z.
func cutAfter(log []Entry, z zxid.ID) []Entry {
	if i := slices.IndexFunc(log, func(e Entry) bool { return e.Zxid > z }); i >= 0 {
		return log[:i:i]
	}
	return log
}

// truncate carries out a TRUNC as the server does: the state must end at
// exactly z, so snapshots above z go and the state is rebuilt from an
// older one and the log up to z. When the disk cannot give that state,
// nothing changes and the node fails.
func (c *cluster) truncate(id PeerID, z zxid.ID) error {
	snaps := c.snaps[id]
	k := len(snaps)
	for k > 0 && snaps[k-1].zxid > z {
		k--
	}
	log := cutAfter(c.logs[id], z)
	state, last, _, err := replayLog(snaps[:k], log)
	if err == nil && last != z {
		err = fmt.Errorf("the state rebuilt ends at %s", last)
	}
	if err != nil {
		return fmt.Errorf("cannot truncate to %s (snapshots %v): %w", z, snapZxids(snaps), err)
	}
	c.snaps[id], c.logs[id], c.applied[id], c.recorded[id] = snaps[:k:k], log, state, 0
	return nil
}

func snapZxids(snaps []snapshot) []string {
	var out []string
	for _, s := range snaps {
		out = append(out, s.zxid.String())
	}
	return out
}

// installSnapshot makes the leader's snapshot the newest, as the server
// does: snapshots above it go, and the log is cut after it.
func (c *cluster) installSnapshot(id PeerID, z zxid.ID, data []byte) {
	var state []Entry
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&state); err != nil {
		c.t.Fatalf("node %d: bad snapshot: %v", id, err)
	}
	snaps := slices.DeleteFunc(slices.Clone(c.snaps[id]), func(s snapshot) bool { return s.zxid > z })
	c.snaps[id] = append(snaps, snapshot{zxid: z, state: slices.Clone(state)})
	c.logs[id] = cutAfter(c.logs[id], z)
	c.applied[id], c.recorded[id] = state, 0
}

// fail stops a node for good: its storage refused a batch.
func (c *cluster) fail(id PeerID, err error) {
	c.failed[id] = err
	c.crash(id)
}

// crash stops a node; what it had not made durable is gone.
func (c *cluster) crash(id PeerID) {
	c.down[id] = true
	c.serving[id] = false
	c.dropLinks(id)
}

// crashAfterSending crashes id once sent left: they stay in flight behind
// what id sent before, ahead of the news that its links broke.
func (c *cluster) crashAfterSending(id PeerID, sent []Message) {
	c.down[id] = true
	c.serving[id] = false
	c.queue = slices.DeleteFunc(c.queue, func(m Message) bool { return m.To == id })
	for _, m := range sent {
		m.From = id
		c.queue = append(c.queue, m)
	}
	for _, other := range c.ids {
		if other != id && !c.down[other] {
			c.queue = append(c.queue, Message{Type: MsgDisconnected, From: id, To: other})
		}
	}
}

// dropLinks discards messages to and from id and tells the others their link
// to it went down.
func (c *cluster) dropLinks(id PeerID) {
	var keep []Message
	for _, m := range c.queue {
		if m.To != id && m.From != id {
			keep = append(keep, m)
		}
	}
	c.queue = keep
	for _, other := range c.ids {
		if other != id && !c.down[other] {
			c.queue = append(c.queue, Message{Type: MsgDisconnected, From: id, To: other})
		}
	}
}

// handle carries out a node's Ready batches, in the server's order: the
// truncation or snapshot and the txns, then the epochs, then the messages,
// then the committed txns.
func (c *cluster) handle(id PeerID) {
	n := c.nodes[id]
	for n.HasReady() {
		rd := n.Ready()
		if len(rd.Early) > 0 && (len(rd.Entries) > 0 || rd.State != nil) && c.crashMidBatch != nil && c.crashMidBatch() {
			c.crashAfterSending(id, rd.Early)
			return
		}
		if rd.Truncate != nil {
			if err := c.truncate(id, *rd.Truncate); err != nil {
				c.fail(id, err)
				return
			}
		}
		if rd.InstallSnapshot {
			c.installSnapshot(id, rd.SnapshotZxid, rd.Snapshot)
		}
		c.logs[id] = append(c.logs[id], rd.Entries...)
		if rd.State != nil {
			logWork := rd.Truncate != nil || rd.InstallSnapshot || len(rd.Entries) > 0
			if logWork && rd.State.CurrentEpoch > c.hard[id].CurrentEpoch && c.crashBeforeState != nil && c.crashBeforeState() {
				c.crashAfterSending(id, rd.Early)
				return
			}
			c.hard[id] = *rd.State
		}
		if rd.Config != nil {
			if c.configHook != nil {
				c.configHook(id, c.confOf(id), *rd.Config)
			}
			c.confs[id] = *rd.Config
		}
		for _, m := range slices.Concat(rd.Early, rd.Messages) {
			if m.Type == MsgSnap && slices.Contains(rd.SendSnapshots, m.To) {
				var buf bytes.Buffer
				if err := gob.NewEncoder(&buf).Encode(c.applied[id]); err != nil {
					c.t.Fatal(err)
				}
				m.Data = buf.Bytes()
			}
			if traceFilter == nil || traceFilter(m) {
				c.trace = append(c.trace, m)
			}
			if len(c.trace) > 200 {
				c.trace = c.trace[100:]
			}
			c.queue = append(c.queue, m)
		}
		for _, p := range rd.Disconnect {
			c.queue = append(c.queue, Message{Type: MsgDisconnected, From: id, To: p})
		}
		c.applied[id] = append(c.applied[id], rd.Committed...)
		if rd.Role != nil {
			c.serving[id] = rd.Role.Serving
		}
		if c.serving[id] && c.committedHook != nil && c.recorded[id] < len(c.applied[id]) {
			c.committedHook(id, c.applied[id][c.recorded[id]:])
			c.recorded[id] = len(c.applied[id])
		}
		n.Advance(rd)
	}
}

// confOf returns the configurations node id persisted, or those it
// started with.
func (c *cluster) confOf(id PeerID) ConfigState {
	if cs, ok := c.confs[id]; ok {
		return cs
	}
	cfg := c.cfgs[id]
	return ConfigState{Active: Membership{Version: cfg.ConfigVersion, Voters: cfg.Voters, Observers: cfg.Observers,
		Text: cfg.ConfigText}, Next: cfg.NextConfig}
}

// step delivers one message, or ticks everyone when nothing is in flight.
func (c *cluster) step() {
	for _, id := range c.ids {
		if !c.down[id] {
			c.handle(id)
		}
	}
	if len(c.queue) == 0 {
		c.ticks++
		for _, id := range c.ids {
			if !c.down[id] {
				c.nodes[id].Tick()
			}
		}
		return
	}
	m := c.queue[0]
	c.queue = c.queue[1:]
	if c.down[m.To] || c.cut[[2]PeerID{m.From, m.To}] {
		return
	}
	c.deliver(m)
}

// deliver steps m into its destination, through deliverHook.
func (c *cluster) deliver(m Message) {
	if c.deliverHook != nil {
		c.deliverHook(&m)
	}
	c.lastStepped = m
	_ = c.nodes[m.To].Step(m)
}

// until steps until cond holds, failing after max steps.
func (c *cluster) until(max int, what string, cond func() bool) {
	c.t.Helper()
	for i := 0; i < max; i++ {
		if cond() {
			return
		}
		c.step()
	}
	tail := c.trace
	if len(tail) > 40 {
		tail = tail[len(tail)-40:]
	}
	c.t.Fatalf("after %d steps: not %s\nroles: %s\nlast messages:\n%s", max, what, c.roles(), joinLines(tail))
}

func joinLines(s []Message) string {
	var b bytes.Buffer
	for _, l := range s {
		b.WriteString("  " + l.String() + "\n")
	}
	return b.String()
}

func (c *cluster) roles() string {
	var b bytes.Buffer
	for _, id := range c.ids {
		n := c.nodes[id]
		fmt.Fprintf(&b, "%d:%s(leader %d, serving %v, epoch %d, last %s) ", id, n.Role(), n.Leader(), n.Serving(), n.Epoch(), n.LastZxid())
	}
	return b.String()
}

// stable reports whether every live node serves under one leader.
func (c *cluster) stable() (PeerID, bool) {
	var leader PeerID
	for _, id := range c.ids {
		if c.down[id] {
			continue
		}
		n := c.nodes[id]
		if !n.Serving() {
			return 0, false
		}
		if leader == 0 {
			leader = n.Leader()
		}
		if n.Leader() != leader {
			return 0, false
		}
	}
	return leader, leader != 0 && !c.down[leader]
}

// propose makes the leader propose k txns.
func (c *cluster) propose(leader PeerID, k int) []zxid.ID {
	c.t.Helper()
	n := c.nodes[leader]
	var out []zxid.ID
	for i := 0; i < k; i++ {
		z := n.NextZxid()
		if err := n.Propose(z, []byte(fmt.Sprintf("txn %s", z))); err != nil {
			c.t.Fatalf("propose %s on %d: %v", z, leader, err)
		}
		out = append(out, z)
	}
	return out
}

// appliedUpTo reports whether every live node applied z.
func (c *cluster) appliedUpTo(z zxid.ID) bool {
	for _, id := range c.ids {
		a := c.applied[id]
		if c.down[id] {
			continue
		}
		if len(a) == 0 || a[len(a)-1].Zxid < z {
			return false
		}
	}
	return true
}

// checkPrefix fails unless every node's state machine is a prefix of the
// longest one: the total order Zab promises.
func (c *cluster) checkPrefix() {
	c.t.Helper()
	var longest []Entry
	for _, id := range c.ids {
		if !c.down[id] && len(c.applied[id]) > len(longest) {
			longest = c.applied[id]
		}
	}
	for _, id := range c.ids {
		if c.down[id] {
			continue // a stopped node's state may hold txns never committed
		}
		a := c.applied[id]
		for i := range a {
			if a[i].Zxid != longest[i].Zxid || !bytes.Equal(a[i].Data, longest[i].Data) {
				c.t.Fatalf("node %d applied %s at %d, another node %s", id, a[i].Zxid, i, longest[i].Zxid)
			}
		}
	}
}

func entries(epoch zxid.Epoch, counters ...uint32) []Entry {
	var out []Entry
	for _, k := range counters {
		z := zxid.Make(epoch, k)
		out = append(out, Entry{Zxid: z, Data: []byte(fmt.Sprintf("txn %s", z))})
	}
	return out
}

// traceFilter, when set by a debugging test, selects the messages traced.
var traceFilter func(Message) bool
