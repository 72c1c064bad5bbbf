package observability

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"keeper/coordination/server"
	"keeper/coordination/zkcore"
	"keeper/verify/compat/zkreal"
)

const timeout = 10 * time.Second

// workload runs the same requests on a server: creates, sets, reads with
// watches that fire, an ephemeral node, a delete and a missing node.
func workload(t *testing.T, addr string) {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, timeout, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for e := range events {
		if e.State == zk.StateHasSession {
			break
		}
	}
	acl := zk.WorldACL(zk.PermAll)
	steps := []func() error{
		func() error { _, err := c.Create("/app", nil, 0, acl); return err },
		func() error { _, err := c.Create("/app/x", []byte("hello"), 0, acl); return err },
		func() error { _, err := c.Set("/app/x", []byte("world"), -1); return err },
		func() error { _, _, _, err := c.GetW("/app/x"); return err },
		func() error { _, _, _, err := c.ChildrenW("/app"); return err },
		func() error { _, err := c.Set("/app/x", []byte("again"), -1); return err },
		func() error { _, err := c.Create("/other", []byte("1"), zk.FlagEphemeral, acl); return err },
		func() error { return c.Delete("/app/x", -1) },
		func() error { _, _, err := c.Exists("/nope"); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d on %s: %v", i, addr, err)
		}
	}
}

// mntr returns the keys of a mntr answer, in order.
func mntr(t *testing.T, addr string) []string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(conn, "mntr"); err != nil {
		t.Fatal(err)
	}
	var keys []string
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if k, _, ok := strings.Cut(sc.Text(), "\t"); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// summaryKey splits a summary's mntr key into its prefix and name.
var summaryKey = regexp.MustCompile(`^zk_(avg|min|max|cnt|sum|p50|p95|p99|p999)_(.+)$`)

// setKey reports whether mntr key k is one of set name's keys: a summary
// set's zk_avg_<key>_<name> and its siblings, a counter set's
// zk_<key>_<name>. zk_avg_quorum_ack_latency ends with _ack_latency but is
// the summary quorum_ack_latency, not a key of the set ack_latency.
func setKey(k, name string, kinds map[string]string) bool {
	m := summaryKey.FindStringSubmatch(k)
	if m == nil {
		return strings.HasSuffix(k, "_"+name)
	}
	key, ok := strings.CutSuffix(m[2], "_"+name)
	if !ok || key == "" {
		return false
	}
	_, other := kinds[m[2]]
	return !other
}

