package zkcore

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// quotaStep is one request of a quota scenario and the codes it must get:
// the reply header's, and for a multi each result's.
type quotaStep struct {
	op    zkproto.Op
	body  jute.Record
	want  zkproto.Code
	multi []zkproto.Code
	any   bool // the outcome does not matter (a directory that may exist)
}

func qCreate(path, data string, want zkproto.Code) quotaStep {
	var d []byte
	if data != "" {
		d = []byte(data)
	}
	return quotaStep{op: zkproto.OpCreate, body: &zkproto.CreateRequest{Path: path, Data: d, ACL: zkproto.OpenACLUnsafe}, want: want}
}

func qSet(path, data string, version int32, want zkproto.Code) quotaStep {
	return quotaStep{op: zkproto.OpSetData, body: &zkproto.SetDataRequest{Path: path, Data: []byte(data), Version: version}, want: want}
}

func qMulti(want zkproto.Code, results []zkproto.Code, ops ...zkproto.MultiOp) quotaStep {
	return quotaStep{op: zkproto.OpMulti, body: &zkproto.MultiRequest{Ops: ops}, want: want, multi: results}
}

func mCreate(path, data string) zkproto.MultiOp {
	return zkproto.MultiOp{Op: zkproto.OpCreate, Record: &zkproto.CreateRequest{Path: path, Data: []byte(data), ACL: zkproto.OpenACLUnsafe}}
}

func mSet(path, data string) zkproto.MultiOp {
	return zkproto.MultiOp{Op: zkproto.OpSetData, Record: &zkproto.SetDataRequest{Path: path, Data: []byte(data), Version: -1}}
}

// qQuota creates a quota's nodes as zkCli's setquota does: the directories
// that do not exist yet with null data, the limits, then the stats.
func qQuota(path, limits string) []quotaStep {
	var steps []quotaStep
	dir := datatree.QuotaPath
	for _, name := range strings.Split(path, "/")[1:] {
		dir += "/" + name
		st := qCreate(dir, "", zkproto.CodeOK)
		st.any = true
		steps = append(steps, st)
	}
	return append(steps,
		qCreate(datatree.QuotaLimitPath(path), limits, zkproto.CodeOK),
		qCreate(datatree.QuotaStatPath(path), "count=0,bytes=0", zkproto.CodeOK))
}

// limits formats limits as zkCli 3.8's setquota writes them.
func limits(count, bytes, countHard, byteHard int64) string {
	var st datatree.StatsTrack
	st.Set(datatree.QuotaCount, count)
	st.Set(datatree.QuotaBytes, bytes)
	st.Set(datatree.QuotaCountHardLimit, countHard)
	st.Set(datatree.QuotaByteHardLimit, byteHard)
	return st.String()
}

func steps(parts ...any) []quotaStep {
	var out []quotaStep
	for _, p := range parts {
		switch p := p.(type) {
		case quotaStep:
			out = append(out, p)
		case []quotaStep:
			out = append(out, p...)
		}
	}
	return out
}

const (
	qOK       = zkproto.CodeOK
	qExceeded = zkproto.CodeQuotaExceeded
)

