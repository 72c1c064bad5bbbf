package bubble

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"keeper/coordination/quorumnet"
	"keeper/coordination/server"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/internal/memnet"
	"keeper/internal/vfs"
)

// Settings is one run, drawn from its seed by Draw.
type Settings struct {
	Seed uint64
	// Members is 1 for a standalone server, or the size of an ensemble.
	Members int
	Clients int
	// Workload is how long the clients run, in virtual time.
	Workload time.Duration
	// SessionTimeouts are the clients' session timeouts, one each.
	SessionTimeouts []time.Duration
	// Server storage: snapCount, nodes per snapshot walk step, the log's
	// preallocation step and autopurge's interval (autopurge keeps the
	// minimum of 3 snapshots).
	SnapCount         int
	SnapshotStepNodes int
	PreAllocSizeBytes int64
	PurgeInterval     time.Duration
	// Crashes are the server's crashes during the workload, in order.
	Crashes []Crash
}

// Crash is one crash of the server.
type Crash struct {
	// Member is the index of the member that crashes; -1 is whichever
	// leads at that moment (the first member if none does).
	Member   int
	At       time.Duration // since the workload began
	Downtime time.Duration // before the new server starts
	// Torn lets a random part of the unsynced writes reach the disk,
	// the first one left out possibly torn (MemFS.CrashClone with an
	// rng); otherwise exactly what was synced survives.
	Torn bool
}

func (s Settings) String() string {
	return fmt.Sprintf("seed %d: %d members, %d clients for %v, timeouts %v, snapCount %d, step %d, prealloc %d, purge every %v, crashes %+v",
		s.Seed, s.Members, s.Clients, s.Workload, s.SessionTimeouts, s.SnapCount, s.SnapshotStepNodes, s.PreAllocSizeBytes, s.PurgeInterval, s.Crashes)
}

// Draw picks a run of a standalone server (members 1) or an ensemble
// from seed. An ensemble's crashes hit its leader two times in three.
func Draw(seed uint64, members int) Settings {
	rng := rand.New(rand.NewPCG(seed, 0xb0bb1e))
	s := Settings{
		Seed:              seed,
		Members:           members,
		Clients:           2 + rng.IntN(5),
		Workload:          time.Duration(1+rng.IntN(4)) * time.Minute,
		SnapCount:         10 + rng.IntN(90),
		SnapshotStepNodes: 1 + rng.IntN(8),
		PreAllocSizeBytes: int64(1+rng.IntN(16)) << 10,
		PurgeInterval:     time.Duration(5+rng.IntN(55)) * time.Second,
	}
	for range s.Clients {
		// zkcore's defaults accept 4 s to 40 s (2 to 20 ticks of 2 s).
		s.SessionTimeouts = append(s.SessionTimeouts, time.Duration(4+rng.IntN(11))*time.Second)
	}
	var at time.Duration
	for range rng.IntN(4) {
		at += time.Duration(rng.Int64N(int64(s.Workload / 2)))
		if at >= s.Workload {
			break
		}
		c := Crash{At: at, Torn: rng.IntN(2) == 0}
		if c.Member = rng.IntN(members); members > 1 && rng.IntN(3) > 0 {
			c.Member = -1
		}
		// Down for less than a session timeout (sessions come back) or,
		// sometimes, for longer (they expire).
		if rng.IntN(3) == 0 {
			c.Downtime = time.Duration(10+rng.IntN(30)) * time.Second
		} else {
			c.Downtime = time.Duration(rng.IntN(3000)) * time.Millisecond
		}
		s.Crashes = append(s.Crashes, c)
	}
	return s
}

// Result is what a run found.
type Result struct {
	Violations []string
	Ops        int // register operations recorded
	Lives      int // servers started: one more than the crashes
	Watches    int // watch notifications checked
}

// stopTimeout bounds how long (in virtual time) a server may take to
// stop: Close ends the loop and waits for its goroutines, which takes no
// virtual time unless one of them is stuck.
const stopTimeout = time.Minute

// Run runs s inside the calling synctest bubble and checks it; report,
// if not nil, also learns each violation as it is found. Every goroutine
// it starts has ended when it returns, unless the server could not be
// stopped (a violation): the bubble then reports its goroutines as
// deadlocked.
func Run(s Settings, logger *slog.Logger, report func(string)) Result {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &run{set: s, net: memnet.New(), log: logger,
		rng: rand.New(rand.NewPCG(s.Seed, 0xc4a54)), hist: &history{report: report, ensemble: s.Members > 1}}
	for i := range s.Members {
		r.members = append(r.members, &member{index: i, fs: vfs.NewMem()})
	}
	for _, m := range r.members {
		if err := r.start(m); err != nil {
			r.hist.violate("member %d did not start: %v", m.index+1, err)
			r.stopAll()
			return r.result()
		}
	}
	clients := make([]*client, s.Clients)
	for i := range clients {
		c, err := newClient(r, i)
		if err != nil {
			r.hist.violate("client %d: %v", i, err)
			r.stopAll()
			for _, c := range clients[:i] {
				c.close()
			}
			return r.result()
		}
		clients[i] = c
	}
	began := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), began.Add(s.Workload))
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { c.run(ctx) })
	}
	for _, cr := range s.Crashes {
		time.Sleep(time.Until(began.Add(cr.At)))
		if !r.crash(cr) {
			break
		}
	}
	<-ctx.Done()
	wg.Wait()
	cancel()
	// A last crash (of the leader, in an ensemble), then every register
	// read afresh: each acknowledged write must have survived it.
	up := r.allUp() && r.crash(Crash{Member: -1, Downtime: time.Second, Torn: r.rng.IntN(2) == 0})
	if up {
		r.finalReads()
	}
	for _, c := range clients {
		c.close()
	}
	if up {
		r.stopAll()
	}
	r.hist.check()
	return r.result()
}

