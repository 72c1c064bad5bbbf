package watch

import "strings"

// modes is the set of watch modes one connection holds on one path in one
// table.
type modes uint8

const (
	modeStandard modes = 1 << iota
	modePersistent
	modeRecursive

	modeAll = modeStandard | modePersistent | modeRecursive
)

// table is one of the two watch tables. Modes live only in byPath; byConn
// indexes the same entries by connection so that a closing connection's
// watches go in time proportional to their number.
type table struct {
	byPath    map[string]map[ConnID]modes
	byConn    map[ConnID]map[string]struct{}
	entries   int // (path, connection) pairs, whatever their modes
	recursive int // pairs whose modes include modeRecursive
}

func newTable() table {
	return table{
		byPath: make(map[string]map[ConnID]modes),
		byConn: make(map[ConnID]map[string]struct{}),
	}
}

func (t *table) get(path string, c ConnID) modes { return t.byPath[path][c] }

// add gives c the modes m on path and reports whether that changed
// anything.
func (t *table) add(path string, c ConnID, m modes) bool {
	conns := t.byPath[path]
	if conns == nil {
		conns = make(map[ConnID]modes)
		t.byPath[path] = conns
	}
	old := conns[c]
	if old&m == m {
		return false
	}
	conns[c] = old | m
	if old == 0 {
		t.entries++
		paths := t.byConn[c]
		if paths == nil {
			paths = make(map[string]struct{})
			t.byConn[c] = paths
		}
		paths[path] = struct{}{}
	}
	if m&modeRecursive != 0 && old&modeRecursive == 0 {
		t.recursive++
	}
	return true
}

// clear takes the modes m from c on path, leaving its other modes, and
// reports whether c had any of them.
func (t *table) clear(path string, c ConnID, m modes) bool {
	conns := t.byPath[path]
	old := conns[c]
	if old&m == 0 {
		return false
	}
	t.set(path, conns, c, old, old&^m)
	return true
}

// set changes c's modes on path from old to updated (conns is
// byPath[path]), keeping the counts and the index in step. It is safe
// while ranging over conns.
func (t *table) set(path string, conns map[ConnID]modes, c ConnID, old, updated modes) {
	if old&modeRecursive != 0 && updated&modeRecursive == 0 {
		t.recursive--
	}
	if updated != 0 {
		conns[c] = updated
		return
	}
	t.entries--
	delete(conns, c)
	if len(conns) == 0 {
		delete(t.byPath, path)
	}
	paths := t.byConn[c]
	delete(paths, path)
	if len(paths) == 0 {
		delete(t.byConn, c)
	}
}

// removeConn drops every watch c holds in the table.
func (t *table) removeConn(c ConnID) {
	for path := range t.byConn[c] {
		conns := t.byPath[path]
		t.set(path, conns, c, conns[c], 0)
	}
}

// fire appends to out every connection an event at path notifies, and
// consumes the standard watches it fires. At path itself every mode
// matches; at each ancestor (visited only while recursive watches exist)
// only recursive ones do. out may then hold a connection more than once.
func (t *table) fire(path string, out []ConnID) []ConnID {
	if conns := t.byPath[path]; conns != nil {
		for c, m := range conns {
			out = append(out, c)
			if m&modeStandard != 0 {
				t.set(path, conns, c, m, m&^modeStandard)
			}
		}
	}
	if t.recursive == 0 {
		return out
	}
	for p := parent(path); p != ""; p = parent(p) {
		for c, m := range t.byPath[p] {
			if m&modeRecursive != 0 {
				out = append(out, c)
			}
		}
	}
	return out
}

// parent returns the parent of an absolute path, "/" for a top-level node
// and "" for "/" itself.
func parent(path string) string {
	if path == "/" {
		return ""
	}
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}
