package zab

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"keeper/coordination/zxid"
)

// TestInteraction replays the scenarios in testdata/. Each lists commands
// and the exact output they must produce; after an intended change of
// behaviour, rerun with -rewrite and review the diff as you would code.
//
// Commands:
//
//	peers voters=(1,2,3) [observers=(4)] [window=N]  declare the ensemble
//	history id=N epoch=E [accepted=A] log=(1.1,1.2) [snap=(1.1,2.1)]
//	                                                 a peer's disk before start: currentEpoch E
//	                                                 (acceptedEpoch A, default E), its log, and a
//	                                                 snapshot holding the txns listed
//	start                                            create the nodes
//	stabilize                                        run until one leader serves all
//	propose n=K                                      the leader proposes K txns
//	settle                                           run until every live node applied everything
//	crash id=N / restart id=N                        lose a node (unsynced state too) / bring it back
//	deliver-until to=N type=SNAP                     run until a message of that type reached N
//	status                                           role, leader, epoch, last and applied zxids
//	disk id=N                                        what N made durable: epochs, snapshots, log
//	syncs                                            the sync messages (DIFF, TRUNC, SNAP) sent so far
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		env := &interactionEnv{t: t, histories: map[PeerID]history{}}
		datadriven.RunTest(t, path, env.handle)
	})
}

type history struct {
	epoch, accepted zxid.Epoch
	log, snap       []Entry
}

type interactionEnv struct {
	t         *testing.T
	voters    []PeerID
	observers []PeerID
	window    int
	histories map[PeerID]history
	c         *cluster
	syncs     []string
}

func (e *interactionEnv) handle(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "peers":
		e.voters = peerList(t, d, "voters")
		if d.HasArg("observers") {
			e.observers = peerList(t, d, "observers")
		}
		if d.HasArg("window") {
			d.ScanArgs(t, "window", &e.window)
		}
		return "ok"
	case "history":
		var id, epoch int
		d.ScanArgs(t, "id", &id)
		d.ScanArgs(t, "epoch", &epoch)
		accepted := epoch
		if d.HasArg("accepted") {
			d.ScanArgs(t, "accepted", &accepted)
		}
		h := history{epoch: zxid.Epoch(epoch), accepted: zxid.Epoch(accepted), log: txnList(t, argValues(t, d, "log"))}
		if d.HasArg("snap") {
			h.snap = txnList(t, argValues(t, d, "snap"))
		}
		e.histories[PeerID(id)] = h
		return "ok"
	case "start":
		e.c = newCluster(t, e.voters, e.observers, func(id PeerID, cfg *Config) {
			if e.window > 0 {
				cfg.MaxRecentEntries = e.window
			}
			if h, ok := e.histories[id]; ok {
				cfg.HardState = HardState{AcceptedEpoch: h.accepted, CurrentEpoch: h.epoch}
				cfg.Recent = h.log
				if len(h.log) > 0 {
					cfg.LastZxid = h.log[len(h.log)-1].Zxid
				}
			}
		})
		for _, id := range e.c.ids {
			if h := e.histories[id]; len(h.snap) > 0 {
				// Start again from a disk with the snapshot.
				e.c.snaps[id] = []snapshot{{zxid: h.snap[len(h.snap)-1].Zxid, state: h.snap}}
				e.c.start(id)
			}
		}
		traceFilter = func(m Message) bool {
			if m.Type == MsgDiff || m.Type == MsgTrunc || m.Type == MsgSnap {
				e.syncs = append(e.syncs, fmt.Sprintf("%d->%d %s %s", m.From, m.To, m.Type, m.Zxid))
			}
			return true
		}
		t.Cleanup(func() { traceFilter = nil })
		return "ok"
	case "stabilize":
		e.c.until(5000, "stable", func() bool { _, ok := e.c.stable(); return ok })
		return e.status()
	case "propose":
		var n int
		d.ScanArgs(t, "n", &n)
		l, ok := e.c.stable()
		if !ok {
			return "no serving leader"
		}
		var zs []string
		for _, z := range e.c.propose(l, n) {
			zs = append(zs, z.String())
		}
		return strings.Join(zs, " ")
	case "settle":
		e.c.until(5000, "settled", func() bool {
			_, ok := e.c.stable()
			return ok && len(e.c.queue) == 0 && e.allApplied()
		})
		e.c.checkPrefix()
		return e.status()
	case "crash":
		var id int
		d.ScanArgs(t, "id", &id)
		e.c.crash(PeerID(id))
		return "ok"
	case "restart":
		var id int
		d.ScanArgs(t, "id", &id)
		e.c.start(PeerID(id))
		return "ok"
	case "deliver-until":
		var to int
		var typ string
		d.ScanArgs(t, "to", &to)
		d.ScanArgs(t, "type", &typ)
		e.deliverUntil(PeerID(to), typ)
		return "ok"
	case "disk":
		var id int
		d.ScanArgs(t, "id", &id)
		return e.disk(PeerID(id))
	case "status":
		return e.status()
	case "syncs":
		out := strings.Join(e.syncs, "\n")
		e.syncs = nil
		return out
	}
	t.Fatalf("unknown command %s", d.Cmd)
	return ""
}

