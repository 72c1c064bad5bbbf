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
