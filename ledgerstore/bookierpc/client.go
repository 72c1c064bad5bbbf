package bookierpc

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookietls"
)

// readBufferBytes is the size of a connection's read buffer, and of the
// buffer v3 responses are read into.
const readBufferBytes = 64 << 10

// ErrClientClosed is returned for calls on a closed Client, and for calls
// outstanding when its connection broke.
var ErrClientClosed = errors.New("bookierpc: client connection closed")

// Client is a BookKeeper client for one bookie: requests are pipelined
// over one connection and matched to responses by txnId (v3, Dial), or by
// operation, ledger and entry (v2, DialV2). It
// knows nothing of ledgers, ensembles or quorums (that is the ledger
// client's job); tests, `keeper bench bookie` and the crash test use it to
// speak the protocol. It is safe for concurrent use.
type Client struct {
	nc           net.Conn // the socket, or a TLS connection over it
	raw          net.Conn // the socket: closed rather than nc, which with TLS would wait for a blocked writer
	maxFrame     int
	writeTimeout time.Duration // WriteTimeout; tests shorten it

	wmu sync.Mutex // held by the sender writing to the socket

	// A v3 sender encodes its frame into queued, then takes wmu and writes
	// everything queued, unless a sender before it already did: the sends
	// that arrive while a write runs go out in the next one, one system
	// call for the lot and no timer (flushQueued). queued holds only frames
	// whose senders wait for wmu, so it is bounded by the senders.
	qmu    sync.Mutex // guards queued and spare
	queued []byte
	spare  []byte // the last written buffer, for reuse

	// Frames queued by Send are written by a writer goroutine (started by
	// the first Send, woken through wakeWriter), so that Send never waits
	// for the socket: its callers (a ledger's loop) serve other bookies
	// meanwhile.
	writerOnce sync.Once
	wakeWriter chan struct{} // cap 1

	mu      sync.Mutex
	nextTxn uint64
	pending map[uint64]pendingCall // mu guards pending, nextTxn, err, v2q, v2keys, deadlines
	err     error
	done    chan struct{}

	// A v2 connection (DialV2) matches responses by key, not txnId: v2q
	// holds each key's calls in order, the first on the wire; v2keys finds
	// a call's key by its txn. v2 is set before the reader starts.
	v2     bool
	v2q    map[v2Key][]*v2Call
	v2keys map[uint64]v2Key

	// deadlines times out the calls sent with one (Send); mu guards it.
	deadlines deadlineQueue
}

// pendingCall is where a v3 call's result goes: its channel (Go, Call)
// or its callback (Send).
type pendingCall struct {
	ch   chan<- Result
	done func(Result)
}

// deliver hands r to the call's caller. It never blocks: a channel has
// room for the one result, and a callback must not block.
func (p pendingCall) deliver(r Result) {
	if p.done != nil {
		p.done(r)
		return
	}
	p.ch <- r
}

// Result is the outcome of one call: the response, or why there is none.
type Result struct {
	Resp *bkproto.Response
	Err  error
}

// Dial connects to a bookie.
func Dial(ctx context.Context, addr string) (*Client, error) { return DialWith(ctx, addr, Options{}) }

// Options say how DialWith connects.
type Options struct {
	// V2 speaks BookKeeper's v2 protocol (DialV2).
	V2 bool
	// TLS, when set, secures the connection as BookKeeper's client does
	// (docs/bookie-tls.md): a v3 START_TLS request first, even on a v2
	// connection, then, once the bookie answers EOK, a TLS handshake on
	// the same socket, all within TLS.HandshakeTimeout. A bookie that
	// answers otherwise (EBADREQ: it has no TLS) or fails the handshake
	// fails the dial with an error wrapping ErrTLS.
	TLS *bookietls.Config
}

// ErrTLS is wrapped by the error of a dial whose START_TLS or handshake
// failed.
var ErrTLS = errors.New("bookierpc: tls")

