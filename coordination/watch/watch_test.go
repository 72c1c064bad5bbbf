package watch

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"keeper/coordination/zkproto"
)

// event is one notification as a connection would receive it.
type event struct {
	conn ConnID
	typ  zkproto.EventType
	path string
}

func (e event) String() string { return fmt.Sprintf("%d:%d:%s", e.conn, e.typ, e.path) }

// tree replays what the data tree triggers for each change (docs/zookeeper-protocol.md §3.2).
type tree struct{ m *Manager }

func (t tree) fire(ev zkproto.EventType, path string) []event {
	var out []event
	for _, c := range t.m.Trigger(ev, path) {
		out = append(out, event{c, ev, path})
	}
	return out
}

func (t tree) create(p string) []event {
	return append(t.fire(zkproto.EventNodeCreated, p), t.fire(zkproto.EventNodeChildrenChanged, parent(p))...)
}

func (t tree) delete(p string) []event {
	return append(t.fire(zkproto.EventNodeDeleted, p), t.fire(zkproto.EventNodeChildrenChanged, parent(p))...)
}

func (t tree) setData(p string) []event { return t.fire(zkproto.EventNodeDataChanged, p) }

// step is one line of a scenario: a registration ("data /p 1") or a change
// ("create /p"), and for a change the events it must produce, written
// "conn:type:path".
type step struct {
	do   string
	want string
}

func run(t *testing.T, m *Manager, steps []step) {
	t.Helper()
	tr := tree{m}
	for i, st := range steps {
		f := strings.Fields(st.do)
		var got []event
		switch f[0] {
		case "data", "child", "persistent", "recursive":
			var c ConnID
			fmt.Sscan(f[2], &c)
			map[string]func(string, ConnID) bool{
				"data": m.AddData, "child": m.AddChild,
				"persistent": m.AddPersistent, "recursive": m.AddPersistentRecursive,
			}[f[0]](f[1], c)
			continue
		case "create":
			got = tr.create(f[1])
		case "delete":
			got = tr.delete(f[1])
		case "set":
			got = tr.setData(f[1])
		default:
			t.Fatalf("step %d: bad command %q", i, st.do)
		}
		var gotText []string
		for _, e := range got {
			gotText = append(gotText, e.String())
		}
		if g := strings.Join(gotText, " "); g != st.want {
			t.Errorf("step %d %q: events %q, want %q", i, st.do, g, st.want)
		}
	}
}

