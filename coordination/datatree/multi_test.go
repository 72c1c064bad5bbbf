package datatree

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
)

func TestMultiSuccess(t *testing.T) {
	e := newEnv(t)
	e.create("/x", []byte("old"))
	res, ch := e.mustApply(zkproto.OpMulti, &txn.Multi{Ops: []txn.Op{
		{Type: zkproto.OpCreate, Record: &txn.Create{Path: "/m", ACL: worldAll, ParentCversion: 2}},
		{Type: zkproto.OpCreate2, Record: &txn.Create{Path: "/m/q-0000000000", ACL: worldAll, ParentCversion: 1}},
		{Type: zkproto.OpCreate2, Record: &txn.Create{Path: "/m/q-0000000001", ACL: worldAll, ParentCversion: 2}},
		{Type: zkproto.OpCheck, Record: &txn.CheckVersion{Path: "/x", Version: 1}},
		{Type: zkproto.OpSetData, Record: &txn.SetData{Path: "/x", Data: []byte("new"), Version: 1}},
		{Type: zkproto.OpDelete, Record: &txn.Delete{Path: "/m/q-0000000000"}},
	}})
	z := e.zxid()
	wantOps := []zkproto.Op{zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreate2, zkproto.OpCheck, zkproto.OpSetData, zkproto.OpDelete}
	if len(res.Multi) != len(wantOps) || res.Op != zkproto.OpMulti {
		t.Fatalf("result = %+v", res)
	}
	for i, sub := range res.Multi {
		if sub.Op != wantOps[i] || sub.Err != nil {
			t.Errorf("sub %d = %+v", i, sub)
		}
	}
	// Every sub-op carries the multi's zxid.
	if res.Multi[1].Stat.Czxid != z || res.Multi[4].Stat.Mzxid != z || res.Multi[4].Stat.Version != 1 {
		t.Errorf("sub stats %+v %+v", res.Multi[1].Stat, res.Multi[4].Stat)
	}
	want := changes(created, "/m", childChg, "/", created, "/m/q-0000000000", childChg, "/m",
		created, "/m/q-0000000001", childChg, "/m", dataChg, "/x", deleted, "/m/q-0000000000", childChg, "/m")
	if !reflect.DeepEqual(withoutACL(ch), want) {
		t.Fatalf("changes =\n%v\nwant\n%v", ch, want)
	}
	m := e.tree.Node("/m").Stat()
	if m.Cversion != 3 || m.NumChildren != 1 || m.Pzxid != z {
		t.Errorf("/m stat = %+v", m)
	}
}

// TestMultiFailed: a failed multi is logged as error sub-txns
// [0, code, -2, -2]; nothing changes and the first non-zero code is the
// multi's error.
func TestMultiFailed(t *testing.T) {
	e := newEnv(t)
	e.create("/x", nil)
	before := snapshotOf(t, e.tree)
	codes := []zkproto.Code{zkproto.CodeOK, zkproto.CodeBadVersion, zkproto.CodeRuntimeInconsistency, zkproto.CodeRuntimeInconsistency}
	var ops []txn.Op
	for _, c := range codes {
		ops = append(ops, txn.Op{Type: zkproto.OpError, Record: &txn.Error{Err: int32(c)}})
	}
	res, ch := e.apply(zkproto.OpMulti, &txn.Multi{Ops: ops})
	if len(ch) != 0 || !errors.Is(res.Err, zkproto.ErrBadVersion) {
		t.Fatalf("changes %v err %v", ch, res.Err)
	}
	for i, sub := range res.Multi {
		if sub.Op != zkproto.OpError || zkproto.CodeOf(sub.Err) != codes[i] {
			t.Errorf("sub %d = %+v, want code %v", i, sub, codes[i])
		}
	}
	if d := diffTrees(before, e.tree); d != "" {
		t.Fatalf("failed multi changed the tree:\n%s", d)
	}
}

