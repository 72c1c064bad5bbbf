package testhost

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	tests := []struct {
		text      string
		low, high int
	}{
		{"32768\t60999\n", 32768, 60999},
		{"1024 65535", 1024, 65535},
		{"", defaultEphemeralLow, defaultEphemeralHigh},
		{"40000", defaultEphemeralLow, defaultEphemeralHigh},
		{"x 60999", defaultEphemeralLow, defaultEphemeralHigh},
		{"50000 40000", defaultEphemeralLow, defaultEphemeralHigh},
		{"0 60999", defaultEphemeralLow, defaultEphemeralHigh},
		{"1024 70000", defaultEphemeralLow, defaultEphemeralHigh},
	}
	for _, tt := range tests {
		low, high := parseRange(tt.text)
		if low != tt.low || high != tt.high {
			t.Errorf("parseRange(%q) = %d, %d; want %d, %d", tt.text, low, high, tt.low, tt.high)
		}
	}
}

func TestBlockStarts(t *testing.T) {
	tests := []struct {
		name      string
		low, high int
		minBlocks int
		maxBlocks int
	}{
		{"default range", 32768, 60999, 425, 425},
		{"everything ephemeral", 1024, 65535, 0, 0},
		{"only above", 1024, 60999, 70, 70},
		{"only below", 32768, 65535, 355, 355},
	}
	for _, tt := range tests {
		starts := blockStarts(tt.low, tt.high)
		if len(starts) < tt.minBlocks || len(starts) > tt.maxBlocks {
			t.Errorf("%s: %d blocks, want %d to %d", tt.name, len(starts), tt.minBlocks, tt.maxBlocks)
		}
		for _, s := range starts {
			if e := s + blockPorts - 1; !(e < tt.low || s > tt.high) || s < portFloor || e > maxPort {
				t.Errorf("%s: block %d-%d overlaps the range %d-%d or leaves the ports", tt.name, s, e, tt.low, tt.high)
			}
			if (s-portFloor)%blockPorts != 0 {
				t.Errorf("%s: block %d is not aligned", tt.name, s)
			}
		}
	}
}

// TestPortsAreFreshAndFree checks that ports are distinct across calls,
// outside the ephemeral range, bindable when handed out, and that a run is
// consecutive.
func TestPortsAreFreshAndFree(t *testing.T) {
	low, high := ephemeralRange()
	seen := map[int]bool{}
	var all []int
	for range 50 { // more than one block's worth, so a second block is claimed
		all = append(all, Ports(t, 3)...)
	}
	base := Run(t, 5)
	for p := base; p < base+5; p++ {
		all = append(all, p)
	}
	all = append(all, Port(t))
	for _, p := range all {
		if seen[p] {
			t.Errorf("port %d handed out twice", p)
		}
		seen[p] = true
		if p >= low && p <= high {
			t.Errorf("port %d is in the ephemeral range %d-%d", p, low, high)
		}
	}
	for _, p := range all[len(all)-6:] {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d handed out but not bindable: %v", p, err)
			continue
		}
		l.Close()
	}
}

// TestBusyPortIsSkipped holds the next port of the current block and
// checks that it is not handed out.
func TestBusyPortIsSkipped(t *testing.T) {
	Port(t) // make sure a block is claimed
	alloc.mu.Lock()
	next, end := alloc.next, alloc.end
	alloc.mu.Unlock()
	if next >= end {
		t.Skip("the block is used up; nothing to hold")
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(next)))
	if err != nil {
		t.Skipf("port %d is busy already: %v", next, err)
	}
	defer l.Close()
	if p := Port(t); p == next {
		t.Errorf("port %d handed out while a listener holds it", p)
	}
}

func TestReserveRunRefusesLongRuns(t *testing.T) {
	for _, n := range []int{0, -1, blockPorts + 1} {
		if _, err := ReserveRun(n); err == nil {
			t.Errorf("ReserveRun(%d) succeeded", n)
		}
	}
}

// helperEnv makes the test binary a second test process that prints the
// ports it reserves while the first one holds its own.
const helperEnv = "TESTHOST_HELPER_PORTS"

// TestTwoProcessesNeverShareAPort runs a second process that reserves
// ports while this one holds its blocks, and checks the two sets are
// disjoint: the block locks keep test processes apart.
func TestTwoProcessesNeverShareAPort(t *testing.T) {
	if n := os.Getenv(helperEnv); n != "" {
		count, _ := strconv.Atoi(n)
		ports, err := Reserve(count)
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(1)
		}
		for _, p := range ports {
			os.Stdout.WriteString(strconv.Itoa(p) + "\n")
		}
		os.Exit(0)
	}
	mine := Ports(t, 2*blockPorts) // holds at least two blocks
	cmd := exec.Command(os.Args[0], "-test.run=^TestTwoProcessesNeverShareAPort$")
	cmd.Env = append(os.Environ(), helperEnv+"="+strconv.Itoa(2*blockPorts))
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("helper process: %v\n%s%s", err, out, ee.Stderr)
		}
		t.Fatal(err)
	}
	alloc.mu.Lock()
	myBlocks := map[int]bool{}
	for _, p := range mine {
		myBlocks[(p-portFloor)/blockPorts] = true
	}
	alloc.mu.Unlock()
	for _, line := range strings.Fields(string(out)) {
		p, err := strconv.Atoi(line)
		if err != nil {
			t.Fatalf("helper printed %q", out)
		}
		if slices.Contains(mine, p) || myBlocks[(p-portFloor)/blockPorts] {
			t.Errorf("the second process got port %d, of a block this one holds", p)
		}
	}
}

func TestTimescaleFrom(t *testing.T) {
	measured := func(f float64) func() float64 { return func() float64 { return f } }
	tests := []struct {
		env      string
		measured float64
		want     float64
		wantErr  bool
	}{
		{"", 1.7, 1.7, false},
		{"", 0.4, 1, false},
		{"", 30, maxMeasuredTimescale, false},
		{"3", 1.7, 3, false},
		{" 2.5 ", 9, 2.5, false},
		{"20", 1, 20, false},
		{"0.5", 1, 0, true},
		{"fast", 1, 0, true},
		{"NaN", 1, 0, true},
		{"+Inf", 1, 0, true},
	}
	for _, tt := range tests {
		got, err := timescaleFrom(tt.env, measured(tt.measured))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("timescaleFrom(%q, %v) = %v, %v; want %v, error %v", tt.env, tt.measured, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseLoad(t *testing.T) {
	tests := []struct {
		text string
		want float64
		ok   bool
	}{
		{"9.01 4.87 4.48 21/219 14609\n", 9.01, true},
		{"0.00 0.00 0.00 1/100 1", 0, true},
		{"", 0, false},
		{"x 1 2", 0, false},
		{"-1 0 0", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseLoad(tt.text)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseLoad(%q) = %v, %v; want %v, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
}

// TestMeasureIsAFactor checks the measured factor is a number of at least
// one; its value depends on the machine and is only logged.
func TestMeasureIsAFactor(t *testing.T) {
	f := measure()
	if !(f >= 1) {
		t.Fatalf("measure() = %v; want at least 1", f)
	}
	t.Logf("measured timescale %.1f (KEEPER_TEST_TIMESCALE=%q)", f, os.Getenv(TimescaleEnv))
}
