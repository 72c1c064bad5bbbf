package datatree

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
)

// hx turns the notation of docs/zookeeper-protocol.md into bytes: hex groups, quoted ASCII and
// '|' separators.
func hx(t testing.TB, s string) []byte {
	t.Helper()
	var out []byte
	for _, tok := range strings.Fields(s) {
		switch {
		case tok == "|":
		case strings.HasPrefix(tok, `"`):
			out = append(out, strings.Trim(tok, `"`)...)
		default:
			b, err := hex.DecodeString(tok)
			if err != nil {
				t.Fatalf("bad hex %q: %v", tok, err)
			}
			out = append(out, b...)
		}
	}
	return out
}

var zeroStat = strings.Repeat("00", 60)

func TestFreshBodyBytes(t *testing.T) {
	want := hx(t, `00000001 | 0000000000000001 00000001 0000001f 00000005 "world" 00000006 "anyone"`)
	want[19] = 0x01 // perms r: world:anyone:r
	want = append(want, hx(t, `00000000 00000000 ffffffffffffffff `+zeroStat+
		` | 0000000a "/zookeeper" 00000000 ffffffffffffffff `+zeroStat+
		` | 00000011 "/zookeeper/config" 00000000 0000000000000001 `+strings.Repeat("00", 32)+
		` 00000000 00000000 ffffffff 0000000000000000 0000000000000000`+
		` | 00000010 "/zookeeper/quota" 00000000 ffffffffffffffff `+zeroStat+
		` | 00000001 "/"`)...)
	var buf bytes.Buffer
	if err := New().WriteBody(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("fresh body:\n got % x\nwant % x", buf.Bytes(), want)
	}
	back, err := ReadBody(bytes.NewReader(want), 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffTrees(New(), back); d != "" {
		t.Fatal(d)
	}
}

func TestBodyRoundTrip(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			g := newGen(seed + 100)
			g.sequence(400)
			var b1 bytes.Buffer
			if err := g.tree.WriteBody(&b1); err != nil {
				t.Fatal(err)
			}
			back, err := ReadBody(bytes.NewReader(b1.Bytes()), 0)
			if err != nil {
				t.Fatal(err)
			}
			if d := diffTrees(g.tree, back); d != "" {
				t.Fatal(d)
			}
			for path, n := range g.tree.nodes {
				if back.nodes[path].aclRef != n.aclRef {
					t.Fatalf("%s: ACL ref %d became %d", path, n.aclRef, back.nodes[path].aclRef)
				}
			}
			if !reflect.DeepEqual(g.tree.EphemeralSessions(), back.EphemeralSessions()) ||
				g.tree.NodeCount() != back.NodeCount() || g.tree.acl.index < back.acl.index {
				t.Fatal("indexes differ")
			}
			var b2 bytes.Buffer
			if err := back.WriteBody(&b2); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
				t.Fatal("rewritten body differs")
			}
		})
	}
}

