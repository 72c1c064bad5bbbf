// Package slowconsumer has the clients that make a server hold their
// replies: they pipeline large reads and never read the answers
// (Pipeline), read one byte a second (ByteASecond), stop reading half-way
// through a reply (MidReply), or open thousands of connections that each
// pipeline a few large reads and never read (ManyConns).
// docs/backpressure.md states what a keeper server may hold for such
// clients. The chaos scenarios "slow consumers" (verify/chaos) and the
// side-by-side test against Apache ZooKeeper (verify/compat/slowconsumers)
// run these clients, probe the attacked servers with ruok (Probe) and time
// the healthy clients (Latencies).
//
// The attackers speak a server's wire protocol through a Protocol:
// ZooKeeper's (ZooKeeper) and the bookie's v3 protocol (Bookie).
package slowconsumer

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// Kind is one attacker's behaviour.
type Kind int

// The kinds of attackers.
const (
	// Pipeline sends many large reads on one connection and reads nothing.
	Pipeline Kind = iota
	// ByteASecond sends large reads and reads one byte of the replies a
	// second.
	ByteASecond
	// MidReply sends large reads, reads half of the first reply and then
	// nothing.
	MidReply
	// ManyConns opens many connections that each send a few large reads and
	// read nothing.
	ManyConns
	numKinds
)

// Kinds lists every kind, in the order figures print them.
var Kinds = []Kind{Pipeline, ByteASecond, MidReply, ManyConns}

var kindNames = [numKinds]string{"pipeline", "byte-a-second", "stop-mid-reply", "many-conns"}

func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return fmt.Sprintf("kind(%d)", int(k))
	}
	return kindNames[k]
}

// Protocol is what the attackers need of a server's wire protocol.
type Protocol struct {
	// Name names the server's kind ("zookeeper", "bookie").
	Name string
	// Handshake runs on a fresh connection before any read is sent: a
	// ZooKeeper session's connect; nil when none is needed.
	Handshake func(c net.Conn) error
	// Read returns the i-th read request frame (i from 0) of a connection:
	// a request whose reply is large.
	Read func(i int) []byte
	// Ping returns the i-th frame that keeps a connection's session alive,
	// so that the server closes the connection only for not reading; a
	// round also sends one on every connection at its end, to tell which
	// ones the server closed (see closedByServer). It must be a small
	// request with a small reply; nil when the protocol has none.
	Ping func(i int) []byte
	// ReplyBytes is about the size of one reply to Read, its frame
	// included; a MidReply attacker reads half of it.
	ReplyBytes int
}

// Attack is one kind's part of a round.
type Attack struct {
	// Proto speaks to the server.
	Proto Protocol
	// Conns is how many connections of the kind open; Reads how many reads
	// each sends.
	Conns, Reads int
}

// Plan sizes one attack round against one server.
type Plan struct {
	// Attacks says what each kind does; a kind without an entry, or with
	// no connections or reads, sits the round out.
	Attacks map[Kind]Attack
	// Hold is how long the attack lasts once its connections are open.
	Hold time.Duration
	// PingEvery is how often every connection sends its Protocol.Ping (0:
	// never).
	PingEvery time.Duration
	// Dialers is how many connections are opened at once (0: 32).
	Dialers int
	// DialTimeout bounds a dial and its handshake (0: 5 s).
	DialTimeout time.Duration
	// Burst holds every connection's reads until all the connections are
	// open and then sends them at once; otherwise each connection sends its
	// reads as soon as it opens.
	Burst bool
}

func (p Plan) withDefaults() Plan {
	if p.Dialers <= 0 {
		p.Dialers = 32
	}
	if p.DialTimeout <= 0 {
		p.DialTimeout = 5 * time.Second
	}
	return p
}

// Counts is a count by kind, indexed by Kind.
type Counts [numKinds]int

// Total adds the counts up.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// String formats the counts for a figure:
// "pipeline:3,byte-a-second:3,stop-mid-reply:3,many-conns:6000".
func (c Counts) String() string {
	parts := make([]string, 0, numKinds)
	for _, k := range Kinds {
		parts = append(parts, fmt.Sprintf("%s:%d", k, c[k]))
	}
	return strings.Join(parts, ",")
}

// Result is what one or more rounds did, by kind.
type Result struct {
	// Opened counts the connections that opened (and completed their
	// handshake); Failed those that could not.
	Opened, Failed Counts
	// Closed counts the connections the server had closed (or reset) by
	// the end of the hold, while their client was not reading: a server
	// that sheds stuck clients closes them.
	Closed Counts
	// OpenTime is how long opening the connections took, summed over
	// rounds.
	OpenTime time.Duration
	// Rounds is how many rounds were summed.
	Rounds int
}

// Add sums o into r.
func (r *Result) Add(o Result) {
	for k := range numKinds {
		r.Opened[k] += o.Opened[k]
		r.Failed[k] += o.Failed[k]
		r.Closed[k] += o.Closed[k]
	}
	r.OpenTime += o.OpenTime
	r.Rounds += o.Rounds
}

// conn is one attacker's connection.
type conn struct {
	kind Kind
	nc   net.Conn
}

