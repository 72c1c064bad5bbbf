package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"keeper/ledgerstore/autorecovery"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/metadata"
)

// Scenario 13's settings.
const (
	arPassword    = "s13"
	arLedgerLife  = 2 * time.Second        // the writer closes its ledger and starts another after this
	arEntryBytes  = 16 << 10               // payload of every entry
	arLostDelay   = time.Second            // lostBookieRecoveryDelay
	arSession     = 4 * time.Second        // the bookies' session timeout (MaxSessionTimeoutMs)
	arCheckEvery  = 5 * time.Second        // auditorPeriodicCheckInterval: what finds the wiped bookie's losses
	arCopySlack   = time.Minute            // the stated bound's allowance for the copies and swaps (arBound)
	arBoundFactor = 3                      // how far past the bound a run must be to count as failed (arBound)
	arPoll        = 100 * time.Millisecond // how often the harness looks at the metadata
	arFill        = 6 * time.Second        // writing before the kill, so the lost bookie holds something
	arAddTimeout  = 30 * time.Second       // the writer's add timeout (see autorecoveryBody)
)

// AutorecoveryScenario is "a bookie lost for good" (scenario 13): six
// bookies in three racks of two (autorecovery_racks.go), each running
// autorecovery (autoRecoveryDaemonEnabled, a one second
// lostBookieRecoveryDelay, a five second auditorPeriodicCheckInterval, a
// three second grace for open ledgers) with the rack-aware policy and
// minNumRacksPerWriteQuorum=2 enforced, the racks in Pulsar's /bookies
// document, and a writer with the same policy appending 16 KiB entries to
// E3/Qw2/Qa2 ledgers, a new ledger every few seconds, while two readers
// tail the ledger being written (autorecovery_readers.go). After the
// warm-up (six seconds, or a third of a longer run) the bookie of the
// writer's ensemble that the most segments name is killed with SIGKILL
// and never restarted. The auditor (in one of the survivors) marks its
// ledgers, the workers copy what it held and swap it out. Once no ledger
// names it, a bookie of another rack is wiped as an operator replacing
// its disks would (autorecovery_wipe.go) and comes back empty under its
// id; the auditor's periodic ledger check finds the entries it lacks and
// the workers copy them to other bookies. Checks: every ledger is closed
// at or past its acknowledged entries and reads back (checkLedger), both
// faults are repaired within arBoundFactor times their stated bound
// (arBound), nothing stays marked, every entry has Qw copies with the
// payload written on bookies of its write set (the wiped one included),
// every write set is on registered bookies in two racks (checkRacks), and
// the readers' LACs never go back, nor past what was sent, and every
// entry they read is the one written (tailCheck). Figures: the bytes each
// bookie held, the time from each fault to full replication with its
// bound, that time per GiB for the lost bookie, and what the readers saw.
func AutorecoveryScenario() *LedgerScenario {
	return &LedgerScenario{ID: 13, Name: "bookie lost for good, autorecovery, racks kept", Servers: 1,
		Bookies: arRacks * arBookiesPerRack, MaxSessionTimeoutMs: int(arSession / time.Millisecond), Duration: 15 * time.Second,
		BookieConf: append([]string{"autoRecoveryDaemonEnabled=true", "lostBookieRecoveryDelay=" + strconv.Itoa(int(arLostDelay/time.Second)),
			"openLedgerRereplicationGracePeriod=3000", "rwRereplicateBackoffMs=500",
			"auditorPeriodicCheckInterval=" + strconv.Itoa(int(arCheckEvery/time.Second))}, arPlacementConf...),
		Body: autorecoveryBody}
}

// arWriter writes ledger after ledger until told to stop.
type arWriter struct {
	mu      sync.Mutex
	ledgers []*WrittenLedger
}

func (w *arWriter) snapshot() []*WrittenLedger {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*WrittenLedger, len(w.ledgers))
	for i, l := range w.ledgers {
		c := *l
		c.Sent = slices.Clone(l.Sent)
		out[i] = &c
	}
	return out
}

