package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"keeper/ledgerstore/ledgerclient"
)

// Scenario 9's settings.
const (
	fencingPassword     = "s9"
	fencingSession      = 2 * time.Second // the metadata servers' maxSessionTimeout
	fencingWarmAcks     = 100             // acknowledged entries before the faults
	fencingWriterExit   = 20 * time.Second
	fencingRoundTimeout = 40 * time.Second
)

// fencingModes are the faults of scenario 9's rounds, in turn.
var fencingModes = []string{"recovery-cut-from-bookie", "writer-cut-from-bookie", "writer-session-expired",
	"recovery-fence-dropped"}

// FencingRaceScenario is the "fencing race" scenario (docs/fault-model.md, #9), the BookKeeper fencing race (BK #2614). In
// each round a writer process W1 (`keeper ledger write`, E=3, Qw=3, Qa=2)
// appends continuously while the harness's client W2 opens the ledger
// with recovery. The rounds take turns at the faults: W2's link to one
// bookie of the ensemble is blackholed during the recovery (its fence and
// LAC read there are held, delivered late); W1 is cut off one bookie of
// its ensemble just before the recovery (it changes its ensemble, or
// races the recovery doing so); W1's metadata links are cut past its
// session timeout, so its session expires while an ensemble change waits
// on it; W2 is cut off one bookie until its recovery ends while its
// fence read to another is dropped, so that only W2's read timeout and a
// second fence read can finish the recovery. In every round the fronts
// also drop one fence read of W2's recovery, and one READ_LAC of a LAC
// read W2 makes before the fault, each at a bookie of the ensemble (see
// fencingDrops). Checks (checkLedger): no divergence — nothing W1 had
// acknowledged lies beyond the sealed last entry; every entry up to it
// reads back with the payload W1 sent as that entry; each is stored at
// Qa or more bookies of its write set; W1 is fenced (it exits with
// the fenced error) once the recovery has closed the ledger; and the
// LAC read before the fault is not beyond the sealed last entry.
// Figures: the ledgers with truncation (0), recovery times, entries
// written back by the recoveries (RECOVERY_ADD requests seen by the
// fronts), requests dropped of those armed.
func FencingRaceScenario() *LedgerScenario {
	return &LedgerScenario{ID: 9, Name: "BK fencing race", Servers: 1, Bookies: 5,
		MaxSessionTimeoutMs: int(fencingSession.Milliseconds()), Duration: 15 * time.Second, Body: fencingBody}
}

// fencingStats are scenario 9's figures.
type fencingStats struct {
	rounds, fenced, truncated, writtenBack, fenceReads int
	recovery                                           []time.Duration
	otherExits                                         []string
	drops                                              fencingDrops
}

func fencingBody(ctx context.Context, r *LedgerRun) {
	w2, err := r.LedgerClient(harnessNode, ledgerclient.Config{})
	if err != nil {
		r.Report.Violate("harness", "W2's client: %v", err)
		return
	}
	defer w2.Close()
	var st fencingStats
	for k := 0; ctx.Err() == nil || k == 0; k++ {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fencingRoundTimeout)
		err := fencingRound(rctx, r, w2, k, fencingModes[k%len(fencingModes)], &st)
		cancel()
		if err != nil {
			r.Report.Violate("harness", "round %d: %v", k, err)
			break
		}
	}
	slices.Sort(st.recovery)
	rec := "-"
	if n := len(st.recovery); n > 0 {
		rec = fmt.Sprintf("%s/%s", roundMs(st.recovery[n/2]), roundMs(st.recovery[n-1]))
	}
	r.Report.Figure("rounds", "%d", st.rounds)
	r.Report.Figure("truncated", "%d", st.truncated)
	r.Report.Figure("recovery", "%s", rec)
	r.Report.Figure("written-back", "%d", st.writtenBack)
	r.Report.Figure("fence-reads", "%d", st.fenceReads)
	r.Report.Figure("w1-fenced", "%d/%d", st.fenced, st.rounds)
	st.drops.figures(r)
	conns, held := r.Bookies.LinksFrom("w1")
	r.Report.Figure("w1-links", "%d(held=%d)", conns, held)
	if conns == 0 && st.rounds > 0 {
		r.Report.Violate("harness", "no bookie connection was told to be W1's: the fronts cannot cut W1 off a bookie")
	}
	if len(st.otherExits) > 0 {
		r.Logf("W1 ended otherwise than fenced: %v", st.otherExits)
	}
}

