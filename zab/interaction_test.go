package zab

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"keeper/zxid"
)

// TestInteraction replays the scenarios in testdata/. Each lists commands
// and the exact output they must produce; after an intended change of
// behaviour, rerun with -rewrite and review the diff as you would code.
//
// Commands:
//
//	peers voters=(1,2,3) [observers=(4)] [window=N]  declare the ensemble
//	history id=N epoch=E log=(1.1,1.2)               a peer's disk before start
//	start                                            create the nodes
//	stabilize                                        run until one leader serves all
//	propose n=K                                      the leader proposes K txns
//	settle                                           run until every live node applied everything
//	crash id=N / restart id=N                        lose a node (unsynced state too) / bring it back
//	status                                           role, leader, epoch, last and applied zxids
//	syncs                                            the sync messages (DIFF, TRUNC, SNAP) sent so far
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		env := &interactionEnv{t: t, histories: map[PeerID]history{}}
		datadriven.RunTest(t, path, env.handle)
	})
}

type history struct {
	epoch zxid.Epoch
	log   []Entry
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
		var log []Entry
		for _, s := range argValues(t, d, "log") {
			z := parseZxid(t, s)
			log = append(log, Entry{Zxid: z, Data: []byte("txn " + z.String())})
		}
		e.histories[PeerID(id)] = history{epoch: zxid.Epoch(epoch), log: log}
		return "ok"
	case "start":
		e.c = newCluster(t, e.voters, e.observers, func(id PeerID, cfg *Config) {
			if e.window > 0 {
				cfg.MaxRecentEntries = e.window
			}
			if h, ok := e.histories[id]; ok {
				cfg.HardState = HardState{AcceptedEpoch: h.epoch, CurrentEpoch: h.epoch}
				cfg.Recent = h.log
				if len(h.log) > 0 {
					cfg.LastZxid = h.log[len(h.log)-1].Zxid
				}
			}
		})
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

func (e *interactionEnv) status() string {
	var b strings.Builder
	for _, id := range e.c.ids {
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
