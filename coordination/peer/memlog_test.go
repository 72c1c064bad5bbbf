package peer

import (
	"bytes"
	"fmt"
	"slices"

	"keeper/coordination/datatree"
	"keeper/coordination/txn"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
)

// memLog is a Log in memory: a snapshot (tree bytes and sessions) and the
// entries after it. durable is what survives a crash.
type memLog struct {
	hard     zab.HardState
	snapZxid zxid.ID
	snapTree []byte
	snapSess []zkcore.SessionState
	entries  []zab.Entry // appended; all durable after Sync
	synced   int         // entries[:synced] are durable
	// failAppend, when set, is what Append returns: a broken disk.
	failAppend error
}

func (l *memLog) SaveState(hs zab.HardState) error { l.hard = hs; return nil }

func (l *memLog) Append(es []zab.Entry) error {
	if l.failAppend != nil {
		return l.failAppend
	}
	if n := len(l.entries); n > 0 && es[0].Zxid <= l.entries[n-1].Zxid {
		return fmt.Errorf("append %s after %s", es[0].Zxid, l.entries[n-1].Zxid)
	}
	l.entries = append(l.entries, es...)
	return nil
}

func (l *memLog) Sync() error { l.synced = len(l.entries); return nil }

func (l *memLog) Truncate(z zxid.ID) error {
	i := slices.IndexFunc(l.entries, func(e zab.Entry) bool { return e.Zxid > z })
	if i >= 0 {
		l.entries = l.entries[:i]
	}
	l.synced = min(l.synced, len(l.entries))
	return nil
}

func (l *memLog) InstallSnapshot(z zxid.ID, tree *datatree.Tree, sessions []zkcore.SessionState) error {
	var buf bytes.Buffer
	if err := tree.WriteBody(&buf); err != nil {
		return err
	}
	l.snapZxid, l.snapTree, l.snapSess = z, buf.Bytes(), slices.Clone(sessions)
	l.entries, l.synced = nil, 0
	return nil
}

func (l *memLog) Reload() (*datatree.Tree, []zkcore.SessionState, error) {
	tree := datatree.New()
	if l.snapTree != nil {
		t, err := datatree.ReadBody(bytes.NewReader(l.snapTree), 0)
		if err != nil {
			return nil, nil, err
		}
		tree = t
		tree.SetLastZxid(l.snapZxid)
	}
	sessions := map[int64]int32{}
	for _, s := range l.snapSess {
		sessions[s.ID] = s.TimeoutMs
	}
	for _, e := range l.entries {
		t, err := txn.Unmarshal(e.Data, 0)
		if err != nil {
			return nil, nil, err
		}
		tree.Apply(t)
		switch cs := t.Record.(type) {
		case *txn.CreateSession:
			sessions[t.Header.ClientID] = cs.TimeoutMs
		case *txn.CloseSession:
			delete(sessions, t.Header.ClientID)
		}
	}
	var out []zkcore.SessionState
	for _, id := range slices.Sorted(mapsKeys(sessions)) {
		out = append(out, zkcore.SessionState{ID: id, TimeoutMs: sessions[id]})
	}
	return tree, out, nil
}

// crashed returns what a crash leaves: only synced entries.
func (l *memLog) crashed() *memLog {
	c := *l
	c.entries = slices.Clone(l.entries[:l.synced])
	return &c
}

// lastZxid and recent describe the log for zab.Config.
func (l *memLog) lastZxid() zxid.ID {
	if n := len(l.entries); n > 0 {
		return l.entries[n-1].Zxid
	}
	return l.snapZxid
}

func mapsKeys(m map[int64]int32) func(func(int64) bool) {
	return func(yield func(int64) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
