package bubble

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"keeper/coordination/server"
	"keeper/coordination/zkcore"
	"keeper/internal/memnet"
	"keeper/internal/vfs"
)

// serverAddr is where the server listens, in every life.
const serverAddr = "127.0.0.1:2181"

// Settings is one run, drawn from its seed by Draw.
type Settings struct {
	Seed    uint64
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
	At       time.Duration // since the workload began
	Downtime time.Duration // before the new server starts
	// Torn lets a random part of the unsynced writes reach the disk,
	// the first one left out possibly torn (MemFS.CrashClone with an
	// rng); otherwise exactly what was synced survives.
	Torn bool
}

func (s Settings) String() string {
	return fmt.Sprintf("seed %d: %d clients for %v, timeouts %v, snapCount %d, step %d, prealloc %d, purge every %v, crashes %+v",
		s.Seed, s.Clients, s.Workload, s.SessionTimeouts, s.SnapCount, s.SnapshotStepNodes, s.PreAllocSizeBytes, s.PurgeInterval, s.Crashes)
}

// Draw picks a run from seed.
func Draw(seed uint64) Settings {
	rng := rand.New(rand.NewPCG(seed, 0xb0bb1e))
	s := Settings{
		Seed:              seed,
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
	r := &run{set: s, net: memnet.New(), fs: vfs.NewMem(), log: logger,
		rng: rand.New(rand.NewPCG(s.Seed, 0xc4a54)), hist: &history{report: report}}
	if err := r.start(); err != nil {
		r.hist.violate("the first server did not start: %v", err)
		return r.result()
	}
	clients := make([]*client, s.Clients)
	for i := range clients {
		c, err := newClient(r, i)
		if err != nil {
			r.hist.violate("client %d: %v", i, err)
			r.stop()
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
	// A last crash, then every register read afresh: each acknowledged
	// write must have survived it.
	up := r.srv != nil && r.crash(Crash{Downtime: time.Second, Torn: r.rng.IntN(2) == 0})
	if up {
		r.finalReads()
	}
	for _, c := range clients {
		c.close()
	}
	if up {
		r.stop()
	}
	r.hist.check()
	return r.result()
}

// run is one run in progress.
type run struct {
	set  Settings
	net  *memnet.Network
	fs   *vfs.MemFS // the current life's disk
	srv  *server.Server
	log  *slog.Logger
	rng  *rand.Rand // crash images; owned by Run's goroutine
	hist *history

	lives int
}

// start starts a server on r.fs.
func (r *run) start() error {
	core := zkcore.DefaultConfig()
	core.StartWallMs = time.Now().UnixMilli()
	core.Logger = r.log
	cfg := server.Config{
		ClientAddr: serverAddr,
		Core:       core,
		Listen:     r.net.Listen,
		Logger:     r.log,
		Storage: server.StorageConfig{
			FS:                r.fs,
			DataDir:           "/data",
			DataLogDir:        "/datalog",
			PreAllocSizeBytes: r.set.PreAllocSizeBytes,
			SnapCount:         r.set.SnapCount,
			SnapshotStepNodes: r.set.SnapshotStepNodes,
			SnapRetainCount:   server.MinSnapRetainCount,
			PurgeInterval:     r.set.PurgeInterval,
		},
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	r.srv = srv
	r.lives++
	r.hist.serverUp()
	return nil
}

// crash kills the server as a power loss would and starts a new one on
// what its disk kept, after the crash's downtime. It reports false when
// the new server did not start (a violation: nothing acknowledged was
// lost, so it must account for its files).
func (r *run) crash(c Crash) bool {
	// The network goes first, so that no answer leaves after the disk
	// image is taken: everything a client was told is in the image.
	r.hist.serverDown()
	r.net.Crash(serverAddr)
	var rng *rand.Rand
	if c.Torn {
		rng = rand.New(rand.NewPCG(r.rng.Uint64(), r.rng.Uint64()))
	}
	img := r.fs.CrashClone(rng)
	// The old process's goroutines must end; what they still write goes
	// to the old disk, which nobody reads again.
	if !r.stop() {
		return false
	}
	time.Sleep(c.Downtime)
	r.fs = img
	if err := r.start(); err != nil {
		r.hist.violate("life %d did not start after a crash (%+v): %v", r.lives+1, c, err)
		return false
	}
	return true
}

// stop closes the server and reports whether it stopped within
// stopTimeout; if not, it is left running (stuck) and r.srv is nil.
func (r *run) stop() bool {
	srv := r.srv
	r.srv = nil
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
		r.hist.violate("life %d: the server did not stop within %v: a goroutine of its is stuck (the bubble reports them as deadlocked)", r.lives, stopTimeout)
		return false
	}
}

func (r *run) result() Result {
	return Result{Violations: r.hist.violations, Ops: len(r.hist.ops), Lives: r.lives, Watches: r.hist.watches}
}
