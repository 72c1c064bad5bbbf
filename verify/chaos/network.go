package chaos

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"
)

// Rule is what the network does to the bytes one node sends another, in
// one direction. The zero Rule delivers everything at once.
//
// The links are TCP connections, so a rule never drops bytes out of a
// stream: TCP would retransmit them, and a stream with a hole in it is not
// a fault a real network produces. Loss is modelled the way TCP shows it
// to the application, as delay, and a cut link holds its bytes until the
// cut heals (or the connection is reset).
type Rule struct {
	// Blackhole holds every byte (and the end of the stream) until the
	// rule is lifted; new connections are not established meanwhile.
	Blackhole bool
	// Latency is added to every chunk of bytes; Jitter adds a uniform
	// random [0, Jitter) on top. Order is kept.
	Latency, Jitter time.Duration
	// Loss is the probability that a chunk is "lost" once: it arrives
	// RetransmitDelay late, as after a TCP retransmission timeout.
	Loss float64
}

// RetransmitDelay is what one lost chunk costs (Rule.Loss): Linux's
// minimum retransmission timeout, 200 ms.
const RetransmitDelay = 200 * time.Millisecond

// String describes r for logs.
func (r Rule) String() string {
	switch {
	case r.Blackhole:
		return "blackhole"
	case r == Rule{}:
		return "ok"
	}
	return fmt.Sprintf("latency=%v jitter=%v loss=%.2f", r.Latency, r.Jitter, r.Loss)
}

// pair is a direction: bytes from one node to another.
type pair struct{ from, to string }

// Network is the fault model every proxied link consults: a rule per
// direction between named nodes ("s1".."s5" servers, "c1".. clients,
// "b1".. bookies). Changes apply at once to live connections. It is safe
// for concurrent use.
type Network struct {
	mu      sync.Mutex
	rules   map[pair]Rule
	changed chan struct{} // closed and replaced on every change
	proxies []*Proxy
	rng     *rand.Rand
	closed  bool
}

// NewNetwork returns a network with every link healthy. seed drives
// jitter and loss.
func NewNetwork(seed uint64) *Network {
	return &Network{
		rules:   map[pair]Rule{},
		changed: make(chan struct{}),
		rng:     rand.New(rand.NewPCG(seed, 0x6e6574)),
	}
}

// Set sets the rule for bytes from one node to another.
func (n *Network) Set(from, to string, r Rule) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r == (Rule{}) {
		delete(n.rules, pair{from, to})
	} else {
		n.rules[pair{from, to}] = r
	}
	n.notifyLocked()
}

// SetBoth sets the same rule in both directions between a and b.
func (n *Network) SetBoth(a, b string, r Rule) {
	n.Set(a, b, r)
	n.Set(b, a, r)
}

// Rule returns the rule for bytes from one node to another.
func (n *Network) Rule(from, to string) Rule {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rules[pair{from, to}]
}

// Heal lifts every rule.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.rules)
	n.notifyLocked()
}

// Partition cuts every link between nodes of different groups, both
// ways, and leaves the other rules alone. A node in no group keeps its
// links.
func (n *Network) Partition(groups ...[]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, g := range groups {
		for j, h := range groups {
			if i == j {
				continue
			}
			for _, a := range g {
				for _, b := range h {
					n.rules[pair{a, b}] = Rule{Blackhole: true}
				}
			}
		}
	}
	n.notifyLocked()
}

// Cut blackholes the listed directions; a convenience for asymmetric
// faults.
func (n *Network) Cut(from string, to ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range to {
		n.rules[pair{from, t}] = Rule{Blackhole: true}
	}
	n.notifyLocked()
}

// Describe lists the rules in force, sorted, for logs.
func (n *Network) Describe() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for p, r := range n.rules {
		out = append(out, fmt.Sprintf("%s->%s:%v", p.from, p.to, r))
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "healthy"
	}
	return fmt.Sprint(out)
}

// Reset resets (TCP RST) every live connection between a and b, in
// either dialling direction, and returns how many it reset.
func (n *Network) Reset(a, b string) int {
	n.mu.Lock()
	proxies := slices.Clone(n.proxies)
	n.mu.Unlock()
	total := 0
	for _, p := range proxies {
		if (p.from == a && p.to == b) || (p.from == b && p.to == a) {
			total += p.ResetAll()
		}
	}
	return total
}

// Proxy starts a proxy on a fresh loopback port that forwards
// connections to target. Connections through it are dialled by from and
// accepted by to; the rule from->to applies to the bytes the dialler
// sends and to->from to the replies.
func (n *Network) Proxy(from, to, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: proxy %s->%s: %w", from, to, err)
	}
	p := newProxy(n, from, to, target, ln)
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		ln.Close()
		return nil, fmt.Errorf("chaos: proxy %s->%s: network closed", from, to)
	}
	n.proxies = append(n.proxies, p)
	n.mu.Unlock()
	p.start()
	return p, nil
}

// Close closes every proxy and its connections.
func (n *Network) Close() {
	n.mu.Lock()
	n.closed = true
	proxies := n.proxies
	n.proxies = nil
	n.notifyLocked()
	n.mu.Unlock()
	for _, p := range proxies {
		p.Close()
	}
}

// Stats sums the proxies' counters.
func (n *Network) Stats() ProxyStats {
	n.mu.Lock()
	proxies := slices.Clone(n.proxies)
	n.mu.Unlock()
	var s ProxyStats
	for _, p := range proxies {
		ps := p.Stats()
		s.Conns += ps.Conns
		s.Bytes += ps.Bytes
		s.Resets += ps.Resets
		s.Held += ps.Held
	}
	return s
}

// watch returns the rule for a direction and a channel closed at the
// next change of any rule.
func (n *Network) watch(from, to string) (Rule, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rules[pair{from, to}], n.changed
}

// delay draws a chunk's extra delay under r.
func (n *Network) delay(r Rule) time.Duration {
	d := r.Latency
	if r.Jitter <= 0 && r.Loss <= 0 {
		return d
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if r.Jitter > 0 {
		d += time.Duration(n.rng.Int64N(int64(r.Jitter)))
	}
	if r.Loss > 0 && n.rng.Float64() < r.Loss {
		d += RetransmitDelay
	}
	return d
}

func (n *Network) notifyLocked() {
	close(n.changed)
	n.changed = make(chan struct{})
}