// DialWith connects to a bookie as o says.
func DialWith(ctx context.Context, addr string, o Options) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bookierpc: dial %s: %w", addr, err)
	}
	if tcp, ok := nc.(*net.TCPConn); ok {
		_ = tcp.SetNoDelay(true)
	}
	raw := nc
	var r *bufio.Reader
	if o.TLS != nil {
		if nc, r, err = startTLS(ctx, nc, addr, o.TLS); err != nil {
			return nil, err
		}
	}
	c := &Client{nc: nc, raw: raw, maxFrame: bkproto.DefaultMaxFrameBytes, writeTimeout: WriteTimeout, pending: make(map[uint64]pendingCall),
		done: make(chan struct{})}
	if o.V2 {
		c.v2, c.v2q, c.v2keys = true, map[v2Key][]*v2Call{}, map[uint64]v2Key{}
	}
	if r == nil {
		r = bufio.NewReaderSize(nc, readBufferBytes)
	}
	go c.readLoop(r)
	return c, nil
}

// TLS reports whether the connection runs over TLS (Options.TLS).
func (c *Client) TLS() bool { return c.nc != c.raw }

// startTLS sends START_TLS on nc, waits for EOK and runs the handshake,
// closing nc on failure. It returns the secured connection and its
// reader.
func startTLS(ctx context.Context, nc net.Conn, addr string, cfg *bookietls.Config) (net.Conn, *bufio.Reader, error) {
	fail := func(format string, args ...any) (net.Conn, *bufio.Reader, error) {
		_ = nc.Close()
		return nil, nil, fmt.Errorf("%w: bookie %s: %s", ErrTLS, addr, fmt.Sprintf(format, args...))
	}
	deadline := time.Now().Add(cfg.HandshakeTimeout())
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = nc.SetDeadline(deadline)
	const txn = 1 // the first request of the connection; later calls start at 1 again, the bookie does not mind
	frame, err := bkproto.AppendFrame(nil, &bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_START_TLS, txn),
		StartTLSRequest: &bkproto.StartTLSRequest{}})
	if err != nil {
		return fail("encode START_TLS: %v", err)
	}
	if _, err := nc.Write(frame); err != nil {
		return fail("send START_TLS: %v", err)
	}
	// Read exactly the response's frame: the handshake's bytes follow it
	// on the socket, so nothing may be read ahead through a buffer.
	resp, err := readOneFrame(nc)
	if err != nil {
		return fail("START_TLS: %v", err)
	}
	if st := bkproto.ResponseStatus(resp); st != bkproto.StatusCode_EOK || resp.GetHeader().GetOperation() != bkproto.OperationType_START_TLS {
		return fail("START_TLS answered %v (the bookie has no TLS?)", st)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	tc := tls.Client(nc, cfg.Client(host))
	if err := tc.HandshakeContext(ctx); err != nil {
		return fail("handshake: %v", err)
	}
	_ = nc.SetDeadline(time.Time{})
	return tc, bufio.NewReaderSize(tc, 64<<10), nil
}

