package chaos

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// An attack is one hostile client's behaviour against one server.
type attack struct {
	name string
	// port picks the server's port: its client, election or quorum port.
	port func(s *Server) int
	// send writes the hostile bytes on a fresh connection.
	send func(c net.Conn, rng *rand.Rand) error
}

const (
	// attackReadTimeout bounds how long an attacker waits for the server
	// to answer or close.
	attackReadTimeout = time.Second
	// hugeMultiOps is a multi that fits jute.maxbuffer but is far larger
	// than any real one.
	hugeMultiOps = 40000
	// deepPathLevels makes a 20 KB path of 10,000 components.
	deepPathLevels = 10000
)

func clientPort(s *Server) int   { return s.ClientPort }
func electionPort(s *Server) int { return s.ElecPort }
func quorumPort(s *Server) int   { return s.QuorumPort }

// attacks are scenario 8's hostile inputs.
var attacks = []attack{
	{"oversize-length-prefix", clientPort, func(c net.Conn, _ *rand.Rand) error {
		return writeAll(c, []byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	}},
	{"negative-length-prefix", clientPort, func(c net.Conn, _ *rand.Rand) error {
		return writeAll(c, []byte{0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4})
	}},
	{"truncated-connect", clientPort, func(c net.Conn, _ *rand.Rand) error {
		f := connectFrame()
		return writeAll(c, f[:len(f)/2])
	}},
	{"truncated-request", clientPort, func(c net.Conn, _ *rand.Rand) error {
		f := zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: 1, Op: zkproto.OpCreate},
			&zkproto.CreateRequest{Path: "/adversary", Data: make([]byte, 1000), ACL: zkproto.OpenACLUnsafe})
		return handshakeThen(c, f[:len(f)-300])
	}},
	{"unknown-opcode", clientPort, func(c net.Conn, _ *rand.Rand) error {
		return handshakeThen(c, zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: 1, Op: 9999}, nil))
	}},
	{"garbage-after-handshake", clientPort, func(c net.Conn, rng *rand.Rand) error {
		return handshakeThen(c, zkproto.AppendFrame(nil, randomBytes(rng, 2000)))
	}},
	{"garbage-instead-of-handshake", clientPort, func(c net.Conn, rng *rand.Rand) error {
		return writeAll(c, randomBytes(rng, 4096))
	}},
	{"huge-multi", clientPort, func(c net.Conn, _ *rand.Rand) error {
		return handshakeThen(c, hugeMulti())
	}},
	{"huge-setwatches", clientPort, func(c net.Conn, _ *rand.Rand) error {
		sw := &zkproto.SetWatches{}
		for i := range hugeMultiOps {
			sw.DataWatches = append(sw.DataWatches, "/w"+strconv.Itoa(i))
		}
		return handshakeThen(c, zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: -8, Op: zkproto.OpSetWatches}, sw))
	}},
	{"deep-path", clientPort, func(c net.Conn, _ *rand.Rand) error {
		path := strings.Repeat("/a", deepPathLevels)
		return handshakeThen(c, zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: 1, Op: zkproto.OpCreate},
			&zkproto.CreateRequest{Path: path, ACL: zkproto.OpenACLUnsafe}))
	}},
	{"bad-four-letter-word", clientPort, func(c net.Conn, _ *rand.Rand) error {
		return writeAll(c, []byte("zzzz"))
	}},
	{"election-garbage", electionPort, func(c net.Conn, rng *rand.Rand) error {
		return writeAll(c, randomBytes(rng, 4096))
	}},
	{"election-1GiB-address", electionPort, func(c net.Conn, _ *rand.Rand) error {
		b := binary.BigEndian.AppendUint64(nil, uint64(0xffffffffffff0000)) // -65536
		b = binary.BigEndian.AppendUint64(b, 2)
		b = binary.BigEndian.AppendUint32(b, 1<<30)
		return writeAll(c, b)
	}},
	{"election-unknown-sid", electionPort, func(c net.Conn, _ *rand.Rand) error {
		b := binary.BigEndian.AppendUint64(nil, uint64(0xffffffffffff0000))
		b = binary.BigEndian.AppendUint64(b, 77)
		addr := "127.0.0.1:1"
		b = binary.BigEndian.AppendUint32(b, uint32(len(addr)))
		return writeAll(c, append(b, addr...))
	}},
	{"election-1GiB-frame", electionPort, func(c net.Conn, _ *rand.Rand) error {
		// A handshake naming a real, larger id (so the connection is
		// kept), then a notification frame claiming 1 GiB.
		b := binary.BigEndian.AppendUint64(nil, uint64(0xffffffffffff0000))
		b = binary.BigEndian.AppendUint64(b, 9)
		addr := "127.0.0.1:1"
		b = binary.BigEndian.AppendUint32(b, uint32(len(addr)))
		b = append(b, addr...)
		b = binary.BigEndian.AppendUint32(b, 1<<30)
		return writeAll(c, b)
	}},
	{"quorum-garbage", quorumPort, func(c net.Conn, rng *rand.Rand) error {
		return writeAll(c, randomBytes(rng, 4096))
	}},
}

