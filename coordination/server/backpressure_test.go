package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/jute"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
)

// coreStats reads the core's counters on the loop.
func coreStats(t *testing.T, s *Server) zkcore.Stats {
	t.Helper()
	var st zkcore.Stats
	if !s.Inspect(func(core *zkcore.Server) { st = core.Stats() }) {
		t.Fatal("server stopped")
	}
	return st
}

// pipelineGets opens a session and sends n getData of path without reading
// a reply.
func pipelineGets(t *testing.T, addr, path string, n int) *rawClient {
	t.Helper()
	c := rawSession(t, addr)
	var buf []byte
	for i := range n {
		buf = zkproto.AppendRequestFrame(buf, zkproto.RequestHeader{Xid: int32(i + 1), Op: zkproto.OpGetData},
			&zkproto.GetDataRequest{Path: path})
	}
	// The server stops reading once the replies back up, so the requests
	// may not all fit in the socket buffers: write them in the background.
	go func() {
		c.nc.SetWriteDeadline(time.Now().Add(waitTimeout))
		c.nc.Write(buf)
	}()
	return c
}

// TestNonReadingClientsDoNotHangTheServer is the reported hang: clients
// that pipeline large reads and never read the replies, then go away, left
// the loop blocked on its own inbox (it closed a connection whose output
// overflowed, and the close waited for room in the inbox only the loop
// drains) and the server answered nothing until restarted.
func TestNonReadingClientsDoNotHangTheServer(t *testing.T) {
	s := startServer(t, func(c *Config) { c.AdminAddr = "127.0.0.1:0" })
	c, _ := connect(t, s)
	mustCreate(t, c, "/dl", bytes.Repeat([]byte("d"), 100_000), 0, openACL)
	const attackers, requests = 5, 1000
	var hostile []*rawClient
	for range attackers {
		hostile = append(hostile, pipelineGets(t, s.Addr().String(), "/dl", requests))
	}
	// Every attacker's output backs up and the core stops running its
	// requests, holding no more than a connection's budget each.
	eventually(t, waitTimeout, func() bool { return coreStats(t, s).OutputThrottled >= attackers },
		"all attackers throttled")
	budget := attackers * (zkcore.DefaultMaxConnOutputBytes + 100_100)
	if held := coreStats(t, s).HeldOutputBytes; held > int64(budget) {
		t.Errorf("server holds %d bytes of output for %d non-reading clients, want at most %d", held, attackers, budget)
	}
	// Meanwhile a healthy client is served.
	for i := range 20 {
		mustCreate(t, c, fmt.Sprintf("/healthy-%d", i), nil, 0, openACL)
	}
	for _, h := range hostile {
		h.nc.Close()
	}
	// After they leave, everything answers: new sessions, four-letter
	// words and the admin server.
	eventually(t, waitTimeout, func() bool { return coreStats(t, s).HeldOutputBytes == 0 },
		"the attackers' output released")
	if got := fourLetterWord(t, s.Addr().String(), "ruok"); got != "imok" {
		t.Errorf("ruok after the attack: %q", got)
	}
	if got := fourLetterWord(t, s.Addr().String(), "srvr"); !strings.Contains(got, "Mode: standalone") {
		t.Errorf("srvr after the attack: %q", got)
	}
	fresh := zkOpen(t, s)
	if _, _, err := fresh.Get("/dl"); err != nil {
		t.Errorf("a new session's get after the attack: %v", err)
	}
	httpc := http.Client{Timeout: waitTimeout}
	resp, err := httpc.Get("http://" + s.AdminAddr().String() + "/commands/ruok")
	if err != nil {
		t.Fatalf("admin server after the attack: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("admin ruok: %s", resp.Status)
	}
}

// TestSlowReaderIsServedInFull: a client that asks for 100 MB of replies
// and reads them late is neither closed nor allowed
// to make the server hold them all; it gets every reply, in order, once
// it reads. (Before, the server produced every reply at once, held up to
// 64 MiB of them and then closed the connection.)
func TestSlowReaderIsServedInFull(t *testing.T) {
	const nodeBytes = 256 << 10
	s := startServer(t)
	c := rawSession(t, s.Addr().String())
	writer := rawSession(t, s.Addr().String())
	if code, _ := writer.create("/big", bytes.Repeat([]byte("b"), nodeBytes), worldACL(zkproto.PermAll), 0); code != zkproto.CodeOK {
		t.Fatalf("create /big: %v", code)
	}
	const requests = 400
	var buf []byte
	for i := range requests {
		buf = zkproto.AppendRequestFrame(buf, zkproto.RequestHeader{Xid: int32(i + 1), Op: zkproto.OpGetData},
			&zkproto.GetDataRequest{Path: "/big"})
	}
	// One goroutine writes: the requests, then a ping every third of the
	// session timeout (30 s), as ZooKeeper's clients do while they wait, so
	// that the session stays alive however long this machine takes to
	// deliver 100 MB. The pings touch the session when they arrive; their
	// replies queue behind the reads, and each holds one of the
	// connection's MaxOutstanding credits until then. A ping every 100 ms
	// spent the 600 credits the reads leave after a minute; a loaded
	// machine took longer than that, the server stopped reading, the next
	// pings were never seen and the session expired under the reader.
	done := make(chan struct{})
	defer close(done)
	go func() {
		if _, err := c.nc.Write(buf); err != nil {
			return
		}
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				ping := zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: zkproto.XidPing, Op: zkproto.OpPing}, nil)
				if _, err := c.nc.Write(ping); err != nil {
					return
				}
			}
		}
	}()
	eventually(t, waitTimeout, func() bool { return coreStats(t, s).OutputThrottled >= 1 }, "the reader throttled")
	if held := coreStats(t, s).HeldOutputBytes; held > zkcore.DefaultMaxConnOutputBytes+2*nodeBytes {
		t.Errorf("server holds %d bytes for one slow reader, want at most %d", held, zkcore.DefaultMaxConnOutputBytes+2*nodeBytes)
	}
	for i := 0; i < requests; {
		c.nc.SetReadDeadline(time.Now().Add(waitTimeout))
		payload, err := zkproto.ReadFrame(c.r, nil, 4*nodeBytes)
		if err != nil {
			t.Fatalf("reply %d: %v", i+1, err)
		}
		h, _, err := zkproto.DecodeReply(payload, zkproto.OpGetData, 4*nodeBytes)
		if err == nil && h.Xid == zkproto.XidPing {
			continue
		}
		if err != nil || h.Xid != int32(i+1) || h.Err != zkproto.CodeOK {
			t.Fatalf("reply %d: %+v %v", i+1, h, err)
		}
		i++
	}
}

