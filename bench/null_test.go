package bench

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
)

// startNull runs a NullServer for the test and returns its address.
func startNull(t testing.TB) string {
	t.Helper()
	s, err := NewNullServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr().String()
}

// decodeNullReply splits a reply frame made by appendNullReply and
// decodes its body strictly (no trailing bytes) as op's reply record.
func decodeNullReply(t *testing.T, frame []byte, op zkproto.Op) (zkproto.ReplyHeader, jute.Record) {
	t.Helper()
	if n := int(binary.BigEndian.Uint32(frame)); n != len(frame)-4 {
		t.Fatalf("%v: frame length %d, payload %d bytes", op, n, len(frame)-4)
	}
	h, body, err := zkproto.DecodeReplyHeader(frame[4:])
	if err != nil {
		t.Fatalf("%v: %v", op, err)
	}
	rec, _ := zkproto.NewResponse(op)
	if rec == nil || h.Err != zkproto.CodeOK {
		if len(body) != 0 {
			t.Fatalf("%v: %d bytes of body, want none", op, len(body))
		}
		return h, nil
	}
	if err := jute.Unmarshal(body, rec, 0); err != nil {
		t.Fatalf("%v: reply body %x: %v", op, body, err)
	}
	return h, rec
}

func TestNullReplyShapes(t *testing.T) {
	path := "/bench/c-1-2"
	tests := []struct {
		op   zkproto.Op
		req  jute.Record
		want jute.Record // nil: no body
		code zkproto.Code
	}{
		{zkproto.OpCreate, &zkproto.CreateRequest{Path: path, Data: []byte("x"), ACL: zkproto.OpenACLUnsafe}, &zkproto.CreateResponse{Path: path}, 0},
		{zkproto.OpCreate2, &zkproto.CreateRequest{Path: path, ACL: zkproto.OpenACLUnsafe}, &zkproto.Create2Response{Path: path}, 0},
		{zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{Path: path, TTLMs: 5}, &zkproto.Create2Response{Path: path}, 0},
		{zkproto.OpGetData, &zkproto.GetDataRequest{Path: path}, &zkproto.GetDataResponse{Data: []byte{}}, 0},
		{zkproto.OpSetData, &zkproto.SetDataRequest{Path: path, Data: []byte("y"), Version: -1}, &zkproto.SetDataResponse{}, 0},
		{zkproto.OpExists, &zkproto.ExistsRequest{Path: path, Watch: true}, &zkproto.ExistsResponse{}, 0},
		{zkproto.OpGetChildren2, &zkproto.GetChildren2Request{Path: path}, &zkproto.GetChildren2Response{Children: []string{}}, 0},
		{zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: path}, &zkproto.GetChildrenResponse{Children: []string{}}, 0},
		{zkproto.OpSync, &zkproto.SyncRequest{Path: path}, &zkproto.SyncResponse{Path: path}, 0},
		{zkproto.OpDelete, &zkproto.DeleteRequest{Path: path, Version: -1}, nil, 0},
		{zkproto.OpPing, nil, nil, 0},
		{zkproto.OpGetACL, &zkproto.GetACLRequest{Path: path}, &zkproto.GetACLResponse{}, 0},
		{zkproto.OpCheck, &zkproto.CheckVersionRequest{Path: path}, nil, zkproto.CodeUnimplemented},
		{zkproto.Op(999), nil, nil, zkproto.CodeUnimplemented},
	}
	for _, tt := range tests {
		t.Run(tt.op.String(), func(t *testing.T) {
			req := zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: 42, Op: tt.op}, tt.req)
			out, closing, err := appendNullReply([]byte("prefix"), req[4:])
			if err != nil || closing {
				t.Fatalf("closing %v err %v", closing, err)
			}
			if !bytes.HasPrefix(out, []byte("prefix")) {
				t.Fatalf("earlier replies overwritten: %q", out)
			}
			h, rec := decodeNullReply(t, out[len("prefix"):], tt.op)
			if h.Xid != 42 || h.Err != tt.code || h.Zxid != 0 {
				t.Fatalf("header %+v, want xid 42 err %v", h, tt.code)
			}
			if tt.code == zkproto.CodeOK && !reflect.DeepEqual(rec, tt.want) {
				t.Fatalf("reply %#v, want %#v", rec, tt.want)
			}
		})
	}
}

