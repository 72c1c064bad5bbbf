package watch

import (
	"slices"

	"keeper/coordination/zkproto"
	"keeper/internal/invariants"
)

// ConnID identifies a watcher: a client connection, not a session. A
// session that reconnects gets a new ConnID and re-registers its watches
// with setWatches.
type ConnID uint64

// Manager holds the data and child watch tables.
type Manager struct {
	data  table
	child table
}

// New returns an empty Manager.
func New() *Manager {
	return &Manager{data: newTable(), child: newTable()}
}

// AddData registers a standard (one-shot) data watch of c on path: getData,
// exists (even for a missing node) and setWatches data/exist entries. It
// reports whether the watch is new; registering twice is harmless.
func (m *Manager) AddData(path string, c ConnID) bool {
	return m.data.add(path, c, modeStandard)
}

// AddChild registers a standard (one-shot) child watch of c on path:
// getChildren, getChildren2 and setWatches child entries. It reports
// whether the watch is new.
func (m *Manager) AddChild(path string, c ConnID) bool {
	return m.child.add(path, c, modeStandard)
}

// AddPersistent registers a persistent watch of c on path, in both tables.
// It reports whether either table changed.
func (m *Manager) AddPersistent(path string, c ConnID) bool {
	d := m.data.add(path, c, modePersistent)
	ch := m.child.add(path, c, modePersistent)
	return d || ch
}

// AddPersistentRecursive registers a persistent recursive watch of c on
// path, in the data table only: it sees created, changed and deleted events
// for path and every descendant, and never NodeChildrenChanged. It reports
// whether the watch is new.
func (m *Manager) AddPersistentRecursive(path string, c ConnID) bool {
	return m.data.add(path, c, modeRecursive)
}

// Trigger works out who is notified of event ev on path, consumes the
// standard watches that fire, and returns the connections to send
// WatcherEvent{ev, path} to, each once, in ascending order (docs/zookeeper-protocol.md §3.2):
//
//   - NodeCreated, NodeDataChanged: the data table, at path and, for
//     recursive watches, its ancestors.
//   - NodeChildrenChanged: the child table at path (the caller passes the
//     parent of the node created or deleted).
//   - NodeDeleted: the data table as above, then the child table at path.
//     A connection in both gets one event, and both its standard watches
//     are consumed. The caller then triggers NodeChildrenChanged on the
//     parent separately.
//
// Any other event type is a programming error. The slice is the caller's.
func (m *Manager) Trigger(ev zkproto.EventType, path string) []ConnID {
	var out []ConnID
	switch ev {
	case zkproto.EventNodeCreated, zkproto.EventNodeDataChanged:
		out = m.data.fire(path, nil)
	case zkproto.EventNodeChildrenChanged:
		out = m.child.fire(path, nil)
	case zkproto.EventNodeDeleted:
		out = m.data.fire(path, nil)
		out = m.child.fire(path, out)
	default:
		invariants.Assertf(false, "watch: trigger of event type %d on %s", ev, path)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Check reports whether c has a watch of type wt on path (checkWatches,
// docs/zookeeper-protocol.md §3.5): Children and Data look for a standard watch in the child or
// data table, Persistent for the persistent mode in the data table,
// PersistentRecursive for the recursive mode, and Any for any mode in
// either table. Unknown types have no watches.
func (m *Manager) Check(path string, c ConnID, wt zkproto.WatcherType) bool {
	switch wt {
	case zkproto.WatcherChildren:
		return m.child.get(path, c)&modeStandard != 0
	case zkproto.WatcherData:
		return m.data.get(path, c)&modeStandard != 0
	case zkproto.WatcherPersistent:
		return m.data.get(path, c)&modePersistent != 0
	case zkproto.WatcherPersistentRecursive:
		return m.data.get(path, c)&modeRecursive != 0
	case zkproto.WatcherAny:
		return m.child.get(path, c) != 0 || m.data.get(path, c) != 0
	}
	return false
}

// Remove removes c's watches of type wt on path (removeWatches, docs/zookeeper-protocol.md
// §3.5) and reports whether there were any; false means NoWatcher.
// Children and Data remove the standard watch from the child or data
// table, Persistent the persistent mode from both tables,
// PersistentRecursive the recursive mode, and Any everything. Other modes
// on the same (path, connection) stay.
func (m *Manager) Remove(path string, c ConnID, wt zkproto.WatcherType) bool {
	switch wt {
	case zkproto.WatcherChildren:
		return m.child.clear(path, c, modeStandard)
	case zkproto.WatcherData:
		return m.data.clear(path, c, modeStandard)
	case zkproto.WatcherPersistent:
		ch := m.child.clear(path, c, modePersistent)
		d := m.data.clear(path, c, modePersistent)
		return ch || d
	case zkproto.WatcherPersistentRecursive:
		return m.data.clear(path, c, modeRecursive)
	case zkproto.WatcherAny:
		ch := m.child.clear(path, c, modeAll)
		d := m.data.clear(path, c, modeAll)
		return ch || d
	}
	return false
}

// RemoveConn drops every watch of c, when its connection closes. The cost
// is proportional to the number of watches c holds.
func (m *Manager) RemoveConn(c ConnID) {
	m.data.removeConn(c)
	m.child.removeConn(c)
}
