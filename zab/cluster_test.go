package zab

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"keeper/zxid"
)

// cluster runs nodes in memory: links are FIFO queues, disks are slices,
// the state machine is the list of applied entries. Time only moves when
// the test ticks.
type cluster struct {
	t       testing.TB
	ids     []PeerID
	cfgs    map[PeerID]Config
	nodes   map[PeerID]*Node
	logs    map[PeerID][]Entry // what each node made durable
	hard    map[PeerID]HardState
	applied map[PeerID][]Entry // each node's state machine
	snaps   map[PeerID][]Entry // the snapshot each node installed last (durable)
	queue   []Message
	down    map[PeerID]bool
	cut     map[[2]PeerID]bool
	trace   []string
	// committedHook, if set, sees every batch a node applies as committed.
	committedHook func(PeerID, []Entry)
	// crashMidBatch, if set, is asked for each batch with Early messages
	// and something to persist: true crashes the node after those
	// messages left and before the batch reached its disk.
	crashMidBatch func() bool
}

func newCluster(t testing.TB, voters, observers []PeerID, mutate func(PeerID, *Config)) *cluster {
	c := &cluster{t: t, cfgs: map[PeerID]Config{}, nodes: map[PeerID]*Node{}, logs: map[PeerID][]Entry{},
		hard: map[PeerID]HardState{}, applied: map[PeerID][]Entry{}, snaps: map[PeerID][]Entry{},
		down: map[PeerID]bool{}, cut: map[[2]PeerID]bool{}}
	c.ids = append(slices.Clone(voters), observers...)
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

// start (re)creates node id from what it made durable.
func (c *cluster) start(id PeerID) {
	cfg := c.cfgs[id]
	cfg.HardState = c.hard[id]
	cfg.Recent = slices.Clone(c.logs[id])
	cfg.LastZxid = 0
	if k := len(c.snaps[id]); k > 0 {
		cfg.LastZxid = c.snaps[id][k-1].Zxid
	}
	if k := len(cfg.Recent); k > 0 {
		cfg.LastZxid = cfg.Recent[k-1].Zxid
	}
	// At start-up the state machine is the snapshot plus the whole log, as
	// in ZooKeeper.
	c.applied[id] = append(slices.Clone(c.snaps[id]), c.logs[id]...)
	n, err := New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.nodes[id] = n
	c.down[id] = false
}

// crash stops a node; what it had not made durable is gone.
func (c *cluster) crash(id PeerID) {
	c.down[id] = true
	c.dropLinks(id)
}

// crashAfterSending crashes id once sent left: they stay in flight behind
// what id sent before, ahead of the news that its links broke.
func (c *cluster) crashAfterSending(id PeerID, sent []Message) {
	c.down[id] = true
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

// handle carries out a node's Ready batches.
func (c *cluster) handle(id PeerID) {
	n := c.nodes[id]
	for n.HasReady() {
		rd := n.Ready()
		if len(rd.Early) > 0 && (len(rd.Entries) > 0 || rd.State != nil) && c.crashMidBatch != nil && c.crashMidBatch() {
			c.crashAfterSending(id, rd.Early)
			return
		}
		if rd.State != nil {
			c.hard[id] = *rd.State
		}
		if rd.Truncate != nil {
			z := *rd.Truncate
			i := slices.IndexFunc(c.logs[id], func(e Entry) bool { return e.Zxid > z })
			if i >= 0 {
				c.logs[id] = c.logs[id][:i]
			}
			c.applied[id] = append(slices.Clone(c.snaps[id]), c.logs[id]...) // rebuilt
		}
		if rd.InstallSnapshot {
			var state []Entry
			if err := gob.NewDecoder(bytes.NewReader(rd.Snapshot)).Decode(&state); err != nil {
				c.t.Fatalf("node %d: bad snapshot: %v", id, err)
			}
			c.applied[id] = state
			c.snaps[id] = slices.Clone(state)
			c.logs[id] = nil
		}
		c.logs[id] = append(c.logs[id], rd.Entries...)
		for _, m := range slices.Concat(rd.Early, rd.Messages) {
			if m.Type == MsgSnap && slices.Contains(rd.SendSnapshots, m.To) {
				var buf bytes.Buffer
				if err := gob.NewEncoder(&buf).Encode(c.applied[id]); err != nil {
					c.t.Fatal(err)
				}
				m.Data = buf.Bytes()
			}
			if traceFilter == nil || traceFilter(m) {
				c.trace = append(c.trace, m.String())
			}
			if len(c.trace) > 200 {
				c.trace = c.trace[100:]
			}
			c.queue = append(c.queue, m)
		}
		for _, p := range rd.Disconnect {
			c.queue = append(c.queue, Message{Type: MsgDisconnected, From: id, To: p})
		}
		if rd.InstallSnapshot && c.committedHook != nil {
			c.committedHook(id, c.applied[id])
		}
		if c.committedHook != nil && len(rd.Committed) > 0 {
			c.committedHook(id, rd.Committed)
		}
		c.applied[id] = append(c.applied[id], rd.Committed...)
		n.Advance(rd)
	}
}

// step delivers one message, or ticks everyone when nothing is in flight.
func (c *cluster) step() {
	for _, id := range c.ids {
		if !c.down[id] {
			c.handle(id)
		}
	}
	if len(c.queue) == 0 {
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

func joinLines(s []string) string {
	var b bytes.Buffer
	for _, l := range s {
		b.WriteString("  " + l + "\n")
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
