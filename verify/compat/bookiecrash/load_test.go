package bookiecrash

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/metadata"
)

// password is every ledger's; the master key is derived from it.
var password = []byte("bookiecrash")

var masterKey = func() []byte { k := bkproto.MasterKey(password); return k[:] }()

// payload returns entry entryID of ledgerID's payload: its size (16 bytes
// to 4 KiB) and bytes follow from the ids, so the test keeps no payloads.
func payload(ledgerID, entryID int64) []byte {
	r := rand.New(rand.NewPCG(uint64(ledgerID), uint64(entryID)))
	p := make([]byte, 16+r.IntN(4080))
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

// ledgerState is what the clients saw acknowledged for one ledger.
type ledgerState struct {
	id     int64
	acked  []bool // by entry id
	fenced bool   // a fence was acknowledged
	lac    int64  // greatest explicit LAC acknowledged; -1: none
	round  int
}

// model is every ledger's state. Safe for concurrent use.
type model struct {
	mu      sync.Mutex
	ledgers []*ledgerState
	acks    int
	fences  int
	lacs    int
}

func newModel() *model { return &model{} }

func (m *model) newLedger(id int64, round int) *ledgerState {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := &ledgerState{id: id, lac: -1, round: round}
	m.ledgers = append(m.ledgers, l)
	return l
}

func (m *model) ack(l *ledgerState, entryID int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for int64(len(l.acked)) <= entryID {
		l.acked = append(l.acked, false)
	}
	l.acked[entryID] = true
	m.acks++
}

// contiguous returns the last entry id of l's acknowledged prefix.
func (m *model) contiguous(l *ledgerState) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := int64(0)
	for n < int64(len(l.acked)) && l.acked[n] {
		n++
	}
	return n - 1
}

func (m *model) ackLAC(l *ledgerState, lac int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if lac > l.lac {
		l.lac = lac
	}
	m.lacs++
}

func (m *model) ackFence(l *ledgerState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l.fenced = true
	m.fences++
}

func (m *model) ackCount() int   { m.mu.Lock(); defer m.mu.Unlock(); return m.acks }
func (m *model) fenceCount() int { m.mu.Lock(); defer m.mu.Unlock(); return m.fences }
func (m *model) lacCount() int   { m.mu.Lock(); defer m.mu.Unlock(); return m.lacs }

// writers are one round's ledger writers.
type writers struct{ wg sync.WaitGroup }

func (w *writers) wait() { w.wg.Wait() }

// startWriters creates ledgersPerRound ledgers (their metadata znodes
// first, as a ledger client does, so the bookie's GC keeps them) and
// starts a writer on each. One of them is fenced after a random number of
// its adds.
func startWriters(t *testing.T, c *bookierpc.Client, zc *zkclient.Session, m *model, round int, rng *rand.Rand) *writers {
	t.Helper()
	w := &writers{}
	fenced := rng.IntN(ledgersPerRound)
	for i := range ledgersPerRound {
		id := int64(round*1000 + i + 1)
		createLedgerZnode(t, zc, id)
		l := m.newLedger(id, round)
		fenceAfter := int64(-1)
		if i == fenced {
			fenceAfter = 50 + rng.Int64N(500)
		}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			write(c, m, l, fenceAfter)
		}()
	}
	return w
}

// createLedgerZnode writes a ledger's metadata znode and its parents.
func createLedgerZnode(t *testing.T, zc *zkclient.Session, id int64) {
	t.Helper()
	parts := strings.Split(metadata.LayoutHierarchical.Path("/ledgers", id), "/")
	for i := 3; i <= len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		if _, _, err := zc.Create(t.Context(), p, nil, zkclient.CreateOptions{}); err != nil && !errors.Is(err, zkproto.ErrNodeExists) {
			t.Fatal(err)
		}
	}
}

// pendingAdd is an add in flight.
type pendingAdd struct {
	entryID int64
	ch      <-chan bookierpc.Result
}

// write adds entries to l, inflight at a time, until the connection
// breaks (the kill) or the ledger is fenced. Every 64 acknowledged
// entries it writes the acknowledged prefix as explicit LAC; after
// fenceAfter acknowledgements (if not -1) it fences the ledger.
func write(c *bookierpc.Client, m *model, l *ledgerState, fenceAfter int64) {
	slots := make(chan struct{}, inflight)
	pending := make(chan pendingAdd, inflight)
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		acked := int64(0)
		for p := range pending {
			res := <-p.ch
			<-slots
			if err := status(res); err != nil {
				halt() // the kill, or EFENCED after our own fence
				continue
			}
			m.ack(l, p.entryID)
			acked++
			if acked%64 == 0 {
				writeLAC(c, m, l)
			}
			if acked == fenceAfter {
				fence(c, m, l)
			}
		}
	}()
	for entryID := int64(0); ; entryID++ {
		select {
		case slots <- struct{}{}:
		case <-stop:
		}
		if isClosed(stop) {
			break
		}
		lac := max(entryID-inflight-1, -1)
		body := bkproto.EncodeEntry(l.id, entryID, lac, 0, bkproto.DigestCRC32C, nil, payload(l.id, entryID))
		pending <- pendingAdd{entryID: entryID, ch: c.Go(bookierpc.AddRequest(l.id, entryID, masterKey, body, false))}
	}
	close(pending)
	<-done
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// writeLAC sends the acknowledged prefix as explicit LAC; the answer is
// recorded when it comes.
func writeLAC(c *bookierpc.Client, m *model, l *ledgerState) {
	lac := m.contiguous(l)
	if lac < 0 {
		return
	}
	ch := c.Go(&bkproto.Request{WriteLacRequest: &bkproto.WriteLacRequest{LedgerId: &l.id, Lac: &lac,
		MasterKey: masterKey, Body: bkproto.EncodeLAC(l.id, lac, bkproto.DigestCRC32C, nil)}})
	go func() {
		if status(<-ch) == nil {
			m.ackLAC(l, lac)
		}
	}()
}

