package slowconsumer

import (
	"errors"
	"net"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// zkReplyOverheadBytes is what a getData reply adds to the node's data:
// the frame's length prefix, the reply header, the data's length and the
// Stat.
const zkReplyOverheadBytes = 4 + 16 + 4 + 68

// ZooKeeper is ZooKeeper's client protocol: every connection opens a
// session that asks for sessionTimeout, its reads are getData of path,
// whose data is dataBytes long, and its pings keep the session alive.
func ZooKeeper(path string, dataBytes int, sessionTimeout time.Duration) Protocol {
	return Protocol{
		Name: "zookeeper",
		Handshake: func(c net.Conn) error {
			req := zkproto.ConnectRequest{TimeoutMs: int32(sessionTimeout.Milliseconds()),
				Passwd: make([]byte, zkproto.PasswdLen), HasReadOnly: true}
			if _, err := c.Write(zkproto.AppendFrame(nil, jute.Marshal(&req))); err != nil {
				return err
			}
			payload, err := zkproto.ReadFrame(c, nil, 1<<10)
			if err != nil {
				return err
			}
			resp, err := zkproto.DecodeConnectResponse(payload, 1<<10)
			if err != nil {
				return err
			}
			if resp.TimeoutMs <= 0 {
				return errors.New("session refused")
			}
			return nil
		},
		Read: func(i int) []byte {
			return zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: int32(i + 1), Op: zkproto.OpGetData},
				&zkproto.GetDataRequest{Path: path})
		},
		Ping: func(int) []byte {
			return zkproto.AppendRequestFrame(nil, zkproto.RequestHeader{Xid: zkproto.XidPing, Op: zkproto.OpPing}, nil)
		},
		ReplyBytes: dataBytes + zkReplyOverheadBytes,
	}
}

// Node is a node the attackers read; create it, with Bytes bytes of data,
// before the attack.
type Node struct {
	Path  string
	Bytes int
}

// The nodes ZooKeeperPlan reads: a large one for the single attackers
// (jute.maxbuffer's default, 1 MiB, bounds a node; half of it makes the
// server hold a large reply without nearing the limit) and a smaller one
// for the many connections.
var (
	LargeNode = Node{Path: "/slow-consumers-large", Bytes: 512 << 10}
	SmallNode = Node{Path: "/slow-consumers-small", Bytes: 64 << 10}
)

// ZooKeeperPlan is the round the chaos scenario "slow consumers" and the
// side-by-side test run against a ZooKeeper server whose
// maxSessionTimeout is sessionTimeout: one connection pipelines 40 reads of
// LargeNode (20 MiB of replies) and reads nothing, one reads a byte a
// second, one stops half-way through its first reply, and 2,000
// connections each pipeline five reads of SmallNode as soon as they open
// and read nothing. All of them ping, so their sessions live; the hold
// outlasts keeper's write timeout (maxSessionTimeout) by 2 s, so that
// keeper has closed every stuck connection when the round looks.
//
// A server holds for this round at most its output budget plus, for every
// connection, its read buffer and one reply (docs/backpressure.md): the
// many connections ask for SmallNode so that this last part stays at
// 2,000 × (64 KiB + 64 KiB) = 250 MiB; each asking for LargeNode would
// make it 2,000 × 576 KiB.
func ZooKeeperPlan(sessionTimeout time.Duration) Plan {
	large := ZooKeeper(LargeNode.Path, LargeNode.Bytes, sessionTimeout)
	small := ZooKeeper(SmallNode.Path, SmallNode.Bytes, sessionTimeout)
	return Plan{
		Attacks: map[Kind]Attack{
			Pipeline:    {Proto: large, Conns: 1, Reads: 40},
			ByteASecond: {Proto: large, Conns: 1, Reads: 40},
			MidReply:    {Proto: large, Conns: 1, Reads: 40},
			ManyConns:   {Proto: small, Conns: 2000, Reads: 5},
		},
		Hold:      sessionTimeout + 2*time.Second,
		PingEvery: sessionTimeout / 4,
	}
}