// readOneFrame reads one length-prefixed response, and no byte more.
func readOneFrame(nc io.Reader) (*bkproto.Response, error) {
	var prefix [bkproto.FrameLengthBytes]byte
	if _, err := io.ReadFull(nc, prefix[:]); err != nil {
		return nil, err
	}
	n, err := bkproto.ParseFrameLength(prefix, maxStartTLSResponseBytes)
	if err != nil {
		return nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(nc, body); err != nil {
		return nil, err
	}
	resp, err := bkproto.DecodeResponse(body)
	if resp == nil {
		return nil, fmt.Errorf("undecodable response: %w", err)
	}
	return resp, nil
}

// maxStartTLSResponseBytes bounds the answer to START_TLS: a header and a
// status, a few dozen bytes.
const maxStartTLSResponseBytes = 4 << 10

// Close closes the connection; outstanding calls fail with
// ErrClientClosed.
func (c *Client) Close() error {
	err := c.raw.Close()
	<-c.done
	return err
}

// readLoop delivers responses read from r until the connection ends.
func (c *Client) readLoop(r *bufio.Reader) {
	var err error
	// A v3 response is decoded into a message that refers to nothing of
	// its frame (DecodeResponse copies), so v3 frames reuse one buffer; a
	// v2 read response's body aliases its frame, which gets its own.
	var buf []byte
	if !c.v2 {
		buf = make([]byte, readBufferBytes)
	}
	for {
		var frame []byte
		if frame, err = bkproto.ReadFrame(r, buf, c.maxFrame); err != nil {
			break
		}
		if c.v2 {
			if err = c.deliverV2(frame); err != nil {
				err = fmt.Errorf("bookierpc: undecodable v2 response: %w", err)
				break
			}
			continue
		}
		resp, derr := bkproto.DecodeResponse(frame)
		if resp == nil || resp.GetHeader() == nil {
			err = fmt.Errorf("bookierpc: undecodable response: %w", derr)
			break
		}
		c.mu.Lock()
		pc, ok := c.pending[resp.GetHeader().GetTxnId()]
		delete(c.pending, resp.GetHeader().GetTxnId())
		c.mu.Unlock()
		if ok {
			pc.deliver(Result{Resp: resp, Err: derr})
		}
	}
	_ = c.raw.Close()
	c.mu.Lock()
	c.err = fmt.Errorf("%w: %v", ErrClientClosed, err)
	failed := c.pending
	c.pending = map[uint64]pendingCall{}
	c.deadlines.stop()
	c.failV2Locked(c.err)
	cerr := c.err
	c.mu.Unlock()
	for _, pc := range failed {
		pc.deliver(Result{Err: cerr})
	}
	close(c.done)
}

// Go sends req and returns a channel that receives its result. It sets
// the header (version 3, req's operation, a fresh txnId), keeping the
// priority if req has a header.
func (c *Client) Go(req *bkproto.Request) <-chan Result {
	_, ch := c.send(req)
	return ch
}

// WriteTimeout bounds how long one frame may take to reach the socket. A
// bookie that stops reading for that long is treated as dead: the
// connection closes and every outstanding call fails (a half-written frame
// leaves the stream unusable anyway).
const WriteTimeout = 10 * time.Second

// send is Go, also returning the call's txnId (0 if it was not sent).
func (c *Client) send(req *bkproto.Request) (uint64, <-chan Result) {
	if c.v2 {
		return c.sendV2(req)
	}
	ch := make(chan Result, 1)
	return c.sendV3(req, pendingCall{ch: ch}, time.Time{}), ch
}

// sendV3 sends req on a v3 connection and returns its txnId (0 if it was
// not sent); pc gets the result, or a timeout once deadline (if not zero)
// passes.
func (c *Client) sendV3(req *bkproto.Request, pc pendingCall, deadline time.Time) uint64 {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		pc.deliver(Result{Err: err})
		return 0
	}
	c.nextTxn++
	txn := c.nextTxn
	c.pending[txn] = pc
	if !deadline.IsZero() {
		c.deadlines.push(c, txn, deadline)
	}
	c.mu.Unlock()
	op := operationOf(req)
	h := bkproto.NewHeader(op, txn)
	if req.Header != nil && req.Header.Priority != nil {
		h.Priority = req.Header.Priority
	}
	req.Header = h
	c.qmu.Lock()
	var err error
	c.queued, err = bkproto.AppendRequestFrame(c.queued, req) // on error, queued is left as it was
	c.qmu.Unlock()
	switch {
	case err == nil && pc.done != nil:
		c.kickWriter()
	case err == nil:
		err = c.flushQueued()
	}
	if err != nil {
		c.mu.Lock()
		pc, ok := c.pending[txn]
		delete(c.pending, txn)
		c.mu.Unlock()
		if ok {
			pc.deliver(Result{Err: fmt.Errorf("bookierpc: send %v: %w", op, err)})
		}
	}
	return txn
}

// maxSpareBytes bounds the write buffer kept for reuse, so that one burst
// of large frames does not pin its memory.
const maxSpareBytes = 1 << 20

// flushQueued writes every frame queued so far, the caller's among them,
// unless a write that another sender made meanwhile took them all. A
// failed write closes the connection: readLoop then fails every call
// outstanding, those whose frames were in the failed write included, and
// the caller gets the error for its own.
func (c *Client) flushQueued() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.qmu.Lock()
	buf := c.queued
	if len(buf) == 0 {
		c.qmu.Unlock()
		return nil
	}
	c.queued, c.spare = c.spare[:0], nil
	c.qmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout))
	_, err := c.nc.Write(buf)
	if err != nil {
		_ = c.raw.Close()
		return err
	}
	if cap(buf) <= maxSpareBytes {
		c.qmu.Lock()
		c.spare = buf[:0]
		c.qmu.Unlock()
	}
	return nil
}

