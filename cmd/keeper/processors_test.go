package main

import (
	"io"
	"log/slog"
	"net/netip"
	"testing"

	"keeper/coordination/zoocfg"
)

func TestProcessorShare(t *testing.T) {
	for _, tt := range []struct{ cpus, onHost, want int }{
		{2, 0, 2}, {2, 1, 2}, {2, 2, 1}, {2, 3, 1}, {1, 3, 1}, {8, 3, 2}, {32, 3, 10}, {4, 5, 1},
	} {
		if got := processorShare(tt.cpus, tt.onHost); got != tt.want {
			t.Errorf("processorShare(%d cpus, %d on host) = %d, want %d", tt.cpus, tt.onHost, got, tt.want)
		}
	}
}

func TestMembersOnHost(t *testing.T) {
	local := func(a netip.Addr) bool { return a == netip.MustParseAddr("10.0.0.5") }
	hosts := func(hs ...string) []zoocfg.Server {
		var ss []zoocfg.Server
		for i, h := range hs {
			ss = append(ss, zoocfg.Server{ID: int64(i + 1), Host: h})
		}
		return ss
	}
	for _, tt := range []struct {
		name    string
		servers []zoocfg.Server
		want    int
	}{
		{"loopback", hosts("127.0.0.1", "127.0.0.2", "::1"), 3},
		{"localhost", hosts("localhost", "localhost", "localhost"), 3},
		{"one per host", hosts("10.0.0.5", "10.0.0.6", "10.0.0.7"), 1},
		{"this host's address and loopback", hosts("10.0.0.5", "127.0.0.1", "10.0.0.9"), 2},
		{"v4-mapped", hosts("::ffff:10.0.0.5", "10.0.0.6", "::ffff:127.0.0.1"), 2},
		{"names are not resolved", hosts("zk1.example", "zk2.example", "zk3.example"), 0},
	} {
		if got := membersOnHost(tt.servers, local); got != tt.want {
			t.Errorf("%s: %d on this host, want %d", tt.name, got, tt.want)
		}
	}
}

// TestShareProcessors checks when a member changes its processors and
// that it puts them back, with a fake runtime setting.
func TestShareProcessors(t *testing.T) {
	ensemble := func(hosts ...string) *zoocfg.Config {
		zc := zoocfg.Default()
		for i, h := range hosts {
			zc.Servers = append(zc.Servers, zoocfg.Server{ID: int64(i + 1), Host: h, QuorumPort: 2888 + i, ElectionPort: 3888 + i})
		}
		return zc
	}
	loopback3 := ensemble("127.0.0.1", "127.0.0.1", "127.0.0.1")
	spread := ensemble("10.0.0.5", "10.0.0.6", "10.0.0.7")
	standalone := ensemble()
	if !loopback3.Distributed() || standalone.Distributed() {
		t.Fatal("the test's configurations are not what they say")
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	local := func(a netip.Addr) bool { return a == netip.MustParseAddr("10.0.0.5") }
	noEnv := func(string) (string, bool) { return "", false }
	for _, tt := range []struct {
		name      string
		zc        *zoocfg.Config
		env       func(string) (string, bool)
		cpus      int
		want      int // while the server runs
		wantCalls int // calls that set a value other than 0
	}{
		{"three on loopback, two cpus", loopback3, noEnv, 2, 1, 2},
		{"three on loopback, eight cpus", loopback3, noEnv, 8, 2, 2},
		{"three on loopback, GOMAXPROCS set", loopback3, func(k string) (string, bool) { return "2", k == "GOMAXPROCS" }, 2, 2, 0},
		{"one per host", spread, noEnv, 2, 2, 0},
		{"standalone", standalone, noEnv, 2, 2, 0},
		{"one cpu", loopback3, noEnv, 1, 1, 0},
	} {
		procs, calls := tt.cpus, 0
		set := func(n int) int {
			prev := procs
			if n > 0 {
				procs = n
				calls++
			}
			return prev
		}
		restore := shareProcessors(tt.zc, logger, tt.env, set, local)
		if procs != tt.want {
			t.Errorf("%s: %d processors while serving, want %d", tt.name, procs, tt.want)
		}
		restore()
		if procs != tt.cpus || calls != tt.wantCalls {
			t.Errorf("%s: %d processors after, want %d back; %d settings, want %d", tt.name, procs, tt.cpus, calls, tt.wantCalls)
		}
	}

	// A second server in the same process leaves the first one's
	// setting alone, and the first puts it back.
	procs := 2
	set := func(n int) int {
		prev := procs
		if n > 0 {
			procs = n
		}
		return prev
	}
	first := shareProcessors(loopback3, logger, noEnv, set, local)
	second := shareProcessors(loopback3, logger, noEnv, set, local)
	second()
	if procs != 1 {
		t.Errorf("the second server's stop changed the setting to %d", procs)
	}
	first()
	if procs != 2 {
		t.Errorf("%d processors after both stopped, want 2", procs)
	}
}
