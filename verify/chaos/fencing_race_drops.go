package chaos

import (
	"context"
	"fmt"
	"time"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
)

// fencingLACReadTimeout bounds scenario 9's LAC read: two of the three bookies
// answer it at once, so it needs no read timeout of the client's.
const fencingLACReadTimeout = 10 * time.Second

// fencingDrops arms the requests scenario 9's rounds have the bookie fronts
// drop (Bookies.DropOne), and counts them.
type fencingDrops struct {
	fenceArmed, lacArmed int
	unfired              []string
}

// readLAC reads the LAC of ledger id, open and written to, as a tailing
// reader does (a handle opened without recovery), with its READ_LAC to
// one bookie of ens dropped. It returns the LAC, or -1 if the read
// failed, which is a violation: the two other bookies cover the ensemble.
func (d *fencingDrops) readLAC(ctx context.Context, r *LedgerRun, w2 *ledgerclient.Client, id int64,
	ens []ledger.BookieID, password string) int64 {
	b := r.Bookies.Bookie(string(ens[r.IntN(len(ens))]))
	if b == nil {
		return -1
	}
	r.Bookies.DropOne(harnessNode, b, DropReadLAC)
	d.lacArmed++
	rctx, cancel := context.WithTimeout(ctx, fencingLACReadTimeout)
	defer cancel()
	t0 := time.Now()
	h, err := w2.OpenNoRecovery(rctx, id, []byte(password))
	lac := int64(-1)
	if err == nil {
		lac, err = h.ReadLAC(rctx)
	}
	if err != nil {
		r.Report.Violate("bk-liveness", "ledger %d: LAC read with its READ_LAC to %s dropped: %v", id, b.Name, err)
		return -1
	}
	r.Logf("ledger %d: LAC %d read in %s with the READ_LAC to %s dropped", id, lac, roundMs(time.Since(t0)), b.Name)
	return lac
}

// fence arms the drop of the first fence read W2's recovery of ledger id
// sends to a bookie of ens other than victim (which the round's fault
// may take out of the ensemble, or cut W2 off).
func (d *fencingDrops) fence(r *LedgerRun, id int64, ens []ledger.BookieID, victim *Bookie) {
	var others []*Bookie
	for _, e := range ens {
		if b := r.Bookies.Bookie(string(e)); b != nil && b != victim {
			others = append(others, b)
		}
	}
	if len(others) == 0 {
		return
	}
	b := others[r.IntN(len(others))]
	r.Bookies.DropOne(harnessNode, b, DropFence)
	d.fenceArmed++
	r.Logf("ledger %d: W2's first fence read to %s will be dropped", id, b.Name)
}

// endRound forgets the drops of ledger id's round that did not happen.
func (d *fencingDrops) endRound(r *LedgerRun, id int64) {
	for _, a := range r.Bookies.Disarm() {
		d.unfired = append(d.unfired, fmt.Sprintf("%d:%s", id, a))
	}
}

// figures reports the drops done of those armed.
func (d *fencingDrops) figures(r *LedgerRun) {
	fences := r.Bookies.Dropped(DropFence)
	r.Report.Figure("fence-dropped", "%d/%d", fences, d.fenceArmed)
	r.Report.Figure("read-lac-dropped", "%d/%d", r.Bookies.Dropped(DropReadLAC), d.lacArmed)
	if len(d.unfired) > 0 {
		r.Logf("drops armed but not done (ledger:kind from→bookie): %v", d.unfired)
	}
	if d.fenceArmed > 0 && fences == 0 {
		r.Report.Violate("harness", "none of %d fence reads armed to be dropped was seen by the fronts", d.fenceArmed)
	}
}