func (w *arWriter) run(ctx context.Context, r *LedgerRun, c *ledgerclient.Client, rng *rand.Rand) {
	for ctx.Err() == nil {
		lw, err := c.Create(context.WithoutCancel(ctx), ledgerclient.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2,
			Password: []byte(arPassword)})
		if err != nil {
			r.Report.Violate("bk-liveness", "create a ledger: %v", err)
			return
		}
		wl := &WrittenLedger{ID: lw.ID(), Password: []byte(arPassword), Acked: -1}
		w.mu.Lock()
		w.ledgers = append(w.ledgers, wl)
		w.mu.Unlock()
		end := time.Now().Add(arLedgerLife)
		for time.Now().Before(end) && ctx.Err() == nil {
			p := make([]byte, arEntryBytes)
			for i := range p {
				p[i] = byte(rng.IntN(256))
			}
			w.mu.Lock()
			wl.Sent = append(wl.Sent, p)
			w.mu.Unlock()
			e, err := lw.Append(context.WithoutCancel(ctx), p)
			r.Op(0, err == nil)
			if err != nil {
				r.Report.Violate("bk-liveness", "ledger %d: append: %v", wl.ID, err)
				return
			}
			w.mu.Lock()
			wl.Acked = e
			w.mu.Unlock()
		}
		if err := lw.Close(context.WithoutCancel(ctx)); err != nil {
			r.Report.Violate("bk-liveness", "ledger %d: close: %v", wl.ID, err)
			return
		}
	}
}

func autorecoveryBody(ctx context.Context, r *LedgerRun) {
	racks, err := writeRackInfo(ctx, r)
	if err != nil {
		r.Report.Violate("harness", "rack document: %v", err)
		return
	}
	// A dead connection, not a timeout, tells the writer that the victim
	// is gone; a long add timeout keeps a slow machine from making it
	// replace the victim's spare too, which the enforced racks would
	// refuse (the victim's rack has no third bookie).
	c, err := r.LedgerClient(harnessNode, ledgerclient.Config{Logger: r.ClientLog("writer"), Placement: arPolicy,
		RackInfoPath: metadata.DefaultRackInfoPath, AddTimeout: arAddTimeout})
	if err != nil {
		r.Report.Violate("harness", "client: %v", err)
		return
	}
	defer c.Close()
	rc, err := r.LedgerClient(harnessNode, ledgerclient.Config{Logger: r.ClientLog("readers")})
	if err != nil {
		r.Report.Violate("harness", "readers' client: %v", err)
		return
	}
	defer rc.Close()
	zk, err := r.ZKAddrs(harnessNode)
	if err != nil {
		r.Report.Violate("harness", "metadata addresses: %v", err)
		return
	}
	after := context.WithoutCancel(ctx)
	sess, err := metadata.Dial(after, metadata.DialConfig{Servers: zk, SessionTimeout: 4 * time.Second})
	if err != nil {
		r.Report.Violate("harness", "metadata session: %v", err)
		return
	}
	defer sess.Close()
	store, err := sess.NewStore(metadata.Config{})
	if err != nil {
		r.Report.Violate("harness", "metadata store: %v", err)
		return
	}
	defer store.Close()

	w := &arWriter{}
	wctx, stopWriter := context.WithCancel(after)
	done := make(chan struct{})
	go func() { defer close(done); w.run(wctx, r, c, rand.New(rand.NewPCG(r.Seed, 13))) }()
	defer func() { stopWriter(); <-done }()
	rctx, stopReaders := context.WithCancel(after)
	defer stopReaders()
	readers := &arReaders{r: r, w: w}
	readersStop := make(chan struct{})
	readers.start(rctx, rc, readersStop)
	// A longer run (CHAOS_DURATION) writes for a third of it before the
	// kill, so that the lost bookie holds more to copy.
	fill := arFill
	if end, ok := ctx.Deadline(); ok {
		fill = max(fill, time.Until(end)/3)
	}
	if !sleepCtx(ctx, fill) {
		ctx = after
	}

	// The victim: the bookie of the ledger being written that the most
	// segments name, so that the workers, not only the writer, have
	// segments to re-place in its rack.
	ls := w.snapshot()
	md, err := c.Stat(after, ls[len(ls)-1].ID)
	if err != nil {
		r.Report.Violate("harness", "stat: %v", err)
		return
	}
	var victim ledger.BookieID
	segs := -1
	for _, i := range r.perm(len(md.LastSegment().Bookies)) {
		b := md.LastSegment().Bookies[i]
		if n := segmentsOn(after, c, ls, b); n > segs {
			victim, segs = b, n
		}
	}
	held := heldBytes(after, c, w.snapshot(), victim)
	r.Bookies.Kill(r.Bookies.Bookie(string(victim)))
	killed := time.Now()
	r.Fault("killed bookie %s for good (it held %d bytes of entries in %d segments)", victim, held, segs)

	// Full replication, measured under the writer's load: no ledger names
	// the victim and nothing is marked.
	mgr, err := autorecovery.NewManager(after, store, "")
	if err != nil {
		r.Report.Violate("harness", "under-replication manager: %v", err)
		return
	}
	bound := arBound(arSession)
	took, copying := awaitReplicated(after, r, mgr, killed, "the kill of "+string(victim), bound, func() (bool, string) {
		left, err := autorecovery.LedgersOn(after, store, victim)
		return err == nil && len(left) == 0, fmt.Sprintf("ledgers %v name %s (%v)", left, victim, err)
	})
	r.Logf("replicated %d bytes of %s in %v (%v after the first marker; bound %v)", held, victim,
		took.Round(time.Millisecond), copying.Round(time.Millisecond), bound)
	r.Report.Figure("lost bookie's bytes", "%d", held)
	r.Report.Figure("segments naming the lost bookie at the kill", "%d", segs)
	r.Report.Figure("time to full replication", "%v (bound %v)", took.Round(time.Millisecond), bound)
	r.Report.Figure("time from the first marker", "%v", copying.Round(time.Millisecond))
	if held > 0 {
		// The kill-to-done time includes the session expiry that takes
		// the killed bookie's registration away and lostBookieRecoveryDelay;
		// from the first marker on, it is the copying and the swaps.
		r.Report.Figure("replication s/GiB", "%.1f", took.Seconds()/(float64(held)/(1<<30)))
		r.Report.Figure("copy s/GiB", "%.1f", copying.Seconds()/(float64(held)/(1<<30)))
	}
	arWipe(after, r, c, store, mgr, w.snapshot(), victim, racks)
	<-ctx.Done()
	stopWriter()
	<-done
	close(readersStop)
	readers.finish(stopReaders)
	r.Logf("writer stopped, readers done; checking every copy")
	reg, err := store.Bookies(after)
	if err != nil {
		r.Report.Violate("harness", "bookie registry: %v", err)
		return
	}
	sets := 0
	for _, wl := range w.snapshot() {
		checkLedger(after, r, c, wl)
		checkFullQuorum(after, r, c, wl, victim)
		sets += checkRacks(after, r, store, wl, racks, reg)
	}
	r.Report.Figure("write sets checked for racks", "%d", sets)
}

