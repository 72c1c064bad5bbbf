package ledger

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"keeper/ledgerstore/bkproto"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "run TestSimulation with this seed only")
	seedsFlag = flag.Int("seeds", 400, "how many seeds TestSimulation sweeps (60 with -short)")
)

// regressionSeeds once found bugs (or exercise rare paths); they run on
// every go test.
var regressionSeeds = []uint64{1, 2, 3}

// TestSimulation runs a writer, concurrent recoveries, tailers and LAC
// readers against simulated bookies and a metadata store under random
// faults: bookie crashes and restarts, slow bookies, dropped and delayed
// requests, dropped fence requests, unknown answers (EIO,
// EUNKNOWNLEDGERSTATE), corrupt bodies, a bookie turning read-only, the
// writer's session expiring
// (metadata writes with unknown outcome), the writer crashing, racing
// metadata updates. Then it heals everything, makes sure the ledger is
// closed, and checks the guarantees listed on history.
func TestSimulation(t *testing.T) {
	seeds := regressionSeeds
	if *seedFlag != 0 {
		seeds = []uint64{*seedFlag}
	} else {
		n := uint64(*seedsFlag)
		if testing.Short() {
			n = min(n, 60)
		}
		for i := range n {
			seeds = append(seeds, 1000+i)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			simulateRandom(t, seed)
		})
	}
}

// simPlan is one run's shape and fault rates, drawn from its seed.
type simPlan struct {
	e, qw, qa, bookies int
	digest             bkproto.DigestType
	chaosTicks         int64
	maxEntries         int
	appendPerMille     int
	dropPerMille       int
	delayPerMille      int
	unknownPerMille    int
	corruptPerMille    int
	fenceDropPerMille  int
	crashPerMille      int
	restartPerMille    int
	maxDown            int
	// Event times (−1: never).
	recoveryAt, secondRecoveryAt, writerCrashAt, writerCloseAt int64
	sessionLossAt, sessionLossTicks, slowAt, readOnlyAt        int64
	tailersAt, lacReadsAt                                      []int64
}

func drawPlan(r *rand.Rand) simPlan {
	p := simPlan{e: 2 + r.IntN(4)}
	p.qw = 1 + r.IntN(p.e)
	p.qa = 1 + r.IntN(p.qw)
	p.bookies = p.e + 1 + r.IntN(3)
	p.digest = []bkproto.DigestType{bkproto.DigestCRC32C, bkproto.DigestCRC32, bkproto.DigestHMAC, bkproto.DigestDummy}[r.IntN(4)]
	p.chaosTicks = 300 + r.Int64N(600)
	p.maxEntries = 10 + r.IntN(120)
	p.appendPerMille = 200 + r.IntN(600)
	p.dropPerMille, p.delayPerMille = r.IntN(30), r.IntN(150)
	p.unknownPerMille, p.corruptPerMille = r.IntN(40), r.IntN(20)
	p.fenceDropPerMille = r.IntN(400)
	p.crashPerMille, p.restartPerMille, p.maxDown = r.IntN(10), 10+r.IntN(40), 1+r.IntN(2)
	at := func(prob int) int64 {
		if r.IntN(100) < prob {
			return r.Int64N(p.chaosTicks)
		}
		return -1
	}
	p.recoveryAt, p.secondRecoveryAt = at(80), at(30)
	p.writerCrashAt, p.writerCloseAt = at(30), at(40)
	p.sessionLossAt, p.sessionLossTicks, p.slowAt = at(40), 20+r.Int64N(150), at(40)
	p.readOnlyAt = at(20)
	for range r.IntN(3) {
		p.tailersAt = append(p.tailersAt, r.Int64N(p.chaosTicks))
	}
	for range r.IntN(4) {
		p.lacReadsAt = append(p.lacReadsAt, r.Int64N(p.chaosTicks))
	}
	return p
}

// TestSimulationIsDeterministic runs seeds twice and compares the traces:
// a seed must replay the same run.
func TestSimulationIsDeterministic(t *testing.T) {
	for seed := range uint64(20) {
		a, b := simulateRandom(t, 5000+seed), simulateRandom(t, 5000+seed)
		if !slices.Equal(a.trace, b.trace) || a.now != b.now || !sameContent(a.store.md, b.store.md) {
			t.Fatalf("seed %d: two runs differ (%d and %d ticks)", 5000+seed, a.now, b.now)
		}
	}
}