// TestQuotaEnforced runs quota scenarios through the core and checks each
// reply against what Apache ZooKeeper 3.8 answers (checked side by side in
// verify/compat/diff's TestQuota).
func TestQuotaEnforced(t *testing.T) {
	rtErr := zkproto.CodeRuntimeInconsistency
	tests := []struct {
		name    string
		enforce bool
		steps   []quotaStep
		stats   map[string]string // quota -> zookeeper_stats data at the end
	}{
		{"count hard limit: the 6th node is refused", true, steps(
			qCreate("/x", "", qOK), qQuota("/x", limits(-1, -1, 5, -1)),
			qCreate("/x/1", "", qOK), qCreate("/x/2", "", qOK), qCreate("/x/3", "", qOK), qCreate("/x/4", "", qOK),
			qCreate("/x/5", "", qExceeded), qCreate("/x/4/a", "", qExceeded),
			qSet("/x/1", "data", -1, qOK), // no count change, no byte limit
		), map[string]string{"/x": "count=5,bytes=4"}},
		{"without enforceQuota nothing is refused", false, steps(
			qCreate("/x", "", qOK), qQuota("/x", limits(-1, -1, 2, 1)),
			qCreate("/x/1", "abc", qOK), qCreate("/x/2", "", qOK), qSet("/x/1", "abcdef", -1, qOK),
		), map[string]string{"/x": "count=3,bytes=6"}},
		{"byte hard limit: create and setData", true, steps(
			qCreate("/b", "12345", qOK), qQuota("/b", limits(-1, -1, -1, 10)),
			qSet("/b", "12345678901", -1, qExceeded),
			qSet("/b", "1234567890", -1, qOK),
			qSet("/b", "1234567890", 7, zkproto.CodeBadVersion),
			qSet("/b", "12345678901", 7, qExceeded), // the quota is checked before the version
			qCreate("/b/empty", "", qOK),            // no bytes: not checked
			qCreate("/b/one", "1", qExceeded),
			qSet("/b", "123", -1, qOK),
			qCreate("/b/one", "1", qOK),
		), map[string]string{"/b": "count=3,bytes=4"}},
		{"a node over the byte hard limit cannot shrink while still over it", true, steps(
			qCreate("/b", "12345678901234567890", qOK), qQuota("/b", limits(-1, -1, -1, 10)),
			qSet("/b", "1234567890123456789", -1, qExceeded),
			qSet("/b", "123456789", -1, qOK),
		), map[string]string{"/b": "count=1,bytes=9"}},
		{"a limit of 0 is a limit", true, steps(
			qCreate("/z", "", qOK), qQuota("/z", limits(-1, -1, 0, -1)),
			qCreate("/z/a", "", qExceeded),
			qSet("/z", "x", -1, qOK),
		), map[string]string{"/z": "count=1,bytes=1"}},
		{"soft limits are only logged", true, steps(
			qCreate("/s", "", qOK), qQuota("/s", limits(2, 1, -1, -1)),
			qCreate("/s/a", "xx", qOK), qCreate("/s/b", "xx", qOK), qSet("/s/a", "xxxxxxx", -1, qOK),
		), map[string]string{"/s": "count=3,bytes=9"}},
		{"the 3.4 form of the limits is a soft limit", true, steps(
			qCreate("/s", "", qOK), qQuota("/s", "count=1,bytes=1"),
			qCreate("/s/a", "xx", qOK),
		), map[string]string{"/s": "count=2,bytes=2"}},
		{"a hard limit wins over a lower soft one", true, steps(
			qCreate("/h", "", qOK), qQuota("/h", limits(1, -1, 3, -1)),
			qCreate("/h/a", "", qOK), qCreate("/h/b", "", qOK), qCreate("/h/c", "", qExceeded),
		), map[string]string{"/h": "count=3,bytes=0"}},
		{"nested quotas: the deepest one is checked", true, steps(
			qCreate("/n", "", qOK), qCreate("/n/in", "", qOK),
			qQuota("/n", limits(-1, -1, 3, -1)), qQuota("/n/in", limits(-1, -1, 10, -1)),
			qCreate("/n/in/a", "", qOK), qCreate("/n/in/b", "", qOK), qCreate("/n/in/c", "", qOK),
			qCreate("/n/x", "", qOK), qCreate("/n/y", "", qExceeded),
		), map[string]string{"/n": "count=3,bytes=0", "/n/in": "count=4,bytes=0"}},
		{"a multi is checked op by op against the applied tree", true, steps(
			qCreate("/m", "", qOK), qQuota("/m", limits(-1, -1, 3, -1)),
			// ZooKeeper checks each op against the stats as applied, which
			// the multi's own creates have not changed yet.
			qMulti(qOK, []zkproto.Code{qOK, qOK, qOK, qOK}, mCreate("/m/1", ""), mCreate("/m/2", ""), mCreate("/m/3", ""), mCreate("/m/4", "")),
			qMulti(qOK, []zkproto.Code{qOK, qExceeded, rtErr}, mSet("/m/1", "x"), mCreate("/m/5", ""), mCreate("/m/6", "")),
			qCreate("/m/5", "", qExceeded),
		), map[string]string{"/m": "count=5,bytes=0"}},
		{"unreadable limits fail the request, in a multi the whole of it", true, steps(
			qCreate("/g", "", qOK), qQuota("/g", "count=x"),
			qCreate("/g/a", "", zkproto.CodeMarshallingError),
			qMulti(zkproto.CodeMarshallingError, nil, mCreate("/elsewhere", ""), mCreate("/g/a", "")),
			qCreate("/elsewhere", "", qOK), // the failed multi left nothing behind
		), map[string]string{"/g": "count=1,bytes=0"}},
		{"unreadable stats fail only the writes that check them", true, steps(
			qCreate("/u", "", qOK), qQuota("/u", limits(-1, -1, 5, -1)),
			qSet(datatree.QuotaStatPath("/u"), "garbage", -1, qOK),
			qCreate("/u/a", "", zkproto.CodeMarshallingError),
			// No byte limit: the stats are not read. Applying it cannot
			// update them either; ZooKeeper stops the server there, keeper
			// leaves them as they are (datatree's quota.go).
			qSet("/u", "abc", -1, qOK),
		), map[string]string{"/u": "garbage"}},
		{"a quota whose limits node is gone checks nothing", true, steps(
			qCreate("/d", "", qOK), qQuota("/d", limits(-1, -1, 1, -1)),
			qCreate("/d/a", "", qExceeded),
			quotaStep{op: zkproto.OpDelete, body: &zkproto.DeleteRequest{Path: datatree.QuotaLimitPath("/d"), Version: -1}},
			qCreate("/d/a", "", qOK),
		), map[string]string{"/d": "count=1,bytes=0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.EnforceQuota = tc.enforce })
			h.open(1)
			for i, st := range tc.steps {
				code, results := h.quotaRequest(st)
				if !st.any && (code != st.want || (st.multi != nil && !slices.Equal(results, st.multi))) {
					t.Fatalf("step %d %v %+v: got %v %v, want %v %v", i, st.op, st.body, code, results, st.want, st.multi)
				}
			}
			for quota, want := range tc.stats {
				if got := string(h.s.Tree().Node(datatree.QuotaStatPath(quota)).Data()); got != want {
					t.Errorf("stats of %s = %q, want %q", quota, got, want)
				}
			}
		})
	}
}