func TestNullReplyBadRequests(t *testing.T) {
	for name, frame := range map[string][]byte{
		"short header":        {0, 0, 0, 1, 0, 0},
		"create without path": {0, 0, 0, 1, 0, 0, 0, 1},
		"path length beyond":  {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 9, '/'},
		"negative path":       {0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff},
	} {
		if _, _, err := appendNullReply(nil, frame); !errors.Is(err, errNullBadRequest) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

// TestNullServerWithClient drives the null server with zkclient's typed
// methods, which check every reply's shape, and closes the session.
func TestNullServerWithClient(t *testing.T) {
	addr := startNull(t)
	c, err := zkclient.Dial(t.Context(), addr, zkclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if p, _, err := c.Create(ctx, "/a", []byte("x"), zkclient.CreateOptions{}); err != nil || p != "/a" {
		t.Errorf("create: %q %v", p, err)
	}
	if p, _, err := c.Create(ctx, "/b", nil, zkclient.CreateOptions{Stat: true}); err != nil || p != "/b" {
		t.Errorf("create2: %q %v", p, err)
	}
	if data, _, err := c.Get(ctx, "/a", false); err != nil || len(data) != 0 {
		t.Errorf("get: %q %v", data, err)
	}
	if _, err := c.Set(ctx, "/a", []byte("y"), -1); err != nil {
		t.Errorf("set: %v", err)
	}
	if _, ok, err := c.Exists(ctx, "/a", true); err != nil || !ok {
		t.Errorf("exists: %v %v", ok, err)
	}
	if err := c.Delete(ctx, "/a", -1); err != nil {
		t.Errorf("delete: %v", err)
	}
	if kids, _, err := c.Children(ctx, "/", false); err != nil || len(kids) != 0 {
		t.Errorf("children: %v %v", kids, err)
	}
	if p, err := c.Sync(ctx, "/a"); err != nil || p != "/a" {
		t.Errorf("sync: %q %v", p, err)
	}
	if err := c.AddAuth(ctx, "digest", []byte("u:p")); err != nil {
		t.Errorf("auth: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

func TestNullServerFourLetterWord(t *testing.T) {
	addr := startNull(t)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte("ruok")); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(nc)
	if err != nil || string(got) != "imok" {
		t.Fatalf("ruok: %q %v", got, err)
	}
}

// TestNullServerClose checks that Close ends live sessions.
func TestNullServerClose(t *testing.T) {
	s, err := NewNullServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := zkclient.Dial(t.Context(), s.Addr().String(), zkclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	<-c.Done()
	if !errors.Is(c.Err(), zkclient.ErrConnectionLoss) {
		t.Fatalf("after Close: %v", c.Err())
	}
}

// FuzzNullReply feeds arbitrary request payloads to the null server's
// request handling: it must not panic, and whatever it answers must be
// one well-formed reply frame with the request's xid.
func FuzzNullReply(f *testing.F) {
	f.Add(zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: 1, Op: zkproto.OpCreate},
		&zkproto.CreateRequest{Path: "/a", ACL: zkproto.OpenACLUnsafe})[4:])
	f.Add(zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: 2, Op: zkproto.OpGetData}, &zkproto.GetDataRequest{Path: "/a"})[4:])
	f.Add(zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: -2, Op: zkproto.OpPing}, nil)[4:])
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 15, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte("\xff\xff\xff\xff\x00\x00\x00\v")) // a ping with the notification xid
	f.Fuzz(func(t *testing.T, frame []byte) {
		out, _, err := appendNullReply(nil, frame)
		if err != nil {
			return // the connection is closed: correct for garbage
		}
		if len(out) < 4 || int(binary.BigEndian.Uint32(out)) != len(out)-4 {
			t.Fatalf("reply %x is not one frame", out)
		}
		h, _, err := zkproto.DecodeReplyHeader(out[4:])
		if err != nil || h.Xid != int32(binary.BigEndian.Uint32(frame)) {
			t.Fatalf("reply header %+v (%v) for request %x", h, err, frame)
		}
		op := zkproto.Op(int32(binary.BigEndian.Uint32(frame[4:])))
		if h.Xid == zkproto.XidNotification {
			return // echoed as sent; no client sends this xid, and a reply with it reads as an event
		}
		if _, _, err := zkproto.DecodeReply(out[4:], op, 0); err != nil && h.Err == zkproto.CodeOK {
			t.Fatalf("reply to %v does not decode: %v", op, err)
		}
	})
}
