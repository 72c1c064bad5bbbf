package admin_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/admin"
	"keeper/coordination/server"
	"keeper/coordination/zkcore"
)

// Patterns shared by the shapes below.
const (
	versionRE = `3\.8\.0-keeper, built on \d\d/\d\d/\d{4} \d\d:\d\d GMT`
	statsRE   = `Latency min/avg/max: \d+/\d+\.\d+/\d+\nReceived: \d+\nSent: \d+\nConnections: \d+\n` +
		`Outstanding: 0\nZxid: 0x[0-9a-f]+\nMode: standalone\nNode count: 9\n`
	briefRE = ` /127\.0\.0\.1:\d+\[[01]\]\(queued=\d+,recved=\d+,sent=\d+\)\n`
	fullRE  = ` /127\.0\.0\.1:\d+\[1\]\(queued=\d+,recved=\d+,sent=\d+,sid=0x[0-9a-f]+,lop=[A-Z2]+,est=\d+,` +
		`to=\d+,lcxid=0x[0-9a-f]+,lzxid=0x[0-9a-f]+,lresp=\d+,llat=\d+,minlat=\d+,avglat=\d+,maxlat=\d+\)\n`
	dateRE = `\w{3} \w{3} \d\d \d\d:\d\d:\d\d \S+ \d{4}`
)

// TestFourLetterShapes checks the output of every four-letter word against
// Apache ZooKeeper 3.8's shape (docs/zookeeper-protocol.md §8.2), with exact values where the
// fixture fixes them.
func TestFourLetterShapes(t *testing.T) {
	f := newFixture(t)
	s1, s2 := f.c1.SessionID(), f.c2.SessionID()
	dumpRE := `SessionTracker dump:\nSession Sets \(\d+\)/\(2\):\n(\d+ expire at ` + dateRE + `:\n(\t0x[0-9a-f]+\n)+)+` +
		`ephemeral nodes dump:\nSessions with Ephemerals \(2\):\n` +
		fmt.Sprintf(`0x%x:\n\t/a/e\n0x%x:\n\t/a/f\n`, s1, s2) +
		`Connections dump:\nConnections Sets \(\d+\)/\(\d+\):\n` +
		`(\d+ expire at ` + dateRE + `:\n(\tip: /127\.0\.0\.1:\d+ sessionId: 0x[0-9a-f]+\n)*)+`
	confRE := `clientPort=\d+\nsecureClientPort=-1\ndataDir=.*/version-2\ndataDirSize=1234\n` +
		`dataLogDir=.*/version-2\ndataLogSize=1234\ntickTime=2000\nmaxClientCnxns=0\n` +
		`minSessionTimeout=4000\nmaxSessionTimeout=40000\nclientPortListenBacklog=-1\nserverId=0\n`
	tests := []struct {
		cmd  string
		want string // a regular expression for the whole output
	}{
		{"ruok", `imok`},
		{"isro", `rw`},
		{"srvr", `Zookeeper version: ` + versionRE + `\n` + statsRE},
		{"stat", `Zookeeper version: ` + versionRE + `\nClients:\n(` + briefRE + `){3,}\n` + statsRE},
		{"cons", `(` + fullRE + `){2}\n`},
		{"envi", `Environment:\nzookeeper\.version=` + versionRE + `\nhost\.name=.*\n(\S+=.*\n)+`},
		{"conf", confRE},
		{"wchs", `2 connections watching 2 paths\nTotal watches:3\n`},
		{"wchc", regexp.QuoteMeta(fmt.Sprintf("0x%x\n\t/a\n0x%x\n\t/a\n\t/nope\n\n", s1, s2))},
		{"wchp", regexp.QuoteMeta(fmt.Sprintf("/a\n\t0x%x\n\t0x%x\n/nope\n\t0x%x\n\n", s1, s2, s2))},
		{"dump", dumpRE},
		{"dirs", `datadir_size: 1234\nlogdir_size: 1234\n`},
		{"gtmk", `306`},
		{"hash", `[0-9a-f]+: -?\d+\n`},
		{"crst", `Connection stats reset\.\n`},
		{"srst", `Server stats reset\.\n`},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			got := flw(t, f.s.Addr(), tt.cmd, nil)
			if !regexp.MustCompile(`\A(?:` + tt.want + `)\z`).MatchString(got) {
				t.Errorf("%s output\n%q\ndoes not match\n%s", tt.cmd, got, tt.want)
			}
		})
	}
}

