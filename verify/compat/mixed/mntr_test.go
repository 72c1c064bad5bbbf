package mixed

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"keeper/verify/compat/internal/launcher"
)

// mntrKeys returns the keys of m's mntr answer, in order, after checking
// that it reports the role it serves in.
func mntrKeys(t *testing.T, m *Member) []string {
	t.Helper()
	reply, err := launcher.FourLetter(m.Addr, "mntr")
	if err != nil {
		t.Fatalf("mntr of member %d (%s): %v", m.ID, m.Kind, err)
	}
	var keys []string
	sc := bufio.NewScanner(strings.NewReader(reply))
	for sc.Scan() {
		if k, _, ok := strings.Cut(sc.Text(), "\t"); ok {
			keys = append(keys, k)
		}
	}
	if len(keys) < 10 {
		t.Fatalf("mntr of member %d (%s) has %d keys: %q", m.ID, m.Kind, len(keys), reply)
	}
	return keys
}

// summaryKey splits a summary's mntr key into its prefix and name.
var summaryKey = regexp.MustCompile(`^zk_(avg|min|max|cnt|sum|p50|p95|p99|p999)_(.+)$`)

// metricName maps a key to the metric it prints: zk_avg_fsynctime to
// fsynctime, zk_znode_count to znode_count. A key is a summary's only if
// its zk_avg_ sibling is printed too.
func metricName(key string, all []string) string {
	if m := summaryKey.FindStringSubmatch(key); m != nil && slices.Contains(all, "zk_avg_"+m[2]) {
		return m[2]
	}
	return strings.TrimPrefix(key, "zk_")
}

// memberKeyed matches a summary's name in a leader's sets keyed by member
// id: <id>_ack_latency, <id>_learner_handler_qp_size and
// <id>_learner_handler_qp_time_ms.
var memberKeyed = regexp.MustCompile(`^[0-9]+_(ack_latency|learner_handler_qp_size|learner_handler_qp_time_ms)$`)

// byMember turns the keys of the sets keyed by member id into one key per
// set and statistic, zk_avg_<id>_ack_latency into zk_avg_ID_ack_latency,
// in the order of their first appearance: two leaders have different
// learners, so their ids cannot match, but both print the same sets.
func byMember(keys []string) []string {
	var out []string
	for _, k := range keys {
		if m := summaryKey.FindStringSubmatch(k); m != nil && memberKeyed.MatchString(m[2]) {
			k = "zk_" + m[1] + "_ID_" + memberKeyed.FindStringSubmatch(m[2])[1]
			if slices.Contains(out, k) {
				continue
			}
		}
		out = append(out, k)
	}
	return out
}

// notMeasured returns the metric names docs/observability.md lists as
// not measured: the first column of the rows under "### Not measured".
func notMeasured(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n### Not measured\n")
	if !ok {
		t.Fatal(`docs/observability.md has no "### Not measured" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var names []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\|").FindAllStringSubmatch(section, -1) {
		names = append(names, m[1])
	}
	return names
}

// compareMntr holds a keeper member's mntr keys to a ZooKeeper member's in
// the same role, as verify/compat/observability does for a standalone
// server: keeper prints no key ZooKeeper lacks, every metric only
// ZooKeeper prints is in docs/observability.md's "Not measured" table (a
// summary set's per-key metric, <key>_<name>, by its name), and the keys
// both print come in the same order. The sets a leader keys by member id
// are compared by their names (byMember).
func compareMntr(t *testing.T, role string, zkKeys, keeperKeys []string) {
	t.Helper()
	if zkKeys == nil || keeperKeys == nil {
		t.Fatalf("%s: no mntr keys recorded", role)
	}
	t.Logf("%s mntr keys: ZooKeeper %d, keeper %d", role, len(zkKeys), len(keeperKeys))
	zkKeys, keeperKeys = byMember(zkKeys), byMember(keeperKeys)
	left := notMeasured(t)
	documented := func(name string) bool {
		for _, l := range left {
			if name == l || strings.HasSuffix(name, "_"+l) {
				return true
			}
		}
		return false
	}
	var common, keeperCommon []string
	for _, k := range zkKeys {
		if slices.Contains(keeperKeys, k) {
			common = append(common, k)
		} else if name := metricName(k, zkKeys); !documented(name) {
			t.Errorf("%s: ZooKeeper prints %s (%s); keeper neither prints it nor lists it in docs/observability.md",
				role, k, name)
		}
	}
	for _, k := range keeperKeys {
		if slices.Contains(zkKeys, k) {
			keeperCommon = append(keeperCommon, k)
		} else {
			t.Errorf("%s: keeper prints %s, which ZooKeeper does not", role, k)
		}
	}
	if !slices.Equal(common, keeperCommon) {
		t.Errorf("%s: order differs:\nZooKeeper: %v\nkeeper:    %v", role, common, keeperCommon)
	}
}
