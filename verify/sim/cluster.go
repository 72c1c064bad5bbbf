package sim

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"

	"keeper/coordination/zab"
	"keeper/coordination/zxid"
)

// Options configures a Cluster. Everything not set here is drawn from Seed.
type Options struct {
	// Seed decides every choice of the run: faults, latencies, workload.
	Seed uint64
	// Servers is the ensemble size, 3 to 5 (default 3).
	Servers int
	// Clients is the number of simulated clients (default 3).
	Clients int
	// TickMs is the virtual length of one tick, the unit of Run (default 100).
	TickMs int64
	// MaxRecentEntries bounds each node's in-memory log tail; learners
	// further behind get a snapshot. 0 draws it from the seed, often small
	// so that snapshots are exercised.
	MaxRecentEntries int
	// NoFaults turns fault injection off (a calibration run).
	NoFaults bool
	// CheckEarlyExpiry adds the check that no session expires sooner than
	// its timeout after a request on it was answered (checkExpiries). It
	// is off by default while a known bug (a new leader expires sessions
	// at once) fails it in most runs.
	CheckEarlyExpiry bool
	// Reconfig runs the members with dynamic reconfiguration on, as a
	// server with reconfigEnabled does (reconfig.go), and adds an operator
	// client that changes the membership at random.
	Reconfig bool
	// Voters is how many servers (the lowest ids) the first configuration
	// names; the others start outside it, as servers about to join are
	// started. 0 means every server; below Servers only with Reconfig.
	Voters int
	// Standalone runs one standalone server (zoo.cfg without server
	// lines) instead of an ensemble: the same Member, loop work and disk
	// path, without Zab (standalone.go). Servers is then 1.
	Standalone bool
	// Logger receives the servers' logs; nil discards them.
	Logger *slog.Logger
	// Trace, when set, receives every notable event as it happens, and
	// every client request and reply: for replaying a failing seed.
	Trace io.Writer
}

// Validate reports the first invalid field.
func (o *Options) Validate() error {
	switch {
	case o.Standalone && (o.Servers != 1 || o.Reconfig):
		return fmt.Errorf("sim: a standalone run has 1 server and no reconfiguration, not %d servers (reconfig %v)", o.Servers, o.Reconfig)
	case !o.Standalone && (o.Servers < 3 || o.Servers > 5):
		return fmt.Errorf("sim: %d servers, want 3 to 5", o.Servers)
	case o.Clients < 1 || o.Clients > 50:
		return fmt.Errorf("sim: %d clients, want 1 to 50", o.Clients)
	case o.TickMs <= 0:
		return fmt.Errorf("sim: tick %d ms must be positive", o.TickMs)
	case o.MaxRecentEntries < 0:
		return errors.New("sim: negative MaxRecentEntries")
	case o.Voters < 0 || o.Voters > o.Servers:
		return fmt.Errorf("sim: %d voters of %d servers", o.Voters, o.Servers)
	case o.Voters < o.Servers && !o.Reconfig:
		return fmt.Errorf("sim: %d voters of %d servers needs Reconfig", o.Voters, o.Servers)
	}
	return nil
}

