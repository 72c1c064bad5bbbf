package sim

import (
	"fmt"
	"net/netip"

	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
)

// Client connections are TCP-like too: FIFO each way. A server crash breaks
// them (the client hears of it after a short delay); a client that gives up
// on a connection closes it (the server hears of it).

// clientSink is one server incarnation's peer.Clients: bytes for client
// connections go on the wire to their client.
type clientSink struct {
	c   *Cluster
	id  zab.PeerID
	inc int
}

// Send puts a server's bytes for one connection on the wire.
func (k clientSink) Send(snd zkcore.Send) {
	c := k.c
	s := c.servers[k.id]
	if !s.up || s.inc != k.inc {
		return
	}
	sc, ok := s.conns[snd.Conn]
	if !ok {
		return // the client already closed it
	}
	at := max(c.nowMs+c.net.latencyMs(nil), sc.lastAtMs)
	sc.lastAtMs = at
	c.schedule(at, event{kind: evToClient, client: sc.client, conn: snd.Conn,
		payload: append([]byte(nil), snd.Data...), close: snd.Close})
	if snd.Close {
		delete(s.conns, snd.Conn)
	} else if len(snd.Data) > 0 {
		// The socket takes the bytes at once; the core learns it on its
		// next step, as a real server's writer reports them.
		c.schedule(c.nowMs, event{kind: evToServer, server: int(k.id), inc: k.inc, conn: snd.Conn,
			frame: frameWritten, written: len(snd.Data)})
	}
}

// connBroken tells the client of connection id that it broke (the server
// crashed): after what is already on the wire.
func (c *Cluster) connBroken(s *server, id zkcore.ConnID) {
	sc := s.conns[id]
	at := max(c.nowMs+c.net.latencyMs(nil), sc.lastAtMs)
	c.schedule(at, event{kind: evToClient, client: sc.client, conn: id, lost: true})
}

// dial opens a connection from client cl to server id and sends the
// ConnectRequest. A server that is down refuses it.
func (c *Cluster) dial(cl *client, id int, req zkproto.ConnectRequest) *conn {
	c.nextConn++
	cn := &conn{id: zkcore.ConnID(c.nextConn), server: id, openedMs: c.nowMs, handshake: true}
	s := c.servers[id]
	if !s.up {
		c.schedule(c.nowMs+c.net.latencyMs(nil), event{kind: evToClient, client: cl.id, conn: cn.id, lost: true})
		return cn
	}
	cn.inc = s.inc
	s.conns[cn.id] = &serverConn{client: cl.id}
	c.sendToServer(cn, event{frame: frameConnect, connect: req})
	return cn
}

// sendToServer puts a client frame on the wire to its server.
func (c *Cluster) sendToServer(cn *conn, e event) {
	e.kind, e.server, e.inc, e.conn = evToServer, cn.server, cn.inc, cn.id
	at := max(c.nowMs+c.net.latencyMs(nil), cn.lastAtMs)
	cn.lastAtMs = at
	c.schedule(at, e)
}

// deliverToServer hands a client frame to the server core.
func (c *Cluster) deliverToServer(e *event) {
	s := c.servers[e.server]
	if !s.up || s.inc != e.inc {
		return // the connection broke with the crash; the client was told
	}
	if s.paused {
		s.hold(e)
		return
	}
	c.drive(s, "client frame", func(now zkcore.Now) {
		zk := s.core
		switch e.frame {
		case frameConnect:
			addr := netip.MustParseAddrPort(fmt.Sprintf("10.0.%d.%d:%d", e.client/250, e.client%250+1, 10000+e.conn%50000))
			zk.NewConn(e.conn, addr, now)
			zk.Connect(e.conn, &e.connect, now)
		case frameRequest:
			req, err := zkcore.DecodeRequest(e.payload, zkcore.DefaultConfig().MaxBuffer)
			if err != nil {
				c.violate("client", "request frame does not decode: %v", err)
				return
			}
			zk.Request(e.conn, req, now)
		case frameClose:
			zk.Disconnect(e.conn)
			delete(s.conns, e.conn)
		case frameWritten:
			zk.Written(e.conn, e.written, now)
		}
	})
}