// allApplied reports whether every live node applied every entry of the
// longest log among them.
func (e *interactionEnv) allApplied() bool {
	var last zxid.ID
	for _, id := range e.c.ids {
		if !e.c.down[id] {
			last = max(last, e.c.nodes[id].LastZxid())
		}
	}
	return e.c.appliedUpTo(last)
}

// deliverUntil runs the cluster until a message of type typ reached to.
func (e *interactionEnv) deliverUntil(to PeerID, typ string) {
	e.c.lastStepped = Message{}
	e.c.until(5000, "delivered "+typ, func() bool {
		m := e.c.lastStepped
		return m.To == to && m.Type.String() == typ
	})
}

// disk shows what a node made durable.
func (e *interactionEnv) disk(id PeerID) string {
	hs := e.c.hard[id]
	var snaps []string
	for _, s := range e.c.snaps[id] {
		snaps = append(snaps, short(s.zxid))
	}
	var log []string
	for _, en := range e.c.logs[id] {
		log = append(log, short(en.Zxid))
	}
	return fmt.Sprintf("accepted=%d current=%d snapshots=(%s) log=(%s)", hs.AcceptedEpoch, hs.CurrentEpoch,
		strings.Join(snaps, ","), strings.Join(log, ","))
}

// short writes a zxid as epoch.counter.
func short(z zxid.ID) string { return fmt.Sprintf("%d.%d", z.Epoch(), z.Counter()) }

func (e *interactionEnv) status() string {
	var b strings.Builder
	for _, id := range e.c.ids {
		if err := e.c.failed[id]; err != nil {
			fmt.Fprintf(&b, "%d failed: %v\n", id, err)
			continue
		}
		if e.c.down[id] {
			fmt.Fprintf(&b, "%d down\n", id)
			continue
		}
		n := e.c.nodes[id]
		applied := zxid.ID(0)
		if a := e.c.applied[id]; len(a) > 0 {
			applied = a[len(a)-1].Zxid
		}
		fmt.Fprintf(&b, "%d %s leader=%d epoch=%d last=%s applied=%s\n", id, n.Role(), n.Leader(), n.Epoch(),
			n.LastZxid(), applied)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func peerList(t *testing.T, d *datadriven.TestData, key string) []PeerID {
	var out []PeerID
	for _, s := range argValues(t, d, key) {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		out = append(out, PeerID(v))
	}
	return out
}

func argValues(t *testing.T, d *datadriven.TestData, key string) []string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			return slices.Clone(a.Vals)
		}
	}
	t.Fatalf("missing argument %s", key)
	return nil
}

// txnList makes the txns with the zxids listed, as history writes them.
func txnList(t *testing.T, zs []string) []Entry {
	var out []Entry
	for _, s := range zs {
		z := parseZxid(t, s)
		out = append(out, Entry{Zxid: z, Data: []byte("txn " + z.String())})
	}
	return out
}

// parseZxid reads "epoch.counter".
func parseZxid(t *testing.T, s string) zxid.ID {
	e, c, ok := strings.Cut(s, ".")
	ev, err1 := strconv.ParseUint(e, 10, 32)
	cv, err2 := strconv.ParseUint(c, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("bad zxid %q, want epoch.counter", s)
	}
	return zxid.Make(zxid.Epoch(ev), uint32(cv))
}
