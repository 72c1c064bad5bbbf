package ledgerclient

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"keeper/internal/metric"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// CreateOptions describes a new ledger. Zero quorums take defaults:
// Ensemble 3, WriteQuorum = Ensemble, AckQuorum a majority of WriteQuorum
// (so the zero value is 3/3/2).
type CreateOptions struct {
	Ensemble    int // E: bookies the ledger's entries are striped over
	WriteQuorum int // Qw: bookies each entry is sent to
	AckQuorum   int // Qa: acknowledgements that make an entry durable
	// Digest is the entry digest type (0: bkproto.DigestCRC32C).
	Digest bkproto.DigestType
	// Password protects the ledger: bookies bind the master key derived
	// from it, and opening the ledger requires it.
	Password []byte
	// CustomMetadata is stored with the ledger's metadata, unchanged.
	CustomMetadata map[string][]byte
	// Bookies, if not empty, are the only bookies the ledger may use: the
	// ensemble is chosen among them and never leaves them, as BookKeeper's
	// LocalBookieEnsemblePlacementPolicy keeps a ledger on the local
	// bookie. A failed bookie then fails the adds.
	Bookies []ledger.BookieID
}

func (o CreateOptions) withDefaults() CreateOptions {
	if o.Ensemble == 0 {
		o.Ensemble = 3
	}
	if o.WriteQuorum == 0 {
		o.WriteQuorum = o.Ensemble
	}
	if o.AckQuorum == 0 {
		o.AckQuorum = o.WriteQuorum/2 + 1
	}
	return o
}

// AddCallback receives the outcome of one AppendAsync: the entry id and
// nil once the entry is acknowledged, or an error. An error matching
// ledger.ErrOutcomeUnknown means the add was sent and the entry may still
// be in the ledger once it is closed (it comes with the cause, such as
// ledger.ErrLedgerFenced); other errors mean the entry was never sent,
// and entryID is -1.
type AddCallback func(entryID int64, err error)

// Writer appends to a ledger this client created (docs/bookkeeper-protocol.md §2). Adds are
// pipelined: each is sent to its write set at once, and acknowledgements
// complete strictly in entry order, every entry carrying the LAC of its
// time. A bookie that fails (an error, a timeout, a dead connection) is
// replaced by an ensemble change stored in the metadata before anything
// completes again. A Writer is safe for concurrent use.
//
// One goroutine drives the writer's state machine; another runs the
// callbacks of AppendAsync, one at a time, in entry order. A callback must
// not call Append or Close (AppendAsync is fine): both wait for callbacks.
type Writer struct {
	c     *Client
	id    int64
	d     *driver
	w     *ledger.Writer // loop only
	slots chan struct{}  // one per add between AppendAsync and its completion
	calls *callbackQueue

	cbs     map[int64]AddCallback // loop only: callbacks of pending adds
	outcome *ledger.Outcome       // loop only: the machine's Done

	lac   atomic.Int64
	err   error         // the writer's end: nil after a clean Close; final once ended is closed
	ended chan struct{} // closed when the loop has ended and err is final
	done  chan struct{} // closed after ended, once every callback has run
}