// Attack runs every attack once against s and tallies how the server
// answered each: "closed" (it closed the connection), "reset", "open" (it
// kept the connection, waiting for more), each with "+reply" when it sent
// something first.
func Attack(ctx context.Context, s *Server, rng *rand.Rand, o *Outcomes) int {
	n := 0
	for _, a := range attacks {
		if ctx.Err() != nil {
			break
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(a.port(s)))
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			o.add(a.name, "dial-failed")
			continue
		}
		n++
		_ = c.SetDeadline(time.Now().Add(attackReadTimeout))
		outcome := "write-failed"
		if err := a.send(c, rng); err == nil {
			got, err := io.Copy(io.Discard, c) // until the server closes or the deadline
			outcome = "closed"
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				outcome = "open"
			case errors.Is(err, syscall.ECONNRESET):
				outcome = "reset"
			}
			if got > 0 {
				outcome += "+reply"
			}
		}
		o.add(a.name, outcome)
		c.Close()
	}
	return n
}

// IdleConnections opens n connections to s's client port that never say
// anything, holds them for hold, and closes them. It returns how many
// opened.
func IdleConnections(ctx context.Context, s *Server, n int, hold time.Duration) int {
	var conns []net.Conn
	for range n {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	sleepCtx(ctx, hold)
	for _, c := range conns {
		c.Close()
	}
	return len(conns)
}

func writeAll(c net.Conn, b []byte) error {
	_, err := c.Write(b)
	return err
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}

// connectFrame is a new session's handshake.
func connectFrame() []byte {
	req := zkproto.ConnectRequest{TimeoutMs: 4000, Passwd: make([]byte, zkproto.PasswdLen), HasReadOnly: true}
	return zkproto.AppendFrame(nil, jute.Marshal(&req))
}

// handshakeThen opens a session, waits for the server's answer and sends
// frame.
func handshakeThen(c net.Conn, frame []byte) error {
	if err := writeAll(c, connectFrame()); err != nil {
		return err
	}
	if _, err := zkproto.ReadFrame(c, nil, jute.DefaultMaxBuffer); err != nil {
		return err
	}
	return writeAll(c, frame)
}

// hugeMulti is a multi of hugeMultiOps version checks.
func hugeMulti() []byte {
	m := &zkproto.MultiRequest{}
	for i := range hugeMultiOps {
		m.Ops = append(m.Ops, zkproto.MultiOp{Op: zkproto.OpCheck,
			Record: &zkproto.CheckVersionRequest{Path: "/m" + strconv.Itoa(i), Version: 1}})
	}
	return zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: 1, Op: zkproto.OpMulti}, m)
}

// memoryHighWaterKB reads a process's peak resident set (VmHWM) in KiB.
func memoryHighWaterKB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// Adversaries attacks a random server each round — every attack of
// attacks, then idle connections held for hold — and checks that every
// server survived; one that did not is a crash, reported with its log,
// and restarted.
func Adversaries(idle int, hold time.Duration) func(ctx context.Context, r *Run) {
	return func(ctx context.Context, r *Run) {
		rng := r.ClientRand(8000)
		o := &Outcomes{}
		rounds, attacksRun, idleOpened := 0, 0, 0
		for ctx.Err() == nil {
			s := r.Cluster.Servers[r.IntN(len(r.Cluster.Servers))]
			r.Fault("hostile clients and peers against %s", s.Name)
			attacksRun += Attack(ctx, s, rng, o)
			idleOpened += IdleConnections(ctx, s, idle, hold)
			rounds++
			for _, srv := range r.Cluster.Servers {
				if p := srv.Proc(); p != nil && !p.Running() {
					r.Report.Violate("crash", "%s exited (%v) under attack:\n%s", srv.Name, p.ExitErr(), LogTail(p.LogPath, 20))
					restart(ctx, r, srv, nil)
				}
			}
		}
		r.Report.Figure("attacks", "%d", attacksRun)
		o.Figure(r, "answers")
		r.Report.Figure("idle-conns", "%d", idleOpened)
	}
}
