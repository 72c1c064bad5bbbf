package sim

import (
	"bytes"
	"fmt"

	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zab"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// oracle is what the simulator knows that no single server does: every txn
// any server logged, every txn any replica applied as committed, the digest
// replicas had at each zxid, and — once the cluster converged — the final
// committed history replayed from scratch.
type oracle struct {
	txns map[zxid.ID]loggedTxn
	// leaders maps an epoch to the server that established it, the one
	// that proposes its txns. (The first server to log a txn need not be
	// its proposer: a leader sends a proposal before its own write ends.)
	leaders map[zxid.Epoch]zab.PeerID
	applied map[zxid.ID]zab.PeerID // the first replica seen applying it
	digests map[zxid.ID]digestObs
	final   *finalHistory
}

type loggedTxn struct {
	data   []byte
	server zab.PeerID // the first server seen logging it
}

// proposer returns the server that proposed z: the leader of its epoch.
func (o *oracle) proposer(z zxid.ID) zab.PeerID {
	if id, ok := o.leaders[z.Epoch()]; ok {
		return id
	}
	return o.txns[z].server
}

type digestObs struct {
	digest   int64
	server   zab.PeerID
	atMs     int64
	reported bool
}

func (o *oracle) init() {
	o.txns = map[zxid.ID]loggedTxn{}
	o.leaders = map[zxid.Epoch]zab.PeerID{}
	o.applied = map[zxid.ID]zab.PeerID{}
	o.digests = map[zxid.ID]digestObs{}
}

// logged notes a txn a server appended to its log. One zxid is proposed
// once, by the one leader of its epoch: two payloads for it mean two
// leaders in one epoch.
func (o *oracle) logged(c *Cluster, id zab.PeerID, e zab.Entry) {
	old, ok := o.txns[e.Zxid]
	if !ok {
		o.txns[e.Zxid] = loggedTxn{data: bytes.Clone(e.Data), server: id}
		return
	}
	if !bytes.Equal(old.data, e.Data) {
		if _, applied := o.applied[e.Zxid]; c.opts.Standalone && !applied {
			// A standalone server has no epochs: after a crash lost a
			// txn it logged but never applied (nor answered), it gives
			// the zxid to its next write, as ZooKeeper's does.
			o.txns[e.Zxid] = loggedTxn{data: bytes.Clone(e.Data), server: id}
			return
		}
		c.violate("zab", "zxid %s logged with different txns by server %d (%s) and server %d (%s)",
			e.Zxid, old.server, describeTxn(old.data), id, describeTxn(e.Data))
	}
}

// noteApplied notes a txn a replica applied as committed.
func (o *oracle) noteApplied(id zab.PeerID, z zxid.ID) {
	if _, ok := o.applied[z]; !ok {
		o.applied[z] = id
	}
}

// truncating checks a TRUNC: it may only remove txns nobody applied.
func (o *oracle) truncating(c *Cluster, id zab.PeerID, z zxid.ID, logged []zxid.ID) {
	for _, l := range logged {
		if by, ok := o.applied[l]; ok && l > z {
			c.violate("durability", "server %d truncates its log to %s, dropping %s, which server %d applied as committed",
				id, z, l, by)
			return
		}
	}
}

// digest notes a replica's tree digest at zxid z and compares it with what
// other replicas had there.
func (o *oracle) digest(c *Cluster, id zab.PeerID, z zxid.ID, d int64) {
	old, ok := o.digests[z]
	if !ok {
		o.digests[z] = digestObs{digest: d, server: id, atMs: c.nowMs}
		return
	}
	if old.digest != d && !old.reported {
		old.reported = true
		o.digests[z] = old
		c.violate("digest", "at zxid %s server %d has digest %#x, server %d had %#x (t=%dms)",
			z, id, d, old.server, old.digest, old.atMs)
	}
}

// describeTxn renders a logged txn for a message.
func describeTxn(data []byte) string {
	t, err := txn.Unmarshal(data, jute.DefaultMaxBuffer)
	if err != nil {
		return "undecodable: " + err.Error()
	}
	return describe(t)
}

func describe(t *txn.Txn) string {
	s := t.Header.Type.String()
	switch r := t.Record.(type) {
	case *txn.Create:
		s += " " + r.Path + " " + string(r.Data)
	case *txn.SetData:
		s += " " + r.Path + " " + string(r.Data)
	case *txn.Delete:
		s += " " + r.Path
	case *txn.Error:
		s += " " + zkproto.Code(r.Err).String()
	}
	return fmt.Sprintf("%s session %#x", s, hex(t.Header.ClientID))
}

// pathState is a znode of the workload after some zxid.
type pathState struct {
	zxid    zxid.ID
	exists  bool
	data    []byte
	version int32
	owner   int64
}

// finalHistory is the committed history every replica ended with, replayed
// on a fresh tree.
type finalHistory struct {
	zxids   []zxid.ID
	txns    []*txn.Txn
	digests []int64 // the tree digest after each txn
	index   map[zxid.ID]int
	// byRequest finds the txn of a client request: session, then cxid.
	byRequest map[[2]int64]int
	// paths is each workload znode's states, in zxid order.
	paths map[string][]pathState
	// closed is the zxid of each session's (first) closeSession txn.
	closed  map[int64]zxid.ID
	created map[int64]zxid.ID
	last    *datatree.Tree
}

// replay rebuilds the final history from its zxids.
func (o *oracle) replay(c *Cluster, zxids []zxid.ID) *finalHistory {
	f := &finalHistory{zxids: zxids, index: map[zxid.ID]int{}, byRequest: map[[2]int64]int{},
		paths: map[string][]pathState{}, closed: map[int64]zxid.ID{}, created: map[int64]zxid.ID{}}
	tree := datatree.New()
	for i, z := range zxids {
		lt, ok := o.txns[z]
		if !ok {
			c.violate("history", "final history holds %s, which no server ever logged", z)
			return nil
		}
		t, err := txn.Unmarshal(lt.data, jute.DefaultMaxBuffer)
		if err != nil {
			c.violate("history", "txn %s does not decode: %v", z, err)
			return nil
		}
		f.txns = append(f.txns, t)
		f.index[z] = i
		if t.Header.ClientID != 0 && t.Header.Type != zkproto.OpCreateSession {
			key := [2]int64{t.Header.ClientID, int64(t.Header.Cxid)}
			if j, dup := f.byRequest[key]; dup && t.Header.Cxid != 0 {
				c.violate("durability", "request xid %d of session %#x was committed twice: at %s and %s",
					t.Header.Cxid, hex(t.Header.ClientID), zxids[j], z)
			}
			f.byRequest[key] = i
		}
		_, changes := tree.Apply(t)
		f.digests = append(f.digests, tree.Digest())
		f.notePaths(tree, z, changes)
		switch t.Header.Type {
		case zkproto.OpCreateSession:
			f.created[t.Header.ClientID] = z
		case zkproto.OpCloseSession:
			if _, ok := f.closed[t.Header.ClientID]; !ok {
				f.closed[t.Header.ClientID] = z // a second close is flagged by checkEphemerals
			}
		}
	}
	f.last = tree
	return f
}

// notePaths records the new state of every workload znode a txn changed.
func (f *finalHistory) notePaths(tree *datatree.Tree, z zxid.ID, changes []datatree.Change) {
	for _, ch := range changes {
		if ch.Type == zkproto.EventNodeChildrenChanged {
			continue
		}
		st := pathState{zxid: z}
		if n := tree.Node(ch.Path); n != nil {
			p := n.Persisted()
			st = pathState{zxid: z, exists: true, data: n.Data(), version: p.Version, owner: p.EphemeralOwner}
		}
		hist := f.paths[ch.Path]
		if k := len(hist); k > 0 && hist[k-1].zxid == z {
			hist[k-1] = st
			continue
		}
		f.paths[ch.Path] = append(hist, st)
	}
}

// stateAt returns path's state once every txn up to z was applied.
func (f *finalHistory) stateAt(path string, z zxid.ID) pathState {
	hist := f.paths[path]
	lo, hi := 0, len(hist)
	for lo < hi {
		m := (lo + hi) / 2
		if hist[m].zxid <= z {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return pathState{}
	}
	return hist[lo-1]
}

// request returns the txn of a client request, if it is in the history.
func (f *finalHistory) request(session int64, cxid int32) (*txn.Txn, bool) {
	i, ok := f.byRequest[[2]int64{session, int64(cxid)}]
	if !ok {
		return nil, false
	}
	return f.txns[i], true
}