// run is one run in progress.
type run struct {
	set     Settings
	net     *memnet.Network
	members []*member
	log     *slog.Logger
	rng     *rand.Rand // crash images; owned by Run's goroutine
	hist    *history

	lives int // servers started
}

// member is one server's disk and, while it runs, its process.
type member struct {
	index int
	fs    *vfs.MemFS // the current life's disk
	host  *memnet.Host
	srv   *server.Server // nil while down
}

// clientAddr is where member i serves clients; its quorum and election
// ports are 3000 and 4000 above its id (i+1).
func clientAddr(i int) string { return fmt.Sprintf("127.0.0.1:%d", 2181+i) }

// clientAddrs lists every member's client address.
func (r *run) clientAddrs() []string {
	var out []string
	for i := range r.members {
		out = append(out, clientAddr(i))
	}
	return out
}

// start starts a server for m on m.fs, as a new process (host).
func (r *run) start(m *member) error {
	core := zkcore.DefaultConfig()
	core.StartWallMs = time.Now().UnixMilli()
	core.Logger = r.log.With("member", m.index+1)
	m.host = r.net.Host()
	cfg := server.Config{
		ClientAddr: clientAddr(m.index),
		Core:       core,
		Listen:     m.host.Listen,
		Dial:       m.host.Dial,
		Logger:     core.Logger,
		Storage: server.StorageConfig{
			FS:                m.fs,
			DataDir:           "/data",
			DataLogDir:        "/datalog",
			PreAllocSizeBytes: r.set.PreAllocSizeBytes,
			SnapCount:         r.set.SnapCount,
			SnapshotStepNodes: r.set.SnapshotStepNodes,
			SnapRetainCount:   server.MinSnapRetainCount,
			PurgeInterval:     r.set.PurgeInterval,
		},
	}
	if len(r.members) > 1 {
		id := zab.PeerID(m.index + 1)
		cfg.Core.ServerID = int64(id)
		peers := map[zab.PeerID]quorumnet.PeerAddrs{}
		var voters []zab.PeerID
		for i := range r.members {
			pid := zab.PeerID(i + 1)
			voters = append(voters, pid)
			peers[pid] = quorumnet.PeerAddrs{Quorum: fmt.Sprintf("127.0.0.1:%d", 3000+pid), Election: fmt.Sprintf("127.0.0.1:%d", 4000+pid)}
		}
		cfg.Quorum = &server.QuorumConfig{MyID: id, Voters: voters, Peers: peers,
			ListenQuorum: peers[id].Quorum, ListenElection: peers[id].Election,
			InitLimitTicks: 10, SyncLimitTicks: 5}
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	m.srv = srv
	r.lives++
	r.hist.serverUp()
	return nil
}

// allUp reports whether every member runs.
func (r *run) allUp() bool {
	for _, m := range r.members {
		if m.srv == nil {
			return false
		}
	}
	return true
}

// victim is the member c crashes: c.Member, or the leader.
func (r *run) victim(c Crash) *member {
	if c.Member >= 0 {
		return r.members[c.Member]
	}
	for _, m := range r.members {
		if m.srv != nil && m.srv.Role() == "leader" {
			return m
		}
	}
	return r.members[0]
}

// crash kills a member as a power loss would and starts a new process
// on what its disk kept, after the crash's downtime. It reports false
// when the member did not stop or did not start again (a violation:
// nothing acknowledged was lost, so it must account for its files).
func (r *run) crash(c Crash) bool {
	m := r.victim(c)
	// The network goes first, so that nothing leaves the process after
	// its disk image is taken: everything a client or a peer was told
	// is in the image.
	r.hist.serverDown()
	m.host.Crash()
	var rng *rand.Rand
	if c.Torn {
		rng = rand.New(rand.NewPCG(r.rng.Uint64(), r.rng.Uint64()))
	}
	img := m.fs.CrashClone(rng)
	// The old process's goroutines must end; what they still write goes
	// to the old disk, which nobody reads again.
	if !r.stop(m) {
		return false
	}
	time.Sleep(c.Downtime)
	m.fs = img
	if err := r.start(m); err != nil {
		r.hist.violate("member %d did not start again after a crash (%+v): %v", m.index+1, c, err)
		return false
	}
	return true
}

// stopAll closes every member that runs.
func (r *run) stopAll() {
	for _, m := range r.members {
		if m.srv != nil {
			r.stop(m)
		}
	}
}

// stop closes m's server and reports whether it stopped within
// stopTimeout; if not, it is left running (stuck) and m.srv is nil.
func (r *run) stop(m *member) bool {
	srv := m.srv
	m.srv = nil
	done := make(chan struct{})
	go func() {
		srv.Close()
		close(done)
	}()
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		r.hist.violate("member %d: the server did not stop within %v: a goroutine of its is stuck (the bubble reports them as deadlocked)", m.index+1, stopTimeout)
		return false
	}
}

func (r *run) result() Result {
	return Result{Violations: r.hist.violations, Ops: len(r.hist.ops), Lives: r.lives, Watches: r.hist.watches}
}
