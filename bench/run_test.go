package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"keeper/coordination/server"
	"keeper/coordination/zkclient"
	"keeper/coordination/zkcore"
	"keeper/verify/compat/zkreal"
)

// startKeeper runs an in-process keeper server and returns its address.
func startKeeper(t testing.TB) string {
	t.Helper()
	s, err := server.New(server.Config{ClientAddr: "127.0.0.1:0", Core: zkcore.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr().String()
}

// shortConfig is a run short enough for a test: 2 clients × 4 in flight,
// 100 ms of warmup, 300 ms measured, a small key space.
func shortConfig(addr string, op Op) Config {
	return Config{
		Servers: []string{addr}, Op: op, Clients: 2, Inflight: 4,
		Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond,
		KeySpace: 50, Watchers: 50, Rounds: 5,
	}
}

// checkSane checks a result's fields and its JSON line.
func checkSane(t *testing.T, res Result) {
	t.Helper()
	if res.Ops <= 0 || res.OpsPerSec <= 0 || res.Errors != 0 || len(res.ErrorsByCode) != 0 {
		t.Errorf("ops %d ops/s %v errors %d %v", res.Ops, res.OpsPerSec, res.Errors, res.ErrorsByCode)
	}
	if !(0 < res.P50Us && res.P50Us <= res.P99Us && res.P99Us <= res.P999Us && res.P999Us <= res.MaxUs) {
		t.Errorf("latencies out of order: p50 %v p99 %v p999 %v max %v", res.P50Us, res.P99Us, res.P999Us, res.MaxUs)
	}
	if res.CleanupError != "" {
		t.Errorf("cleanup: %s", res.CleanupError)
	}
	line, err := res.MarshalLine()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(line, '\n') != len(line)-1 {
		t.Errorf("not one line: %q", line)
	}
	var fields map[string]any
	if err := json.Unmarshal(line, &fields); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	for _, k := range []string{"op", "ops", "ops_per_sec", "p50_us", "p99_us", "p999_us", "max_us", "errors"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("no %q in %s", k, line)
		}
	}
	t.Logf("%s", bytes.TrimSpace(line))
}

// checkNoLeftovers checks that the runs deleted their /bench-* roots.
func checkNoLeftovers(t *testing.T, addr string) {
	t.Helper()
	c, err := zkclient.Dial(t.Context(), addr, zkclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	kids, _, err := c.Children(t.Context(), "/", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if strings.HasPrefix(k, "bench-") {
			t.Errorf("left behind: /%s", k)
		}
	}
}

var loadOps = []Op{OpGet, OpExists, OpSet, OpCreate, OpMixed}

func TestRunAgainstKeeper(t *testing.T) {
	addr := startKeeper(t)
	for _, op := range append(loadOps, OpWatch) {
		t.Run(string(op), func(t *testing.T) {
			res, err := Run(t.Context(), shortConfig(addr, op))
			if err != nil {
				t.Fatal(err)
			}
			checkSane(t, res)
			if op == OpWatch && (res.Watchers != 50 || res.Ops != 5 || res.SetP50Us <= 0 || res.SetP50Us > res.SetP99Us) {
				t.Errorf("watch: watchers %d rounds %d set p50 %v p99 %v", res.Watchers, res.Ops, res.SetP50Us, res.SetP99Us)
			}
		})
	}
	checkNoLeftovers(t, addr)
}

func TestRunAgainstNullServer(t *testing.T) {
	addr := startNull(t)
	for _, op := range loadOps {
		t.Run(string(op), func(t *testing.T) {
			res, err := Run(t.Context(), shortConfig(addr, op))
			if err != nil {
				t.Fatal(err)
			}
			checkSane(t, res)
		})
	}
}

// TestRunServerCPU points CPUPIDs at this process, which runs the server,
// twice: the two readings are summed.
func TestRunServerCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	cfg := shortConfig(startNull(t), OpGet)
	cfg.CPUPIDs = []int{os.Getpid(), os.Getpid()}
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, res)
	if res.ServerCPUSeconds == nil || res.ServerCPUUsPerOp == nil || res.ClientCPUSeconds == nil {
		t.Fatalf("cpu fields missing: %+v", res)
	}
	if *res.ServerCPUSeconds < 0 || *res.ServerCPUSeconds > 10 {
		t.Errorf("server cpu %v s over 0.3 s", *res.ServerCPUSeconds)
	}
}

// TestRunSpreadsClients runs four clients over two servers. They are not
// an ensemble, so the op is create, which needs no key space.
func TestRunSpreadsClients(t *testing.T) {
	null, err := NewNullServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	before := null.session.Load()
	cfg := shortConfig(startKeeper(t), OpCreate)
	cfg.Servers = append(cfg.Servers, null.Addr().String())
	cfg.Clients = 4
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, res)
	if n := null.session.Load() - before; n != 2 {
		t.Errorf("the null server saw %d of the 4 sessions, want 2", n)
	}
}

