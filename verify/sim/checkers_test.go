package sim

import (
	"strings"
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// The checkers are tested on made-up histories: a final committed history
// of a few txns and what clients saw. Each case must be flagged by exactly
// the invariant it breaks, and the matching correct case by none.

const (
	sess1 int64 = 0x100
	sess2 int64 = 0x200
)

func z(k uint32) zxid.ID { return zxid.Make(1, k) }

func hdr(sid int64, cxid int32, k uint32, op zkproto.Op) txn.Header {
	return txn.Header{ClientID: sid, Cxid: cxid, Zxid: z(k), Time: 1, Type: op}
}

func mkSession(sid int64, k uint32) *txn.Txn {
	return &txn.Txn{Header: hdr(sid, 0, k, zkproto.OpCreateSession), Record: &txn.CreateSession{TimeoutMs: 4000}}
}

func mkCreate(sid int64, cxid int32, k uint32, path, data string, eph bool) *txn.Txn {
	return &txn.Txn{Header: hdr(sid, cxid, k, zkproto.OpCreate),
		Record: &txn.Create{Path: path, Data: []byte(data), ACL: zkproto.OpenACLUnsafe, Ephemeral: eph, ParentCversion: -1}}
}

func mkSet(sid int64, cxid int32, k uint32, path, data string, version int32) *txn.Txn {
	return &txn.Txn{Header: hdr(sid, cxid, k, zkproto.OpSetData), Record: &txn.SetData{Path: path, Data: []byte(data), Version: version}}
}

func mkClose(sid int64, cxid int32, k uint32, paths ...string) *txn.Txn {
	return &txn.Txn{Header: hdr(sid, cxid, k, zkproto.OpCloseSession), Record: &txn.CloseSession{Paths: paths}}
}

func mkError(sid int64, cxid int32, k uint32, code zkproto.Code) *txn.Txn {
	return &txn.Txn{Header: hdr(sid, cxid, k, zkproto.OpError), Record: &txn.Error{Err: int32(code)}}
}

// baseHistory: two sessions; session 1 creates /r0 = a then sets it to b;
// session 2 creates ephemeral /e0 and closes.
func baseHistory() []*txn.Txn {
	return []*txn.Txn{
		mkSession(sess1, 1),
		mkSession(sess2, 2),
		mkCreate(sess1, 1, 3, "/r0", "a", false),
		mkCreate(sess2, 1, 4, "/e0", "e", true),
		mkSet(sess1, 2, 5, "/r0", "b", 1),
		mkError(sess1, 3, 6, zkproto.CodeBadVersion),
		mkClose(sess2, 2, 7, "/e0"),
	}
}

// checkCluster returns a cluster whose final history is txns; nothing runs.
func checkCluster(t *testing.T, txns []*txn.Txn) *Cluster {
	t.Helper()
	c := NewCluster(Options{Seed: 1, NoFaults: true})
	var zs []zxid.ID
	for _, tx := range txns {
		c.oracle.txns[tx.Header.Zxid] = loggedTxn{data: txn.Marshal(tx), server: 1}
		zs = append(zs, tx.Header.Zxid)
	}
	c.oracle.final = c.oracle.replay(c, zs)
	if c.oracle.final == nil {
		t.Fatalf("replay failed: %v", c.violations)
	}
	return c
}

// reply makes a completed op.
func reply(client int, sid int64, conn uint64, xid int32, kind zkproto.Op, path string, code zkproto.Code, k uint32, seq uint64) *op {
	return &op{client: client, session: sid, conn: zkConn(conn), xid: xid, kind: kind, path: path, version: -1,
		callSeq: seq, retSeq: seq + 1, done: true, hdr: zkproto.ReplyHeader{Xid: xid, Zxid: int64(z(k)), Err: code}}
}

// checkerCases each give a checker a made-up client history on top of
// baseHistory and name the invariant it must report ("" for none).
var checkerCases = []struct {
	name  string
	check func(*Cluster)
	setup func(*Cluster)
	want  string
}{
	{"fifo ok", (*Cluster).checkFIFO, func(c *Cluster) {
		c.hist.conns = append(c.hist.conns, &connRecord{sent: []int32{1, 2, 3}, got: []int32{1, 2}})
	}, ""},
	{"fifo reordered", (*Cluster).checkFIFO, func(c *Cluster) {
		c.hist.conns = append(c.hist.conns, &connRecord{sent: []int32{1, 2, 3}, got: []int32{2}})
	}, "fifo"},
	{"session zxid goes back", (*Cluster).checkFIFO, func(c *Cluster) {
		c.hist.ops = append(c.hist.ops, reply(0, sess1, 1, 1, zkproto.OpGetData, "/r0", zkproto.CodeOK, 5, 10),
			reply(0, sess1, 2, 2, zkproto.OpGetData, "/r0", zkproto.CodeOK, 4, 20))
	}, "fifo"},
	{"read ok", (*Cluster).checkReads, func(c *Cluster) {
		o := reply(0, sess1, 1, 4, zkproto.OpGetData, "/r0", zkproto.CodeOK, 4, 10)
		o.data, o.stat.Version = []byte("a"), 0
		c.hist.ops = append(c.hist.ops, o)
	}, ""},
	{"stale read data", (*Cluster).checkReads, func(c *Cluster) {
		o := reply(0, sess1, 1, 4, zkproto.OpGetData, "/r0", zkproto.CodeOK, 5, 10)
		o.data, o.stat.Version = []byte("a"), 0
		c.hist.ops = append(c.hist.ops, o)
	}, "reads"},
	{"read at uncommitted zxid", (*Cluster).checkReads, func(c *Cluster) {
		c.hist.ops = append(c.hist.ops, reply(0, sess1, 1, 4, zkproto.OpExists, "/r0", zkproto.CodeNoNode, 99, 10))
	}, "reads"},
	{"acked write ok", (*Cluster).checkDurability, func(c *Cluster) {
		c.hist.ops = append(c.hist.ops, reply(0, sess1, 1, 2, zkproto.OpSetData, "/r0", zkproto.CodeOK, 5, 10),
			reply(0, sess1, 1, 3, zkproto.OpSetData, "/r0", zkproto.CodeBadVersion, 6, 12))
	}, ""},
	{"acked write lost", (*Cluster).checkDurability, func(c *Cluster) {
		c.hist.ops = append(c.hist.ops, reply(0, sess1, 1, 9, zkproto.OpSetData, "/r0", zkproto.CodeOK, 8, 10))
	}, "durability"},
	{"acked with wrong outcome", (*Cluster).checkDurability, func(c *Cluster) {
		c.hist.ops = append(c.hist.ops, reply(0, sess1, 1, 3, zkproto.OpSetData, "/r0", zkproto.CodeOK, 6, 10))
	}, "durability"},
	{"session never created", (*Cluster).checkDurability, func(c *Cluster) {
		c.hist.sessions = append(c.hist.sessions, &sessionRecord{id: 0x999})
	}, "durability"},
	{"session used after close", (*Cluster).checkEphemerals, func(c *Cluster) {
		c.hist.ops = append(c.hist.ops, reply(1, sess2, 1, -2, zkproto.OpPing, "", zkproto.CodeOK, 8, 10))
	}, "ephemeral"},
	{"close reply itself is fine", (*Cluster).checkEphemerals, func(c *Cluster) {
		c.hist.ops = append(c.hist.ops, reply(1, sess2, 1, 2, zkproto.OpCloseSession, "", zkproto.CodeOK, 7, 10))
	}, ""},
	{"event before reply", (*Cluster).checkWatches, func(c *Cluster) {
		w := reply(0, sess1, 1, 1, zkproto.OpExists, "/r0", zkproto.CodeOK, 3, 10)
		w.watch = true
		c.hist.events = append(c.hist.events, watchEvent{conn: 1, seq: 12, typ: zkproto.EventNodeDataChanged, path: "/r0"})
		c.hist.ops = append(c.hist.ops, w, reply(0, sess1, 1, 2, zkproto.OpGetData, "/r1", zkproto.CodeNoNode, 5, 13))
	}, ""},
	{"reply before event", (*Cluster).checkWatches, func(c *Cluster) {
		w := reply(0, sess1, 1, 1, zkproto.OpExists, "/r0", zkproto.CodeOK, 3, 10)
		w.watch = true
		c.hist.events = append(c.hist.events, watchEvent{conn: 1, seq: 15, typ: zkproto.EventNodeDataChanged, path: "/r0"})
		c.hist.ops = append(c.hist.ops, w, reply(0, sess1, 1, 2, zkproto.OpGetData, "/r1", zkproto.CodeNoNode, 5, 13))
	}, "watches"},
	{"event without watch", (*Cluster).checkWatches, func(c *Cluster) {
		c.hist.events = append(c.hist.events, watchEvent{conn: 1, seq: 15, typ: zkproto.EventNodeDataChanged, path: "/r0"})
	}, "watches"},
	{"write order ok", (*Cluster).checkWriteOrder, func(c *Cluster) {
		c.hist.ops = append(c.hist.ops, reply(0, sess1, 1, 1, zkproto.OpCreate, "/r0", zkproto.CodeOK, 3, 10),
			reply(1, sess2, 2, 1, zkproto.OpCreate, "/e0", zkproto.CodeOK, 4, 12))
	}, ""},
	{"write committed before an earlier one", (*Cluster).checkWriteOrder, func(c *Cluster) {
		c.hist.ops = append(c.hist.ops, reply(0, sess1, 1, 2, zkproto.OpSetData, "/r0", zkproto.CodeOK, 5, 10),
			reply(1, sess2, 2, 1, zkproto.OpCreate, "/e0", zkproto.CodeOK, 4, 12))
	}, "linearizability"},
	{"linearizable", (*Cluster).checkLinearizable, func(c *Cluster) {
		cr := reply(0, sess1, 1, 1, zkproto.OpCreate, "/r0", zkproto.CodeOK, 3, 10)
		cr.value = []byte("a")
		set := &op{client: 0, session: sess1, conn: 1, xid: 2, kind: zkproto.OpSetData, path: "/r0",
			value: []byte("b"), version: 0, callSeq: 12} // unknown outcome, committed as zxid 5
		c.hist.ops = append(c.hist.ops, cr, set)
	}, ""},
	{"lost update", (*Cluster).checkLinearizable, func(c *Cluster) {
		cr := reply(0, sess1, 1, 1, zkproto.OpCreate, "/r0", zkproto.CodeOK, 3, 10)
		cr.value = []byte("a")
		s1 := reply(0, sess1, 1, 2, zkproto.OpSetData, "/r0", zkproto.CodeOK, 5, 12)
		s1.value, s1.version, s1.stat.Version = []byte("b"), 0, 1
		s2 := reply(1, sess2, 2, 9, zkproto.OpSetData, "/r0", zkproto.CodeOK, 8, 14)
		s2.value, s2.version, s2.stat.Version = []byte("c"), 0, 1
		c.hist.ops = append(c.hist.ops, cr, s1, s2)
	}, "linearizability"},
}

func TestCheckers(t *testing.T) {
	for _, tt := range checkerCases {
		t.Run(tt.name, func(t *testing.T) {
			c := checkCluster(t, baseHistory())
			tt.setup(c)
			tt.check(c)
			switch {
			case tt.want == "" && len(c.violations) > 0:
				t.Fatalf("unexpected violations: %v", c.violations)
			case tt.want != "" && len(c.violations) == 0:
				t.Fatalf("no violation, want %s", tt.want)
			case tt.want != "" && !strings.HasPrefix(c.violations[0], tt.want+":"):
				t.Fatalf("got %v, want %s", c.violations, tt.want)
			}
		})
	}
}

// A digest that differs between replicas at one zxid is flagged at once.
func TestDigestDisagreement(t *testing.T) {
	c := checkCluster(t, baseHistory())
	c.oracle.digest(c, 1, z(5), 42)
	c.oracle.digest(c, 2, z(5), 42)
	if len(c.violations) != 0 {
		t.Fatalf("equal digests flagged: %v", c.violations)
	}
	c.oracle.digest(c, 3, z(5), 43)
	if len(c.violations) != 1 || !strings.HasPrefix(c.violations[0], "digest:") {
		t.Fatalf("got %v, want one digest violation", c.violations)
	}
}

// Truncating a txn some replica applied is flagged; truncating one nobody
// applied is not.
func TestTruncateCommitted(t *testing.T) {
	c := checkCluster(t, baseHistory())
	c.oracle.noteApplied(2, z(5))
	log := []zxid.ID{z(4), z(6)}
	c.oracle.truncating(c, 1, z(5), log)
	if len(c.violations) != 0 {
		t.Fatalf("flagged: %v", c.violations)
	}
	log = []zxid.ID{z(4), z(5)}
	c.oracle.truncating(c, 1, z(4), log)
	if len(c.violations) != 1 || !strings.HasPrefix(c.violations[0], "durability:") {
		t.Fatalf("got %v, want one durability violation", c.violations)
	}
}

func zkConn(id uint64) zkcore.ConnID { return zkcore.ConnID(id) }
