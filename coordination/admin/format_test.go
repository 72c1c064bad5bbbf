package admin

import (
	"encoding/json"
	"math"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"keeper/coordination/zkcore"
)

// TestJavaDouble checks javaDouble against what Java's Double.toString
// prints for the same values.
func TestJavaDouble(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{3, "3.0"},
		{2.2917, "2.2917"},
		{0.25, "0.25"},
		{0.001, "0.001"},
		{0.0001, "1.0E-4"},
		{0.00012345, "1.2345E-4"},
		{1234567.5, "1234567.5"},
		{1e7, "1.0E7"},
		{12345678.9, "1.23456789E7"},
		{-2.5, "-2.5"},
		{math.NaN(), "NaN"},
		{math.Inf(1), "Infinity"},
	}
	for _, tt := range tests {
		if got := javaDouble(tt.in); got != tt.want {
			t.Errorf("javaDouble(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRoundLatency checks the 4-decimal, half-up rounding of averages.
func TestRoundLatency(t *testing.T) {
	tests := []struct{ in, want float64 }{
		{0, 0}, {3, 3}, {55.0 / 24, 2.2917}, {1.0 / 3, 0.3333}, {2.00005, 2.0001}, {0.00004, 0},
	}
	for _, tt := range tests {
		if got := roundLatency(tt.in); got != tt.want {
			t.Errorf("roundLatency(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestConfigurationFields checks that configuration answers
// ZooKeeperServerConf's fields in its order, whatever else conf says (an
// ensemble member's quorum lines, the directory sizes).
func TestConfigurationFields(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"standalone", []string{
			"clientPort=2181", "secureClientPort=-1", "dataDir=/d/version-2", "dataDirSize=10",
			"dataLogDir=/l/version-2", "dataLogSize=3", "tickTime=2000", "maxClientCnxns=60",
			"minSessionTimeout=4000", "maxSessionTimeout=40000", "clientPortListenBacklog=-1", "serverId=0",
		}, `{"client_port":2181,"data_dir":"/d/version-2","data_log_dir":"/l/version-2","tick_time":2000,` +
			`"max_client_cnxns":60,"min_session_timeout":4000,"max_session_timeout":40000,"server_id":0,` +
			`"client_port_listen_backlog":-1}`},
		{"ensemble member", []string{
			"clientPort=2181", "tickTime=2000", "clientPortListenBacklog=-1", "serverId=3", "initLimit=10",
			"peerType=0", "membership: ", "server.3=127.0.0.1:2888:3888:participant", "version=0",
		}, `{"client_port":2181,"tick_time":2000,"server_id":3,"client_port_listen_backlog":-1}`},
		{"garbage", []string{"garbage", "=1", "dataDir"}, `{}`},
	}
	for _, tt := range tests {
		a := &Admin{cfg: Config{ConfLines: tt.lines}}
		got, err := json.Marshal(object(a.configurationFields()))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%s: got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

// FuzzJavaDouble checks that javaDouble always has a fraction or an
// exponent and reads back as the same value.
func FuzzJavaDouble(f *testing.F) {
	for _, v := range []float64{0, 1, 2.2917, 1e-4, 1e7, -3.5, 1e300} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		s := javaDouble(v)
		if !strings.Contains(s, ".") {
			t.Fatalf("javaDouble(%v) = %q has no fraction", v, s)
		}
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != v {
			t.Fatalf("javaDouble(%v) = %q reads back as %v (%v)", v, s, back, err)
		}
	})
}

// idle is a Core with a fresh, idle service core.
type idle struct{ core *zkcore.Server }

func (c idle) Inspect(fn func(*zkcore.Server)) bool { fn(c.core); return true }

// FuzzCommand feeds arbitrary command names and query strings to the HTTP
// command runner: every answer must be a JSON object naming a command.
func FuzzCommand(f *testing.F) {
	core, err := zkcore.New(zkcore.DefaultConfig())
	if err != nil {
		f.Fatal(err)
	}
	a, err := New(Config{Version: "3.8.0-test", Start: time.Now()}, idle{core})
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range httpCommands {
		f.Add(c.names[len(c.names)-1], "")
	}
	f.Add("set_trace_mask", "traceMask=12")
	f.Add("stmk", "traceMask=%zz")
	f.Add("", "a=b&a=c")
	f.Fuzz(func(t *testing.T, name, query string) {
		args, _ := url.ParseQuery(query)
		body, err := a.commandJSON(name, args)
		if err != nil {
			t.Fatalf("%q %q: %v", name, query, err)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%q %q: invalid JSON %v: %s", name, query, err, body)
		}
		if _, ok := m["command"].(string); !ok {
			t.Fatalf("%q %q: no command in %s", name, query, body)
		}
		if _, ok := m["error"]; !ok {
			t.Fatalf("%q %q: no error key in %s", name, query, body)
		}
	})
}