// TestWatchAgainstNullServerFails: the null server fires no watches, so
// the round must end with an error instead of hanging.
func TestWatchAgainstNullServerFails(t *testing.T) {
	cfg := shortConfig(startNull(t), OpWatch)
	cfg.Watchers, cfg.SessionTimeout = 3, 500*time.Millisecond
	_, err := Run(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "not notified") {
		t.Fatalf("err %v, want watchers not notified", err)
	}
}

func TestRunCancelled(t *testing.T) {
	cfg := shortConfig(startKeeper(t), OpGet)
	cfg.Duration = time.Hour
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := Run(ctx, cfg)
		errc <- err
	}()
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("a cancelled run returned no error")
	}
}

func TestRunUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	addr := startNull(t)
	cfg := shortConfig(addr, OpGet)
	cfg.Servers = []string{"127.0.0.1:1"}
	if _, err := Run(ctx, cfg); err == nil || !strings.Contains(err.Error(), "connect") {
		t.Fatalf("err %v", err)
	}
}

// TestRunAgainstZooKeeper shows that the tool measures Apache ZooKeeper
// too. It follows zkreal's rules: skipped without Java and the jars unless
// KEEPER_REQUIRE_ZK is set.
func TestRunAgainstZooKeeper(t *testing.T) {
	zk := zkreal.Start(t, zkreal.Options{})
	for _, op := range append(loadOps, OpWatch) {
		t.Run(string(op), func(t *testing.T) {
			res, err := Run(t.Context(), shortConfig(zk.Addr(), op))
			if err != nil {
				t.Fatal(err)
			}
			checkSane(t, res)
		})
	}
	checkNoLeftovers(t, zk.Addr())
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Servers: []string{"127.0.0.1:2181"}, Op: OpGet}
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // substring of the error; "" for valid
	}{
		{"minimal", func(*Config) {}, ""},
		{"no servers", func(c *Config) { c.Servers = nil }, "no servers"},
		{"empty server", func(c *Config) { c.Servers = []string{""} }, "empty server"},
		{"unknown op", func(c *Config) { c.Op = "delete" }, "unknown op"},
		{"negative clients", func(c *Config) { c.Clients = -1 }, "clients"},
		{"huge inflight", func(c *Config) { c.Inflight = 1 << 20 }, "inflight"},
		{"huge size", func(c *Config) { c.SizeBytes = 1 << 20 }, "size"},
		{"negative duration", func(c *Config) { c.Duration = -time.Second }, "duration"},
		{"negative warmup", func(c *Config) { c.Warmup = -time.Second }, "warmup"},
		{"read ratio", func(c *Config) { c.ReadRatio = 1.5 }, "read ratio"},
		{"pid", func(c *Config) { c.CPUPIDs = []int{1, -3} }, "pid"},
		{"zero pid", func(c *Config) { c.CPUPIDs = []int{0} }, "pid"},
		{"relative ready path", func(c *Config) { c.ReadyPath = "x" }, "ready path"},
		{"fill", func(c *Config) { c.Op = OpFill }, ""},
		{"ready", func(c *Config) { c.Op, c.ReadyPath = OpReady, "/a" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mutate(&c)
			err := c.Validate()
			if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

func TestFsync(t *testing.T) {
	for _, parallel := range []int{0, 3} {
		dir := t.TempDir()
		res, err := Fsync(t.Context(), FsyncConfig{Dir: dir, Duration: 100 * time.Millisecond, PreallocBytes: 1 << 20,
			Parallel: parallel})
		if err != nil {
			t.Fatal(err)
		}
		if want := max(parallel, 1); res.Parallel != want {
			t.Errorf("parallel %d: result says %d writers, want %d", parallel, res.Parallel, want)
		}
		for name, m := range map[string]FsyncMode{"append": res.Append, "overwrite": res.Overwrite} {
			if m.Ops <= 0 || m.OpsPerSec <= 0 || !(0 < m.P50Us && m.P50Us <= m.P99Us && m.P99Us <= m.P999Us && m.P999Us <= m.MaxUs) {
				t.Errorf("parallel %d, %s: %+v", parallel, name, m)
			}
		}
		if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
			t.Errorf("parallel %d: left %v behind (%v)", parallel, left, err)
		}
		line, err := res.MarshalLine()
		if err != nil || bytes.IndexByte(line, '\n') != len(line)-1 {
			t.Fatalf("%q %v", line, err)
		}
		t.Logf("%s", bytes.TrimSpace(line))
	}
	for _, bad := range []FsyncConfig{{}, {Dir: ".", Parallel: -1}, {Dir: ".", Parallel: 65}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
