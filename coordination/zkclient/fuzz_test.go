package zkclient

import (
	"errors"
	"testing"

	"keeper/coordination/zkproto"
)

// fuzzOps are the ops FuzzDispatch has a reply decoded as; the first byte
// of the input picks one.
var fuzzOps = []zkproto.Op{
	zkproto.OpGetData, zkproto.OpGetChildren2, zkproto.OpMulti, zkproto.OpCreate2,
	zkproto.OpWhoAmI, zkproto.OpGetACL, zkproto.OpDelete, zkproto.OpAddWatch,
}

// FuzzDispatch feeds arbitrary reply frames to the reader's dispatch, with
// one ordinary call (xid 1), one auth packet and one ping outstanding. It
// must never panic, complete a call at most once, and hand a successful
// call of an op with a reply body a decoded record.
func FuzzDispatch(f *testing.F) {
	f.Add(byte(0), zkproto.EncodeReply(zkproto.ReplyHeader{Xid: 1, Zxid: 5},
		&zkproto.GetDataResponse{Data: []byte("x")}))
	f.Add(byte(2), zkproto.EncodeReply(zkproto.ReplyHeader{Xid: 1}, &zkproto.MultiResponse{
		Results: []zkproto.MultiResult{zkproto.ErrorResult(zkproto.CodeNoNode)}}))
	f.Add(byte(1), zkproto.EncodeReply(zkproto.ReplyHeader{Xid: 1, Err: zkproto.CodeNoNode}, nil))
	f.Add(byte(0), zkproto.EncodeReply(zkproto.ReplyHeader{Xid: zkproto.XidNotification},
		&zkproto.WatcherEvent{Type: zkproto.EventNodeCreated, State: 3, Path: "/a"}))
	f.Add(byte(0), zkproto.EncodeReply(zkproto.ReplyHeader{Xid: zkproto.XidPing}, nil))
	f.Add(byte(0), zkproto.EncodeReply(zkproto.ReplyHeader{Xid: zkproto.XidAuth, Err: zkproto.CodeAuthFailed}, nil))
	f.Add(byte(4), zkproto.EncodeReply(zkproto.ReplyHeader{Xid: 2}, nil))
	f.Fuzz(func(t *testing.T, opByte byte, frame []byte) {
		c := newConn(nil, "fuzz", Options{EventBuffer: 1}.withDefaults(), zkproto.ConnectResponse{TimeoutMs: 30000})
		op := fuzzOps[int(opByte)%len(fuzzOps)]
		calls := 0
		check := func(r Result) {
			calls++
			if calls > 1 {
				t.Fatalf("call completed %d times", calls)
			}
			if body, _ := zkproto.NewResponse(op); r.Err == nil && r.Record == nil && body != nil {
				t.Fatalf("successful %v reply without a record: %+v", op, r)
			}
		}
		c.pending.push(call{xid: 1, op: op, req: &zkproto.GetDataRequest{Path: "/p"}, cb: check})
		c.auths.push(call{xid: zkproto.XidAuth, op: zkproto.OpAuth, cb: func(Result) {}})
		c.pings = 1
		_ = c.dispatch(frame) // an error ends the connection; that is a valid outcome
	})
}

// FuzzSASLReply feeds arbitrary frames to the SASL exchange's reply
// decoder, as the reply to sasl(102) xid 1. It must never panic; an error
// reply must be AuthFailed, and a decoded token must fit the frame.
func FuzzSASLReply(f *testing.F) {
	f.Add(zkproto.EncodeReply(zkproto.ReplyHeader{Xid: 1}, &zkproto.SetSASLResponse{Token: []byte(`realm="zk-sasl-md5",nonce="n"`)}))
	f.Add(zkproto.EncodeReply(zkproto.ReplyHeader{Xid: 1, Err: zkproto.CodeAuthFailed}, nil))
	f.Add(zkproto.EncodeReply(zkproto.ReplyHeader{Xid: 2}, &zkproto.SetSASLResponse{}))
	f.Add([]byte{0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, frame []byte) {
		resp, err := decodeSASLReply(frame, 1, 1<<20)
		if err == nil && len(resp.Token) > len(frame) {
			t.Fatalf("token of %d bytes from a frame of %d", len(resp.Token), len(frame))
		}
		h, _, herr := zkproto.DecodeReplyHeader(frame)
		if herr == nil && h.Xid == 1 && h.Err != zkproto.CodeOK && !errors.Is(err, zkproto.ErrAuthFailed) {
			t.Fatalf("error reply %v gave %v, want AuthFailed", h.Err, err)
		}
	})
}