// TestReadBodyJavaShapes reads what Java may write but we never do:
// children and ACL entries out of order, ACL entries no node uses, and a
// user node with the null-list reference.
func TestReadBodyJavaShapes(t *testing.T) {
	body := hx(t, `00000003 | 0000000000000007 00000000 | 0000000000000002 00000000 | 0000000000000005 `+
		`00000001 0000001f 00000005 "world" 00000006 "anyone"`+
		` | 00000000 00000000 ffffffffffffffff `+zeroStat+
		` | 00000002 "/b" ffffffff 0000000000000005 `+zeroStat+
		` | 00000002 "/a" 00000001 "x" ffffffffffffffff `+zeroStat+
		` | 00000004 "/a/c" 00000000 0000000000000002 `+zeroStat+
		` | 00000001 "/" | 0000000000000001 00000001 "/"`)
	r := bytes.NewReader(body)
	tree, err := ReadBody(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The seal after the body is still there for the caller.
	if rest, _ := io.ReadAll(r); !bytes.Equal(rest, hx(t, `0000000000000001 00000001 "/"`)) {
		t.Fatalf("ReadBody consumed past the body; left % x", rest)
	}
	if got := tree.Node("/").Children(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("root children %v", got)
	}
	if tree.ACLCacheSize() != 2 || tree.acl.byRef[7] != nil {
		t.Fatalf("unused ACL entry 7 kept; cache %v", tree.acl.byRef)
	}
	if got := tree.ACL(tree.Node("/a")); !reflect.DeepEqual(got, zkproto.OpenACLUnsafe) {
		t.Fatalf("/a acl %v", got)
	}
	if tree.Node("/b").Data() != nil || tree.Node("/a/c").Data() == nil {
		t.Fatal("null/empty data not kept")
	}
	if tree.Node("/zookeeper") != nil || tree.NodeCount() != 5 {
		t.Fatal("ReadBody must not add built-in nodes")
	}
	// New references continue after the highest loaded one, even unused.
	e := &env{t: t, tree: tree}
	e.mustApply(zkproto.OpCreate, &txn.Create{Path: "/d", ACL: digestACL, ParentCversion: 1})
	if got := tree.Node("/d").aclRef; got != 8 {
		t.Fatalf("new ref %d, want 8", got)
	}
}

func TestReadBodyErrors(t *testing.T) {
	root := `00000000 00000000 ffffffffffffffff ` + zeroStat
	node := func(path string) string {
		return fmt.Sprintf(`%08x "%s" 00000000 ffffffffffffffff %s`, len(path), path, zeroStat)
	}
	end := ` 00000001 "/"`
	tests := []struct {
		name string
		body string
		want error
	}{
		{"empty", ``, jute.ErrShort},
		{"no end marker", `00000000 ` + root, jute.ErrShort},
		{"truncated stat", `00000000 00000000 00000000 ffffffffffffffff 0000`, jute.ErrShort},
		{"only the end marker", `00000000` + end, ErrCorrupt},
		{"negative ACL map size", `ffffffff` + end, ErrCorrupt},
		{"null ACL list", `00000001 0000000000000001 ffffffff` + end, ErrCorrupt},
		{"duplicate ACL ref", `00000002 0000000000000001 00000000 0000000000000001 00000000` + end, ErrCorrupt},
		{"reserved ACL ref", `00000001 ffffffffffffffff 00000000` + end, ErrCorrupt},
		{"huge ACL count", `00000001 0000000000000001 7fffffff` + end, jute.ErrLength},
		{"huge data length", `00000000 00000000 7fffffff`, jute.ErrLength},
		{"negative string length", `00000000 fffffffe`, jute.ErrLength},
		{"first node is not the root", `00000000 ` + node("/a") + end, ErrCorrupt},
		{"root twice", `00000000 ` + root + root + end, ErrCorrupt},
		{"node twice", `00000000 ` + root + node("/a") + node("/a") + end, ErrCorrupt},
		{"child before parent", `00000000 ` + root + node("/a/b") + node("/a") + end, ErrCorrupt},
		{"node twice after a sibling", `00000000 ` + root + node("/a") + node("/b") + node("/a") + end, ErrCorrupt},
		{"node twice after its child", `00000000 ` + root + node("/a") + node("/a/b") + node("/a") + end, ErrCorrupt},
		{"child twice after a nephew", `00000000 ` + root + node("/a") + node("/a/b") + node("/a/c") + node("/a/c/d") + node("/a/b") + end, ErrCorrupt},
		{"parent missing after a descent", `00000000 ` + root + node("/a") + node("/a/b") + node("/c/d") + end, ErrCorrupt},
		{"trailing slash", `00000000 ` + root + node("/a/") + end, ErrCorrupt},
		{"relative path", `00000000 ` + root + node("a") + end, ErrCorrupt},
		{"unknown ACL ref", `00000000 ` + root + `00000002 "/a" 00000000 0000000000000003 ` + zeroStat + end, ErrCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadBody(bytes.NewReader(hx(t, tc.body)), 0)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestReadBodyMaxLen(t *testing.T) {
	e := newEnv(t)
	e.create("/big", make([]byte, 5000))
	var buf bytes.Buffer
	if err := e.tree.WriteBody(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBody(bytes.NewReader(buf.Bytes()), 4096); !errors.Is(err, jute.ErrLength) {
		t.Fatalf("maxLen 4096: err = %v", err)
	}
	if _, err := ReadBody(bytes.NewReader(buf.Bytes()), 8192); err != nil {
		t.Fatalf("maxLen 8192: %v", err)
	}
}

type failWriter struct{ after int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.after <= 0 {
		return 0, errors.New("disk full")
	}
	w.after--
	return len(p), nil
}

func TestWriteBodyError(t *testing.T) {
	e := newEnv(t)
	for i := range 2000 {
		e.tree.Apply(&txn.Txn{Header: e.next(zkproto.OpCreate, sess1),
			Record: &txn.Create{Path: fmt.Sprintf("/n%04d", i), Data: make([]byte, 40), ParentCversion: int32(i + 1)}})
	}
	if err := e.tree.WriteBody(&failWriter{after: 1}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
}

// TestDeepChain: reading, writing, counting and deleting a 10,000-deep
// chain must not recurse. The chain is built as a body, not by Apply, so
// that -tags invariants (which checks the whole tree after every Apply)
// stays fast.
func TestDeepChain(t *testing.T) {
	const depth = 10000
	e := jute.Encoder{B: make([]byte, 0, depth*depth+depth*80)} // the paths alone are depth² bytes
	e.Int(0)                                                    // no ACLs
	var stat zkproto.StatPersisted
	path := ""
	for range depth + 1 {
		e.String(path)
		e.Buffer(nil)
		e.Long(openACLRef)
		stat.Encode(&e)
		path += "/d"
	}
	e.String(endMarker)
	tree, err := ReadBody(bytes.NewReader(e.B), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := tree.CountDescendants("/d"); got != depth-1 {
		t.Fatalf("CountDescendants = %d", got)
	}
	var buf bytes.Buffer
	buf.Grow(len(e.B))
	if err := tree.WriteBody(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), e.B) {
		t.Fatal("chain did not round-trip")
	}
	env := &env{t: t, tree: tree}
	env.mustApply(zkproto.OpDelete, &txn.Delete{Path: "/d"})
	if tree.NodeCount() != 2 {
		t.Fatalf("NodeCount after deleting the chain = %d", tree.NodeCount())
	}
}

// TestReadBodyPresizesChildren loads a parent that churned through many
// more children than it keeps and a parent with many children, with the
// body's size known as the server knows it: the trees are equal, the
// parent with many children got its map at once, and what the churned
// parent reserved came out of a bounded budget.
func TestReadBodyPresizesChildren(t *testing.T) {
	e := newEnv(t)
	e.bulk = true
	e.create("/churn", nil)
	for i := range 3000 {
		p := fmt.Sprintf("/churn/c%d", i)
		e.create(p, nil)
		if i >= 10 {
			e.mustApply(zkproto.OpDelete, &txn.Delete{Path: p})
		}
	}
	e.create("/wide", nil)
	for i := range 5000 {
		e.create(fmt.Sprintf("/wide/c%d", i), make([]byte, 400))
	}
	e.bulk = false
	e.check() // the digest and size kept through all those txns
	var b bytes.Buffer
	if err := e.tree.WriteBody(&b); err != nil {
		t.Fatal(err)
	}
	size := int64(b.Len())
	back, err := ReadBodySized(bytes.NewReader(b.Bytes()), 0, size)
	if err != nil {
		t.Fatal(err)
	}
	back.SetLastZxid(e.tree.LastZxid())
	if d := diffTrees(e.tree, back); d != "" {
		t.Fatal(d)
	}
	if size/bytesPerNodeHint < 3000+5000 {
		t.Fatalf("a body of %d bytes leaves no budget for both parents", size)
	}
	if n := back.Node("/churn").NumChildren(); n != 10 {
		t.Fatalf("/churn has %d children, want 10", n)
	}

	// The budget: the churned parent may take what is left, never more.
	pc := parentCache{presize: 4000}
	churn := &Node{stat: zkproto.StatPersisted{Cversion: 3000}}
	pc.presizeChildren(churn)
	if churn.children == nil || pc.presize != 1000 {
		t.Fatalf("after a parent promising 3,000 children the budget is %d, want 1000", pc.presize)
	}
	wide := &Node{stat: zkproto.StatPersisted{Cversion: 5000}}
	pc.presizeChildren(wide)
	if wide.children != nil || pc.presize != 1000 {
		t.Fatalf("a parent beyond the budget: map %v, budget %d", wide.children != nil, pc.presize)
	}
	small := &Node{stat: zkproto.StatPersisted{Cversion: presizeFrom - 1}}
	pc.presizeChildren(small)
	if small.children != nil {
		t.Fatal("a parent promising few children got a map ahead")
	}
}
