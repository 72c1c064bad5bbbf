package admin

import (
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"keeper/coordination/zkcore"
	"keeper/internal/metric"
)

// fakeCore serves an empty core.
type fakeCore struct{ core *zkcore.Server }

func (f fakeCore) Inspect(fn func(*zkcore.Server)) bool { fn(f.core); return true }

func newTestAdmin(t *testing.T, reg *metric.Registry) *Admin {
	t.Helper()
	core, err := zkcore.New(zkcore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	b := ReadBuild()
	a, err := New(Config{Version: b.FullVersion(), Build: b, Start: b.Time, Metrics: reg}, fakeCore{core})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestMntrSummaryFormatAndOrder(t *testing.T) {
	reg := metric.NewRegistry()
	reg.Counter("commit_count").Add(3)
	fsync := reg.Summary("fsynctime", false)
	fsync.Add(1)
	fsync.Add(2)
	read := reg.Summary("readlatency", true)
	for _, v := range []int64{1, 2, 3, 10} {
		read.Add(v)
	}
	set := reg.SummarySet("write_per_namespace", false)
	set.Add("other", 7)
	set.Add("app", 4)
	out, ok := newTestAdmin(t, reg).mntr()
	if !ok {
		t.Fatal("mntr: not serving")
	}
	text := string(out)
	tests := []struct{ line string }{
		{"zk_commit_count\t3\n"},
		{"zk_avg_fsynctime\t1.5\n"}, {"zk_min_fsynctime\t1\n"}, {"zk_max_fsynctime\t2\n"},
		{"zk_cnt_fsynctime\t2\n"}, {"zk_sum_fsynctime\t3\n"},
		{"zk_avg_readlatency\t4.0\n"}, {"zk_p50_readlatency\t3\n"}, {"zk_p999_readlatency\t10\n"},
		{"zk_avg_app_write_per_namespace\t4.0\n"}, {"zk_sum_other_write_per_namespace\t7\n"},
	}
	for _, tt := range tests {
		if !strings.Contains(text, tt.line) {
			t.Errorf("mntr lacks %q:\n%s", tt.line, text)
		}
	}
	// A basic summary has no percentiles; keys nobody registered are absent.
	for _, absent := range []string{"zk_p50_fsynctime", "zk_proposal_count", "zk_avg_snapshottime"} {
		if strings.Contains(text, absent) {
			t.Errorf("mntr has %s", absent)
		}
	}
	// ZooKeeper's order: gauges, counters, summaries, detailed summaries,
	// summary sets; within the set, Java's bucket order puts app before
	// other (as Apache ZooKeeper 3.8.0 printed them).
	order := []string{"zk_version", "zk_server_state", "zk_znode_count", "zk_commit_count", "zk_avg_fsynctime",
		"zk_avg_readlatency", "zk_avg_app_write_per_namespace", "zk_avg_other_write_per_namespace"}
	last := -1
	for _, k := range order {
		i := strings.Index(text, k+"\t")
		if i <= last {
			t.Fatalf("%s out of order (at %d, previous at %d):\n%s", k, i, last, text)
		}
		last = i
	}
}

func TestPrometheusTypes(t *testing.T) {
	reg := metric.NewRegistry()
	reg.Counter("commit_count").Inc()
	reg.Summary("fsynctime", false).Add(4)
	reg.Summary("readlatency", true).Add(4)
	reg.SummarySet("read_per_namespace", false).Add("app", 70)
	a := newTestAdmin(t, reg)
	families, err := a.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*dto.MetricFamily{}
	for _, f := range families {
		got[f.GetName()] = f
	}
	tests := []struct {
		name      string
		typ       dto.MetricType
		quantiles int
		label     string
	}{
		{name: "znode_count", typ: dto.MetricType_GAUGE},
		{name: "avg_latency", typ: dto.MetricType_GAUGE},
		{name: "commit_count", typ: dto.MetricType_COUNTER},
		{name: "fsynctime", typ: dto.MetricType_SUMMARY, quantiles: 1},
		{name: "readlatency", typ: dto.MetricType_SUMMARY, quantiles: 3},
		{name: "read_per_namespace", typ: dto.MetricType_SUMMARY, quantiles: 1, label: "key"},
		{name: "keeper_build_info", typ: dto.MetricType_GAUGE},
	}
	for _, tt := range tests {
		f, ok := got[tt.name]
		if !ok {
			t.Errorf("%s not exported", tt.name)
			continue
		}
		if f.GetType() != tt.typ {
			t.Errorf("%s is a %v, want %v", tt.name, f.GetType(), tt.typ)
		}
		m := f.GetMetric()[0]
		if tt.quantiles > 0 && len(m.GetSummary().GetQuantile()) != tt.quantiles {
			t.Errorf("%s has %d quantiles, want %d", tt.name, len(m.GetSummary().GetQuantile()), tt.quantiles)
		}
		if tt.label != "" && (len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != tt.label) {
			t.Errorf("%s labels = %v, want one %q", tt.name, m.GetLabel(), tt.label)
		}
	}
	if s := got["fsynctime"].GetMetric()[0].GetSummary(); s.GetSampleCount() != 1 || s.GetSampleSum() != 4 {
		t.Errorf("fsynctime count/sum = %d/%v, want 1/4", s.GetSampleCount(), s.GetSampleSum())
	}
}

func TestBuildVersionParses(t *testing.T) {
	tests := []struct {
		name string
		b    Build
		want string
	}{
		{"release", Build{ZooKeeperVersion: "3.8.0", Version: "v1.2.3", Revision: "0123456789abcdef0123"},
			"3.8.0-keeper-1.2.3-0123456789ab, built on 01/01/1970 00:00 GMT"},
		{"work tree", Build{ZooKeeperVersion: "3.8.0", Version: "(devel)", Revision: "abc", Modified: true},
			"3.8.0-keeper-abc-dirty, built on 01/01/1970 00:00 GMT"},
		{"pseudo-version", Build{ZooKeeperVersion: "3.8.0", Version: "v0.0.0-20260101000000-abcdef+dirty"},
			"3.8.0-keeper-0.0.0-20260101000000-abcdef.dirty, built on 01/01/1970 00:00 GMT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.FullVersion(); got != tt.want {
				t.Errorf("FullVersion = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMntrGaugeOrderByRole: a standalone server prints
// num_alive_connections before avg_latency, a quorum member (leader or
// follower) after it, as ZooKeeper 3.8 does; nothing else moves.
func TestMntrGaugeOrderByRole(t *testing.T) {
	for _, tt := range []struct {
		name   string
		quorum func() (QuorumFacts, bool)
		first  string
	}{
		{"standalone", nil, "zk_num_alive_connections"},
		{"leader", func() (QuorumFacts, bool) {
			return QuorumFacts{PeerState: "leading - broadcast", QuorumSize: 3, Leading: true}, true
		}, "zk_avg_latency"},
		{"follower", func() (QuorumFacts, bool) {
			return QuorumFacts{PeerState: "following - broadcast", QuorumSize: 3}, true
		}, "zk_avg_latency"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			core, err := zkcore.New(zkcore.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			b := ReadBuild()
			a, err := New(Config{Version: b.FullVersion(), Build: b, Start: b.Time, Metrics: metric.NewRegistry(),
				Quorum: tt.quorum}, fakeCore{core})
			if err != nil {
				t.Fatal(err)
			}
			out, ok := a.mntr()
			if !ok {
				t.Fatal("mntr: not serving")
			}
			var keys []string
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				k, _, _ := strings.Cut(line, "\t")
				keys = append(keys, k)
			}
			alive := slices.Index(keys, "zk_num_alive_connections")
			latency := slices.Index(keys, "zk_avg_latency")
			if alive < 0 || latency < 0 || (alive < latency) != (tt.first == "zk_num_alive_connections") {
				t.Fatalf("num_alive_connections at %d, avg_latency at %d; want %s first", alive, latency, tt.first)
			}
		})
	}
	// The two orders differ in that pair only.
	if len(quorumCatalog) != len(catalog) {
		t.Fatal("quorumCatalog is not the catalog reordered")
	}
	var moved []string
	for i := range catalog {
		if catalog[i] != quorumCatalog[i] {
			moved = append(moved, catalog[i].name)
		}
	}
	if !slices.Equal(moved, []string{"num_alive_connections", "avg_latency"}) {
		t.Fatalf("entries that move on a quorum member: %v", moved)
	}
}
