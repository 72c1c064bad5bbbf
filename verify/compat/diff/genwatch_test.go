package diff

import "keeper/coordination/zkproto"

// Watch registrations the generator keeps consistent with 3.8.0.
//
// Apache ZooKeeper 3.8 keeps one mode per (connection, path) in each watch
// table: a later registration replaces the earlier one's mode (a getData
// watch turns a persistent watch into a one-shot one, addWatch registers in
// both tables whatever its mode), and checkWatches/removeWatches of type
// Data or Children match a watch of any mode. 3.9 (ZOOKEEPER-4466), and
// keeper, keep a set of modes. The two agree as long as a connection never
// mixes kinds of registration on one path, and Data/Children checks are
// never made on a path with a persistent or recursive watch. Unless the
// variantMixedWatchModes is switched on, the generator keeps to that: per
// slot it remembers every registration since the connection was opened.

// watchKind is a kind of registration on a path.
type watchKind int

const (
	watchNone watchKind = iota
	watchStandard
	watchPersistent
	watchRecursive
)

// watchTable is one of the server's two watch tables.
type watchTable int

const (
	dataTable watchTable = iota
	childTable
)

// slotWatches is what one slot's current connection has registered.
type slotWatches map[watchTable]map[string]watchKind

func (g *gen) watches(slot int) slotWatches {
	if g.regs[slot] == nil {
		g.regs[slot] = slotWatches{dataTable: {}, childTable: {}}
	}
	return g.regs[slot]
}

// resetWatches forgets a slot's registrations: its connection is replaced.
func (g *gen) resetWatches(slot int) { g.regs[slot] = nil }

// mixing reports whether mixed registrations are allowed.
func (g *gen) mixing() bool { return !g.off(variantMixedWatchModes) }

// standardOK registers a standard watch on path in table if that keeps the
// slot consistent, and reports whether it did.
func (g *gen) standardOK(slot int, table watchTable, path string) bool {
	w := g.watches(slot)
	if k := w[table][path]; k != watchNone && k != watchStandard && !g.mixing() {
		return false
	}
	w[table][path] = watchStandard
	return true
}

// addWatchMode returns the mode an addWatch on path may use (the one asked
// for, or the one already registered), and false if none may be used.
func (g *gen) addWatchMode(slot int, path string, mode int32) (int32, bool) {
	w := g.watches(slot)
	kind := watchPersistent
	if mode == zkproto.AddWatchPersistentRecursive {
		kind = watchRecursive
	}
	if !g.mixing() {
		switch k := max(w[dataTable][path], w[childTable][path]); k {
		case watchStandard:
			return 0, false
		case watchPersistent:
			kind, mode = k, zkproto.AddWatchPersistent
		case watchRecursive:
			kind, mode = k, zkproto.AddWatchPersistentRecursive
		}
	}
	w[dataTable][path], w[childTable][path] = kind, kind
	return mode, true
}

// watcherTypeFor turns a Data or Children check on a path with a
// persistent or recursive watch into Any.
func (g *gen) watcherTypeFor(slot int, path string, t zkproto.WatcherType) zkproto.WatcherType {
	if g.mixing() || (t != zkproto.WatcherData && t != zkproto.WatcherChildren) {
		return t
	}
	if w := g.watches(slot); w[dataTable][path] > watchStandard || w[childTable][path] > watchStandard {
		return zkproto.WatcherAny
	}
	return t
}

// keepWatchable filters a setWatches path list to the paths a registration
// of kind may be made on, and registers them.
func (g *gen) keepWatchable(slot int, paths []string, kind watchKind, tables ...watchTable) []string {
	out := paths[:0:0]
	if paths == nil {
		return nil
	}
	for _, p := range paths {
		ok := true
		if kind == watchStandard {
			ok = g.standardOK(slot, tables[0], p)
		} else {
			mode := zkproto.AddWatchPersistent
			if kind == watchRecursive {
				mode = zkproto.AddWatchPersistentRecursive
			}
			var got int32
			got, ok = g.addWatchMode(slot, p, mode)
			ok = ok && got == mode
		}
		if ok {
			out = append(out, p)
		}
	}
	return out
}

// othersWatch reports whether a slot other than slot may have a watch on
// path in the table(s) a check of type t looks at. 3.8.0's checkWatches
// answers OK when any connection has a watch there (its containsWatcher
// looks only for a non-empty watcher set at the path), 3.9 and keeper only
// for the asking connection's own.
func (g *gen) othersWatch(slot int, path string, t zkproto.WatcherType) bool {
	for other := range g.slots {
		if other == slot {
			continue
		}
		w := g.watches(other)
		data, child := w[dataTable][path] != watchNone, w[childTable][path] != watchNone
		switch t {
		case zkproto.WatcherData:
			if data {
				return true
			}
		case zkproto.WatcherChildren:
			if child {
				return true
			}
		default:
			if data || child {
				return true
			}
		}
	}
	return false
}
