package watch

import (
	"maps"
	"slices"
)

// These report what the four-letter words show. Like ZooKeeper's, wchs,
// wchc and wchp look at the data table only; mntr's zk_watch_count counts
// both (docs/zookeeper-protocol.md §3.7). One difference: after a connection's last one-shot
// data watch fires, ZooKeeper keeps counting that connection (with no
// paths) in wchs and listing it in wchc until it closes; here it is gone
// at once.

// DataWatchCount returns the number of (path, connection) pairs in the
// data table, whatever their modes: wchs's "Total watches".
func (m *Manager) DataWatchCount() int { return m.data.entries }

// Count returns the number of (path, connection) pairs in both tables:
// mntr's zk_watch_count. A persistent watch counts twice.
func (m *Manager) Count() int { return m.data.entries + m.child.entries }

// ConnCount returns the number of connections with a data-table watch:
// the n in wchs's "<n> connections watching <m> paths".
func (m *Manager) ConnCount() int { return len(m.data.byConn) }

// PathCount returns the number of distinct paths in the data table: the m
// in wchs's "<n> connections watching <m> paths".
func (m *Manager) PathCount() int { return len(m.data.byPath) }

// ConnWatches is one connection's data-table watches, for wchc.
type ConnWatches struct {
	Conn  ConnID
	Paths []string // ascending
}

// PathWatches is one path's data-table watchers, for wchp.
type PathWatches struct {
	Path  string
	Conns []ConnID // ascending
}

// ByConn returns the data-table watches grouped by connection, in
// ascending connection order. It costs a full copy; it is for wchc only.
func (m *Manager) ByConn() []ConnWatches {
	out := make([]ConnWatches, 0, len(m.data.byConn))
	for _, c := range slices.Sorted(maps.Keys(m.data.byConn)) {
		out = append(out, ConnWatches{Conn: c, Paths: slices.Sorted(maps.Keys(m.data.byConn[c]))})
	}
	return out
}

// ByPath returns the data-table watches grouped by path, in ascending path
// order. It costs a full copy; it is for wchp only.
func (m *Manager) ByPath() []PathWatches {
	out := make([]PathWatches, 0, len(m.data.byPath))
	for _, p := range slices.Sorted(maps.Keys(m.data.byPath)) {
		out = append(out, PathWatches{Path: p, Conns: slices.Sorted(maps.Keys(m.data.byPath[p]))})
	}
	return out
}