// kickWriter has the writer goroutine write what is queued, starting it
// on first use.
func (c *Client) kickWriter() {
	c.writerOnce.Do(func() {
		c.wakeWriter = make(chan struct{}, 1)
		go c.writeLoop()
	})
	select {
	case c.wakeWriter <- struct{}{}:
	default:
	}
}

// writeLoop writes queued frames until the connection ends. A failed
// write closes the connection, and the reader fails every call
// outstanding.
func (c *Client) writeLoop() {
	for {
		select {
		case <-c.wakeWriter:
			if c.flushQueued() != nil {
				return
			}
		case <-c.done:
			return
		}
	}
}

// forget drops a call whose caller stopped waiting, so that its entry does
// not stay in the table until the connection ends.
func (c *Client) forget(txn uint64) {
	c.mu.Lock()
	if c.v2 {
		c.forgetV2Locked(txn)
	} else {
		delete(c.pending, txn)
	}
	c.mu.Unlock()
}

// operationOf infers the operation from the one sub-request set.
func operationOf(req *bkproto.Request) bkproto.OperationType {
	switch {
	case req.ReadRequest != nil:
		return bkproto.OperationType_READ_ENTRY
	case req.AddRequest != nil:
		return bkproto.OperationType_ADD_ENTRY
	case req.WriteLacRequest != nil:
		return bkproto.OperationType_WRITE_LAC
	case req.ReadLacRequest != nil:
		return bkproto.OperationType_READ_LAC
	case req.GetBookieInfoRequest != nil:
		return bkproto.OperationType_GET_BOOKIE_INFO
	case req.ForceLedgerRequest != nil:
		return bkproto.OperationType_FORCE_LEDGER
	case req.AuthRequest != nil:
		return bkproto.OperationType_AUTH
	case req.StartTLSRequest != nil:
		return bkproto.OperationType_START_TLS
	case req.GetListOfEntriesOfLedgerRequest != nil:
		return bkproto.OperationType_GET_LIST_OF_ENTRIES_OF_LEDGER
	}
	return req.GetHeader().GetOperation()
}

// Call sends req and waits for its response or ctx. A response whose
// status is not EOK is returned with a nil error: use
// bkproto.ResponseStatus and bkproto.ErrorOf to branch on it.
func (c *Client) Call(ctx context.Context, req *bkproto.Request) (*bkproto.Response, error) {
	txn, ch := c.send(req)
	select {
	case res := <-ch:
		return res.Resp, res.Err
	case <-ctx.Done():
		c.forget(txn)
		return nil, ctx.Err()
	}
}

// StatusErr turns a call's outcome into an error: err itself, or the
// *bkproto.Error the response's status names (nil for EOK).
func StatusErr(resp *bkproto.Response, err error) error {
	if err != nil {
		return err
	}
	return bkproto.ErrorOf(bkproto.ResponseStatus(resp))
}

// AddRequest returns the request that adds an entry. body is the entry's
// stored form (bkproto.EncodeEntry); recovery sets RECOVERY_ADD.
func AddRequest(ledgerID, entryID int64, masterKey, body []byte, recovery bool) *bkproto.Request {
	r := &bkproto.AddRequest{LedgerId: proto.Int64(ledgerID), EntryId: proto.Int64(entryID),
		MasterKey: masterKey, Body: body}
	if recovery {
		r.Flag = bkproto.AddRequest_RECOVERY_ADD.Enum()
	}
	return &bkproto.Request{AddRequest: r}
}

// Add adds an entry and waits for the bookie's answer; an error status
// comes back as its *bkproto.Error (errors.Is(err, bkproto.ErrFenced)).
func (c *Client) Add(ctx context.Context, ledgerID, entryID int64, masterKey, body []byte, recovery bool) error {
	resp, err := c.Call(ctx, AddRequest(ledgerID, entryID, masterKey, body, recovery))
	return StatusErr(resp, err)
}