// TestMultiMixedIsFailed: as in Java, one error sub-txn makes every other
// sub-op an error too (0 before it, -2 after), so nothing applies.
func TestMultiMixedIsFailed(t *testing.T) {
	e := newEnv(t)
	before := snapshotOf(t, e.tree)
	res, ch := e.apply(zkproto.OpMulti, &txn.Multi{Ops: []txn.Op{
		{Type: zkproto.OpCreate, Record: &txn.Create{Path: "/y", ParentCversion: 1}},
		{Type: zkproto.OpError, Record: &txn.Error{Err: int32(zkproto.CodeNoNode)}},
		{Type: zkproto.OpCreate, Record: &txn.Create{Path: "/z", ParentCversion: 2}},
	}})
	got := []zkproto.Code{zkproto.CodeOf(res.Multi[0].Err), zkproto.CodeOf(res.Multi[1].Err), zkproto.CodeOf(res.Multi[2].Err)}
	if want := []zkproto.Code{0, zkproto.CodeNoNode, zkproto.CodeRuntimeInconsistency}; !slices.Equal(got, want) || len(ch) != 0 {
		t.Fatalf("codes %v changes %v", got, ch)
	}
	if d := diffTrees(before, e.tree); d != "" {
		t.Fatalf("tree changed:\n%s", d)
	}
}

func TestMultiRejectsNestedTypes(t *testing.T) {
	e := newEnv(t)
	res, _ := e.apply(zkproto.OpMulti, &txn.Multi{Ops: []txn.Op{
		{Type: zkproto.OpSetACL, Record: &txn.SetACL{Path: "/", Version: 1}},
		{Type: zkproto.OpCreate, Record: &txn.Create{Path: "/after", ParentCversion: 1}},
	}})
	if !errors.Is(res.Multi[0].Err, zkproto.ErrMarshallingError) || res.Multi[1].Err != nil {
		t.Fatalf("results %+v", res.Multi)
	}
}

func TestCloseSession(t *testing.T) {
	setup := func(t *testing.T) *env {
		e := newEnv(t)
		e.create("/p", nil)
		for _, p := range []string{"/p/e1", "/p/e2", "/e3"} {
			e.mustApply(zkproto.OpCreate, &txn.Create{Path: p, Ephemeral: true, ParentCversion: e.parentCversion(p) + 1})
		}
		e.applyAs(sess2, zkproto.OpCreate, &txn.Create{Path: "/other", Ephemeral: true, ParentCversion: e.parentCversion("/other") + 1})
		if got := e.tree.EphemeralSessions(); !slices.Equal(got, []int64{sess1, sess2}) {
			t.Fatalf("EphemeralSessions = %v", got)
		}
		return e
	}
	tests := []struct {
		name string
		rec  *txn.CloseSession
		want []Change
	}{
		{"listed paths in txn order, then the rest", &txn.CloseSession{Paths: []string{"/p/e2", "/gone", "/p/e1"}},
			changes(deleted, "/p/e2", childChg, "/p", deleted, "/p/e1", childChg, "/p", deleted, "/e3", childChg, "/")},
		{"pre-3.6 record without body", &txn.CloseSession{NoBody: true},
			changes(deleted, "/e3", childChg, "/", deleted, "/p/e1", childChg, "/p", deleted, "/p/e2", childChg, "/p")},
		{"nil record", nil,
			changes(deleted, "/e3", childChg, "/", deleted, "/p/e1", childChg, "/p", deleted, "/p/e2", childChg, "/p")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			var res Result
			var ch []Change
			if tc.rec == nil {
				res, ch = e.tree.Apply(&txn.Txn{Header: e.next(zkproto.OpCloseSession, sess1)})
				e.check()
			} else {
				res, ch = e.apply(zkproto.OpCloseSession, tc.rec)
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if !reflect.DeepEqual(withoutACL(ch), tc.want) {
				t.Fatalf("changes =\n%v\nwant\n%v", ch, tc.want)
			}
			if e.tree.Ephemerals(sess1) != nil || e.tree.EphemeralCount() != 1 || e.tree.Node("/other") == nil {
				t.Fatalf("ephemerals left: %v (count %d)", e.tree.Ephemerals(sess1), e.tree.EphemeralCount())
			}
			if got := e.tree.Node("/p").Persisted().Pzxid; got != e.zxid() {
				t.Fatalf("parent pzxid = %#x, want closeSession zxid %#x", got, e.zxid())
			}
		})
	}
}

func TestCreateSessionIsNoOp(t *testing.T) {
	e := newEnv(t)
	before := snapshotOf(t, e.tree)
	res, ch := e.mustApply(zkproto.OpCreateSession, &txn.CreateSession{TimeoutMs: 4000})
	if res.Op != zkproto.OpCreateSession || len(ch) != 0 {
		t.Fatalf("result %+v changes %v", res, ch)
	}
	if d := diffTrees(before, e.tree); d != "" || int64(e.tree.LastZxid()) != e.zxid() {
		t.Fatalf("tree changed or zxid not recorded:\n%s", d)
	}
}