// Event type numbers in the expectations: 1 created, 2 deleted, 3 data
// changed, 4 children changed.
func TestTriggerScenarios(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"persistent watch on /p (docs/zookeeper-protocol.md §3.2)", []step{
			{"persistent /p 1", ""},
			{"create /p", "1:1:/p"},
			{"create /p/c", "1:4:/p"},
			{"set /p", "1:3:/p"},
			{"set /p/c", ""},
			{"delete /p/c", "1:4:/p"},
			{"delete /p", "1:2:/p"}, // once, though in both tables
			{"create /p", "1:1:/p"}, // and it stays
		}},
		{"recursive watch on /r (docs/zookeeper-protocol.md §3.2)", []step{
			{"recursive /r 1", ""},
			{"create /r", "1:1:/r"},
			{"create /r/c", "1:1:/r/c"}, // no NodeChildrenChanged on /r
			{"set /r/c", "1:3:/r/c"},
			{"create /r/c/d", "1:1:/r/c/d"},
			{"delete /r/c/d", "1:2:/r/c/d"},
			{"set /r", "1:3:/r"},
			{"create /rx", ""}, // a sibling with a common prefix is not a descendant
			{"create /other", ""},
			{"delete /r/c", "1:2:/r/c"},
			{"delete /r", "1:2:/r"},
		}},
		{"recursive watch on / sees everything but child changes", []step{
			{"recursive / 1", ""},
			{"create /a", "1:1:/a"},
			{"create /a/b", "1:1:/a/b"},
			{"set /", "1:3:/"},
		}},
		{"child watch on a deleted node gets NodeDeleted", []step{
			{"child /p 1", ""},
			{"delete /p", "1:2:/p"},
			{"create /p", ""}, // consumed
		}},
		{"data and child watch on a deleted node: one event, both consumed", []step{
			{"data /p 1", ""},
			{"child /p 1", ""},
			{"child /p 2", ""},
			{"delete /p", "1:2:/p 2:2:/p"},
			{"create /p", ""},
			{"delete /p", ""},
		}},
		{"standard watches are one-shot", []step{
			{"data /a 1", ""},
			{"data /a 2", ""},
			{"data /a 2", ""}, // idempotent
			{"set /a", "1:3:/a 2:3:/a"},
			{"set /a", ""},
			{"data /a 1", ""},
			{"set /a", "1:3:/a"},
		}},
		{"exists watch on a missing node fires on create", []step{
			{"data /n 3", ""},
			{"create /n", "3:1:/n"},
		}},
		{"child watch fires on child create and delete of the parent", []step{
			{"child /p 1", ""},
			{"create /p/a", "1:4:/p"},
			{"create /p/b", ""},
			{"child /p 1", ""},
			{"delete /p/a", "1:4:/p"},
		}},
		{"child watch on / for a top-level node", []step{
			{"child / 1", ""},
			{"create /x", "1:4:/"},
		}},
		{"standard and persistent on one path: the standard one is consumed", []step{
			{"data /p 1", ""},
			{"persistent /p 1", ""},
			{"set /p", "1:3:/p"},
			{"set /p", "1:3:/p"},
		}},
		{"recursive at an ancestor and at the path: one event", []step{
			{"recursive /a 1", ""},
			{"recursive /a/b 1", ""},
			{"data /a/b 1", ""},
			{"set /a/b", "1:3:/a/b"},
			{"set /a/b", "1:3:/a/b"}, // recursive watches stay
		}},
		{"standard data watch at an ancestor does not fire for descendants", []step{
			{"data /a 1", ""},
			{"persistent /a 2", ""},
			{"recursive /a 3", ""},
			{"set /a/b", "3:3:/a/b"},
			{"create /a/b/c", "3:1:/a/b/c"},
			{"set /a", "1:3:/a 2:3:/a 3:3:/a"},
		}},
		{"connections come back sorted", []step{
			{"data /s 30", ""},
			{"data /s 2", ""},
			{"recursive / 7", ""},
			{"data /s 11", ""},
			{"set /s", "2:3:/s 7:3:/s 11:3:/s 30:3:/s"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { run(t, New(), tt.steps) })
	}
}

