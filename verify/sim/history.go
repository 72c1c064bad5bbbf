package sim

import (
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
)

// op is one client request as the client saw it: when it was sent, what it
// asked, and — if a reply came — when and what the reply said. It is the
// raw material of the checkers.
type op struct {
	client  int
	session int64
	conn    zkcore.ConnID
	server  int
	xid     int32
	kind    zkproto.Op
	path    string
	value   []byte // the unique payload of a create or setData
	version int32  // the expected version of a setData or delete
	flags   int32  // create flags
	watch   bool
	// reconfig is the request of an operator's reconfig.
	reconfig *zkproto.ReconfigRequest

	// callSeq and retSeq order calls and returns across the whole run;
	// retSeq is 0 while no reply came (the outcome is unknown).
	callSeq, retSeq uint64
	callMs, retMs   int64

	done bool
	hdr  zkproto.ReplyHeader
	stat zkproto.Stat // setData, getData, exists replies
	data []byte       // getData replies
}

// isWrite reports whether the op is a transaction (its reply promises the
// txn is committed and durable).
func (o *op) isWrite() bool {
	switch o.kind {
	case zkproto.OpCreate, zkproto.OpDelete, zkproto.OpSetData, zkproto.OpCloseSession, zkproto.OpReconfig:
		return true
	}
	return false
}

// connRecord is what one client connection carried: the xids the client
// sent, in order, and the xids of the replies it got, in order.
type connRecord struct {
	client  int
	session int64 // 0 until the handshake gave one
	server  int
	conn    zkcore.ConnID
	sent    []int32
	got     []int32
}

// sessionRecord is one session as its client saw it.
type sessionRecord struct {
	id     int64
	client int
	// createdSeq is when the client got the ConnectResponse that created it.
	createdSeq uint64
	// expiredSeq is when a server told the client the session was gone (0:
	// never).
	expiredSeq uint64
	timeoutMs  int32 // as negotiated
}

// watchEvent is a notification a client received.
type watchEvent struct {
	client  int
	session int64
	conn    zkcore.ConnID
	seq     uint64
	typ     zkproto.EventType
	path    string
}

// history is everything the clients did and saw.
type history struct {
	ops      []*op
	conns    []*connRecord
	sessions []*sessionRecord
	events   []watchEvent
}
