package datatree

import (
	"errors"
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
)

func TestParseStatsTrack(t *testing.T) {
	tests := []struct {
		data string
		// want holds the values read; nil means a parse error.
		want   map[string]int64
		format string // String() of what was read
	}{
		{"count=0,bytes=0", map[string]int64{"count": 0, "bytes": 0}, "count=0,bytes=0"},
		{"count=5,bytes=100", map[string]int64{"count": 5, "bytes": 100}, "count=5,bytes=100"},
		// zkCli 3.7+'s limits, with the "=" that hides the rest from 3.4.
		{"count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=5",
			map[string]int64{"count": -1, "bytes": -1, "byteHardLimit": -1, "countHardLimit": 5},
			"count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=5"},
		// Either separator, in runs; keys in any order; later keys win.
		{"countHardLimit=3;;count=1,,;bytes=2,count=4", map[string]int64{"count": 4, "bytes": 2, "countHardLimit": 3},
			"count=4,bytes=2=;countHardLimit=3"},
		{"", map[string]int64{}, "count=-1,bytes=-1"},
		{",;,", map[string]int64{}, "count=-1,bytes=-1"},
		{"count=7,", map[string]int64{"count": 7}, "count=7,bytes=-1"},
		{"count==5", map[string]int64{"count": -1}, "count=-1,bytes=-1"},
		{"count=5=6", map[string]int64{"count": 5}, "count=5,bytes=-1"},
		{"=5", map[string]int64{"": 5}, "count=-1,bytes=-1=;=5"},
		{"count=+3,bytes=-0", map[string]int64{"count": 3, "bytes": 0}, "count=3,bytes=0"},
		{"count=\u0663", map[string]int64{"count": 3}, "count=3,bytes=-1"}, // ARABIC-INDIC DIGIT THREE
		{"zz=1;aa=2;Zb=3", map[string]int64{"zz": 1, "aa": 2, "Zb": 3}, "count=-1,bytes=-1=;Zb=3;aa=2;zz=1"},
		{"bytes=9223372036854775807,count=-9223372036854775808",
			map[string]int64{"bytes": 1<<63 - 1, "count": -1 << 63}, "count=-9223372036854775808,bytes=9223372036854775807"},
		{"count", nil, ""},
		{"count=", nil, ""},
		{",count=1", nil, ""},
		{"=", nil, ""},
		{"count=x", nil, ""},
		{"count= 1", nil, ""},
		{"count=1.5", nil, ""},
		{"count=-", nil, ""},
		{"bytes=9223372036854775808", nil, ""},
		{"garbage", nil, ""},
	}
	for _, tc := range tests {
		st, err := ParseStatsTrack([]byte(tc.data))
		if tc.want == nil {
			if !errors.Is(err, ErrQuotaFormat) {
				t.Errorf("ParseStatsTrack(%q) = %v, %v; want ErrQuotaFormat", tc.data, st, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseStatsTrack(%q): %v", tc.data, err)
			continue
		}
		if len(st.values) != len(tc.want) {
			t.Errorf("ParseStatsTrack(%q) = %v, want %v", tc.data, st.values, tc.want)
		}
		for k, v := range tc.want {
			if got := st.Get(k); got != v {
				t.Errorf("ParseStatsTrack(%q)[%q] = %d, want %d", tc.data, k, got, v)
			}
		}
		if got := st.String(); got != tc.format {
			t.Errorf("ParseStatsTrack(%q).String() = %q, want %q", tc.data, got, tc.format)
		}
	}
	if _, err := ParseStatsTrack(nil); !errors.Is(err, ErrQuotaFormat) {
		t.Errorf("ParseStatsTrack(nil) = %v, want ErrQuotaFormat (Java throws on null data)", err)
	}
}

// zkCliLimits is what zkCli 3.8's "setquota -N 5" writes into a new
// zookeeper_limits node.
const zkCliLimits = "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=5"

// setQuota creates a quota's nodes the way zkCli's setquota does: the
// directories with null data, then the limits, then the stats.
func (e *env) setQuota(path, limits string) {
	e.t.Helper()
	dir := QuotaPath
	for name := range quotaNames(path) {
		dir += "/" + name
		if e.tree.Node(dir) == nil {
			e.create(dir, nil)
		}
	}
	e.create(dir+"/"+QuotaLimitNode, []byte(limits))
	e.create(dir+"/"+QuotaStatNode, []byte("count=0,bytes=0"))
}

func (e *env) setData(path, data string) {
	e.t.Helper()
	e.mustApply(zkproto.OpSetData, &txnSetData{Path: path, Data: []byte(data), Version: e.tree.Node(path).Persisted().Version + 1})
}

func (e *env) remove(path string) {
	e.t.Helper()
	e.mustApply(zkproto.OpDelete, &txn.Delete{Path: path})
}

func (e *env) stats(path string) string {
	e.t.Helper()
	n := e.tree.Node(QuotaStatPath(path))
	if n == nil {
		return "(none)"
	}
	return string(n.Data())
}

// TestQuotaStats follows zookeeper_stats through the txns that change a
// quota's subtree, as Apache ZooKeeper 3.8's DataTree maintains it.
func TestQuotaStats(t *testing.T) {
	type step struct {
		do    func(e *env)
		quota string // whose stats to check
		want  string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"counts the subtree when the stats node is created", []step{
			{func(e *env) { e.create("/x", []byte("123")); e.create("/x/a", []byte("45")) }, "/x", "(none)"},
			{func(e *env) { e.setQuota("/x", zkCliLimits) }, "/x", "count=2,bytes=5"},
		}},
		{"create, setData and delete below the quota", []step{
			{func(e *env) { e.create("/x", nil); e.setQuota("/x", zkCliLimits) }, "/x", "count=1,bytes=0"},
			{func(e *env) { e.create("/x/a", []byte("12345")) }, "/x", "count=2,bytes=5"},
			{func(e *env) { e.create("/x/a/b", []byte{}) }, "/x", "count=3,bytes=5"},
			{func(e *env) { e.setData("/x/a", "1") }, "/x", "count=3,bytes=1"},
			{func(e *env) { e.setData("/x", "abcdef") }, "/x", "count=3,bytes=7"},
			{func(e *env) { e.remove("/x/a/b"); e.remove("/x/a") }, "/x", "count=1,bytes=6"},
			{func(e *env) { e.remove("/x") }, "/x", "count=0,bytes=0"},
			{func(e *env) { e.create("/x", []byte("zz")) }, "/x", "count=1,bytes=2"},
			{func(e *env) { e.create("/xy", []byte("zz")); e.create("/y", nil) }, "/x", "count=1,bytes=2"},
		}},
		{"nested quotas: the deepest one counts", []step{
			{func(e *env) { e.create("/x", nil); e.create("/x/y", nil); e.setQuota("/x", zkCliLimits) }, "/x", "count=2,bytes=0"},
			{func(e *env) { e.setQuota("/x/y", "count=3,bytes=-1") }, "/x/y", "count=1,bytes=0"},
			{func(e *env) { e.create("/x/y/z", []byte("abc")) }, "/x/y", "count=2,bytes=3"},
			{func(e *env) {}, "/x", "count=2,bytes=0"},
			{func(e *env) { e.create("/x/w", []byte("a")) }, "/x", "count=3,bytes=1"},
		}},
		{"deleting the limits node stops the counting", []step{
			{func(e *env) { e.create("/x", nil); e.setQuota("/x", zkCliLimits); e.create("/x/a", nil) }, "/x", "count=2,bytes=0"},
			{func(e *env) { e.remove(QuotaLimitPath("/x")); e.create("/x/b", nil) }, "/x", "count=2,bytes=0"},
			{func(e *env) { e.create(QuotaLimitPath("/x"), []byte(zkCliLimits)); e.create("/x/c", nil) }, "/x", "count=3,bytes=0"},
		}},
		{"stats made before the limits start from the count then", []step{
			{func(e *env) {
				e.create("/x", nil)
				e.create(QuotaPath+"/x", nil)
				e.create(QuotaStatPath("/x"), []byte("count=0,bytes=0"))
			}, "/x", "count=1,bytes=0"},
			{func(e *env) { e.create("/x/a", nil) }, "/x", "count=1,bytes=0"},
			{func(e *env) { e.create(QuotaLimitPath("/x"), nil); e.create("/x/b", nil) }, "/x", "count=2,bytes=0"},
		}},
		{"a stats node a client rewrote is counted from", []step{
			{func(e *env) {
				e.create("/x", nil)
				e.setQuota("/x", zkCliLimits)
				e.setData(QuotaStatPath("/x"), "count=10;x=1")
			}, "/x", "count=10;x=1"},
			{func(e *env) { e.create("/x/a", []byte("ab")) }, "/x", "count=11,bytes=1=;x=1"},
			{func(e *env) { e.setData(QuotaStatPath("/x"), "garbage"); e.create("/x/b", nil) }, "/x", "garbage"},
			{func(e *env) { e.remove(QuotaStatPath("/x")); e.create("/x/c", nil) }, "/x", "(none)"},
		}},
		{"ephemerals deleted by a closed session", []step{
			{func(e *env) { e.create("/x", nil); e.setQuota("/x", zkCliLimits) }, "/x", "count=1,bytes=0"},
			{func(e *env) {
				e.mustApply(zkproto.OpCreate, &txn.Create{Path: "/x/e", Data: []byte("eph"), ACL: worldAll, Ephemeral: true, ParentCversion: 1})
			}, "/x", "count=2,bytes=3"},
			{func(e *env) { e.mustApply(zkproto.OpCloseSession, &txn.CloseSession{}) }, "/x", "count=1,bytes=0"},
		}},
		{"a limits node right under /zookeeper/quota counts nothing", []step{
			{func(e *env) {
				e.create("/x", nil)
				e.create(QuotaPath+"/"+QuotaLimitNode, []byte(zkCliLimits))
				e.create(QuotaPath+"/"+QuotaStatNode, []byte("count=0,bytes=0"))
			}, "", "count=7,bytes=67"}, // the whole tree: 7 nodes, limits and stats data
			{func(e *env) { e.create("/x/a", nil) }, "", "count=7,bytes=67"},
		}},
		{"blank names do not count as quota levels", []step{
			{func(e *env) { e.create("/x", nil); e.create("/x/ ", nil); e.setQuota("/x", zkCliLimits) }, "/x", "count=2,bytes=0"},
			{func(e *env) { e.create("/x/ /a", []byte("q")) }, "/x", "count=3,bytes=1"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for i, st := range tc.steps {
				st.do(e)
				if got := e.stats(st.quota); got != st.want {
					t.Fatalf("step %d: stats of %q = %q, want %q", i, st.quota, got, st.want)
				}
			}
		})
	}
}

// Stats rewrites leave the stats node's stat, the digest and the data size
// alone, as Java's updateQuotaStat does.
func TestQuotaStatsRewriteKeepsStat(t *testing.T) {
	e := newEnv(t)
	e.create("/x", nil)
	e.setQuota("/x", zkCliLimits)
	stat := e.tree.Node(QuotaStatPath("/x")).Persisted()
	digest, size := e.tree.Digest(), e.tree.ApproximateDataSize()
	for i := range 12 {
		e.create("/x/n"+string(rune('a'+i)), []byte("0123456789"))
	}
	if got := e.stats("/x"); got != "count=13,bytes=120" {
		t.Fatalf("stats %q", got)
	}
	if got := e.tree.Node(QuotaStatPath("/x")).Persisted(); got != stat {
		t.Errorf("stats stat changed: %+v, was %+v", got, stat)
	}
	if d := e.tree.ComputeDigest(); d != e.tree.Digest() {
		t.Errorf("digest %d, recomputed %d", e.tree.Digest(), d)
	}
	if e.tree.Digest() == digest {
		t.Error("digest did not move with the user nodes")
	}
	// "count=13,bytes=120" is 3 bytes longer than "count=0,bytes=0": Java's
	// size counter does not see it.
	want := size + 12*int64(len("/x/na")+10)
	if got := e.tree.ApproximateDataSize(); got != want {
		t.Errorf("ApproximateDataSize %d, want %d", got, want)
	}
}

// TestQuotaApproximateDataSize replays the creates after which Apache
// ZooKeeper 3.8.0's mntr reported zk_approximate_data_size 344 (quota
// stats rewritten behind its size counter); a restart counts 345.
func TestQuotaApproximateDataSize(t *testing.T) {
	e := newEnv(t)
	e.create("/x", []byte("123"))
	e.setQuota("/x", zkCliLimits)
	e.create("/x/a", []byte("12"))
	e.create("/y", nil)
	e.setQuota("/y", "count=-1,bytes=-1")
	e.create("/y/a", []byte("1234567890"))
	if got := e.tree.ApproximateDataSize(); got != 344 {
		t.Errorf("ApproximateDataSize = %d, want ZooKeeper's 344", got)
	}
	if got := snapshotOf(t, e.tree).ApproximateDataSize(); got != 345 {
		t.Errorf("after a snapshot round trip ApproximateDataSize = %d, want 345", got)
	}
}

// TestQuotaAfterSnapshot checks that loading a snapshot rebuilds the
// tracking and recounts every stats node, as Java's setupQuota does.
func TestQuotaAfterSnapshot(t *testing.T) {
	e := newEnv(t)
	e.create("/x", []byte("abc"))
	e.create("/x/y", nil)
	e.create("/z", nil)
	e.setQuota("/x", zkCliLimits)
	e.setQuota("/x/y", "count=1,bytes=1")
	e.setQuota("/z", "count=1,bytes=1")
	e.create("/x/a", []byte("1"))
	e.create("/x/y/c", nil)                               // counts towards /x/y alone, until a recount of /x
	e.setData(QuotaStatPath("/x"), "count=100,bytes=100") // a client's edit
	e.setData(QuotaStatPath("/z"), "garbage")
	e.remove(QuotaLimitPath("/z"))
	// A zookeeper_limits node with a child marks nothing on load.
	e.create(QuotaLimitPath("/x/y")+"/child", nil)

	back := snapshotOf(t, e.tree)
	if got, want := back.QuotaPaths(), []string{"/x"}; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("quotas after load %v, want %v", got, want)
	}
	// Live, /x/y is still tracked (the child came after its limits node).
	if got := e.tree.QuotaPaths(); len(got) != 2 {
		t.Fatalf("live quotas %v, want /x and /x/y", got)
	}
	for path, want := range map[string]string{
		"/x":   "count=4,bytes=4", // recounted: /x, /x/y, /x/a, /x/y/c
		"/x/y": "count=2,bytes=0", // not tracked, not recounted
		"/z":   "garbage",         // no limits node: not recounted
	} {
		if got := string(back.Node(QuotaStatPath(path)).Data()); got != want {
			t.Errorf("stats of %s after load %q, want %q", path, got, want)
		}
	}
	if msg := checkTree(back); msg != "" {
		t.Error(msg)
	}
	if back.Digest() != e.tree.Digest() {
		t.Errorf("digest after load %d, want %d: stats are outside the digest", back.Digest(), e.tree.Digest())
	}
	// The loaded tree keeps counting.
	res, _ := back.Apply(&txn.Txn{Header: e.next(zkproto.OpCreate, sess1),
		Record: &txn.Create{Path: "/x/y/b", Data: []byte("xy"), ACL: worldAll, ParentCversion: 2}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := string(back.Node(QuotaStatPath("/x")).Data()); got != "count=5,bytes=6" {
		t.Errorf("stats of /x after a create %q", got)
	}
}

func TestQuotaPrefix(t *testing.T) {
	tree := New()
	for _, p := range []string{"/a", "/a/b/c", "/d", "/ e/f"} {
		tree.trackQuota(p)
	}
	tests := []struct {
		path, want string
	}{
		{"/a", "/a"},
		{"/a/b", "/a"},
		{"/a/b/c", "/a/b/c"},
		{"/a/b/c/d", "/a/b/c"},
		{"/a/bb/c", "/a"},
		{"/ab", ""},
		{"/d/ /x", "/d"},
		{"/ e/f/g", "/ e/f"},
		{"/e/f/g", ""}, // names are compared untrimmed
		{"/", ""},
		{"/zookeeper/quota/a/zookeeper_stats", ""},
	}
	for _, tc := range tests {
		got, ok := tree.QuotaPrefix(tc.path)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("QuotaPrefix(%q) = %q, %v; want %q", tc.path, got, ok, tc.want)
		}
	}
}

// FuzzParseStatsTrack feeds arbitrary node data to the quota parser: it
// must not panic, and what it reads must format to text that reads back
// the same.
func FuzzParseStatsTrack(f *testing.F) {
	for _, s := range []string{"count=0,bytes=0", zkCliLimits, "count==5;;=1", ",x", "count=\u0663", "\xff=1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStatsTrack(data)
		if err != nil {
			return
		}
		text := st.String()
		back, err := ParseStatsTrack([]byte(text))
		if err != nil {
			t.Fatalf("%q read, formatted %q, which does not read: %v", data, text, err)
		}
		if again := back.String(); again != text {
			t.Fatalf("%q formatted %q, read back and formatted %q", data, text, again)
		}
	})
}