func TestCheckAndRemove(t *testing.T) {
	type wt = zkproto.WatcherType
	const (
		children   = zkproto.WatcherChildren
		data       = zkproto.WatcherData
		anyType    = zkproto.WatcherAny
		persistent = zkproto.WatcherPersistent
		recursive  = zkproto.WatcherPersistentRecursive
	)
	all := []wt{children, data, anyType, persistent, recursive}
	tests := []struct {
		name    string
		setup   string // registrations of conn 1 on /p
		check   []wt   // types Check must report before removal
		remove  wt
		removed bool
		after   []wt // types Check must report after removal
	}{
		{"none", "", nil, anyType, false, nil},
		{"data", "data", []wt{data, anyType}, data, true, nil},
		{"data: remove children", "data", []wt{data, anyType}, children, false, []wt{data, anyType}},
		{"child", "child", []wt{children, anyType}, children, true, nil},
		{"child: remove data", "child", []wt{children, anyType}, data, false, []wt{children, anyType}},
		{"persistent is not data", "persistent", []wt{persistent, anyType}, data, false, []wt{persistent, anyType}},
		{"persistent is not children", "persistent", []wt{persistent, anyType}, children, false, []wt{persistent, anyType}},
		{"persistent removed from both tables", "persistent", []wt{persistent, anyType}, persistent, true, nil},
		{"recursive", "recursive", []wt{recursive, anyType}, recursive, true, nil},
		{"recursive is not persistent", "recursive", []wt{recursive, anyType}, persistent, false, []wt{recursive, anyType}},
		{"data + persistent: remove data keeps persistent", "data persistent", []wt{data, persistent, anyType}, data, true, []wt{persistent, anyType}},
		{"data + persistent: remove persistent keeps data", "data persistent", []wt{data, persistent, anyType}, persistent, true, []wt{data, anyType}},
		{"child + recursive: remove children keeps recursive", "child recursive", []wt{children, recursive, anyType}, children, true, []wt{recursive, anyType}},
		{"all modes: remove any", "data child persistent recursive", []wt{children, data, persistent, recursive, anyType}, anyType, true, nil},
		{"unknown type", "data child persistent recursive", []wt{children, data, persistent, recursive, anyType}, 0, false, []wt{children, data, persistent, recursive, anyType}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			m.AddData("/other", 1) // unrelated watches must survive
			m.AddChild("/p", 2)
			for _, r := range strings.Fields(tt.setup) {
				map[string]func(string, ConnID) bool{
					"data": m.AddData, "child": m.AddChild,
					"persistent": m.AddPersistent, "recursive": m.AddPersistentRecursive,
				}[r]("/p", 1)
			}
			checkTypes(t, m, "before", all, tt.check)
			if got := m.Remove("/p", 1, tt.remove); got != tt.removed {
				t.Errorf("Remove(%d) = %v, want %v", tt.remove, got, tt.removed)
			}
			checkTypes(t, m, "after", all, tt.after)
			if !m.Check("/other", 1, data) || !m.Check("/p", 2, children) {
				t.Error("Remove touched another path or connection")
			}
			if m.Remove("/missing", 1, anyType) || m.Remove("/p", 99, anyType) {
				t.Error("Remove found a watch that does not exist")
			}
		})
	}
}

func checkTypes(t *testing.T, m *Manager, when string, all, want []zkproto.WatcherType) {
	t.Helper()
	for _, typ := range all {
		if got := m.Check("/p", 1, typ); got != slices.Contains(want, typ) {
			t.Errorf("%s: Check(/p, 1, %d) = %v", when, typ, got)
		}
	}
}

func TestRemovePersistentStopsChildEvents(t *testing.T) {
	m := New()
	m.AddPersistent("/p", 1)
	m.AddPersistentRecursive("/p", 1)
	m.Remove("/p", 1, zkproto.WatcherPersistent)
	run(t, m, []step{
		{"create /p/c", "1:1:/p/c"}, // the recursive watch alone: no child event
		{"set /p", "1:3:/p"},
	})
	if m.Count() != 1 {
		t.Errorf("Count = %d, want 1 (recursive in the data table)", m.Count())
	}
	m.Remove("/p", 1, zkproto.WatcherPersistentRecursive)
	if m.data.recursive != 0 || m.Count() != 0 {
		t.Errorf("recursive count %d, Count %d after removing everything", m.data.recursive, m.Count())
	}
}

func TestRemoveConn(t *testing.T) {
	m := New()
	for c := ConnID(1); c <= 3; c++ {
		m.AddData("/a", c)
		m.AddChild("/a", c)
		m.AddPersistent("/b", c)
		m.AddPersistentRecursive("/r", c)
	}
	m.RemoveConn(2)
	m.RemoveConn(2)  // twice is harmless
	m.RemoveConn(42) // unknown is harmless
	for _, p := range []string{"/a", "/b", "/r"} {
		if m.Check(p, 2, zkproto.WatcherAny) {
			t.Errorf("conn 2 still watches %s", p)
		}
		if !m.Check(p, 1, zkproto.WatcherAny) || !m.Check(p, 3, zkproto.WatcherAny) {
			t.Errorf("other connections lost their watch on %s", p)
		}
	}
	if got := m.Trigger(zkproto.EventNodeCreated, "/r/x"); !slices.Equal(got, []ConnID{1, 3}) {
		t.Errorf("Trigger after RemoveConn = %v", got)
	}
	m.RemoveConn(1)
	m.RemoveConn(3)
	if m.Count() != 0 || m.ConnCount() != 0 || m.PathCount() != 0 || m.data.recursive != 0 ||
		len(m.child.byConn) != 0 || len(m.child.byPath) != 0 {
		t.Errorf("tables not empty: %+v %+v", m.data, m.child)
	}
}

