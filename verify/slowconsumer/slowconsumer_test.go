package slowconsumer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

func TestLatenciesQuantile(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name           string
		times          []time.Duration
		failed         int
		p50, p99, maxD time.Duration
	}{
		{name: "none"},
		{name: "one", times: []time.Duration{5 * ms}, p50: 5 * ms, p99: 5 * ms, maxD: 5 * ms},
		{name: "hundred", times: series(100), p50: 50 * ms, p99: 99 * ms, maxD: 100 * ms},
		{name: "one failure in a hundred", times: series(99), failed: 1, p50: 50 * ms, p99: 99 * ms, maxD: Never},
		{name: "two failures in a hundred", times: series(98), failed: 2, p50: 50 * ms, p99: Never, maxD: Never},
		{name: "all failed", failed: 3, p50: Never, p99: Never, maxD: Never},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l Latencies
			// Added in reverse: Quantile sorts.
			for i := len(tt.times) - 1; i >= 0; i-- {
				l.Add(tt.times[i])
			}
			for range tt.failed {
				l.Fail()
			}
			if got := l.Quantile(0.5); got != tt.p50 {
				t.Errorf("p50 = %v, want %v", got, tt.p50)
			}
			if got := l.Quantile(0.99); got != tt.p99 {
				t.Errorf("p99 = %v, want %v", got, tt.p99)
			}
			if got := l.Max(); got != tt.maxD {
				t.Errorf("max = %v, want %v", got, tt.maxD)
			}
			if got, want := l.Count(), len(tt.times)+tt.failed; got != want {
				t.Errorf("count = %d, want %d", got, want)
			}
			var merged Latencies
			merged.Merge(&l)
			if merged.Quantile(0.99) != tt.p99 || merged.Failed() != tt.failed {
				t.Errorf("merged: p99 %v, %d failed; want %v, %d", merged.Quantile(0.99), merged.Failed(), tt.p99, tt.failed)
			}
		})
	}
	if got := FormatDuration(Never); got != "never" {
		t.Errorf("FormatDuration(Never) = %q", got)
	}
}

// series is 1 ms, 2 ms, ..., n ms.
func series(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * time.Millisecond
	}
	return out
}

// TestZooKeeperFrames: the handshake opens a session and the reads and
// pings are the requests they claim to be.
func TestZooKeeperFrames(t *testing.T) {
	p := ZooKeeper("/big", 1000, 4*time.Second)
	client, server := net.Pipe()
	defer client.Close()
	errc := make(chan error, 1)
	go func() {
		defer server.Close()
		payload, err := zkproto.ReadFrame(server, nil, 1<<10)
		if err != nil {
			errc <- err
			return
		}
		req, err := zkproto.DecodeConnectRequest(payload, 1<<10)
		if err != nil || req.TimeoutMs != 4000 || req.SessionID != 0 {
			errc <- errors.Join(errors.New("bad connect request"), err)
			return
		}
		resp := zkproto.ConnectResponse{TimeoutMs: 4000, SessionID: 7, Passwd: make([]byte, zkproto.PasswdLen)}
		_, err = server.Write(zkproto.AppendFrame(nil, jute.Marshal(&resp)))
		errc <- err
	}()
	if err := p.Handshake(client); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("server side: %v", err)
	}
	h, rec := decode(t, p.Read(2))
	if gd, ok := rec.(*zkproto.GetDataRequest); h.Op != zkproto.OpGetData || h.Xid != 3 || !ok || gd.Path != "/big" || gd.Watch {
		t.Errorf("read 2 = %+v %+v, want getData /big with xid 3", h, rec)
	}
	if h, _ := decode(t, p.Ping(0)); h.Op != zkproto.OpPing || h.Xid != zkproto.XidPing {
		t.Errorf("ping = %+v", h)
	}
	if p.ReplyBytes != 1000+zkReplyOverheadBytes {
		t.Errorf("ReplyBytes = %d", p.ReplyBytes)
	}
}

func decode(t *testing.T, frame []byte) (zkproto.RequestHeader, jute.Record) {
	t.Helper()
	payload, err := zkproto.ReadFrame(bytes.NewReader(frame), nil, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	h, rec, err := zkproto.DecodeRequest(payload, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	return h, rec
}

// fakeServer accepts connections, reads what they send and writes
// replyBytes of output for each read frame; with stuckAfter > 0 it closes
// a connection whose write makes no progress for that long, as keeper's
// write timeout does.
func fakeServer(t *testing.T, stuckAfter time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveFake(c, stuckAfter)
		}
	}()
	return ln.Addr().String()
}

const fakeReplyBytes = 1 << 20

func serveFake(c net.Conn, stuckAfter time.Duration) {
	defer c.Close()
	go func() { _, _ = io.Copy(io.Discard, c) }()
	chunk := make([]byte, 64<<10)
	for range 64 * fakeReplyBytes / len(chunk) {
		if stuckAfter > 0 {
			_ = c.SetWriteDeadline(time.Now().Add(stuckAfter))
		}
		if _, err := c.Write(chunk); err != nil {
			return
		}
	}
	// Everything written: hold the connection until the client closes.
	_ = c.SetWriteDeadline(time.Time{})
	_, _ = c.Read(make([]byte, 1))
}

func fakePlan(conns int) Plan {
	p := Protocol{Name: "fake", Read: func(int) []byte { return []byte("read") },
		Ping: func(int) []byte { return []byte("ping") }, ReplyBytes: fakeReplyBytes}
	return Plan{
		Attacks: map[Kind]Attack{
			Pipeline:    {Proto: p, Conns: 1, Reads: 4},
			ByteASecond: {Proto: p, Conns: 1, Reads: 4},
			MidReply:    {Proto: p, Conns: 1, Reads: 4},
			ManyConns:   {Proto: p, Conns: conns, Reads: 1},
		},
		Hold: time.Second,
	}
}

// TestRoundSeesStuckClientsClosed: against a server that closes a client
// whose writes stall, every attacker is counted closed; against one that
// waits forever, none is.
func TestRoundSeesStuckClientsClosed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peerClosed reads the TCP state from Linux")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip(err)
	}
	const conns = 20
	want := Counts{1, 1, 1, conns}
	closer := Round(context.Background(), fakeServer(t, 200*time.Millisecond), fakePlan(conns))
	if closer.Opened != want || closer.Failed != (Counts{}) {
		t.Errorf("opened %v, failed %v; want %v opened", closer.Opened, closer.Failed, want)
	}
	if closer.Closed != want {
		t.Errorf("closed by a server that sheds stuck clients: %v, want %v", closer.Closed, want)
	}
	patient := Round(context.Background(), fakeServer(t, 0), fakePlan(conns))
	if patient.Closed != (Counts{}) {
		t.Errorf("closed by a server that waits: %v, want none", patient.Closed)
	}
	if got := closer.Opened.String(); got != "pipeline:1,byte-a-second:1,stop-mid-reply:1,many-conns:20" {
		t.Errorf("Counts.String() = %q", got)
	}
}

func TestPeakRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip(err)
	}
	kb, err := PeakRSSKB(os.Getpid())
	if err != nil || kb <= 0 {
		t.Fatalf("PeakRSSKB(self) = %d, %v", kb, err)
	}
}