// baseNames maps keys to the metric names they print: zk_avg_fsynctime
// and its siblings to fsynctime, zk_znode_count to znode_count. A key is a
// summary's only if its zk_avg_ sibling is printed too.
func baseNames(keys, all []string) []string {
	has := make(map[string]bool, len(all))
	for _, k := range all {
		has[k] = true
	}
	var out []string
	for _, k := range keys {
		name := strings.TrimPrefix(k, "zk_")
		if m := summaryKey.FindStringSubmatch(k); m != nil && has["zk_avg_"+m[2]] {
			name = m[2]
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// documented returns the metric names docs/observability.md lists as not
// measured: the first column of the table rows under its "Not measured"
// heading.
func documented(t *testing.T) []string {
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
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\|")
	var names []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		names = append(names, m[1])
	}
	slices.Sort(names)
	return names
}

func startKeeper(t *testing.T) *server.Server {
	t.Helper()
	dir := t.TempDir()
	cfg := server.Config{
		ClientAddr:          "127.0.0.1:0",
		Core:                zkcore.DefaultConfig(),
		FourLetterWhitelist: []string{"*"},
		AdminAddr:           "127.0.0.1:0",
		Storage:             server.StorageConfig{DataDir: dir},
		InitialConfig:       "dataDir=" + dir + "\nclientPort=0\n",
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMntrKeysMatchZooKeeper(t *testing.T) {
	ref := zkreal.Start(t, zkreal.Options{})
	k := startKeeper(t)
	workload(t, ref.Addr())
	workload(t, k.Addr().String())
	zkKeys, keeperKeys := mntr(t, ref.Addr()), mntr(t, k.Addr().String())
	t.Logf("mntr keys: ZooKeeper %d, keeper %d", len(zkKeys), len(keeperKeys))

	var zkOnly, keeperOnly []string
	for _, key := range zkKeys {
		if !slices.Contains(keeperKeys, key) {
			zkOnly = append(zkOnly, key)
		}
	}
	for _, key := range keeperKeys {
		if !slices.Contains(zkKeys, key) {
			keeperOnly = append(keeperOnly, key)
		}
	}
	if len(keeperOnly) > 0 {
		t.Errorf("keys keeper prints and ZooKeeper does not: %v", keeperOnly)
	}
	left := documented(t)
	// Every metric only ZooKeeper prints is documented as left out, and
	// keeper prints none of those.
	for _, name := range baseNames(zkOnly, zkKeys) {
		if !slices.Contains(left, name) {
			t.Errorf("ZooKeeper prints %s; keeper neither prints it nor lists it in docs/observability.md", name)
		}
	}
	keeperNames := baseNames(keeperKeys, keeperKeys)
	zkNames := baseNames(zkKeys, zkKeys)
	kinds, kindsErr := zkMetricKinds()
	for _, name := range left {
		if slices.Contains(keeperNames, name) {
			t.Errorf("docs/observability.md lists %s as left out, but keeper prints it", name)
		}
		// A listed metric is one ZooKeeper prints, or one it registers
		// that prints only in an ensemble (a summary set).
		if _, registered := kinds[name]; !slices.Contains(zkNames, name) && !registered && kindsErr == nil {
			t.Errorf("docs/observability.md lists %s, which ZooKeeper neither prints nor registers", name)
		}
	}
	if kindsErr != nil {
		t.Logf("not checked that the left-out metrics ZooKeeper does not print are its own: %v", kindsErr)
	}
	// The keys both print come in the same order.
	var common []string
	for _, key := range zkKeys {
		if slices.Contains(keeperKeys, key) {
			common = append(common, key)
		}
	}
	var keeperCommon []string
	for _, key := range keeperKeys {
		if slices.Contains(zkKeys, key) {
			keeperCommon = append(keeperCommon, key)
		}
	}
	if !slices.Equal(common, keeperCommon) {
		t.Errorf("order differs:\nZooKeeper: %v\nkeeper:    %v", common, keeperCommon)
	}
}

// zkMetricKinds reads the kind of each metric ZooKeeper registers in
// ServerMetrics from the installed jar's bytecode (javap): the name
// constant loaded before each getCounter, getCounterSet, getSummary or
// getSummarySet. PrometheusMetricsProvider exports a counter as a counter,
// a summary as a summary (quantile 0.5, and 0.9 and 0.99 at
// DetailLevel.ADVANCED), a set labelled key; registered gauges as gauges.
// The kinds are "counter", "summary" or "summarydetailed", with "set"
// after them for a set.
func zkMetricKinds() (map[string]string, error) {
	javap, err := exec.LookPath("javap")
	if err != nil {
		return nil, fmt.Errorf("javap not found (a JDK is needed to read ZooKeeper's metric kinds): %w", err)
	}
	out, err := exec.Command(javap, "-c", "-p", "-classpath", zkreal.ZooKeeperJar,
		"org.apache.zookeeper.server.ServerMetrics").Output()
	if err != nil {
		return nil, fmt.Errorf("javap: %w", err)
	}
	kinds := map[string]string{}
	var name string
	level := ""
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.Contains(line, "// String "):
			name = line[strings.Index(line, "// String ")+len("// String "):]
		case strings.Contains(line, "DetailLevel.ADVANCED"):
			level = "detailed"
		case strings.Contains(line, "DetailLevel.BASIC"):
			level = ""
		case strings.Contains(line, "getCounterSet"):
			kinds[name] = "counterset"
		case strings.Contains(line, "getCounter"):
			kinds[name] = "counter"
		case strings.Contains(line, "getSummarySet"):
			kinds[name] = "summary" + level + "set"
		case strings.Contains(line, "getSummary"):
			kinds[name] = "summary" + level
		}
	}
	if len(kinds) < 100 {
		return nil, fmt.Errorf("read only %d metric kinds from ServerMetrics", len(kinds))
	}
	return kinds, nil
}

// zkMetricTypes is zkMetricKinds, skipping the test without a JDK.
func zkMetricTypes(t *testing.T) map[string]string {
	t.Helper()
	kinds, err := zkMetricKinds()
	if err != nil {
		if strings.HasPrefix(err.Error(), "javap not found") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	return kinds
}

func TestPrometheusNamesAndTypesMatchZooKeeper(t *testing.T) {
	if err := zkreal.Available(); err != nil {
		t.Skip(err)
	}
	kinds := zkMetricTypes(t)
	ref := zkreal.Start(t, zkreal.Options{})
	k := startKeeper(t)
	workload(t, ref.Addr())
	workload(t, k.Addr().String())
	zkKeys := mntr(t, ref.Addr())
	resp, err := http.Get("http://" + k.AdminAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for name, f := range families {
		kind, isServerMetric := kinds[name]
		if !isServerMetric {
			continue
		}
		compared++
		kind = strings.TrimSuffix(kind, "set")
		want := map[string]string{"counter": "COUNTER", "summary": "SUMMARY", "summarydetailed": "SUMMARY"}[kind]
		if f.GetType().String() != want {
			t.Errorf("%s: keeper exports a %s, ZooKeeper a %s", name, f.GetType(), kind)
			continue
		}
		if f.GetType().String() == "SUMMARY" {
			q := len(f.GetMetric()[0].GetSummary().GetQuantile())
			if wantQ := map[string]int{"summary": 1, "summarydetailed": 3}[kind]; q != wantQ {
				t.Errorf("%s: %d quantiles, ZooKeeper's provider exports %d", name, q, wantQ)
			}
		}
	}
	// Every metric ZooKeeper registers is exported by keeper or listed as
	// left out, but a set neither server has a key of after the workload
	// (nothing to export).
	left := documented(t)
	for name, kind := range kinds {
		_, exported := families[name]
		if exported || slices.Contains(left, name) {
			continue
		}
		if strings.HasSuffix(kind, "set") && !slices.ContainsFunc(zkKeys, func(k string) bool { return setKey(k, name, kinds) }) {
			continue
		}
		t.Errorf("ZooKeeper registers %s (%s); keeper neither exports it nor lists it in docs/observability.md", name, kind)
	}
	// Every gauge mntr prints is a Prometheus gauge under the same name.
	for _, key := range mntr(t, k.Addr().String()) {
		name := strings.TrimPrefix(key, "zk_")
		if _, isServerMetric := kinds[name]; isServerMetric || summaryKey.MatchString(key) || name == "version" || name == "server_state" {
			continue
		}
		f, ok := families[name]
		if !ok {
			t.Errorf("gauge %s is in mntr but not in /metrics", name)
			continue
		}
		compared++
		if f.GetType().String() != "GAUGE" {
			t.Errorf("%s: keeper exports a %s, ZooKeeper a gauge", name, f.GetType())
		}
	}
	t.Logf("compared %d Prometheus metric names and types with ZooKeeper's", compared)
}