// Create creates a ledger on E writable bookies (read-only bookies are
// never chosen) and returns its writer. No bookie is contacted until the
// first append.
func (c *Client) Create(ctx context.Context, opts CreateOptions) (_ *Writer, err error) {
	start := time.Now()
	defer func() { c.record(ledgerCreate, start, err) }()
	opts = opts.withDefaults()
	if _, err := ledger.NewPlacement(opts.Ensemble, opts.WriteQuorum, opts.AckQuorum); err != nil {
		return nil, err
	}
	cands, err := c.bookies(ctx, true)
	if err != nil {
		return nil, err
	}
	cands = cands.Only(opts.Bookies)
	rng := c.newRand()
	chose := time.Now()
	ensemble, adheres, err := c.cfg.Placement.NewEnsemble(opts.Ensemble, opts.WriteQuorum, cands, nil, rng)
	if err != nil {
		return nil, fmt.Errorf("ledgerclient: create: %w", err)
	}
	c.observe(newEnsembleTime, chose, true)
	if !adheres {
		c.count(notAdhering)
	}
	if !adheres && len(cands.Racks) > 0 && opts.Ensemble > 1 {
		c.log.Warn("new ensemble does not adhere to the placement policy", "ensemble", ensemble)
	}
	md, err := ledger.NewMetadata(ledger.CreateConfig{EnsembleSize: opts.Ensemble, WriteQuorum: opts.WriteQuorum,
		AckQuorum: opts.AckQuorum, DigestType: opts.Digest, Password: opts.Password, Custom: opts.CustomMetadata}, ensemble)
	if err != nil {
		return nil, err
	}
	id, err := c.store.NewLedgerID(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledgerclient: create: %w", err)
	}
	stored, v, err := c.store.Create(ctx, id, md)
	if err != nil {
		return nil, fmt.Errorf("ledgerclient: create: %w", err)
	}
	if md, err = fromStore(stored, v); err != nil {
		return nil, err
	}
	if m := c.cfg.Metrics; m != nil {
		for _, b := range ensemble {
			m.EnsembleBookie(string(b))
		}
	}
	lw, err := ledger.NewWriter(ledger.WriterConfig{LedgerID: id, Metadata: md, Bookies: cands, Rand: rng,
		Policy: c.cfg.Placement, OnlyBookies: opts.Bookies, MaxPendingAdds: c.cfg.MaxPendingAdds,
		ExplicitLACTicks: c.cfg.explicitLACTicks(), Logger: c.log})
	if err != nil {
		return nil, err
	}
	c.log.Debug("ledger created", "ledger", id, "ensemble", ensemble)
	return c.startWriter(id, lw, stored, v)
}

func (c *Client) startWriter(id int64, lw *ledger.Writer, stored ledger.Metadata,
	v metadata.Version) (*Writer, error) {
	d, err := c.newDriver(context.Background(), id, lw, stored, v)
	if err != nil {
		return nil, err
	}
	w := &Writer{c: c, id: id, d: d, w: lw, slots: make(chan struct{}, c.cfg.MaxPendingAdds),
		calls: newCallbackQueue(), cbs: map[int64]AddCallback{}, ended: make(chan struct{}), done: make(chan struct{})}
	w.lac.Store(lw.LAC())
	d.deliver = w.deliver
	go w.calls.run(w.done)
	go func() {
		_ = d.run() // why it ended is in w.outcome, d.err or the client's context
		w.finish()
	}()
	return w, nil
}

// ID returns the ledger id.
func (w *Writer) ID() int64 { return w.id }

// LAC returns the last add confirmed: every entry up to it is
// acknowledged. -1 before the first.
func (w *Writer) LAC() int64 { return w.lac.Load() }

// Metadata returns the writer's view of the ledger's metadata: the last
// version it knows to be stored (after Close, the closed metadata).
func (w *Writer) Metadata() ledger.Metadata {
	ch := make(chan ledger.Metadata, 1)
	if w.d.post(func() { ch <- w.w.Metadata() }) {
		select {
		case md := <-ch:
			return md
		case <-w.ended:
		}
	}
	<-w.ended
	return w.w.Metadata() // the loop is over: nothing else touches the machine
}

