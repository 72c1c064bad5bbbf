package bench

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/internal/testhost"
)

// startNullEnsemble runs a NullEnsemble for the test, its logs in dir.
func startNullEnsemble(t testing.TB, dir string) *NullEnsemble {
	t.Helper()
	e, err := StartNullEnsemble(NullEnsembleConfig{Host: "127.0.0.1", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// nullLogRecords reads a null ensemble member's log: its records' payloads.
func nullLogRecords(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for len(b) >= 4 {
		n := int(binary.BigEndian.Uint32(b))
		if n == 0 || n > len(b)-4 {
			break
		}
		out = append(out, b[4:4+n])
		b = b[4+n:]
	}
	return out
}

// TestNullEnsembleReplicates writes through each member and checks the
// answers, then that every member logged every write (two at least by the
// time it is answered, the third soon after), in the leader's order.
func TestNullEnsembleReplicates(t *testing.T) {
	dir := t.TempDir()
	e := startNullEnsemble(t, dir)
	ctx := t.Context()
	var paths []string
	for i, addr := range e.Addrs() {
		c, err := zkclient.Dial(ctx, addr, zkclient.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for k := range 5 {
			p := fmt.Sprintf("/member%d-write%d", i+1, k)
			if got, _, err := c.Create(ctx, p, []byte("x"), zkclient.CreateOptions{}); err != nil || got != p {
				t.Fatalf("create %s through member %d: %q %v", p, i+1, got, err)
			}
			paths = append(paths, p)
		}
		if _, err := c.Set(ctx, paths[len(paths)-1], []byte("y"), -1); err != nil {
			t.Fatalf("set through member %d: %v", i+1, err)
		}
		if data, _, err := c.Get(ctx, paths[len(paths)-1], false); err != nil || len(data) != 0 {
			t.Fatalf("get through member %d: %q %v", i+1, data, err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("close through member %d: %v", i+1, err)
		}
	}
	holding := func() (n int, logs [3][][]byte) {
		for m := range logs {
			logs[m] = nullLogRecords(t, filepath.Join(dir, fmt.Sprintf("member%d.log", m+1)))
			all := true
			for _, p := range paths {
				found := false
				for _, r := range logs[m] {
					found = found || bytes.Contains(r, []byte(p))
				}
				all = all && found
			}
			if all {
				n++
			}
		}
		return n, logs
	}
	if n, _ := holding(); n < 2 {
		t.Fatalf("%d members logged every answered write, want at least 2", n)
	}
	deadline := time.Now().Add(testhost.Scale(10 * time.Second))
	for {
		n, logs := holding()
		if n == 3 {
			for m := 1; m < 3; m++ {
				if len(logs[m]) != len(logs[0]) {
					t.Fatalf("member %d logged %d records, member 1 %d", m+1, len(logs[m]), len(logs[0]))
				}
				for k := range logs[0] {
					if !bytes.Equal(logs[m][k], logs[0][k]) {
						t.Fatalf("record %d differs between member 1 and member %d", k, m+1)
					}
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v only %d members logged every write", testhost.Scale(10*time.Second), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := e.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestNullEnsembleUnderLoad runs the load tool against every member with
// many writes in flight: all are answered, in order, without errors.
func TestNullEnsembleUnderLoad(t *testing.T) {
	e := startNullEnsemble(t, t.TempDir())
	for _, op := range []Op{OpCreate, OpMixed} {
		res, err := Run(t.Context(), Config{Servers: e.Addrs(), Op: op, Clients: 6, Inflight: 8, SizeBytes: 100,
			KeySpace: 50, Duration: testhost.Scale(300 * time.Millisecond)})
		if err != nil || res.Errors != 0 || res.Ops == 0 {
			t.Fatalf("%s: %d ops, %d errors, %v", op, res.Ops, res.Errors, err)
		}
	}
	if err := e.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestNullEnsembleBadClient: garbage after the handshake closes that
// connection, and the members go on serving everyone else.
func TestNullEnsembleBadClient(t *testing.T) {
	e := startNullEnsemble(t, t.TempDir())
	addr := e.Addrs()[0]
	good, err := zkclient.Dial(t.Context(), addr, zkclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(testhost.Scale(10 * time.Second)))
	connect := zkproto.AppendFrame(nil, jute.Marshal(&zkproto.ConnectRequest{TimeoutMs: 10_000, Passwd: make([]byte, zkproto.PasswdLen)}))
	if _, err := nc.Write(connect); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	if _, err := zkproto.ReadFrame(br, nil, jute.DefaultMaxBuffer); err != nil {
		t.Fatalf("connect reply: %v", err)
	}
	if _, err := nc.Write([]byte{0, 0, 0, 3, 1, 2, 3}); err != nil { // shorter than a request header
		t.Fatal(err)
	}
	if _, err := io.ReadAll(br); err != nil {
		t.Fatalf("the bad connection was not closed: %v", err)
	}
	if _, _, err := good.Create(t.Context(), "/after", nil, zkclient.CreateOptions{}); err != nil {
		t.Fatalf("a write after the bad client: %v", err)
	}
	if err := e.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestNullEnsembleClose: Close ends the sessions and returns with writes
// in flight, and a log file that exists refuses a start.
func TestNullEnsembleClose(t *testing.T) {
	dir := t.TempDir()
	e, err := StartNullEnsemble(NullEnsembleConfig{Host: "127.0.0.1", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c, err := zkclient.Dial(t.Context(), e.Addrs()[2], zkclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for k := 0; ; k++ {
				if _, _, err := c.Create(t.Context(), fmt.Sprintf("/c%d-%d", i, k), nil, zkclient.CreateOptions{}); err != nil {
					return
				}
			}
		})
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	if !errors.Is(c.Err(), zkclient.ErrConnectionLoss) {
		t.Fatalf("after Close: %v", c.Err())
	}
	wg.Wait()
	if _, err := StartNullEnsemble(NullEnsembleConfig{Host: "127.0.0.1", Dir: dir}); err == nil {
		t.Fatal("a second ensemble started on the first one's log files")
	}
}

// TestNullEnsembleApart runs the members as separate processes would: one
// NullEnsemble each, the followers started before the leader and dialing
// it until it is up. Writes through each are answered; a member that is
// not 1, 2 or 3, or twice, is refused, as is a follower with no leader's
// address.
func TestNullEnsembleApart(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	peer := ln.Addr().String()
	ln.Close() // a free port for the leader, taken again below
	type started struct {
		e   *NullEnsemble
		err error
	}
	results := make([]chan started, 3)
	for _, id := range []int{1, 3, 2} {
		results[id-1] = make(chan started, 1)
		go func() {
			e, err := StartNullEnsemble(NullEnsembleConfig{Host: "127.0.0.1", Dir: dir, Members: []int{id}, PeerAddr: peer,
				LinkTimeout: testhost.Scale(20 * time.Second)})
			results[id-1] <- started{e, err}
		}()
	}
	var addrs []string
	for id, ch := range results {
		r := <-ch
		if r.err != nil {
			t.Fatalf("member %d: %v", id+1, r.err)
		}
		t.Cleanup(func() { r.e.Close() })
		addrs = append(addrs, r.e.Addrs()...)
	}
	if len(addrs) != 3 {
		t.Fatalf("addresses %v", addrs)
	}
	res, err := Run(t.Context(), Config{Servers: addrs, Op: OpCreate, Clients: 3, Inflight: 4, SizeBytes: 100,
		Duration: testhost.Scale(300 * time.Millisecond)})
	if err != nil || res.Errors != 0 || res.Ops == 0 {
		t.Fatalf("create through three processes' members: %d ops, %d errors, %v", res.Ops, res.Errors, err)
	}
	for _, cfg := range []NullEnsembleConfig{
		{Host: "127.0.0.1", Dir: t.TempDir(), Members: []int{4}},
		{Host: "127.0.0.1", Dir: t.TempDir(), Members: []int{1, 1}},
		{Host: "127.0.0.1", Dir: t.TempDir(), Members: []int{3}},
	} {
		if e, err := StartNullEnsemble(cfg); err == nil {
			e.Close()
			t.Errorf("members %v, leader at %q: started", cfg.Members, cfg.PeerAddr)
		}
	}
}

// TestReadNullMsg decodes the members' messages, well-formed and not.
func TestReadNullMsg(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		kind    int
		origin  int
		a, b    uint64
		payload string
		bad     bool
	}{
		{name: "propose", in: appendNullMsg(nil, nullMsgPropose, 2, 7, 9, []byte("req")), kind: nullMsgPropose, origin: 2, a: 7, b: 9, payload: "req"},
		{name: "commit", in: appendNullMsg(nil, nullMsgCommit, 1, 1<<40, 0, nil), kind: nullMsgCommit, origin: 1, a: 1 << 40},
		{name: "short header", in: appendNullMsg(nil, nullMsgAck, 0, 1, 0, nil)[:10], bad: true},
		{name: "short payload", in: appendNullMsg(nil, nullMsgForward, 0, 1, 0, []byte("abc"))[:nullMsgHeaderLen+1], bad: true},
		{name: "length under the header", in: append([]byte{0, 0, 0, 1}, make([]byte, nullMsgHeaderLen-4)...), bad: true},
		{name: "oversize", in: binary.BigEndian.AppendUint32(nil, uint32(jute.DefaultMaxBuffer+nullMsgHeaderLen)), bad: true},
		{name: "unknown origin", in: appendNullMsg(nil, nullMsgAck, 3, 1, 0, nil), bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "oversize" {
				tt.in = append(tt.in, make([]byte, nullMsgHeaderLen-4)...)
			}
			kind, origin, a, b, payload, err := readNullMsg(bufio.NewReader(bytes.NewReader(tt.in)))
			if tt.bad {
				if err == nil {
					t.Fatalf("decoded %d %d %d %d %q, want an error", kind, origin, a, b, payload)
				}
				return
			}
			if err != nil || kind != tt.kind || origin != tt.origin || a != tt.a || b != tt.b || string(payload) != tt.payload {
				t.Fatalf("got %d %d %d %d %q %v", kind, origin, a, b, payload, err)
			}
		})
	}
}

// FuzzReadNullMsg: any bytes decode to a message that encodes back to
// the bytes read, or to an error; never a panic.
func FuzzReadNullMsg(f *testing.F) {
	f.Add(appendNullMsg(nil, nullMsgPropose, 1, 3, 4, []byte("payload")))
	f.Add(appendNullMsg(nil, nullMsgAck, 0, 3, 0, nil))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		kind, origin, a, b, payload, err := readNullMsg(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			return
		}
		out := appendNullMsg(nil, kind, origin, a, b, payload)
		if !bytes.Equal(out, in[:len(out)]) {
			t.Fatalf("decoded %x from %x", out, in)
		}
	})
}
