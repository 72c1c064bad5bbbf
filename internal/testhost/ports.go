package testhost

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"keeper/internal/vfs"
)

const (
	// portFloor is the lowest port handed out: below it are the ports
	// services commonly listen on (2181, 3181, 8080, 9090, ...).
	portFloor = 10000
	// blockPorts is how many consecutive ports one lock covers. A test
	// process takes a block at a time; 64 serves most packages with one
	// lock, and leaves ~400 blocks outside the usual ephemeral range.
	blockPorts = 64
	// defaultEphemeralLow and defaultEphemeralHigh are Linux's default
	// ephemeral range, used where /proc does not say.
	defaultEphemeralLow  = 32768
	defaultEphemeralHigh = 60999
	maxPort              = 65535
	// lockDirName is the directory, under the temporary directory, of the
	// block lock files every test process on the machine shares.
	lockDirName = "keeper-testports"
)

// allocator hands out the ports of the blocks this process holds. It is
// the process's one instance (alloc): "never the same port twice in one
// process" needs one owner of what was handed out.
type allocator struct {
	mu      sync.Mutex
	held    []io.Closer  // the block locks, held until the process ends
	claimed map[int]bool // blocks this process took or found taken
	next    int          // the next port of the current block to try
	end     int          // one past the current block's last port
}

var alloc = allocator{claimed: map[int]bool{}}

// Ports returns n distinct ports, none handed out before in this process
// or by another test process, each free on every address now and below
// the ephemeral range. It fails t if there are none.
func Ports(t testing.TB, n int) []int {
	t.Helper()
	ports, err := Reserve(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// Port returns one port as Ports does.
func Port(t testing.TB) int {
	t.Helper()
	return Ports(t, 1)[0]
}

// Addr returns "127.0.0.1:port" for a port from Ports.
func Addr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(Port(t)))
}

// Addrs returns n such addresses.
func Addrs(t testing.TB, n int) []string {
	t.Helper()
	var out []string
	for _, p := range Ports(t, n) {
		out = append(out, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	return out
}

// DeadAddr returns a loopback address nothing listens on, for a test of
// what a client does when a connection is refused. The port is reserved as
// Ports reserves it, so no server of another test takes it meanwhile.
func DeadAddr(t testing.TB) string {
	t.Helper()
	return Addr(t)
}

// Run returns the first of n consecutive ports, for a program that derives
// its ports from one (a sandbox's bookies, kazoo's test harness). n is at
// most 64.
func Run(t testing.TB, n int) int {
	t.Helper()
	base, err := ReserveRun(n)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// Reserve is Ports for code without a testing.TB (the chaos harness).
func Reserve(n int) ([]int, error) {
	alloc.mu.Lock()
	defer alloc.mu.Unlock()
	var out []int
	for len(out) < n {
		p, err := alloc.take(1)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ReserveRun is Run for code without a testing.TB.
func ReserveRun(n int) (int, error) {
	if n < 1 || n > blockPorts {
		return 0, fmt.Errorf("testhost: a run of %d ports; want 1 to %d", n, blockPorts)
	}
	alloc.mu.Lock()
	defer alloc.mu.Unlock()
	return alloc.take(n)
}

// take returns the first of n consecutive free ports of the current
// block, claiming new blocks as needed. A port it passes over, free or
// not, is never handed out later.
func (a *allocator) take(n int) (int, error) {
	for tries := 0; ; tries++ {
		if tries > 4*blockPorts {
			return 0, errors.New("testhost: no run of free ports in the blocks claimed")
		}
		if a.end-a.next < n {
			if err := a.claim(); err != nil {
				return 0, err
			}
		}
		base := a.next
		ok := true
		for p := base; ok && p < base+n; p++ {
			if !bindable(p) {
				a.next = p + 1
				ok = false
			}
		}
		if ok {
			a.next = base + n
			return base, nil
		}
	}
}

// claim takes the lock of a block no process holds, at random among the
// blocks below the ephemeral range, and makes it the current block.
func (a *allocator) claim() error {
	starts := blockStarts(ephemeralRange())
	if len(starts) == 0 {
		return errors.New("testhost: the ephemeral port range leaves no ports outside it to hand out")
	}
	dir := filepath.Join(os.TempDir(), lockDirName)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("testhost: %w", err)
	}
	for _, i := range rand.Perm(len(starts)) {
		start := starts[i]
		if a.claimed[start] {
			continue
		}
		a.claimed[start] = true
		lock, err := vfs.Default.Lock(filepath.Join(dir, "block-"+strconv.Itoa(start)))
		if errors.Is(err, vfs.ErrLocked) {
			continue
		}
		if err != nil {
			return fmt.Errorf("testhost: lock a port block: %w", err)
		}
		a.held = append(a.held, lock)
		a.next = start
		a.end = start + blockPorts
		return nil
	}
	return fmt.Errorf("testhost: all %d port blocks outside the ephemeral range are taken", len(starts))
}

// blockStarts returns the first port of every block outside the ephemeral
// range [low, high]: below it from portFloor, and above it. Blocks are
// aligned to portFloor, so every process names a block alike.
func blockStarts(low, high int) []int {
	var out []int
	for start := portFloor; start+blockPorts <= maxPort+1; start += blockPorts {
		last := start + blockPorts - 1
		if last < low || start > high {
			out = append(out, start)
		}
	}
	return out
}

// bindable reports whether a listener could bind port on every address
// and on loopback now (a listener on the wildcard address conflicts with
// one on any address, so the wildcard bind is the real test).
func bindable(port int) bool {
	for _, host := range []string{"", "127.0.0.1"} {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// ephemeralRange returns the kernel's ephemeral port range, first and
// last port; Linux's default where /proc does not say.
func ephemeralRange() (low, high int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeralLow, defaultEphemeralHigh
	}
	return parseRange(string(b))
}

// parseRange parses ip_local_port_range's text, "low<TAB>high"; Linux's
// default range for text it cannot read.
func parseRange(text string) (low, high int) {
	f := strings.Fields(text)
	if len(f) != 2 {
		return defaultEphemeralLow, defaultEphemeralHigh
	}
	low, err1 := strconv.Atoi(f[0])
	high, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || low < 1 || high < low || high > maxPort {
		return defaultEphemeralLow, defaultEphemeralHigh
	}
	return low, high
}