// TestStuckClientIsClosed: a connection whose writes make no progress for
// the write timeout is closed, and what it held is released.
func TestStuckClientIsClosed(t *testing.T) {
	s := startServer(t, func(c *Config) {
		c.Conn.MaxBuffer = c.Core.MaxBuffer
		c.Conn.MaxOutstanding = c.Core.MaxOutstanding
		c.Conn.MaxPendingOutputBytes = 64 << 20
		c.Conn.WriteTimeout = 300 * time.Millisecond
	})
	w := rawSession(t, s.Addr().String())
	w.create("/dl", bytes.Repeat([]byte("d"), 100_000), worldACL(zkproto.PermAll), 0)
	h := pipelineGets(t, s.Addr().String(), "/dl", 1000)
	eventually(t, waitTimeout, func() bool { return coreStats(t, s).OutputThrottled >= 1 }, "the stuck client throttled")
	eventually(t, waitTimeout, func() bool { return coreStats(t, s).HeldOutputBytes == 0 },
		"the stuck client closed and its output released")
	// The server closed it: after draining what the kernel buffered, the
	// client reads end of file.
	h.nc.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := io.Copy(io.Discard, h.nc); err != nil {
		t.Errorf("stuck client: %v, want end of file", err)
	}
}

// TestThrottledServerServesEveryone: with globalOutstandingLimit reached
// by clients whose requests cannot finish, the others still get answers,
// one request at a time, as ZooKeeper throttles.
func TestThrottledServerServesEveryone(t *testing.T) {
	s := startServer(t, func(c *Config) { c.GlobalOutstandingLimit = 50 })
	w := rawSession(t, s.Addr().String())
	w.create("/dl", bytes.Repeat([]byte("d"), 100_000), worldACL(zkproto.PermAll), 0)
	for range 3 {
		pipelineGets(t, s.Addr().String(), "/dl", 500)
	}
	eventually(t, waitTimeout, func() bool {
		req, _, _ := s.cfg.Conn.Limiter.InFlight()
		return req >= 50
	}, "the global limit reached")
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _ := dialZK(t, waitTimeout, s.Addr().String())
			for i := range 25 {
				start := time.Now()
				if _, err := c.Create(fmt.Sprintf("/t-%d-%d", g, i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Errorf("create under throttling: %v", err)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(start))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		t.Logf("healthy creates under throttling: p50 %v, max %v", lat[len(lat)/2], lat[len(lat)-1])
	}
}

// TestMaxCnxns: maxCnxns bounds the connections of all clients together.
func TestMaxCnxns(t *testing.T) {
	s := startServer(t, func(c *Config) { c.MaxCnxns = 2 })
	a := rawSession(t, s.Addr().String())
	rawSession(t, s.Addr().String())
	extra := rawDial(t, s.Addr().String())
	extra.writeFrame(jute.Marshal(newSessionRequest(30000)))
	extra.expectClosed()
	a.nc.Close()
	eventually(t, waitTimeout, func() bool {
		c, err := net.DialTimeout("tcp", s.Addr().String(), waitTimeout)
		if err != nil {
			return false
		}
		defer c.Close()
		r := &rawClient{t: t, nc: c, r: bufio.NewReader(c)}
		resp, err := r.connect(newSessionRequest(30000))
		return err == nil && resp.SessionID != 0
	}, "a free connection slot")
}

// TestRuokWhileTheLoopIsBusy: a four-letter word costs the loop nothing,
// so ruok answers while the loop works through a backlog (here: while it
// is held up on purpose).
func TestRuokWhileTheLoopIsBusy(t *testing.T) {
	s := startServer(t)
	release := make(chan struct{})
	held := make(chan struct{})
	go s.Inspect(func(*zkcore.Server) { close(held); <-release })
	<-held
	defer close(release)
	if got := fourLetterWord(t, s.Addr().String(), "ruok"); got != "imok" {
		t.Errorf("ruok while the loop is busy: %q", got)
	}
}

// TestLastReplyNotLostToAReset: when the server ends a connection after a
// reply while the client still has bytes on their way (a four-letter word
// followed by more input, requests pipelined behind a failed auth),
// closing with unread input would make the kernel reset the connection
// and could destroy the reply. The server closes its sending side, reads
// what the client still sends, and only then closes.
func TestLastReplyNotLostToAReset(t *testing.T) {
	s := startServer(t)
	junk := bytes.Repeat([]byte("x"), 256<<10)
	for i := range 20 {
		c, err := net.DialTimeout("tcp", s.Addr().String(), waitTimeout)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(waitTimeout))
		go c.Write(append([]byte("ruok"), junk...))
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || string(got) != "imok" {
			t.Fatalf("ruok %d followed by more input: %q, %v", i, got, err)
		}
	}
	for i := range 20 {
		r := rawSession(t, s.Addr().String())
		var buf []byte
		buf = zkproto.AppendRequestFrame(buf, zkproto.RequestHeader{Xid: zkproto.XidAuth, Op: zkproto.OpAuth},
			&zkproto.AuthPacket{Scheme: "no-such-scheme", Auth: []byte("x")})
		for range 2000 {
			buf = zkproto.AppendRequestFrame(buf, zkproto.RequestHeader{Xid: zkproto.XidPing, Op: zkproto.OpPing}, nil)
		}
		go r.nc.Write(buf)
		r.nc.SetReadDeadline(time.Now().Add(waitTimeout))
		payload, err := zkproto.ReadFrame(r.r, nil, 1<<20)
		if err != nil {
			t.Fatalf("failed auth %d with requests behind it: no reply: %v", i, err)
		}
		h, _, err := zkproto.DecodeReply(payload, zkproto.OpAuth, 0)
		if err != nil || h.Err != zkproto.CodeAuthFailed {
			t.Fatalf("failed auth %d: %+v %v", i, h, err)
		}
	}
}