// Round attacks the server at addr with every kind of plan at once: it
// opens the connections (each with its handshake), each sending its reads
// and behaving as its kind does once it is open (or once all are, with
// plan.Burst), holds for plan.Hold after the last one opened, notes which
// ones the server closed, and closes them all. It returns when everything it
// started has ended, early if ctx ends.
func Round(ctx context.Context, addr string, plan Plan) Result {
	plan = plan.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var kinds []Kind
	for _, k := range Kinds {
		if a := plan.Attacks[k]; a.Reads > 0 {
			for range a.Conns {
				kinds = append(kinds, k)
			}
		}
	}
	res := Result{Rounds: 1}
	start := time.Now()
	var wg sync.WaitGroup // every connection's goroutines
	conns := openAll(ctx, addr, plan, kinds, &res, &wg)
	res.OpenTime = time.Since(start)
	if plan.Burst {
		for _, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				behave(ctx, plan.Attacks[c.kind], c)
			}()
		}
	}
	hold := time.NewTimer(plan.Hold)
	select {
	case <-hold.C:
	case <-ctx.Done():
		hold.Stop()
	}
	res.Closed = closedByServer(plan, conns)
	cancel()
	for _, c := range conns {
		c.nc.Close()
	}
	wg.Wait()
	return res
}

// openAll opens a connection of each kind in kinds, plan.Dialers at a
// time, and counts them in res. Each connection pings from the moment it
// opens, so that its session outlives the opening of the others, and
// unless plan.Burst it behaves at once; its goroutines are added to wg.
func openAll(ctx context.Context, addr string, plan Plan, kinds []Kind, res *Result, wg *sync.WaitGroup) []conn {
	var (
		mu      sync.Mutex
		conns   []conn
		dialers sync.WaitGroup
	)
	next := make(chan Kind)
	for range min(plan.Dialers, len(kinds)) {
		dialers.Add(1)
		go func() {
			defer dialers.Done()
			for k := range next {
				p := plan.Attacks[k].Proto
				nc, err := dial(ctx, p, addr, plan.DialTimeout)
				mu.Lock()
				if err != nil {
					res.Failed[k]++
					mu.Unlock()
					continue
				}
				res.Opened[k]++
				conns = append(conns, conn{k, nc})
				mu.Unlock()
				if p.Ping != nil && plan.PingEvery > 0 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ping(ctx, nc, p.Ping, plan.PingEvery)
					}()
				}
				if !plan.Burst {
					wg.Add(1)
					go func() {
						defer wg.Done()
						behave(ctx, plan.Attacks[k], conn{k, nc})
					}()
				}
			}
		}()
	}
	for _, k := range kinds {
		if ctx.Err() != nil {
			break
		}
		next <- k
	}
	close(next)
	dialers.Wait()
	return conns
}

// closeProbeWait is how long closedByServer waits for the resets its
// pings draw: they come within a loopback round trip, and the rest is
// room for a loaded machine.
const closeProbeWait = 200 * time.Millisecond

// closedByServer counts the connections the server has closed. A server
// that closes a connection it could not write to sends its FIN only after
// the unsent replies, which the client never reads, so the client sees the
// close only as the reset its next write draws: every connection first
// sends a ping (one of a protocol without pings is seen closed only if the
// server reset it).
func closedByServer(plan Plan, conns []conn) Counts {
	var wg sync.WaitGroup
	for _, c := range conns {
		if p := plan.Attacks[c.kind].Proto; p.Ping != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A server that still reads takes the ping; one that stopped
				// reading leaves it in the socket until the deadline.
				_ = c.nc.SetWriteDeadline(time.Now().Add(closeProbeWait))
				_, _ = c.nc.Write(p.Ping(0))
			}()
		}
	}
	wg.Wait()
	deadline := time.Now().Add(closeProbeWait)
	for {
		var out Counts
		for _, c := range conns {
			if peerClosed(c.nc) {
				out[c.kind]++
			}
		}
		if out.Total() == len(conns) || time.Now().After(deadline) {
			return out
		}
		time.Sleep(closeProbeWait / 10)
	}
}

// dial opens a connection to addr and runs the protocol's handshake on it.
func dial(ctx context.Context, p Protocol, addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout, Control: dialControl}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if p.Handshake != nil {
		_ = nc.SetDeadline(time.Now().Add(timeout))
		if err := p.Handshake(nc); err != nil {
			nc.Close()
			return nil, fmt.Errorf("slowconsumer: %s handshake: %w", p.Name, err)
		}
		_ = nc.SetDeadline(time.Time{})
	}
	return nc, nil
}

// behave sends c's reads and reads the replies as c's kind does, until ctx
// ends (Round then closes the connection, which ends any write or read in
// progress). A Write is never interleaved with another on the same
// connection, so the reads and the pings stay whole frames.
func behave(ctx context.Context, a Attack, c conn) {
	var frames []byte
	for i := range a.Reads {
		frames = append(frames, a.Proto.Read(i)...)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		consume(ctx, c, a.Proto.ReplyBytes)
	}()
	// The server stops reading once the replies back up, so this write may
	// block until Round closes the connection.
	_, _ = c.nc.Write(frames)
	wg.Wait()
}

// ping writes a ping every interval until ctx ends or a write fails.
func ping(ctx context.Context, nc net.Conn, frame func(i int) []byte, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := nc.Write(frame(i)); err != nil {
			return
		}
	}
}

// consume reads c's replies as its kind does.
func consume(ctx context.Context, c conn, replyBytes int) {
	switch c.kind {
	case ByteASecond:
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		var b [1]byte
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := io.ReadFull(c.nc, b[:]); err != nil {
					return
				}
			}
		}
	case MidReply:
		_, _ = io.ReadFull(c.nc, make([]byte, max(1, replyBytes/2)))
	}
}
