package bench

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"keeper/ledgerstore/bkproto"
)

// This file is the null bookie: the ledger client's floor is what it
// reaches against bookies that do only what an add cannot do without,
// its bytes written and fdatasynced on the disk, and answer over TCP.

// nullBookieBufferBytes sizes a connection's read buffer: one read picks
// up every add a client pipelined, and they are synced together.
const nullBookieBufferBytes = 64 << 10

// nullBookieMaxBatchBytes bounds what a connection reads before it writes,
// syncs and answers, however fast the client keeps sending.
const nullBookieMaxBatchBytes = 1 << 20

// NullBookie answers BookKeeper's v3 ADD_ENTRY after appending the add's
// body to one file and fdatasyncing it; every other request is answered
// EBADREQ. The adds of a connection that arrive in one read are written
// and synced together, as a journal's group commit would; connections
// take turns at the file. Nothing is indexed, kept for reading, fenced or
// checked: it is a floor for benchmarks, not a bookie. A v2 frame, or
// anything that is not a v3 request, closes the connection.
type NullBookie struct {
	ln    net.Listener
	mu    sync.Mutex // guards f, off, conns, closed; held across a write and its sync
	f     *os.File
	off   int64
	conns map[net.Conn]struct{}
	err   error // the first failed write or sync: no add is answered after it

	closed bool
	wg     sync.WaitGroup
}

// StartNullBookie serves on ln, appending to a new file at path (which
// must not exist), until Close.
func StartNullBookie(ln net.Listener, path string) (*NullBookie, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("bench: null bookie: %w", err)
	}
	b := &NullBookie{ln: ln, f: f, conns: map[net.Conn]struct{}{}}
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

// Addr returns the address the null bookie serves on.
func (b *NullBookie) Addr() net.Addr { return b.ln.Addr() }

// Close stops serving, closes every connection and the file, and returns
// once every connection's goroutine is done.
func (b *NullBookie) Close() error {
	b.mu.Lock()
	b.closed = true
	for c := range b.conns {
		_ = c.Close()
	}
	b.mu.Unlock()
	err := b.ln.Close()
	b.wg.Wait()
	if cerr := b.f.Close(); err == nil || errors.Is(err, net.ErrClosed) {
		err = cerr
	}
	return err
}

func (b *NullBookie) accept() {
	defer b.wg.Done()
	for {
		nc, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			_ = nc.Close()
			return
		}
		b.conns[nc] = struct{}{}
		b.wg.Add(1)
		b.mu.Unlock()
		go b.serve(nc)
	}
}

// nullAdd is an add read and not yet answered.
type nullAdd struct {
	h               *bkproto.BKPacketHeader
	ledger, entryID int64
}

// serve answers one connection's requests until it ends or sends what is
// not a v3 request, or the file fails.
func (b *NullBookie) serve(nc net.Conn) {
	defer b.wg.Done()
	defer func() {
		b.mu.Lock()
		delete(b.conns, nc)
		b.mu.Unlock()
		_ = nc.Close()
	}()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	r := bufio.NewReaderSize(nc, nullBookieBufferBytes)
	buf := make([]byte, nullBookieBufferBytes)
	var bodies, out []byte
	var adds []nullAdd
	for {
		frame, err := bkproto.ReadFrame(r, buf, bkproto.DefaultMaxFrameBytes)
		if err != nil {
			return
		}
		req, err := bkproto.DecodeRequest(frame)
		if req == nil {
			return
		}
		h := req.GetHeader()
		switch {
		case err != nil:
			out, err = appendStatusResponse(out, h, bkproto.StatusOf(err))
		case h.GetOperation() == bkproto.OperationType_ADD_ENTRY:
			a := req.GetAddRequest()
			bodies = append(bodies, a.GetBody()...)
			adds = append(adds, nullAdd{h: h, ledger: a.GetLedgerId(), entryID: a.GetEntryId()})
		default:
			out, err = appendStatusResponse(out, h, bkproto.StatusCode_EBADREQ)
		}
		if err != nil {
			return
		}
		if r.Buffered() > 0 && len(bodies)+len(out) < nullBookieMaxBatchBytes {
			continue // more requests already here: they share the write and the sync
		}
		if len(adds) > 0 {
			if err := b.persist(bodies); err != nil {
				return // the client sees the adds fail with the connection
			}
			for _, a := range adds {
				if out, err = bkproto.AppendAddResponseFrame(out, a.h, bkproto.StatusCode_EOK, a.ledger, a.entryID); err != nil {
					return
				}
			}
		}
		if _, err := nc.Write(out); err != nil {
			return
		}
		bodies, out, adds = bodies[:0], out[:0], adds[:0]
	}
}

// persist appends p to the file and fdatasyncs it. After a failure it
// fails every time: what a failed sync left on the disk is unknown.
func (b *NullBookie) persist(p []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	if _, err := b.f.WriteAt(p, b.off); err != nil {
		b.err = err
		return err
	}
	b.off += int64(len(p))
	b.err = datasync(b.f)
	return b.err
}

// appendStatusResponse appends a response to h that carries only status.
func appendStatusResponse(dst []byte, h *bkproto.BKPacketHeader, st bkproto.StatusCode) ([]byte, error) {
	rh := &bkproto.BKPacketHeader{Version: bkproto.ProtocolVersionV3.Enum(), Operation: h.Operation, TxnId: h.TxnId, Priority: h.Priority}
	return bkproto.AppendResponseFrame(dst, &bkproto.Response{Header: rh, Status: st.Enum()})
}