func (o *Options) setDefaults() {
	if o.Servers == 0 {
		o.Servers = 3
		if o.Standalone {
			o.Servers = 1
		}
	}
	if o.Clients == 0 {
		o.Clients = 3
	}
	if o.TickMs == 0 {
		o.TickMs = 100
	}
	if o.Voters == 0 {
		o.Voters = o.Servers
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Stats counts what a run did.
type Stats struct {
	Ops        int // client operations with a known outcome
	Unknown    int // client operations whose outcome the client never learned
	Writes     int // acknowledged writes
	Crashes    int // server crashes (faults and failpoints)
	Partitions int // partitions and link cuts
	Elections  int // times a server became a serving leader
	Snapshots  int // snapshots installed on learners
	Truncates  int // logs truncated by a new leader (TRUNC)
	Expired    int // sessions the cluster closed without the client asking
	// DoubleCloses counts closeSession txns for sessions already closed:
	// harmless in the tree, but a sign that a server kept a closed session.
	DoubleCloses int
	// ReconfigsSent counts the operator's reconfig requests, ReconfigsOK
	// those answered OK, and Reconfigs the configurations made by a
	// reconfig txn that some member activated (its reply may have been
	// lost).
	// OwnSnapshots counts the snapshots members started of their own
	// (snapCount), as opposed to Snapshots, those installed from a leader.
	OwnSnapshots int
	// Purged counts the snapshot and log files autopurge removed, and
	// PurgeWaits the TRUNC or SNAP batches that waited for a pass to end.
	Purged        int
	PurgeWaits    int
	ReconfigsSent int
	ReconfigsOK   int
	Reconfigs     int
}

// Cluster is an ensemble, its network and its clients, in virtual time.
// It is not safe for concurrent use.
type Cluster struct {
	opts Options
	rng  *rand.Rand

	nowMs  int64
	seq    uint64
	events eventQueue
	free   []*event // handled events, for reuse

	servers []*server // index = server id; [0] unused
	ids     []zab.PeerID
	net     network
	faults  faultPlan
	clients []*client

	// persistMaxMs bounds how long a batch takes to come back from disk
	// (persister.go); drawn per run.
	persistMaxMs int64
	// member holds the run's draws for the loop's snapshots and autopurge
	// (persister.go).
	member memberParams

	nextConn uint64
	hist     history
	oracle   oracle
	stats    Stats
	// chain is every configuration some member activated, by version
	// (reconfig.go); nil without Options.Reconfig.
	chain map[zxid.ID]zab.Membership

	// violations are the broken invariants found so far, each with its
	// context; Check reports them.
	violations []string
	// halted is set when the run cannot go on (a server panicked).
	halted string
	trace  []string
	ended  bool
}

// wallEpochMs is the virtual wall clock at time zero.
const wallEpochMs = 1_700_000_000_000

// NewCluster builds an ensemble of opts.Servers peers with empty logs and
// opts.Clients clients, at virtual time zero. It panics on invalid options.
func NewCluster(opts Options) *Cluster {
	opts.setDefaults()
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	c := &Cluster{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, 0x5eed))}
	if c.opts.MaxRecentEntries == 0 {
		c.opts.MaxRecentEntries = []int{4, 16, 64, 10000}[c.rng.IntN(4)]
	}
	c.persistMaxMs = maxPersistMs[c.rng.IntN(len(maxPersistMs))]
	c.member = drawMemberParams(opts.Seed)
	c.oracle.init()
	c.net.init(c, opts.Servers)
	c.servers = make([]*server, opts.Servers+1)
	for i := 1; i <= opts.Servers; i++ {
		c.ids = append(c.ids, zab.PeerID(i))
	}
	if opts.Reconfig {
		c.chain = map[zxid.ID]zab.Membership{0: {Voters: c.ids[:opts.Voters], Observers: []zab.PeerID{}}}
	}
	for i := 1; i <= opts.Servers; i++ {
		c.servers[i] = newServer(c, zab.PeerID(i))
		c.start(c.servers[i])
	}
	for i := range opts.Clients {
		c.clients = append(c.clients, newClient(c, i))
	}
	if opts.Reconfig {
		op := newClient(c, opts.Clients)
		op.operator = true
		c.clients = append(c.clients, op)
	}
	c.faults = newFaultPlan(c.rng, opts.NoFaults)
	return c
}

// Run simulates steps ticks of workload under faults.
func (c *Cluster) Run(steps int) {
	for range steps {
		if c.halted != "" {
			return
		}
		c.injectFaults()
		c.runUntil(c.nowMs + c.opts.TickMs)
		// A halted run may have a server up without a process (its
		// recovery refused its files): nothing more is looked at.
		if c.halted == "" && c.nowMs/c.opts.TickMs%ephemeralSampleTicks == 0 {
			c.sampleEphemerals()
		}
	}
}

