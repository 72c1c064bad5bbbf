package bench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// This file is the null server: the load tool's own ceiling is what it
// reaches against a server that costs nothing.

const (
	// nullBufferBytes sizes each connection's read buffer and the reply
	// batch that triggers a write: one read picks up a whole pipelined
	// window of requests, one write returns all their replies.
	nullBufferBytes = 64 << 10
	// nullTimeoutMs is the session timeout granted when a client asks for
	// none.
	nullTimeoutMs = 30_000
)

// zeroStat is an encoded all-zero Stat (68 bytes).
var zeroStat [68]byte

// NullServer speaks the ZooKeeper client protocol and does nothing: it
// completes the handshake and answers every request at once with a
// successful reply of the right shape for its op, storing nothing and
// firing no watches. create echoes the requested path (create2, container
// and TTL creates add a zero Stat); getData returns empty data and a zero
// Stat; exists, setData and setACL return a zero Stat; getChildren returns
// no children; sync echoes the path; delete, ping, auth and setWatches
// return an empty body; other known ops return their reply record's zero
// value, and unknown ops the Unimplemented code. closeSession is answered
// and the connection closed. The four-letter word ruok gets imok.
//
// Replies are built by hand into one buffer per connection and written
// once per batch of requests that arrived together, so the server's own
// cost per request is a few hundred nanoseconds: a load tool measured
// against it measures itself.
type NullServer struct {
	ln      net.Listener
	session atomic.Int64 // the last session id handed out
	wg      sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // mu guards conns and closed
	closed bool
}

// NewNullServer listens on addr ("127.0.0.1:0" picks a free port) and
// serves in the background until Close.
func NewNullServer(addr string) (*NullServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bench: null server: %w", err)
	}
	s := &NullServer{ln: ln, conns: make(map[net.Conn]struct{})}
	s.session.Store(0x4e554c4c << 24) // "NULL", so its sessions are recognisable
	s.wg.Go(s.accept)
	return s, nil
}

// Addr returns the address the server listens on.
func (s *NullServer) Addr() net.Addr { return s.ln.Addr() }

// Close stops listening, closes every connection and waits for the
// server's goroutines to exit.
func (s *NullServer) Close() error {
	s.mu.Lock()
	s.closed = true
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

func (s *NullServer) accept() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return // closed; a null server has no use for retrying
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[nc] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(func() {
			s.serve(nc)
			s.mu.Lock()
			delete(s.conns, nc)
			s.mu.Unlock()
			nc.Close()
		})
	}
}

// serve handles one connection until it ends; errors just end it.
func (s *NullServer) serve(nc net.Conn) {
	br := bufio.NewReaderSize(nc, nullBufferBytes)
	if done := nullHandshake(nc, br, &s.session); done {
		return
	}
	buf := make([]byte, 0, nullBufferBytes)
	out := make([]byte, 0, nullBufferBytes)
	for {
		frame, err := zkproto.ReadFrame(br, buf, jute.DefaultMaxBuffer)
		if err != nil {
			return
		}
		var closing bool
		if out, closing, err = appendNullReply(out, frame); err != nil {
			return
		}
		if closing || len(out) >= nullBufferBytes || !frameBuffered(br) {
			if _, err := nc.Write(out); err != nil || closing {
				return
			}
			out = out[:0]
		}
	}
}

// nullHandshake answers a four-letter word or the ConnectRequest, with the
// next of session's ids; done means the connection is finished.
func nullHandshake(nc net.Conn, br *bufio.Reader, session *atomic.Int64) (done bool) {
	first4, err := br.Peek(zkproto.FrameLengthLen)
	if err != nil {
		return true
	}
	if w, ok := zkproto.IsFourLetterWord([4]byte(first4)); ok {
		if w == "ruok" {
			nc.Write([]byte("imok"))
		}
		return true
	}
	frame, err := zkproto.ReadFrame(br, nil, jute.DefaultMaxBuffer)
	if err != nil {
		return true
	}
	req, err := zkproto.DecodeConnectRequest(frame, jute.DefaultMaxBuffer)
	if err != nil {
		return true
	}
	resp := zkproto.ConnectResponse{
		TimeoutMs:   req.TimeoutMs,
		SessionID:   session.Add(1),
		Passwd:      make([]byte, zkproto.PasswdLen),
		HasReadOnly: req.HasReadOnly,
	}
	if resp.TimeoutMs <= 0 {
		resp.TimeoutMs = nullTimeoutMs
	}
	_, err = nc.Write(zkproto.AppendFrame(nil, jute.Marshal(&resp)))
	return err != nil
}

