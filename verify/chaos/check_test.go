package chaos

import (
	"slices"
	"testing"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

const testSession = 0x10

func z(n uint32) zxid.ID { return zxid.ID(1<<32 | uint64(n)) }

func tx(n uint32, xid int32, typ zkproto.Op, rec jute.Record) *txn.Txn {
	return &txn.Txn{Header: txn.Header{ClientID: testSession, Cxid: xid, Zxid: z(n), Time: int64(n), Type: typ}, Record: rec}
}

// testHistory is a session that creates /k = "a", sets it to "b", fails
// a CAS with BadVersion and closes.
func testCommitted(t *testing.T) *Committed {
	t.Helper()
	c, err := committedFrom([]*txn.Txn{
		tx(1, 0, zkproto.OpCreateSession, &txn.CreateSession{TimeoutMs: 4000}),
		tx(2, 1, zkproto.OpCreate, &txn.Create{Path: "/k", Data: []byte("a"), ACL: zkproto.OpenACLUnsafe, ParentCversion: -1}),
		tx(3, 2, zkproto.OpSetData, &txn.SetData{Path: "/k", Data: []byte("b"), Version: 1}),
		tx(4, 3, zkproto.OpError, &txn.Error{Err: int32(zkproto.CodeBadVersion)}),
		tx(5, 4, zkproto.OpCloseSession, &txn.CloseSession{}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Problems) > 0 {
		t.Fatalf("problems: %v", c.Problems)
	}
	return c
}

// op builds a history op of testSession on connection 1.
func op(kind zkproto.Op, path, data string, version int32, xid int32, call, ret int64, code zkproto.Code, zx zxid.ID) *Op {
	return &Op{Client: "c1", Session: testSession, Conn: 1, Server: 1, Kind: kind, Path: path, Data: data,
		Version: version, Xid: xid, Call: call, Return: ret, Err: code, Zxid: int64(zx), Seq: ret}
}

func historyOf(ops ...*Op) *History {
	h := NewHistory()
	for _, o := range ops {
		h.add(o)
	}
	return h
}

func checks(r *Report) []string {
	var out []string
	for c := range r.counts {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

func TestWriteChecks(t *testing.T) {
	c := testCommitted(t)
	create := func() *Op { return op(zkproto.OpCreate, "/k", "a", 0, 1, 10, 20, zkproto.CodeOK, z(2)) }
	set := func() *Op {
		o := op(zkproto.OpSetData, "/k", "b", 0, 2, 30, 40, zkproto.CodeOK, z(3))
		o.Stat = zkproto.Stat{Version: 1, Mzxid: int64(z(3))}
		return o
	}
	cas := func() *Op { return op(zkproto.OpSetData, "/k", "c", 0, 3, 50, 60, zkproto.CodeBadVersion, z(4)) }
	cases := []struct {
		name string
		ops  []*Op
		want []string
		lost int
	}{
		{"all as committed", []*Op{create(), set(), cas()}, nil, 0},
		{"acknowledged write missing", []*Op{create(), set(), cas(),
			op(zkproto.OpSetData, "/k", "d", 1, 9, 70, 80, zkproto.CodeOK, z(5))}, []string{"durability", "linearizability"}, 1},
		{"reply code disagrees", func() []*Op { o := cas(); o.Err = zkproto.CodeOK; return []*Op{create(), set(), o} }(),
			[]string{"linearizability", "replies"}, 0},
		{"reply zxid disagrees", func() []*Op { o := create(); o.Zxid = int64(z(3)); return []*Op{o, set(), cas()} }(),
			[]string{"replies"}, 0},
		{"unknown outcome resolved", func() []*Op { o := set(); o.Unknown, o.Return = true, -1; return []*Op{create(), o, cas()} }(),
			nil, 0},
		{"not linearizable: a set saw an older version", func() []*Op {
			o := op(zkproto.OpSetData, "/k", "b", 0, 2, 30, 40, zkproto.CodeOK, z(3))
			o.Stat = zkproto.Stat{Version: 1, Mzxid: int64(z(3))}
			later := op(zkproto.OpCreate, "/k", "x", 0, 77, 45, 46, zkproto.CodeOK, z(9))
			later.Session = 0x99 // another session's create that "succeeded" on an existing node
			return []*Op{create(), o, cas(), later}
		}(), []string{"durability", "linearizability"}, 1},
		{"real-time order broken", func() []*Op {
			a, b := create(), set()
			b.Call, b.Return = 1, 5 // the set returned before the create was invoked
			return []*Op{a, b, cas()}
		}(), []string{"linearizability", "write-order"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReport(0)
			writes := resolveWrites(historyOf(tc.ops...), c, r)
			CheckLinearizable(writes, "/k", r)
			CheckWriteOrder(writes, r)
			if got := checks(r); !slices.Equal(got, tc.want) || r.lost != tc.lost {
				t.Fatalf("violations %v lost %d, want %v lost %d\n%s", got, r.lost, tc.want, tc.lost, r.Details())
			}
		})
	}
}

func TestReadChecks(t *testing.T) {
	c := testCommitted(t)
	st := c.StateAt("/k", z(3)).stat
	get := func(at zxid.ID, value string, stat zkproto.Stat) *Op {
		o := op(zkproto.OpGetData, "/k", "", 0, 9, 100, 110, zkproto.CodeOK, at)
		o.Value, o.Stat = value, stat
		return o
	}
	cases := []struct {
		name string
		ops  []*Op
		want []string
	}{
		{"current read", []*Op{get(z(3), "b", st)}, nil},
		{"read at a later zxid of the same state", []*Op{get(z(4), "b", st)}, nil},
		{"stale data at that zxid", []*Op{get(z(3), "a", st)}, []string{"reads"}},
		{"wrong stat", []*Op{get(z(3), "b", zkproto.Stat{Version: 7})}, []string{"reads"}},
		{"uncommitted zxid", []*Op{get(z(42), "b", st)}, []string{"reads"}},
		{"node missing", []*Op{op(zkproto.OpExists, "/k", "", 0, 9, 100, 110, zkproto.CodeNoNode, z(3))}, []string{"reads"}},
		{"absent before its create", []*Op{op(zkproto.OpExists, "/k", "", 0, 9, 100, 110, zkproto.CodeNoNode, z(1))}, nil},
		{"zxid goes back in a session", []*Op{get(z(3), "b", st),
			func() *Op { o := op(zkproto.OpExists, "/k", "", 0, 10, 120, 130, zkproto.CodeNoNode, z(1)); return o }()},
			[]string{"session-order"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReport(0)
			h := historyOf(tc.ops...)
			CheckReads(h, c, r)
			CheckSessionOrder(h, r)
			if got := checks(r); !slices.Equal(got, tc.want) {
				t.Fatalf("violations %v, want %v\n%s", got, tc.want, r.Details())
			}
		})
	}
}

func TestSessionChecks(t *testing.T) {
	c := testCommitted(t)
	r := NewReport(0)
	late := op(zkproto.OpGetData, "/k", "", 0, 9, 100, 110, zkproto.CodeOK, z(5))
	CheckSessions(historyOf(late), c, r, 0)
	if got := checks(r); !slices.Equal(got, []string{"sessions"}) {
		t.Fatalf("a reply after the close: violations %v\n%s", got, r.Details())
	}
}

func TestWatchChecks(t *testing.T) {
	c := testCommitted(t)
	reg := func() *Op {
		o := op(zkproto.OpGetData, "/k", "", 0, 9, 100, 2, zkproto.CodeOK, z(2))
		o.Watch, o.Value, o.Stat = true, "a", c.StateAt("/k", z(2)).stat
		return o
	}
	ev := func(seq int64, typ zkproto.EventType) EventRec {
		return EventRec{Client: "c1", Session: testSession, Conn: 1, Type: typ, Path: "/k", Seq: seq}
	}
	later := func(seq int64) *Op {
		return op(zkproto.OpExists, "/other", "", 0, 10, 200, seq, zkproto.CodeNoNode, z(3))
	}
	cases := []struct {
		name   string
		ops    []*Op
		events []EventRec
		want   []string
	}{
		{"event before the data", []*Op{reg(), later(6)}, []EventRec{ev(5, zkproto.EventNodeDataChanged)}, nil},
		{"event missed", []*Op{reg(), later(6)}, nil, []string{"watches"}},
		{"event after the data", []*Op{reg(), later(6)}, []EventRec{ev(7, zkproto.EventNodeDataChanged)}, []string{"watches"}},
		{"event twice", []*Op{reg(), later(6)},
			[]EventRec{ev(4, zkproto.EventNodeDataChanged), ev(5, zkproto.EventNodeDataChanged)}, []string{"watches"}},
		{"wrong type", []*Op{reg(), later(6)}, []EventRec{ev(5, zkproto.EventNodeDeleted)}, []string{"watches"}},
		{"no event yet, nothing shows the change", []*Op{reg()}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReport(0)
			h := historyOf(tc.ops...)
			for _, e := range tc.events {
				h.addEvent(e)
			}
			CheckWatches(h, c, r)
			if got := checks(r); !slices.Equal(got, tc.want) {
				t.Fatalf("violations %v, want %v\n%s", got, tc.want, r.Details())
			}
		})
	}
}

func TestCommittedProblems(t *testing.T) {
	_, err := committedFrom([]*txn.Txn{tx(2, 1, zkproto.OpCreate, &txn.Create{Path: "/k", ACL: zkproto.OpenACLUnsafe, ParentCversion: -1})})
	if err == nil {
		t.Fatal("a history that does not start at an epoch's first txn was accepted")
	}
	c, err := committedFrom([]*txn.Txn{
		tx(1, 0, zkproto.OpCreateSession, &txn.CreateSession{TimeoutMs: 4000}),
		tx(3, 1, zkproto.OpCreate, &txn.Create{Path: "/k", ACL: zkproto.OpenACLUnsafe, ParentCversion: -1}),
	})
	if err != nil || len(c.Problems) != 1 {
		t.Fatalf("a hole: err %v, problems %v", err, c.Problems)
	}
	c, err = committedFrom([]*txn.Txn{
		tx(1, 1, zkproto.OpCreate, &txn.Create{Path: "/e", ACL: zkproto.OpenACLUnsafe, Ephemeral: true, ParentCversion: -1}),
	})
	if err != nil || len(c.Problems) != 1 {
		t.Fatalf("an ephemeral of an unknown session: err %v, problems %v", err, c.Problems)
	}
}

// TestPrematureExpiry: an expiry counts as premature only if it came
// sooner after the client last heard from its session than a cut-off
// follower answering pings (slack) and an idle client's ping interval (a
// third of the timeout) explain.
func TestPrematureExpiry(t *testing.T) {
	const slack = 1200 * time.Millisecond // syncLimit 10 of 100 ms ticks, and two ticks
	for _, tc := range []struct {
		name          string
		heardToExpiry time.Duration
		want          []string
	}{
		{"after the timeout", 2100 * time.Millisecond, nil},
		// CI's case: heard 1.1 s into a cut from a follower, last touch
		// at the leader 0.6 s before the cut.
		{"within slack and a ping interval", 316 * time.Millisecond, nil},
		{"sooner than any cut explains", 100 * time.Millisecond, []string{"sessions"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const heardMs = 16_640
			c, err := committedFrom([]*txn.Txn{
				tx(1, 0, zkproto.OpCreateSession, &txn.CreateSession{TimeoutMs: 2000}),
				{Header: txn.Header{ClientID: testSession, Zxid: z(2), Time: heardMs + tc.heardToExpiry.Milliseconds(),
					Type: zkproto.OpCloseSession}, Record: &txn.CloseSession{}},
			})
			if err != nil {
				t.Fatal(err)
			}
			h := NewHistory()
			h.start = time.UnixMilli(0)
			h.sessions = append(h.sessions, &SessionRec{Client: "c1", ID: testSession, Timeout: 2 * time.Second,
				LastHeard: heardMs * int64(time.Millisecond)})
			r := NewReport(0)
			CheckSessions(h, c, r, slack)
			if got := checks(r); !slices.Equal(got, tc.want) {
				t.Fatalf("violations %v, want %v\n%s", got, tc.want, r.Details())
			}
		})
	}
}