// ephemeralSampleTicks is how often the replicas' ephemerals are checked
// against their session tables.
const ephemeralSampleTicks = 5

// runCheckers runs every end-of-run checker against the final history.
func (c *Cluster) runCheckers() {
	if c.oracle.final == nil {
		return // convergence failed, which is reported
	}
	c.checkReplicas()
	c.checkDurability()
	c.checkFIFO()
	c.checkReads()
	c.checkEphemerals()
	c.checkWatches()
	c.checkWriteOrder()
	c.checkLinearizable()
	if c.opts.Reconfig {
		c.checkConfigs()
	}
}

// Check heals the cluster (restarts every server, ends partitions and
// delays), lets clients finish and abandon their sessions, waits for the
// servers to converge and the sessions to expire, and then runs every
// checker. It returns nil if no invariant broke; otherwise an error that
// names each broken invariant and ends with the last events of the run.
// It ends the run: later calls return the same result, and Run does
// nothing.
func (c *Cluster) Check() error {
	if !c.ended {
		c.ended = true
		if c.halted == "" {
			c.finish()
		}
		if c.halted == "" {
			c.runCheckers()
		}
		c.halted = "checked"
	}
	if len(c.violations) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sim: seed %d: %d violation(s)\n", c.opts.Seed, len(c.violations))
	for i, v := range c.violations {
		if i == 10 {
			fmt.Fprintf(&b, "... and %d more\n", len(c.violations)-10)
			break
		}
		fmt.Fprintf(&b, "- %s\n", v)
	}
	b.WriteString("last events:\n")
	for _, line := range c.trace[max(0, len(c.trace)-traceLimit):] {
		b.WriteString("  " + line + "\n")
	}
	return errors.New(b.String())
}

// Stats returns what the run did so far.
func (c *Cluster) Stats() Stats { return c.stats }

// violate records a broken invariant.
func (c *Cluster) violate(invariant, format string, args ...any) {
	if len(c.violations) >= 100 {
		return
	}
	c.violations = append(c.violations, fmt.Sprintf("%s: %s (t=%dms)", invariant, fmt.Sprintf(format, args...), c.nowMs))
}

// traceLimit bounds the event trace a failure prints.
const traceLimit = 80

// tracef records a notable event (fault, role change, session event).
func (c *Cluster) tracef(format string, args ...any) {
	if len(c.trace) >= 2*traceLimit {
		c.trace = append(c.trace[:0], c.trace[len(c.trace)-traceLimit:]...)
	}
	line := fmt.Sprintf("t=%-6d ", c.nowMs) + fmt.Sprintf(format, args...)
	c.trace = append(c.trace, line)
	if c.opts.Trace != nil {
		fmt.Fprintln(c.opts.Trace, line)
	}
}

// tracing reports whether Options.Trace is set; callers check it before
// debugf, so that a run without a trace does not format anything.
func (c *Cluster) tracing() bool { return c.opts.Trace != nil }

// debugf writes a line to Options.Trace only.
func (c *Cluster) debugf(format string, args ...any) {
	if c.opts.Trace != nil {
		fmt.Fprintf(c.opts.Trace, "t=%-6d ", c.nowMs)
		fmt.Fprintf(c.opts.Trace, format+"\n", args...)
	}
}

// upServers returns the servers that are running, in id order.
func (c *Cluster) upServers() []*server {
	var out []*server
	for _, s := range c.servers[1:] {
		if s.up {
			out = append(out, s)
		}
	}
	return out
}

// servingLeader returns the server that leads and serves, if one does.
func (c *Cluster) servingLeader() *server {
	for _, s := range c.upServers() {
		if s.peer == nil {
			return s // standalone: it serves as soon as it is up
		}
		if n := s.peer.Node(); n.Role() == zab.Leading && n.Serving() {
			return s
		}
	}
	return nil
}

func zx(z int64) zxid.ID { return zxid.ID(z) }