// arWipe wipes a second bookie once the lost one's ledgers are replicated
// (wipeChoice, wipeBookie) and waits until none of the segments that
// named it then still does: the auditor's periodic check found its
// missing entries and the workers copied them elsewhere. It returns the
// wiped bookie ("" if none was wiped). Earlier, while some entries had
// their only other copy on the lost bookie, a wipe would destroy both of
// their Qw=2 copies: no autorecovery can bring those back.
func arWipe(ctx context.Context, r *LedgerRun, c *ledgerclient.Client, store *metadata.Store, mgr *autorecovery.Manager,
	ls []*WrittenLedger, lost ledger.BookieID, racks map[ledger.BookieID]string) ledger.BookieID {
	b, held := wipeChoice(ctx, r, c, ls, lost, racks)
	if b == nil {
		r.Report.Violate("harness", "no bookie to wipe outside %s's rack", lost)
		return ""
	}
	id := ledger.BookieID(b.ID)
	before := segmentsNaming(ctx, c, ls, id)
	wipedAt := time.Now()
	r.Fault("wiped bookie %s (%s; it held %d bytes of entries in %d ledgers): kill -9, empty directories, cookie deleted, started",
		id, racks[id], held, len(before))
	if err := wipeBookie(ctx, r, store, b); err != nil {
		r.Report.Violate("harness", "wipe %s: %v", id, err)
		return id
	}
	restarted := time.Since(wipedAt)
	bound := arBound(arSession + arCheckEvery)
	// The restarted bookie waits out its killed process's registration
	// before it registers again. An absence from the registry longer than
	// lostBookieRecoveryDelay would let the auditor mark its ledgers as a
	// lost bookie's; shorter, only the periodic ledger check can find
	// what it lacks. The figure says which held.
	var absentSince time.Time
	var absent time.Duration
	took, copying := awaitReplicated(ctx, r, mgr, wipedAt, "the wipe of "+string(id), bound, func() (bool, string) {
		if reg, err := store.Bookies(ctx); err == nil {
			switch in := slices.Contains(reg.Writable, id) || slices.Contains(reg.ReadOnly, id); {
			case !in && absentSince.IsZero():
				absentSince = time.Now()
			case in && !absentSince.IsZero():
				absent, absentSince = max(absent, time.Since(absentSince)), time.Time{}
			}
		}
		left, err := stillNaming(ctx, c, before, id)
		return err == nil && len(left) == 0, fmt.Sprintf("segments %v still name %s (%v)", left, id, err)
	})
	if !absentSince.IsZero() {
		absent = max(absent, time.Since(absentSince))
	}
	r.Report.Figure("wiped bookie's longest absence from the registry", "%v (lostBookieRecoveryDelay %v)",
		absent.Round(100*time.Millisecond), arLostDelay)
	r.Logf("replicated the %d bytes wiped from %s in %v (restart %v, %v after the first marker; bound %v)", held, id,
		took.Round(time.Millisecond), restarted.Round(time.Millisecond), copying.Round(time.Millisecond), bound)
	r.Report.Figure("wiped bookie's bytes", "%d", held)
	r.Report.Figure("time from the wipe to full replication", "%v (bound %v)", took.Round(time.Millisecond), bound)
	r.Report.Figure("wiped bookie's restart", "%v", restarted.Round(time.Millisecond))
	return id
}

