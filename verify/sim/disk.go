package sim

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"

	"keeper/coordination/datatree"
	"keeper/coordination/txn"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
)

// errCrash is what a disk returns when a failpoint fires: the server dies
// at that exact point of its storage work.
var errCrash = errors.New("sim: crashed at a failpoint")

// failpoint is a storage operation a server can be made to crash at.
type failpoint uint8

const (
	fpNone         failpoint = iota
	fpSaveState              // before the epochs are written
	fpAppend                 // before txns are appended
	fpSync                   // after the append, before the sync: the txns are not durable
	fpTruncate               // before a TRUNC is carried out
	fpSnapshot               // before a snapshot from the leader is installed
	failpointCount           // number of failpoints, for drawing one
	fpFirst        = fpSaveState
)

func (f failpoint) String() string {
	return [...]string{"none", "save-state", "append", "sync", "truncate", "snapshot"}[f]
}

// disk is one server's durable state, in memory: the epoch files, the
// newest snapshot and the txn log after it. Entries past synced are written
// but not durable: a crash keeps a random prefix of them (the OS may have
// flushed some). It implements peer.Log.
//
// It also keeps, next to the snapshot, the list of zxids the snapshot
// reflects: the simulator's record of each replica's history.
type disk struct {
	srv *server

	hard     zab.HardState
	snapZxid zxid.ID
	snapTree []byte
	snapSess []zkcore.SessionState
	snapHist []zxid.ID
	entries  []zab.Entry
	synced   int

	armed failpoint // crash at the next operation of this kind
}

func (d *disk) hit(fp failpoint) error {
	if d.armed != fp {
		return nil
	}
	d.armed = fpNone
	return fmt.Errorf("server %d at %s: %w", d.srv.id, fp, errCrash)
}

// SaveState writes the epochs durably.
func (d *disk) SaveState(hs zab.HardState) error {
	if err := d.hit(fpSaveState); err != nil {
		return err
	}
	d.hard = hs
	return nil
}

// Append writes txns; they are durable after Sync.
func (d *disk) Append(es []zab.Entry) error {
	if err := d.hit(fpAppend); err != nil {
		return err
	}
	if n := len(d.entries); n > 0 && len(es) > 0 && es[0].Zxid <= d.entries[n-1].Zxid {
		return fmt.Errorf("sim: server %d appends %s after %s", d.srv.id, es[0].Zxid, d.entries[n-1].Zxid)
	}
	for _, e := range es {
		d.srv.c.oracle.logged(d.srv.c, d.srv.id, e)
	}
	d.entries = append(d.entries, es...)
	return d.hit(fpSync)
}

// Sync makes every appended txn durable.
func (d *disk) Sync() error {
	d.synced = len(d.entries)
	return nil
}

// Truncate removes every txn after z, durably.
func (d *disk) Truncate(z zxid.ID) error {
	if err := d.hit(fpTruncate); err != nil {
		return err
	}
	d.srv.account()
	d.srv.c.oracle.truncating(d.srv.c, d.srv.id, z, d.entries)
	d.srv.c.stats.Truncates++
	d.srv.c.tracef("server %d truncates its log after %s", d.srv.id, z)
	i := sort.Search(len(d.entries), func(i int) bool { return d.entries[i].Zxid > z })
	d.entries = d.entries[:i]
	d.synced = min(d.synced, i)
	return nil
}

// InstallSnapshot makes the leader's snapshot, taken at z, the durable
// state; the log restarts after z.
func (d *disk) InstallSnapshot(z zxid.ID, tree *datatree.Tree, sessions []zkcore.SessionState) error {
	if err := d.hit(fpSnapshot); err != nil {
		return err
	}
	d.srv.account()
	var buf bytes.Buffer
	if err := tree.WriteBody(&buf); err != nil {
		return err
	}
	d.snapZxid, d.snapTree, d.snapSess = z, buf.Bytes(), slices.Clone(sessions)
	d.snapHist = d.srv.c.leaderHistory(d.srv, z)
	d.entries, d.synced = nil, 0
	d.srv.setHistory(slices.Clone(d.snapHist), z)
	d.srv.c.stats.Snapshots++
	d.srv.c.tracef("server %d installs a snapshot at %s", d.srv.id, z)
	return nil
}

// Reload rebuilds the tree and sessions from the snapshot and the log, as
// at start-up.
func (d *disk) Reload() (*datatree.Tree, []zkcore.SessionState, error) {
	tree := datatree.New()
	if d.snapTree != nil {
		t, err := datatree.ReadBody(bytes.NewReader(d.snapTree), 0)
		if err != nil {
			return nil, nil, err
		}
		tree = t
		tree.SetLastZxid(d.snapZxid)
	}
	sessions := map[int64]int32{}
	for _, s := range d.snapSess {
		sessions[s.ID] = s.TimeoutMs
	}
	hist := slices.Clone(d.snapHist)
	for _, e := range d.entries {
		t, err := txn.Unmarshal(e.Data, 0)
		if err != nil {
			return nil, nil, err
		}
		tree.Apply(t)
		hist = append(hist, e.Zxid)
		switch cs := t.Record.(type) {
		case *txn.CreateSession:
			sessions[t.Header.ClientID] = cs.TimeoutMs
		case *txn.CloseSession:
			delete(sessions, t.Header.ClientID)
		}
	}
	ids := make([]int64, 0, len(sessions))
	for id := range sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]zkcore.SessionState, 0, len(ids))
	for _, id := range ids {
		out = append(out, zkcore.SessionState{ID: id, TimeoutMs: sessions[id]})
	}
	d.srv.setHistory(hist, tree.LastZxid())
	return tree, out, nil
}

// crash drops what a power cut would: all but a random prefix of the
// unsynced txns. Epochs and snapshots are written durably at once.
func (d *disk) crash(rng *rand.Rand) {
	keep := d.synced + rng.IntN(len(d.entries)-d.synced+1)
	d.entries = slices.Clone(d.entries[:keep])
	d.synced = keep
	d.armed = fpNone
}

// lastZxid is the last zxid in the log, or the snapshot's.
func (d *disk) lastZxid() zxid.ID {
	if n := len(d.entries); n > 0 {
		return d.entries[n-1].Zxid
	}
	return d.snapZxid
}

// between returns the zxids of the logged txns in (from, to].
func (d *disk) between(from, to zxid.ID) []zxid.ID {
	lo := sort.Search(len(d.entries), func(i int) bool { return d.entries[i].Zxid > from })
	var out []zxid.ID
	for _, e := range d.entries[lo:] {
		if e.Zxid > to {
			break
		}
		out = append(out, e.Zxid)
	}
	return out
}
