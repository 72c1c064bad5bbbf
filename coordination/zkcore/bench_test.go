package zkcore

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"keeper/coordination/zkproto"
)

// BenchmarkGetDataLarge measures a getData of a large node, from request
// to the frame handed to the driver: the core's part of serving a client
// that reads big nodes.
func BenchmarkGetDataLarge(b *testing.B) {
	for _, size := range []int{100, 64 << 10, 512 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			s, now, drain := benchCore(b)
			s.Request(1, Request{Header: zkproto.RequestHeader{Xid: 1, Op: zkproto.OpCreate},
				Body: &zkproto.CreateRequest{Path: "/n", Data: []byte(strings.Repeat("x", size)), ACL: zkproto.OpenACLUnsafe}}, now)
			drain()
			req := Request{Header: zkproto.RequestHeader{Xid: 2, Op: zkproto.OpGetData}, Body: &zkproto.GetDataRequest{Path: "/n"}}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				s.Request(1, req, now)
				drain()
			}
		})
	}
}

// BenchmarkCreate measures a create of a new 100-byte znode under one
// parent (one namespace of the per-namespace write metrics, as a load tool
// makes), from request to reply frame, txn prepared and applied: the core's
// part of a standalone server's create load (the log and the sockets are
// the driver's).
func BenchmarkCreate(b *testing.B) {
	s, now, drain := benchCore(b)
	data := []byte(strings.Repeat("x", 100))
	s.Request(1, Request{Header: zkproto.RequestHeader{Xid: 1, Op: zkproto.OpCreate},
		Body: &zkproto.CreateRequest{Path: "/bench", ACL: zkproto.OpenACLUnsafe}}, now)
	drain()
	paths := make([]string, b.N)
	for i := range paths {
		paths[i] = fmt.Sprintf("/bench/n-%08d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Request(1, Request{Header: zkproto.RequestHeader{Xid: int32(i + 2), Op: zkproto.OpCreate},
			Body: &zkproto.CreateRequest{Path: paths[i], Data: data, ACL: zkproto.OpenACLUnsafe}}, now)
		drain()
	}
}

// benchCore starts a standalone core with one connected session (conn 1)
// and returns it with its clock and a drain that applies what it
// proposes and reports what it sends written.
func benchCore(b *testing.B) (*Server, Now, func()) {
	cfg := DefaultConfig()
	cfg.StartWallMs = 1_700_000_000_000
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	now := Now{WallMs: cfg.StartWallMs, MonoMs: 1000}
	s.NewConn(1, netip.MustParseAddrPort("127.0.0.1:40000"), now)
	s.Connect(1, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, now)
	drain := func() {
		for s.HasReady() {
			rd := s.Ready()
			for _, t := range rd.Proposals {
				s.Apply(t, now)
			}
			for _, snd := range rd.Sends {
				s.Written(snd.Conn, len(snd.Data), now)
			}
		}
	}
	drain()
	return s, now, drain
}
