package bookierpc

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"keeper/ledgerstore/bkproto"
)

// DialV2 connects to a bookie and speaks BookKeeper's v2 protocol on the
// connection, as a Java client with useV2WireProtocol=true does
// (docs/bookkeeper-protocol.md §6.2). Requests are still given and answers
// still returned as v3 messages; the Client translates them (bkproto's v2
// codec). What v2 cannot express follows BookKeeper's client:
//
//   - ADD_ENTRY, READ_ENTRY (plain and fencing) and AUTH travel as v2
//     packets; a header priority above 0 becomes HIGH_PRIORITY;
//   - a long poll (previousLAC, timeOut, ENTRY_PIGGYBACK) has no v2 form and
//     is sent as the plain read v2 can carry, which the bookie answers at
//     once: the caller learns the LAC from the entry's header and polls
//     again;
//   - READ_LAC, WRITE_LAC, FORCE_LEDGER, GET_BOOKIE_INFO and the other v3
//     operations fail at once with an error wrapping bkproto.ErrNoV2Form
//     (BookKeeper's client sends the first three over a separate v3
//     connection and fails FORCE_LEDGER).
//
// v2 responses name no transaction, only their operation, ledger and
// entry, so the Client keeps at most one request per (operation, ledger,
// entry) on the wire: a second one waits until the first is answered, and
// a caller that stops waiting leaves its request's slot taken until its
// answer arrives, so that an answer is never given to the wrong request
// (a plain read's answer to a fencing read, say). If a request then waits
// out its own deadline behind that one, the connection is closed (see
// forgetV2Locked). A response that matches no request is dropped, as
// BookKeeper's client drops it.
func DialV2(ctx context.Context, addr string) (*Client, error) {
	return DialWith(ctx, addr, Options{V2: true})
}

// V2 reports whether the connection speaks the v2 protocol.
func (c *Client) V2() bool { return c.v2 }

// v2Key is what matches a v2 response to its request.
type v2Key struct {
	op              bkproto.V2OpCode
	ledger, entryID int64
}

// v2Call is one request of a v2 connection. The first call of its key's
// queue is on the wire (or being written); the others wait for it.
type v2Call struct {
	txn   uint64
	ch    chan<- Result // nil once its caller stopped waiting
	frame []byte        // the packet, with its length prefix
}

// sendV2 is send on a v2 connection.
func (c *Client) sendV2(req *bkproto.Request) (uint64, <-chan Result) {
	ch := make(chan Result, 1)
	v2, _ := bkproto.V2RequestOf(req)
	frame, err := bkproto.AppendV2Request(nil, req)
	if err != nil {
		ch <- Result{Err: fmt.Errorf("bookierpc: v2: %w", err)}
		return 0, ch
	}
	key := v2Key{op: v2.Header.OpCode, ledger: v2.LedgerID, entryID: v2.EntryID}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		ch <- Result{Err: c.err}
		return 0, ch
	}
	c.nextTxn++
	call := &v2Call{txn: c.nextTxn, ch: ch, frame: frame}
	q := c.v2q[key]
	c.v2q[key] = append(q, call)
	c.v2keys[call.txn] = key
	c.mu.Unlock()
	if len(q) == 0 {
		c.writeV2(call)
	}
	return call.txn, ch
}

// BatchRead sends a v2 BATCH_READ_ENTRY (BookKeeper 4.17) for the entries
// from req's on (req a plain or fencing READ_ENTRY): at most maxCount of
// them (<= 0: no bound) in a response of at most maxSize bytes. The
// answer is a READ_ENTRY response of the first entry whose body, with
// EOK, holds the batch (bkproto.V2BatchEntries splits it, each entry still
// to be verified). It is matched by its request id, the call's own
// transaction number, so batches from the same entry may overlap. A v3
// connection has no batch read: the call fails at once with an error
// wrapping bkproto.ErrNoV2Form. A bookie older than 4.17 closes the
// connection on the unknown opcode, as BookKeeper's client expects, and
// the call fails with the connection's error.
func (c *Client) BatchRead(ctx context.Context, req *bkproto.Request, maxCount int32, maxSize int64) (*bkproto.Response, error) {
	if !c.v2 {
		return nil, fmt.Errorf("bookierpc: batch read on a v3 connection: %w", bkproto.ErrNoV2Form)
	}
	ch := make(chan Result, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.nextTxn++
	txn := c.nextTxn
	frame, err := bkproto.AppendV2BatchReadRequest(nil, req, int64(txn), maxCount, maxSize)
	if err != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("bookierpc: v2: %w", err)
	}
	key := v2Key{op: bkproto.V2BatchReadEntry, ledger: req.GetReadRequest().GetLedgerId(), entryID: int64(txn)}
	call := &v2Call{txn: txn, ch: ch, frame: frame}
	c.v2q[key] = []*v2Call{call}
	c.v2keys[txn] = key
	c.mu.Unlock()
	c.writeV2(call)
	select {
	case res := <-ch:
		return res.Resp, res.Err
	case <-ctx.Done():
		c.forget(txn)
		return nil, ctx.Err()
	}
}

