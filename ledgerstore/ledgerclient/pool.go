package ledgerclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// pool holds one pipelined connection per bookie (v3, or v2 with
// Config.UseV2WireProtocol), shared by every handle
// of a Client. A connection is dialled on first use and again on the first
// use after it ended; when one ends, the Client tells its handles (a
// writer then replaces the bookie without waiting for timeouts).
type pool struct {
	c *Client

	mu     sync.Mutex // guards below
	closed bool
	conns  map[ledger.BookieID]*bookieConn
	addrs  map[ledger.BookieID]string // resolved service addresses
}

// redialBackoff is how long after a failed dial requests to the same
// bookie fail at once instead of dialling again: a dead bookie is asked
// by every read of its entries and every retry of recovery, and each dial
// would first look its address up in the metadata store.
const redialBackoff = 100 * time.Millisecond

// bookieConn is the connection slot of one bookie.
type bookieConn struct {
	dialing chan struct{}                    // capacity 1: held while dialling, so one dial at a time
	cl      atomic.Pointer[bookierpc.Client] // the live connection, or nil
	// failedAt and failErr are the last failed dial; dialing guards them.
	failedAt time.Time
	failErr  error
	// stats are the connection's figures; nil without Config.Metrics.
	stats *ChannelStats
}

func newPool(c *Client) *pool {
	return &pool{c: c, conns: map[ledger.BookieID]*bookieConn{}, addrs: map[ledger.BookieID]string{}}
}

// call sends req to bookie b and waits for the response or ctx.
func (p *pool) call(ctx context.Context, b ledger.BookieID, req *bkproto.Request) (*bkproto.Response, error) {
	cl, err := p.conn(ctx, b)
	if err != nil {
		return nil, err
	}
	cs, op := p.stats(b), req.GetHeader().GetOperation()
	cs.sent(op)
	start := time.Now()
	resp, err := cl.Call(ctx, req)
	cs.answered(op, start, respOK(resp, err), timedOut(err))
	return resp, err
}

// stats returns the figures of b's connection, nil without metrics.
func (p *pool) stats(b ledger.BookieID) *ChannelStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	if bc := p.conns[b]; bc != nil {
		return bc.stats
	}
	return nil
}

// live returns the live connection to b and its figures, or nil if there
// is none (not dialled yet, ended, or the pool closed). It never blocks on
// a dial.
func (p *pool) live(b ledger.BookieID) (*bookierpc.Client, *ChannelStats) {
	p.mu.Lock()
	bc, closed := p.conns[b], p.closed
	p.mu.Unlock()
	if closed || bc == nil {
		return nil, nil
	}
	if cl := bc.cl.Load(); cl != nil && cl.Err() == nil {
		return cl, bc.stats
	}
	return nil, nil
}

// conn returns a live connection to b, dialling one if needed.
func (p *pool) conn(ctx context.Context, b ledger.BookieID) (*bookierpc.Client, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClientClosed
	}
	bc := p.conns[b]
	if bc == nil {
		bc = &bookieConn{dialing: make(chan struct{}, 1)}
		if m := p.c.cfg.Metrics; m != nil {
			bc.stats = m.Channel(string(b))
		}
		p.conns[b] = bc
	}
	p.mu.Unlock()
	if cl := bc.cl.Load(); cl != nil && cl.Err() == nil {
		return cl, nil
	}
	select {
	case bc.dialing <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-bc.dialing }()
	if cl := bc.cl.Load(); cl != nil && cl.Err() == nil {
		return cl, nil // another request dialled meanwhile
	}
	if time.Since(bc.failedAt) < redialBackoff {
		return nil, bc.failErr
	}
	dialStart := time.Now()
	cl, err := p.dial(ctx, b)
	if ctx.Err() == nil || err == nil {
		bc.stats.dialed(dialStart, cl, err) // a dial its caller gave up on is not the bookie's failure
	}
	if err != nil {
		if ctx.Err() == nil {
			bc.failedAt, bc.failErr = time.Now(), err
		}
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		bc.stats.closed(cl)
		_ = cl.Close()
		return nil, ErrClientClosed
	}
	bc.cl.Store(cl)
	p.c.tasks.Add(1)
	p.mu.Unlock()
	go p.watch(b, bc, cl)
	return cl, nil
}

// dial resolves b's address and connects.
func (p *pool) dial(ctx context.Context, b ledger.BookieID) (*bookierpc.Client, error) {
	addr, err := p.address(ctx, b)
	if err != nil {
		return nil, err
	}
	cl, err := bookierpc.DialWith(ctx, addr, bookierpc.Options{V2: p.c.cfg.UseV2WireProtocol, TLS: p.c.tls})
	if err != nil {
		p.forget(b) // the bookie may come back elsewhere
		return nil, err
	}
	return cl, nil
}

// watch waits for a connection to end and reports it.
func (p *pool) watch(b ledger.BookieID, bc *bookieConn, cl *bookierpc.Client) {
	defer p.c.tasks.Done()
	select {
	case <-cl.Done():
	case <-p.c.ctx.Done():
	}
	bc.stats.closed(cl) // ended, or being closed with the client
	if p.c.ctx.Err() != nil {
		return // Close ends every connection; nobody needs telling
	}
	bc.cl.CompareAndSwap(cl, nil)
	p.c.bookieDied(b)
}

// address returns the host:port that bookie b serves on: from its
// registration, or, for a bookie no longer registered (stopped, say), its
// id if that is an address, so that reads of old entries can still try it.
func (p *pool) address(ctx context.Context, b ledger.BookieID) (string, error) {
	p.mu.Lock()
	addr, ok := p.addrs[b]
	p.mu.Unlock()
	if ok {
		return addr, nil
	}
	addr, err := p.c.store.BookieAddress(ctx, ledger.BookieID(b))
	if errors.Is(err, metadata.ErrBookieNotAvailable) {
		if _, _, perr := net.SplitHostPort(string(b)); perr == nil {
			return string(b), nil // not cached: it may register again elsewhere
		}
	}
	if err != nil {
		return "", fmt.Errorf("ledgerclient: address of bookie %s: %w", b, err)
	}
	p.mu.Lock()
	p.addrs[b] = addr
	p.mu.Unlock()
	return addr, nil
}

func (p *pool) forget(b ledger.BookieID) {
	p.mu.Lock()
	delete(p.addrs, b)
	p.mu.Unlock()
}

// close closes every connection; calls in flight fail.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[ledger.BookieID]*bookieConn{}
	p.mu.Unlock()
	for _, bc := range conns {
		if cl := bc.cl.Swap(nil); cl != nil {
			_ = cl.Close()
		}
	}
}