// TestMntr checks mntr's line shape, ZooKeeper's leading keys and the
// values the fixture fixes. zk_watch_count counts both watch tables, unlike
// wchs (docs/zookeeper-protocol.md §3.7).
func TestMntr(t *testing.T) {
	f := newFixture(t)
	lines := strings.Split(strings.TrimSuffix(flw(t, f.s.Addr(), "mntr", nil), "\n"), "\n")
	values := make(map[string]string)
	var keys []string
	for _, line := range lines {
		k, v, ok := strings.Cut(line, "\t")
		if !ok || !strings.HasPrefix(k, "zk_") || v == "" {
			t.Fatalf("bad mntr line %q", line)
		}
		keys = append(keys, k)
		values[k] = v
	}
	if len(keys) < 2 || keys[0] != "zk_version" || keys[1] != "zk_server_state" {
		t.Errorf("mntr starts with %v; want zk_version, zk_server_state", keys)
	}
	want := map[string]string{
		"zk_server_state": "standalone", "zk_znode_count": "9", "zk_ephemerals_count": "2",
		"zk_global_sessions": "2", "zk_local_sessions": "0", "zk_watch_count": "4",
		"zk_approximate_data_size": "60", "zk_outstanding_requests": "0", "zk_auth_failed_count": "0",
		"zk_connection_drop_probability": "0.0",
	}
	for k, v := range want {
		if values[k] != v {
			t.Errorf("%s = %q, want %q", k, values[k], v)
		}
	}
	decimal := regexp.MustCompile(`^\d+\.\d+(E-?\d+)?$`)
	integer := regexp.MustCompile(`^\d+$`)
	for _, k := range []string{"zk_min_latency", "zk_max_latency", "zk_packets_received", "zk_packets_sent",
		"zk_num_alive_connections", "zk_uptime", "zk_open_file_descriptor_count", "zk_max_file_descriptor_count"} {
		if !integer.MatchString(values[k]) {
			t.Errorf("%s = %q, want an integer", k, values[k])
		}
	}
	if !decimal.MatchString(values["zk_avg_latency"]) {
		t.Errorf("zk_avg_latency = %q, want a decimal", values["zk_avg_latency"])
	}
	if !strings.HasPrefix(values["zk_version"], "3.8.0-keeper, built on ") {
		t.Errorf("zk_version = %q", values["zk_version"])
	}
}

// TestGoZookeeperFLW runs go-zookeeper's four-letter-word helpers, which
// parse srvr, ruok and cons.
func TestGoZookeeperFLW(t *testing.T) {
	f := newFixture(t)
	addr := []string{f.s.Addr().String()}
	stats, ok := zk.FLWSrvr(addr, testTimeout)
	if !ok || len(stats) != 1 || stats[0].Error != nil {
		t.Fatalf("FLWSrvr: ok=%v %+v", ok, stats)
	}
	if st := stats[0]; st.Mode != zk.ModeStandalone || st.NodeCount != 9 || st.Version != "3.8.0-keeper" ||
		st.BuildTime.IsZero() || st.Outstanding != 0 {
		t.Errorf("FLWSrvr: %+v", st)
	}
	if oks := zk.FLWRuok(addr, testTimeout); len(oks) != 1 || !oks[0] {
		t.Errorf("FLWRuok: %v", oks)
	}
	clients, ok := zk.FLWCons(addr, testTimeout)
	if !ok || len(clients) != 1 || clients[0].Error != nil {
		t.Fatalf("FLWCons: ok=%v %+v", ok, clients)
	}
	got := map[int64]bool{}
	for _, c := range clients[0].Clients {
		got[c.SessionID] = true
		if c.Timeout <= 0 || c.Established.IsZero() || c.LastOperation == "" {
			t.Errorf("FLWCons client %+v", c)
		}
	}
	if len(got) != 2 || !got[f.c1.SessionID()] || !got[f.c2.SessionID()] {
		t.Errorf("FLWCons sessions %v, want %#x and %#x", got, f.c1.SessionID(), f.c2.SessionID())
	}
}