// frameBuffered reports whether br holds a whole frame already, so that
// its reply can join the current batch without waiting on the socket.
func frameBuffered(br *bufio.Reader) bool {
	if br.Buffered() < zkproto.FrameLengthLen {
		return false
	}
	prefix, err := br.Peek(zkproto.FrameLengthLen)
	if err != nil {
		return false
	}
	return br.Buffered()-zkproto.FrameLengthLen >= int(binary.BigEndian.Uint32(prefix))
}

var errNullBadRequest = errors.New("bench: null server: malformed request")

// appendNullReply appends the reply frame to the request payload frame
// (without its length prefix). closing is set for closeSession.
func appendNullReply(out, frame []byte) (_ []byte, closing bool, err error) {
	if len(frame) < zkproto.RequestHeaderLen {
		return out, false, errNullBadRequest
	}
	xid := binary.BigEndian.Uint32(frame[0:4])
	op := zkproto.Op(int32(binary.BigEndian.Uint32(frame[4:8])))
	body := frame[zkproto.RequestHeaderLen:]
	start := len(out)
	out = append(out, 0, 0, 0, 0) // the frame length, patched below
	out = binary.BigEndian.AppendUint32(out, xid)
	out = append(out, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) // zxid 0, err OK
	switch op {
	case zkproto.OpExists, zkproto.OpSetData, zkproto.OpSetACL:
		out = append(out, zeroStat[:]...)
	case zkproto.OpGetData:
		out = append(out, 0, 0, 0, 0) // empty, not null, data
		out = append(out, zeroStat[:]...)
	case zkproto.OpCreate, zkproto.OpSync:
		if out, err = appendLeadingString(out, body); err != nil {
			return out, false, err
		}
	case zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL:
		if out, err = appendLeadingString(out, body); err != nil {
			return out, false, err
		}
		out = append(out, zeroStat[:]...)
	case zkproto.OpGetChildren:
		out = append(out, 0, 0, 0, 0)
	case zkproto.OpGetChildren2:
		out = append(out, 0, 0, 0, 0)
		out = append(out, zeroStat[:]...)
	case zkproto.OpCloseSession:
		closing = true
	default:
		out = appendZeroResponse(out, op)
	}
	binary.BigEndian.PutUint32(out[start:], uint32(len(out)-start-zkproto.FrameLengthLen))
	return out, closing, nil
}

// appendLeadingString copies the jute string that starts body (the path
// of a create or sync request) to out.
func appendLeadingString(out, body []byte) ([]byte, error) {
	if len(body) < 4 {
		return out, errNullBadRequest
	}
	n := int32(binary.BigEndian.Uint32(body))
	if n < 0 || int(n) > len(body)-4 {
		return out, errNullBadRequest
	}
	return append(out, body[:4+n]...), nil
}

// appendZeroResponse appends the zero value of op's reply record, or, for
// an op with no known reply, overwrites the header's err with
// Unimplemented (the header's last 4 bytes end out).
func appendZeroResponse(out []byte, op zkproto.Op) []byte {
	rec, ok := zkproto.NewResponse(op)
	if !ok {
		code := int32(zkproto.CodeUnimplemented)
		binary.BigEndian.PutUint32(out[len(out)-4:], uint32(code))
		return out
	}
	if rec == nil {
		return out
	}
	e := jute.Encoder{B: out}
	rec.Encode(&e)
	return e.B
}