// Read reads an entry (entryID -1: the last one) and returns the read
// response, with a non-nil error for a status other than EOK.
func (c *Client) Read(ctx context.Context, ledgerID, entryID int64) (*bkproto.ReadResponse, error) {
	return c.ReadRequest(ctx, &bkproto.ReadRequest{LedgerId: proto.Int64(ledgerID), EntryId: proto.Int64(entryID)})
}

// FenceRead fences the ledger and reads an entry (usually -1).
func (c *Client) FenceRead(ctx context.Context, ledgerID, entryID int64, masterKey []byte) (*bkproto.ReadResponse, error) {
	return c.ReadRequest(ctx, &bkproto.ReadRequest{LedgerId: proto.Int64(ledgerID), EntryId: proto.Int64(entryID),
		MasterKey: masterKey, Flag: bkproto.ReadRequest_FENCE_LEDGER.Enum()})
}

// LongPoll waits up to timeout for the bookie's LAC of ledger to pass
// previousLAC, then returns the last entry; with piggyback, entry
// previousLAC+1 instead, if the bookie holds it.
func (c *Client) LongPoll(ctx context.Context, ledgerID, previousLAC int64, timeout time.Duration,
	piggyback bool) (*bkproto.ReadResponse, error) {
	r := &bkproto.ReadRequest{LedgerId: proto.Int64(ledgerID), EntryId: proto.Int64(bkproto.LastAddConfirmed),
		PreviousLAC: proto.Int64(previousLAC), TimeOut: proto.Int64(timeout.Milliseconds())}
	if piggyback {
		r.Flag = bkproto.ReadRequest_ENTRY_PIGGYBACK.Enum()
	}
	return c.ReadRequest(ctx, r)
}

// ReadRequest sends a read request as given and returns the read
// response, with a non-nil error for a status other than EOK.
func (c *Client) ReadRequest(ctx context.Context, r *bkproto.ReadRequest) (*bkproto.ReadResponse, error) {
	resp, err := c.Call(ctx, &bkproto.Request{ReadRequest: r})
	if err := StatusErr(resp, err); err != nil {
		return resp.GetReadResponse(), err
	}
	return resp.GetReadResponse(), nil
}

// WriteLAC stores an explicit LAC; body is bkproto.EncodeLAC's.
func (c *Client) WriteLAC(ctx context.Context, ledgerID, lac int64, masterKey, body []byte) error {
	resp, err := c.Call(ctx, &bkproto.Request{WriteLacRequest: &bkproto.WriteLacRequest{
		LedgerId: proto.Int64(ledgerID), Lac: proto.Int64(lac), MasterKey: masterKey, Body: body}})
	return StatusErr(resp, err)
}

// ReadLAC returns the ledger's explicit LAC body and last entry.
func (c *Client) ReadLAC(ctx context.Context, ledgerID int64) (*bkproto.ReadLacResponse, error) {
	resp, err := c.Call(ctx, &bkproto.Request{ReadLacRequest: &bkproto.ReadLacRequest{LedgerId: proto.Int64(ledgerID)}})
	if err := StatusErr(resp, err); err != nil {
		return resp.GetReadLacResponse(), err
	}
	return resp.GetReadLacResponse(), nil
}

// ForceLedger waits until everything the bookie journaled for the ledger
// is durable.
func (c *Client) ForceLedger(ctx context.Context, ledgerID int64) error {
	resp, err := c.Call(ctx, &bkproto.Request{ForceLedgerRequest: &bkproto.ForceLedgerRequest{
		LedgerId: proto.Int64(ledgerID)}})
	return StatusErr(resp, err)
}

// BookieInfo returns the bookie's total and free disk bytes.
func (c *Client) BookieInfo(ctx context.Context) (total, free int64, err error) {
	resp, err := c.Call(ctx, &bkproto.Request{GetBookieInfoRequest: &bkproto.GetBookieInfoRequest{
		Requested: proto.Int64(int64(bkproto.GetBookieInfoRequest_TOTAL_DISK_CAPACITY |
			bkproto.GetBookieInfoRequest_FREE_DISK_SPACE))}})
	if err := StatusErr(resp, err); err != nil {
		return 0, 0, err
	}
	info := resp.GetGetBookieInfoResponse()
	return info.GetTotalDiskCapacity(), info.GetFreeDiskSpace(), nil
}