// TestKazooServerVersion runs kazoo's server_version(), which parses the
// zookeeper.version line of envi.
func TestKazooServerVersion(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		if os.Getenv("KEEPER_REQUIRE_ZK") != "" {
			t.Fatalf("kazoo not importable by %s: %v", python, err)
		}
		t.Skipf("kazoo not importable by %s: %v", python, err)
	}
	s := startServer(t)
	script := `import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1])
zk.start(timeout=10)
print(zk.server_version())
zk.stop()
`
	cmd := exec.Command(python, "-c", script, s.Addr().String())
	cmd.WaitDelay = testTimeout
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kazoo: %v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "(3, 8, 0)" {
		t.Errorf("server_version() = %s, want (3, 8, 0)", got)
	}
}

// TestWhitelist checks that a word outside the whitelist is refused with
// ZooKeeper's text, ruok included.
func TestWhitelist(t *testing.T) {
	s := startServer(t, func(c *server.Config) { c.FourLetterWhitelist = []string{"srvr"} })
	for _, cmd := range []string{"ruok", "stat", "mntr", "isro", "stmk"} {
		var arg *int64
		if cmd == "stmk" {
			arg = new(int64)
		}
		want := cmd + " is not executed because it is not in the whitelist.\n"
		if got := flw(t, s.Addr(), cmd, arg); got != want {
			t.Errorf("%s: got %q, want %q", cmd, got, want)
		}
	}
	if got := flw(t, s.Addr(), "srvr", nil); !strings.HasPrefix(got, "Zookeeper version: ") {
		t.Errorf("srvr: %q", got)
	}
}

// TestTraceMask checks gtmk's default and stmk's 8-byte argument.
func TestTraceMask(t *testing.T) {
	s := startServer(t)
	if got := flw(t, s.Addr(), "gtmk", nil); got != "306" {
		t.Errorf("gtmk = %q, want 306", got)
	}
	mask := int64(0x1f2)
	if got := flw(t, s.Addr(), "stmk", &mask); got != "498" {
		t.Errorf("stmk = %q, want 498", got)
	}
	if got := flw(t, s.Addr(), "gtmk", nil); got != "498" {
		t.Errorf("gtmk after stmk = %q, want 498", got)
	}
}

// TestStatReset checks that srst clears the server's packet counters.
func TestStatReset(t *testing.T) {
	f := newFixture(t)
	addr := []string{f.s.Addr().String()}
	before, ok := zk.FLWSrvr(addr, testTimeout)
	if !ok || before[0].Received < 8 {
		t.Fatalf("before srst: %+v", before[0])
	}
	if got := flw(t, f.s.Addr(), "srst", nil); got != "Server stats reset.\n" {
		t.Fatalf("srst: %q", got)
	}
	// Only the sessions' pings can arrive after the reset.
	after, ok := zk.FLWSrvr(addr, testTimeout)
	if !ok || after[0].Received >= before[0].Received || after[0].Received > 2 {
		t.Errorf("after srst: %+v (before: %+v)", after[0], before[0])
	}
}

// stopped is a Core whose server has stopped.
type stopped struct{}

func (stopped) Inspect(func(*zkcore.Server)) bool { return false }

// TestNotServing checks what each word answers once the core has stopped:
// the words that need it say so, the others answer as usual.
func TestNotServing(t *testing.T) {
	a, err := admin.New(admin.Config{Version: server.Version(), FourLetterWhitelist: []string{"*"}, Start: time.Now()}, stopped{})
	if err != nil {
		t.Fatal(err)
	}
	const msg = "This ZooKeeper instance is not currently serving requests"
	for _, cmd := range []string{"srvr", "stat", "cons", "mntr", "dump", "wchs", "wchc", "wchp", "crst", "srst", "conf", "dirs"} {
		if got := string(a.FourLetter(cmd, 0, 0)); got != msg+"\n" {
			t.Errorf("%s: %q", cmd, got)
		}
	}
	for _, tt := range []struct{ cmd, want string }{
		{"ruok", "imok"}, {"isro", "null"}, {"hash", msg}, {"gtmk", "306"}, {"stmk", "7"},
	} {
		if got := string(a.FourLetter(tt.cmd, 0, 7)); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.cmd, got, tt.want)
		}
	}
	if got := string(a.FourLetter("envi", 0, 0)); !strings.HasPrefix(got, "Environment:\nzookeeper.version=") {
		t.Errorf("envi: %q", got)
	}
}