// writeV2 writes a call's packet. A failed write closes the connection,
// and the reader fails every call outstanding on it.
func (c *Client) writeV2(call *v2Call) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout))
	if _, err := c.nc.Write(call.frame); err != nil {
		_ = c.raw.Close()
	}
}

// deliverV2 hands a v2 response to the request it answers and puts the
// next request of the same key on the wire. An undecodable response is an
// error: the connection cannot be trusted any more.
func (c *Client) deliverV2(frame []byte) error {
	resp, err := bkproto.DecodeV2Response(frame)
	if err != nil {
		return err
	}
	key := v2Key{op: bkproto.V2Auth, ledger: -1, entryID: -1}
	switch {
	case bkproto.ParseV2Header(binary.BigEndian.Uint32(frame)).OpCode == bkproto.V2BatchReadEntry:
		// Matched by its request id (DecodeV2Response puts it in the header).
		key = v2Key{op: bkproto.V2BatchReadEntry, ledger: resp.ReadResponse.GetLedgerId(),
			entryID: int64(resp.GetHeader().GetTxnId())}
	case resp.AddResponse != nil:
		key = v2Key{op: bkproto.V2AddEntry, ledger: resp.AddResponse.GetLedgerId(), entryID: resp.AddResponse.GetEntryId()}
	case resp.ReadResponse != nil:
		key = v2Key{op: bkproto.V2ReadEntry, ledger: resp.ReadResponse.GetLedgerId(), entryID: resp.ReadResponse.GetEntryId()}
	}
	c.mu.Lock()
	q := c.v2q[key]
	if len(q) == 0 {
		c.mu.Unlock()
		return nil // answers nothing outstanding: dropped
	}
	call := q[0]
	delete(c.v2keys, call.txn)
	var next *v2Call
	if len(q) == 1 {
		delete(c.v2q, key)
	} else {
		c.v2q[key] = q[1:]
		next = q[1]
	}
	c.mu.Unlock()
	if call.ch != nil {
		resp.Header.TxnId = &call.txn
		call.ch <- Result{Resp: resp}
	}
	if next != nil {
		go c.writeV2(next) // never block the reader on a write
	}
	return nil
}

// forgetV2Locked is forget on a v2 connection: a waiting call leaves its
// queue; the call on the wire keeps its slot, unanswered, until its
// response comes. A call that waited its caller's whole deadline behind one
// whose caller had already given up closes the connection: that answer may
// never come (the bookie lost the request), and only a new connection frees
// the key without risking a late answer going to the wrong request. Caller
// holds c.mu.
func (c *Client) forgetV2Locked(txn uint64) {
	key, ok := c.v2keys[txn]
	if !ok {
		return
	}
	q := c.v2q[key]
	for i, call := range q {
		if call.txn != txn {
			continue
		}
		if i == 0 {
			call.ch = nil
			return
		}
		c.v2q[key] = append(q[:i:i], q[i+1:]...)
		delete(c.v2keys, txn)
		if q[0].ch == nil {
			_ = c.raw.Close() // the reader fails the calls left
		}
		return
	}
}

// failV2Locked fails every v2 call with err. Caller holds c.mu.
func (c *Client) failV2Locked(err error) {
	for key, q := range c.v2q {
		for _, call := range q {
			if call.ch != nil {
				call.ch <- Result{Err: err}
			}
		}
		delete(c.v2q, key)
	}
	clear(c.v2keys)
}