// fence fences l, as a recovering client does; later adds get EFENCED.
func fence(c *bookierpc.Client, m *model, l *ledgerState) {
	lastEntry := int64(-1)
	ch := c.Go(&bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: &l.id, EntryId: &lastEntry,
		MasterKey: masterKey, Flag: bkproto.ReadRequest_FENCE_LEDGER.Enum()}})
	go func() {
		if status(<-ch) == nil {
			m.ackFence(l)
		}
	}()
}

func status(res bookierpc.Result) error {
	if res.Err != nil {
		return res.Err
	}
	return bkproto.ErrorOf(bkproto.ResponseStatus(res.Resp))
}

// ---------------------------------------------------------------------------
// Verification.

// verify checks, after a restart, the acknowledged state: every entry of
// the last round's ledgers (of all ledgers if full) and a random sample
// of older ones, every fence and every explicit LAC. It returns how many
// acknowledged updates are missing or wrong.
func verify(t *testing.T, c *bookierpc.Client, m *model, rng *rand.Rand, full bool) int {
	t.Helper()
	m.mu.Lock()
	last := -1
	for _, l := range m.ledgers {
		last = max(last, l.round)
	}
	type check struct{ ledger, entry int64 }
	var recent, old []check
	var fenced, lacs []*ledgerState
	for _, l := range m.ledgers {
		for e, ok := range l.acked {
			if !ok {
				continue
			}
			if full || l.round == last {
				recent = append(recent, check{l.id, int64(e)})
			} else {
				old = append(old, check{l.id, int64(e)})
			}
		}
		if l.fenced {
			fenced = append(fenced, l)
		}
		if l.lac >= 0 {
			lacs = append(lacs, l)
		}
	}
	m.mu.Unlock()
	rng.Shuffle(len(old), func(i, j int) { old[i], old[j] = old[j], old[i] })
	checks := append(recent, old[:min(len(old), sampleOld)]...)
	sort.Slice(checks, func(i, j int) bool {
		return checks[i].ledger < checks[j].ledger || checks[i].ledger == checks[j].ledger && checks[i].entry < checks[j].entry
	})

	lost := 0
	const window = 128
	calls := make(chan struct {
		check
		ch <-chan bookierpc.Result
	}, window)
	go func() {
		for _, ck := range checks {
			e := ck.entry
			calls <- struct {
				check
				ch <-chan bookierpc.Result
			}{ck, c.Go(&bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: &ck.ledger, EntryId: &e}})}
		}
		close(calls)
	}()
	for call := range calls {
		res := <-call.ch
		if err := status(res); err != nil {
			lost++
			t.Errorf("entry %d/%d: %v", call.ledger, call.entry, err)
			continue
		}
		ent, err := bkproto.DecodeEntry(res.Resp.GetReadResponse().GetBody(), bkproto.DigestCRC32C, nil, call.ledger, call.entry)
		if err != nil || !bytes.Equal(ent.Payload, payload(call.ledger, call.entry)) {
			lost++
			t.Errorf("entry %d/%d: wrong bytes (%v)", call.ledger, call.entry, err)
		}
	}
	return lost + verifyFences(t, c, fenced) + verifyLACs(t, c, lacs)
}

// verifyFences checks that each fenced ledger refuses a normal add.
func verifyFences(t *testing.T, c *bookierpc.Client, fenced []*ledgerState) int {
	lost := 0
	for _, l := range fenced {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		probe := int64(1 << 40) // an id no writer uses
		err := c.Add(ctx, l.id, probe, masterKey, bkproto.EncodeEntry(l.id, probe, -1, 0, bkproto.DigestCRC32C, nil, nil), false)
		cancel()
		if !errors.Is(err, bkproto.ErrFenced) {
			lost++
			t.Errorf("ledger %d: fence lost: a normal add got %v", l.id, err)
		}
	}
	return lost
}

// verifyLACs checks that each ledger's explicit LAC is at least the
// greatest one acknowledged.
func verifyLACs(t *testing.T, c *bookierpc.Client, lacs []*ledgerState) int {
	lost := 0
	for _, l := range lacs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := c.ReadLAC(ctx, l.id)
		cancel()
		var got int64 = -2
		if err == nil {
			got, err = bkproto.DecodeLAC(resp.GetLacBody(), bkproto.DigestCRC32C, nil, l.id)
		}
		if err != nil || got < l.lac {
			lost++
			t.Errorf("ledger %d: explicit LAC %d acknowledged, bookie has %d (%v)", l.id, l.lac, got, err)
		}
	}
	return lost
}