// fencingRound runs one round: W1 writes, the fault, W2 recovers, W1 must
// be fenced, the ledger is checked.
func fencingRound(ctx context.Context, r *LedgerRun, w2 *ledgerclient.Client, k int, mode string, st *fencingStats) error {
	w1, err := r.StartProcWriter("w1", fencingPassword, "-E", "3", "--Qw", "3", "--Qa", "2",
		"--add-timeout", "1s", "--read-timeout", "2s")
	if err != nil {
		return err
	}
	defer w1.Kill()
	id, err := w1.Ledger(ctx)
	if err != nil {
		return err
	}
	fctx, stopFeed := context.WithCancel(ctx)
	defer stopFeed()
	payload := func(i int) []byte { return []byte(fmt.Sprintf("L%d-e%08d-%s", id, i, strings.Repeat("x", 60))) }
	go w1.Feed(fctx, payload, 2, 5*time.Millisecond, func() { r.Op(k, true) })
	if err := poll(20*time.Second, "W1's first acks", func() (bool, string, error) {
		return w1.Acked() >= fencingWarmAcks, fmt.Sprintf("acked %d", w1.Acked()), nil
	}); err != nil {
		return fmt.Errorf("%w\n%s", err, LogTail(w1.LogPath, 20))
	}
	md, err := w2.Stat(ctx, id)
	if err != nil {
		return err
	}
	ens := md.Segments[len(md.Segments)-1].Bookies
	victim := r.Bookies.Bookie(string(ens[r.IntN(len(ens))]))
	if victim == nil {
		return fmt.Errorf("ledger %d's ensemble %v names no bookie of the run", id, ens)
	}
	st.rounds++
	lac := st.drops.readLAC(ctx, r, w2, id, ens, fencingPassword)
	st.drops.fence(r, id, ens, victim)
	recovered := fencingFault(ctx, r, w2, id, mode, victim, w1, st)
	r.Cluster.Net.Heal()
	st.drops.endRound(r, id)
	if !w1.Wait(fencingWriterExit) {
		r.Report.Violate("bk-fencing", "ledger %d (%s): W1 still runs %v after the recovery closed the ledger: not fenced",
			id, mode, fencingWriterExit)
	}
	stopFeed()
	w1.Kill()
	switch log := w1.Log(); {
	case strings.Contains(log, "fenced"):
		st.fenced++
	case recovered:
		st.otherExits = append(st.otherExits, fmt.Sprintf("%d:%s", id, lastLine(log)))
	}
	wl := &WrittenLedger{ID: id, Password: []byte(fencingPassword), Sent: w1.Sent(), Acked: w1.Acked()}
	if !recovered {
		// The recovery did not finish within the round: finish it now,
		// healed, so that the ledger can be judged.
		if _, err := w2.Open(ctx, id, wl.Password); err != nil {
			r.Report.Violate("bk-liveness", "ledger %d (%s): recovery fails even after the heal: %v", id, mode, err)
			return nil
		}
	}
	res := checkLedger(ctx, r, w2, wl)
	if res.Truncated {
		st.truncated++
	}
	if res.LastEntryID >= -1 && lac > res.LastEntryID {
		r.Report.Violate("bk-lac", "ledger %d (%s): a reader learned LAC %d before the recovery, which sealed the ledger at %d",
			id, mode, lac, res.LastEntryID)
	}
	wb, fr := r.Bookies.RecoveryAdds(id)
	st.writtenBack += wb
	st.fenceReads += fr
	r.Logf("ledger %d (%s): W1 acked ..%d of %d sent, closed at %d, %d segment(s), %d entries written back, %d fence reads",
		id, mode, wl.Acked, len(wl.Sent), res.LastEntryID, res.Segments, wb, fr)
	return nil
}

// fencingFault injects the round's fault around W2's recovery of ledger id
// and reports whether the recovery finished.
func fencingFault(ctx context.Context, r *LedgerRun, w2 *ledgerclient.Client, id int64, mode string, victim *Bookie,
	w1 *ProcWriter, st *fencingStats) bool {
	nw := r.Cluster.Net
	switch mode {
	case "recovery-cut-from-bookie":
		r.Fault("ledger %d: W2 (recovery) cut off %s for 1.5s from the start of its recovery", id, victim.Name)
		nw.SetBoth(harnessNode, victim.Name, Rule{Blackhole: true})
		time.AfterFunc(1500*time.Millisecond, func() { nw.SetBoth(harnessNode, victim.Name, Rule{}) })
	case "writer-cut-from-bookie":
		r.Fault("ledger %d: W1 cut off %s, then W2 recovers", id, victim.Name)
		nw.SetBoth(w1.Name, victim.Name, Rule{Blackhole: true})
		// Before or after W1's add timeout (1 s): the recovery races its
		// ensemble change, or finds it done.
		sleepCtx(ctx, time.Duration(500+r.IntN(2000))*time.Millisecond)
	case "recovery-fence-dropped":
		// With the fence to another bookie dropped, the recovery can
		// cover the ensemble only after W2's read timeout and a retry.
		r.Fault("ledger %d: W2 (recovery) cut off %s until its recovery ends", id, victim.Name)
		nw.SetBoth(harnessNode, victim.Name, Rule{Blackhole: true})
	case "writer-session-expired":
		cut := fencingSession + 1500*time.Millisecond
		r.Fault("ledger %d: W1's metadata links cut for %v (session %v), W1 cut off %s; W2 recovers meanwhile",
			id, cut, fencingSession, victim.Name)
		for _, s := range r.Cluster.Servers {
			nw.SetBoth(w1.Name, s.Name, Rule{Blackhole: true})
		}
		nw.SetBoth(w1.Name, victim.Name, Rule{Blackhole: true})
		sleepCtx(ctx, 1200*time.Millisecond) // W1's add times out; its ensemble change waits on the metadata
		time.AfterFunc(cut-1200*time.Millisecond, func() {
			for _, s := range r.Cluster.Servers {
				nw.SetBoth(w1.Name, s.Name, Rule{})
			}
		})
	}
	t0 := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err := w2.Open(rctx, id, []byte(fencingPassword))
	if err != nil {
		r.Report.Violate("bk-liveness", "ledger %d (%s): recovery did not finish within 20s: %v", id, mode, err)
		return false
	}
	st.recovery = append(st.recovery, time.Since(t0))
	if mode == "writer-session-expired" {
		sleepCtx(ctx, fencingSession+2*time.Second-time.Since(t0)) // let W1's session expire and its link heal
	}
	return true
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