// perm returns a random order of 0..n-1 from the run's seeded source.
func (r *LedgerRun) perm(n int) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rng.Perm(n)
}

// heldBytes adds up the payload bytes of the acknowledged entries whose
// write set holds b, by the ledgers' metadata now.
func heldBytes(ctx context.Context, c *ledgerclient.Client, ls []*WrittenLedger, b ledger.BookieID) int64 {
	var n int64
	for _, wl := range ls {
		md, err := c.Stat(ctx, wl.ID)
		if err != nil {
			continue
		}
		for e := int64(0); e <= wl.Acked && e < int64(len(wl.Sent)); e++ {
			if slices.Contains(md.WriteSetBookies(e), b) {
				n += int64(len(wl.Sent[e]))
			}
		}
	}
	return n
}

// segmentsOn counts the segments that name b, by the ledgers' metadata
// now: what the workers (and, for an open ledger's last segment, the
// writer) must re-place.
func segmentsOn(ctx context.Context, c *ledgerclient.Client, ls []*WrittenLedger, b ledger.BookieID) int {
	n := 0
	for _, wl := range ls {
		md, err := c.Stat(ctx, wl.ID)
		if err != nil {
			continue
		}
		for _, seg := range md.Segments {
			if slices.Contains(seg.Bookies, b) {
				n++
			}
		}
	}
	return n
}

// checkFullQuorum reads every entry of a closed ledger from every bookie of
// its write set: after autorecovery each of the Qw copies is there, with
// the payload written, and none is on the lost bookie.
func checkFullQuorum(ctx context.Context, r *LedgerRun, c *ledgerclient.Client, wl *WrittenLedger, lost ledger.BookieID) {
	md, err := c.Stat(ctx, wl.ID)
	if err != nil || md.State != ledger.StateClosed {
		return // checkLedger reported it
	}
	conns := map[ledger.BookieID]*bookierpc.Client{}
	defer func() {
		for _, cl := range conns {
			cl.Close()
		}
	}()
	macKey := bkproto.MacKey(wl.Password)
	short := 0
	var examples []string
	for e := int64(0); e <= md.LastEntryID; e++ {
		for _, b := range md.WriteSetBookies(e) {
			if b == lost {
				short++
				continue
			}
			cl, ok := conns[b]
			if !ok {
				dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				cl, _ = bookierpc.Dial(dctx, string(b))
				cancel()
				conns[b] = cl
			}
			var want []byte
			if e < int64(len(wl.Sent)) {
				want = wl.Sent[e]
			}
			if err := readCopy(ctx, cl, wl.ID, e, md.DigestType, macKey[:], want); err != nil {
				short++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("entry %d on %s: %v", e, b, err))
				}
			}
		}
	}
	if short > 0 {
		r.Report.Violate("bk-autorecovery", "ledger %d: %d copies missing from write sets after autorecovery: %v",
			wl.ID, short, examples)
	}
}