func TestStats(t *testing.T) {
	m := New()
	m.AddData("/a", 1)
	m.AddData("/a", 1)
	m.AddChild("/a", 1)
	m.AddPersistent("/b", 2)
	m.AddPersistentRecursive("/b", 2) // same (path, conn) in the data table: one watch
	m.AddChild("/c", 3)               // child table only: not in wchs
	m.AddData("/d", 2)
	// wchs (data table): 2 connections watching 3 paths, Total watches:3.
	if c, p, w := m.ConnCount(), m.PathCount(), m.DataWatchCount(); c != 2 || p != 3 || w != 3 {
		t.Errorf("wchs: %d connections, %d paths, %d watches; want 2, 3, 3", c, p, w)
	}
	// zk_watch_count: 3 data + /a, /b, /c in the child table.
	if got := m.Count(); got != 6 {
		t.Errorf("Count = %d, want 6", got)
	}
	wantConn := []ConnWatches{{1, []string{"/a"}}, {2, []string{"/b", "/d"}}}
	if got := m.ByConn(); !slices.EqualFunc(got, wantConn, func(a, b ConnWatches) bool {
		return a.Conn == b.Conn && slices.Equal(a.Paths, b.Paths)
	}) {
		t.Errorf("ByConn = %v, want %v", got, wantConn)
	}
	m.AddData("/a", 0)
	wantPath := []PathWatches{{"/a", []ConnID{0, 1}}, {"/b", []ConnID{2}}, {"/d", []ConnID{2}}}
	if got := m.ByPath(); !slices.EqualFunc(got, wantPath, func(a, b PathWatches) bool {
		return a.Path == b.Path && slices.Equal(a.Conns, b.Conns)
	}) {
		t.Errorf("ByPath = %v, want %v", got, wantPath)
	}
	// docs/zookeeper-protocol.md §3.7: one persistent watch shows as 1 in wchs and 2 in mntr.
	m = New()
	m.AddPersistent("/x", 1)
	if m.DataWatchCount() != 1 || m.Count() != 2 {
		t.Errorf("persistent watch: wchs %d, mntr %d; want 1, 2", m.DataWatchCount(), m.Count())
	}
	// A fired one-shot watch leaves nothing behind.
	m = New()
	m.AddData("/x", 1)
	m.Trigger(zkproto.EventNodeDataChanged, "/x")
	if m.ConnCount() != 0 || m.PathCount() != 0 || len(m.ByConn()) != 0 {
		t.Errorf("fired watch left %d conns, %d paths", m.ConnCount(), m.PathCount())
	}
}

func TestAddReportsNew(t *testing.T) {
	m := New()
	steps := []struct {
		add  func(string, ConnID) bool
		want bool
	}{
		{m.AddData, true}, {m.AddData, false},
		{m.AddChild, true}, {m.AddChild, false},
		{m.AddPersistent, true}, {m.AddPersistent, false},
		{m.AddPersistentRecursive, true}, {m.AddPersistentRecursive, false},
	}
	for i, st := range steps {
		if got := st.add("/p", 1); got != st.want {
			t.Errorf("step %d: add = %v, want %v", i, got, st.want)
		}
	}
	if m.data.recursive != 1 {
		t.Errorf("recursive count = %d, want 1", m.data.recursive)
	}
}

func TestTriggerBadEventPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Trigger(EventNone) did not panic")
		}
	}()
	New().Trigger(zkproto.EventNone, "/a")
}

func TestParent(t *testing.T) {
	for in, want := range map[string]string{"/": "", "/a": "/", "/a/b": "/a", "/a/b/c": "/a/b"} {
		if got := parent(in); got != want {
			t.Errorf("parent(%q) = %q, want %q", in, got, want)
		}
	}
}