// Append adds one entry and waits until it is acknowledged, returning its
// id. If ctx ends first, Append returns ctx's error but the add goes on: it
// may still be acknowledged. See AddCallback for the errors.
func (w *Writer) Append(ctx context.Context, data []byte) (int64, error) {
	type result struct {
		id  int64
		err error
	}
	ch := make(chan result, 1)
	if err := w.acquire(ctx); err != nil {
		w.c.record(func(m *Metrics) *metric.OpStats { return &m.AddEntry }, time.Now(), err)
		return -1, err
	}
	w.post(data, func(id int64, err error) { ch <- result{id, err} })
	select {
	case r := <-ch:
		return r.id, r.err
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// AppendAsync adds one entry without waiting; cb receives the outcome.
// Callbacks run in entry order on the writer's callback goroutine. While
// MaxPendingAdds adds are unacknowledged, AppendAsync blocks. data must
// not change until cb runs.
func (w *Writer) AppendAsync(data []byte, cb AddCallback) {
	if err := w.acquire(context.Background()); err != nil {
		w.c.record(func(m *Metrics) *metric.OpStats { return &m.AddEntry }, time.Now(), err)
		cb(-1, err)
		return
	}
	w.post(data, cb)
}

// acquire takes a pending-add slot, or reports why the writer takes no
// more adds.
func (w *Writer) acquire(ctx context.Context) error {
	select {
	case w.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-w.ended:
		return w.appendErr()
	}
}

// post hands an append holding a slot to the loop.
func (w *Writer) post(data []byte, cb AddCallback) {
	if m := w.c.cfg.Metrics; m != nil {
		start, inner := time.Now(), cb
		m.PendingAdds.Add(1)
		cb = func(id int64, err error) {
			m.PendingAdds.Add(-1)
			m.AddEntry.Record(time.Since(start).Microseconds(), err == nil)
			inner(id, err)
		}
	}
	if !w.d.post(func() { w.append(data, cb) }) {
		<-w.slots
		<-w.ended
		cb(-1, w.appendErr())
	}
}

// append runs on the loop.
func (w *Writer) append(data []byte, cb AddCallback) {
	if w.d.over {
		<-w.slots
		err := w.terminal()
		if err == nil {
			err = ledger.ErrLedgerClosed
		}
		w.calls.push(func() { cb(-1, err) })
		return
	}
	id, err := w.w.Append(data)
	if err != nil {
		<-w.slots
		w.calls.push(func() { cb(-1, err) })
		return
	}
	w.cbs[id] = cb
}

// deliver hands completions to the callback goroutine (on the loop).
func (w *Writer) deliver(rd *ledger.Ready) bool {
	// The LAC moves before the callbacks run, so that a callback (or
	// whoever waited for it) reads a LAC that covers its entry.
	if len(rd.Completions) > 0 {
		w.lac.Store(w.w.LAC())
	}
	for _, c := range rd.Completions {
		cb, ok := w.cbs[c.EntryID]
		if !ok {
			continue
		}
		delete(w.cbs, c.EntryID)
		<-w.slots
		w.calls.push(func() { cb(c.EntryID, c.Err) })
	}
	if rd.Done != nil {
		w.outcome = rd.Done
		return true
	}
	return false
}

// terminal is the writer's end as known on the loop: the close's outcome,
// the error that aborted the loop, or the client's close.
func (w *Writer) terminal() error {
	switch {
	case w.outcome != nil:
		return w.outcome.Err
	case w.d.err != nil:
		return w.d.err
	}
	return ErrClientClosed
}

// appendErr is what an append after the end gets.
func (w *Writer) appendErr() error {
	if w.err == nil {
		return fmt.Errorf("%w: ledger %d", ledger.ErrLedgerClosed, w.id)
	}
	return w.err
}

// finish runs on the loop's goroutine once the loop has ended: adds still
// pending fail as outcome unknown, in entry order.
func (w *Writer) finish() {
	w.err = w.terminal()
	ids := slices.Sorted(maps.Keys(w.cbs))
	for _, id := range ids {
		cb := w.cbs[id]
		err := fmt.Errorf("ledger %d entry %d: %w: %w", w.id, id, ledger.ErrOutcomeUnknown, w.err)
		w.calls.push(func() { cb(id, err) })
	}
	w.cbs = nil
	close(w.ended)
	w.calls.close()
}

// Close waits for the pending adds, then closes the ledger: its last entry
// is the LAC (docs/bookkeeper-protocol.md §2.4). It returns nil if the ledger is closed at this
// writer's LAC (also when another client closed it there),
// ledger.ErrLedgerFenced if another client is recovering it, or
// ledger.ErrLedgerClosed if another client closed it elsewhere. Every
// callback has run when Close returns. If ctx ends first, Close returns
// its error and the close goes on.
func (w *Writer) Close(ctx context.Context) error {
	w.d.post(func() {
		if !w.d.over {
			w.w.Close()
		}
	})
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// callbackQueue runs callbacks one at a time, in the order pushed, on a
// goroutine of its own, so a slow callback never stalls the writer's loop.
// It is unbounded, but holds at most the writer's pending adds.
type callbackQueue struct {
	mu     sync.Mutex // guards items, closed
	items  []func()
	closed bool
	wake   chan struct{} // capacity 1
}

func newCallbackQueue() *callbackQueue { return &callbackQueue{wake: make(chan struct{}, 1)} }

func (q *callbackQueue) push(f func()) {
	q.mu.Lock()
	q.items = append(q.items, f)
	q.mu.Unlock()
	q.signal()
}

func (q *callbackQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *callbackQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run runs callbacks until the queue is closed and empty, then closes done.
func (q *callbackQueue) run(done chan struct{}) {
	defer close(done)
	for {
		q.mu.Lock()
		items, closed := q.items, q.closed
		q.items = nil
		q.mu.Unlock()
		for _, f := range items {
			f()
		}
		if len(items) == 0 {
			if closed {
				return
			}
			<-q.wake
		}
	}
}