func simulateRandom(t *testing.T, seed uint64) *sim {
	p := drawPlan(rand.New(rand.NewPCG(seed, 7)))
	s := newSim(t, seed, p.bookies)
	sw := s.createLedger(p.e, p.qw, p.qa, p.digest)
	s.tracef("plan %+v", p)
	s.rules = append(s.rules, randomFaults(s, p))
	s.hooks = append(s.hooks, func() {
		if s.now < p.chaosTicks {
			chaosTick(s, sw, p)
		}
	})
	s.run(p.chaosTicks, nil)
	s.finish(fmt.Sprintf("go test ./ledger -run 'TestSimulation/%d$' -seed=%d", seed, seed))
	return s
}

// randomFaults drops, delays and garbles requests at the plan's rates.
func randomFaults(s *sim, p simPlan) rule {
	return func(c *simClient, b BookieID, req any) (action, bool) {
		if s.now >= p.chaosTicks {
			return action{}, false
		}
		r := s.rng.IntN(1000)
		rd, isRead := req.(ReadRequest)
		switch {
		case isRead && rd.Fence && rd.EntryID == bkproto.LastAddConfirmed && s.rng.IntN(1000) < p.fenceDropPerMille:
			return action{drop: true}, true
		case r < p.dropPerMille:
			return action{drop: true}, true
		case r < p.dropPerMille+p.delayPerMille:
			return action{delay: s.rng.Int64N(25)}, true
		case isRead && r < p.dropPerMille+p.delayPerMille+p.unknownPerMille:
			st := []bkproto.StatusCode{bkproto.StatusCode_EIO, bkproto.StatusCode_EUNKNOWNLEDGERSTATE,
				bkproto.StatusCode_ETOOMANYREQUESTS}[s.rng.IntN(3)]
			return action{answer: true, status: st}, true
		case isRead && r < p.dropPerMille+p.delayPerMille+p.unknownPerMille+p.corruptPerMille &&
			p.digest != bkproto.DigestDummy: // without a digest nothing can catch it
			return action{corrupt: true}, true
		}
		return action{}, false
	}
}

// chaosTick runs the writer's application and the plan's events for one
// tick.
func chaosTick(s *sim, sw *simWriter, p simPlan) {
	if len(s.h.payloads) < p.maxEntries && s.rng.IntN(1000) < p.appendPerMille {
		sw.append(1 + s.rng.IntN(3))
	}
	switch s.now {
	case p.recoveryAt:
		s.startRecovery("recovery-1")
	case p.secondRecoveryAt:
		s.startRecovery("recovery-2")
	case p.writerCrashAt:
		sw.c.kill()
	case p.writerCloseAt:
		if !sw.c.dead {
			sw.w.Close()
			sw.c.flush()
		}
	case p.sessionLossAt:
		sw.c.sessionDownUntil = s.now + p.sessionLossTicks
		s.tracef("writer session lost until %d", sw.c.sessionDownUntil)
	case p.readOnlyAt:
		b := s.ids[s.rng.IntN(len(s.ids))]
		s.bookies[b].readOnly = true
		sw.w.SetBookies(s.candidates())
		s.tracef("bookie %s read-only", b)
	case p.slowAt:
		b := s.ids[s.rng.IntN(len(s.ids))]
		s.bookies[b].slowTicks = 10 + s.rng.Int64N(60)
		s.tracef("bookie %s slow: %d ticks", b, s.bookies[b].slowTicks)
	}
	for i, at := range p.tailersAt {
		if s.now == at {
			s.startTailer(fmt.Sprintf("tailer-%d", i))
		}
	}
	for i, at := range p.lacReadsAt {
		if s.now == at {
			s.startLACRead(fmt.Sprintf("lac-reader-%d", i))
		}
	}
	down := 0
	for _, id := range s.ids {
		if s.bookies[id].down {
			down++
			if s.rng.IntN(1000) < p.restartPerMille {
				s.restart(id)
			}
		}
	}
	if down < p.maxDown && s.rng.IntN(1000) < p.crashPerMille {
		s.crash(s.ids[s.rng.IntN(len(s.ids))])
	}
}
