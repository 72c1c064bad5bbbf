package ensemble

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// clientSessionTimeout is what the go-zookeeper clients ask for: long
// enough that sessions outlive a failover.
const clientSessionTimeout = 15 * time.Second

var openACL = zk.WorldACL(zk.PermAll)

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// dialZK opens a go-zookeeper session over addrs (it fails over between
// them in its own random order) and waits until it has a session. The
// connection is closed when the test ends.
func dialZK(t testing.TB, addrs []string) *zk.Conn {
	t.Helper()
	return dialZKWith(t, addrs, zk.NewDNSHostProvider(), nil)
}

// dialZKWith is dialZK with a host provider and an event callback (nil
// for none).
func dialZKWith(t testing.TB, addrs []string, hosts zk.HostProvider, cb zk.EventCallback) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect(addrs, clientSessionTimeout, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false),
		zk.WithHostProvider(hosts), zk.WithEventCallback(cb))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(electTimeout)
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			t.Fatalf("no session with %v within 30 s (state %v)", addrs, c.State())
		}
	}
	return c
}

// orderedHosts is a zk.HostProvider that tries servers in its own order
// (zk.Connect shuffles the list it passes to Init), so a test can choose
// which member a session lands on first and where it moves next.
type orderedHosts struct {
	mu      sync.Mutex
	servers []string
	next    int // index of the server Next returns
	tried   int // servers tried since the last successful connection
}

// Init checks that servers are the ones the provider was made with.
func (h *orderedHosts) Init(servers []string) error {
	if !slices.Equal(slices.Sorted(slices.Values(servers)), slices.Sorted(slices.Values(h.servers))) {
		return fmt.Errorf("orderedHosts: given %v, made with %v", servers, h.servers)
	}
	return nil
}

func (h *orderedHosts) Len() int { return len(h.servers) }

func (h *orderedHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.servers[h.next]
	h.next = (h.next + 1) % len(h.servers)
	h.tried++
	retryStart := h.tried > len(h.servers)
	if retryStart {
		h.tried = 1
	}
	return s, retryStart
}

func (h *orderedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tried = 0
}

// ensurePath creates path (not its parents) unless it exists.
func ensurePath(t testing.TB, c *zk.Conn, path string) {
	t.Helper()
	if _, err := c.Create(path, nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("create %s: %v", path, err)
	}
}

// childrenOn reads the children of each parent from one member directly,
// after a sync, so the member has applied everything the leader had
// committed when the sync was issued.
func childrenOn(t testing.TB, m *Member, parents []string) map[string][]string {
	t.Helper()
	c := dialZK(t, []string{m.Addr})
	defer c.Close()
	if _, err := c.Sync("/"); err != nil {
		t.Fatalf("sync on member %d: %v", m.ID, err)
	}
	out := map[string][]string{}
	for _, p := range parents {
		kids, _, err := c.Children(p)
		if err != nil {
			t.Fatalf("children of %s on member %d: %v", p, m.ID, err)
		}
		out[p] = kids
	}
	return out
}

// missingOn lists the acknowledged paths (parent -> child names) that
// member m does not have.
func missingOn(t testing.TB, m *Member, acked map[string][]string) []string {
	t.Helper()
	parents := make([]string, 0, len(acked))
	for p := range acked {
		parents = append(parents, p)
	}
	slices.Sort(parents)
	have := childrenOn(t, m, parents)
	var missing []string
	for _, p := range parents {
		set := make(map[string]bool, len(have[p]))
		for _, k := range have[p] {
			set[k] = true
		}
		for _, k := range acked[p] {
			if !set[k] {
				missing = append(missing, fmt.Sprintf("%s/%s", p, k))
			}
		}
	}
	return missing
}

// checkReplicated checks that every running member holds every
// acknowledged node and that all of them agree on the digest.
func checkReplicated(t testing.TB, e *Ensemble, acked map[string][]string) {
	t.Helper()
	n := 0
	for _, kids := range acked {
		n += len(kids)
	}
	for _, m := range e.Members {
		if !m.Running() {
			continue
		}
		if missing := missingOn(t, m, acked); len(missing) > 0 {
			t.Errorf("member %d lacks %d of %d acknowledged creates, e.g. %v",
				m.ID, len(missing), n, missing[:min(10, len(missing))])
		}
	}
	h := e.WaitConverged(electTimeout)
	t.Logf("all %d members hold the %d acknowledged creates; hash %s", len(e.Members), n, h)
}
