package zkclient

import (
	"testing"

	"keeper/coordination/zkproto"
)

// BenchmarkPipelinedExists keeps 256 exists requests in flight on one
// connection against an in-process server; it measures the client and
// server together, and the client's allocations per request.
func BenchmarkPipelinedExists(b *testing.B) {
	addr := startServer(b)
	c, err := Dial(b.Context(), addr, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const window = 256
	sem := make(chan struct{}, window)
	req := &zkproto.ExistsRequest{Path: "/zookeeper"}
	cb := func(r Result) {
		if r.Err != nil {
			b.Error(r.Err)
		}
		<-sem
	}
	b.ReportAllocs()
	for b.Loop() {
		sem <- struct{}{}
		c.Go(zkproto.OpExists, req, cb)
	}
	for range window {
		sem <- struct{}{}
	}
}