// quotaRequest sends st on connection 1 and returns its reply code and, for
// a multi that got a body, each result's code.
func (h *harness) quotaRequest(st quotaStep) (zkproto.Code, []zkproto.Code) {
	h.t.Helper()
	x := h.send(1, st.op, st.body)
	for _, f := range h.take(1) {
		if f.hdr.Xid != x {
			continue
		}
		if st.op != zkproto.OpMulti || f.hdr.Err != zkproto.CodeOK {
			return f.hdr.Err, nil
		}
		var resp zkproto.MultiResponse
		h.decode(f, &resp)
		var codes []zkproto.Code
		for _, r := range resp.Results {
			code := r.Err
			if e, ok := r.Record.(*zkproto.ErrorResponse); ok {
				code = e.Err
			}
			codes = append(codes, code)
		}
		return f.hdr.Err, codes
	}
	h.t.Fatalf("no reply to xid %d", x)
	return 0, nil
}

// ZooKeeper checks against the applied tree, so writes prepared together
// all see the stats from before any of them: pipelined creates can pass a
// hard limit, as they do on ZooKeeper.
func TestQuotaCheckedAgainstAppliedTree(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.EnforceQuota = true })
	h.open(1)
	for _, st := range steps(qCreate("/p", "", qOK), qQuota("/p", limits(-1, -1, 2, -1))) {
		if code, _ := h.quotaRequest(st); code != st.want {
			t.Fatalf("%+v: %v", st.body, code)
		}
	}
	h.autoApply = false
	x1 := h.send(1, zkproto.OpCreate, create("/p/a", "", 0))
	x2 := h.send(1, zkproto.OpCreate, create("/p/b", "", 0))
	h.applyN(2)
	h.expect(1, ok(x1), ok(x2))
	x3 := h.send(1, zkproto.OpCreate, create("/p/c", "", 0))
	h.applyN(1)
	h.expect(1, fail(x3, zkproto.CodeQuotaExceeded))
}

// The stats node's data follows the subtree; its version and mzxid do
// not, as get -s on ZooKeeper shows.
func TestQuotaStatsNodeStat(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.EnforceQuota = true })
	h.open(1)
	for _, st := range steps(qCreate("/x", "", qOK), qQuota("/x", limits(-1, -1, 5, -1))) {
		h.quotaRequest(st)
	}
	get := func() zkproto.GetDataResponse {
		x := h.send(1, zkproto.OpGetData, &zkproto.GetDataRequest{Path: datatree.QuotaStatPath("/x")})
		fs := h.expect(1, ok(x))
		var r zkproto.GetDataResponse
		h.decode(fs[0], &r)
		return r
	}
	before := get()
	for i := range 3 {
		h.quotaRequest(qCreate(fmt.Sprintf("/x/%d", i), "abcd", qOK))
	}
	after := get()
	if string(before.Data) != "count=1,bytes=0" || string(after.Data) != "count=4,bytes=12" {
		t.Fatalf("stats %q then %q", before.Data, after.Data)
	}
	b, a := before.Stat, after.Stat
	if a.Version != 0 || a.Mzxid != b.Mzxid || a.Mtime != b.Mtime || a.Czxid != b.Czxid || a.DataLength != 16 {
		t.Fatalf("stat before %+v, after %+v", b, a)
	}
}

// Soft limits are logged at Warn; so are hard limits that refuse.
func TestQuotaExceededLogged(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h := newHarness(t, func(c *Config) { c.EnforceQuota = true; c.Logger = logger })
	h.open(1)
	for _, st := range steps(qCreate("/s", "", qOK), qQuota("/s", limits(1, -1, -1, 4)),
		qCreate("/s/a", "", qOK), qCreate("/s/b", "12345", qExceeded)) {
		if code, _ := h.quotaRequest(st); code != st.want {
			t.Fatalf("%+v: %v, want %v", st.body, code, st.want)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`msg="quota exceeded" quota=/s what=count value=2 limit=soft max=1`,
		`msg="quota exceeded" quota=/s what=count value=3 limit=soft max=1`,
		`msg="quota exceeded" quota=/s what=bytes value=5 limit=hard max=4`,
	}
	if len(lines) != len(want) {
		t.Fatalf("logged:\n%s", buf.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) || !strings.Contains(lines[i], "level=WARN") {
			t.Errorf("log line %d = %q, want %q at WARN", i, lines[i], w)
		}
	}
}
