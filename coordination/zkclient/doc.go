// Package zkclient is keeper's own ZooKeeper client: one TCP connection
// carrying one session, built directly on zkproto. `keeper shell` uses it,
// and so does the load tool, so the request path is pipelined and cheap:
// no goroutine, timer or map entry per request.
//
// # One connection, one session
//
// Dial opens a socket, performs the handshake (a ConnectRequest for a new
// session) and returns a Conn. There is no reconnection: when the socket
// breaks, the Conn is finished for good. Every call still waiting for a
// reply fails with an error wrapping ErrConnectionLoss (the session itself
// may live on in the server until it expires), Events is closed, Done is
// closed and Err reports why. Dial again for a new session, or with
// Options.SessionID to reattach this one (to another server of the
// ensemble, say), passing Conn.Watches as Options.Watches so that the
// session's watches are set again (SetWatches), as the Java client does.
//
// # TLS and SASL
//
// With Options.TLS the connection runs the TLS handshake before the
// ConnectRequest; with Options.SASL it runs a SASL exchange (sasl(102)
// requests, DIGEST-MD5) right after the ConnectResponse and before any
// other request, as the Java client does. NewSecurity builds both from
// the Java client's properties (zoocfg.ParseClientSecurity). A refused
// exchange fails the dial with an error wrapping ErrSASLRefused and
// zkproto.ErrAuthFailed (docs/sasl.md, docs/tls.md).
//
// # A session over connections
//
// OpenSession returns a Session, which owns the current Conn and replaces
// it, as the Java client (and BookKeeper's ZooKeeperClient over it) does:
// when the connection breaks it reattaches the session to the next server
// of its list (shuffled, with a backoff between rounds that doubles up to
// a second) and sets the session's watches again there; when a server
// says the session expired, or none took it back within the session
// timeout, it opens a new session. Its watches are one-shot channels
// (GetW, ExistsW, ChildrenW), each receiving one event: the change, or an
// EventNone with StateExpired or StateClosed when the watch ended with
// its session or with Close, so that its owner arms it again (and
// re-reads) on the new session. States reports each change of state. A
// call waits for a connection while there is none; one in flight when the
// connection broke fails with ErrConnectionLoss.
//
// # Goroutines and ordering
//
//	caller ──Go/Do──▶ encode frame, assign xid, append to pending (under mu)
//	                        │ wake
//	                        ▼
//	                   writer: flush all queued frames in one write;
//	                           ping when idle; detect a silent server
//	socket ◀────────────────┘
//	socket ────────────▶ reader: decode reply, pop the head of pending,
//	                             check its xid, run its callback;
//	                             notifications go to Events
//
// Requests leave in the order Go was called and the server answers them
// in that order, so replies are matched strictly FIFO: a reply whose xid
// is not the head of pending is a protocol violation that ends the
// connection. Ordinary xids count up from 1 and wrap from 2^31-1 back to
// 1, as the Java client's do. Pings (xid -2) and auth packets (xid -4)
// use reserved xids and are matched in queues of their own, so a server
// may answer them in order (as keeper does) or out of band (as Apache
// ZooKeeper answers auth).
//
// Callbacks run on the reader goroutine, one at a time, in request order.
// They must not block: a callback that waits for another reply (by calling
// Do, say) deadlocks the connection. Calling Go from a callback is fine.
//
// # Watches
//
// Notifications (xid -1) are delivered to the Events channel in the order
// the server sent them. The server sends a write's notifications before
// its reply, so once a call returns, the events it triggered on this
// connection are already in the channel. The channel is bounded
// (Options.EventBuffer). If it is full when a notification arrives, the
// event cannot be delivered without either losing it or stalling every
// reply behind it, so the connection fails instead, with an error
// wrapping ErrEventOverflow: a lost watch is a silent correctness bug, a
// failed connection is a loud one. Whoever sets watches must drain Events.
//
// # Liveness
//
// With a negotiated session timeout T, the writer sends a ping when
// nothing has been sent for T/3, and the connection fails if nothing at
// all has been received for 2T/3; both follow the Java client.
//
// # Errors
//
// A reply with a non-zero err yields a *zkproto.Error carrying the code
// and, when the request had one, the path; test it with errors.Is against
// the zkproto sentinels or with zkproto.CodeOf. A failed connection
// yields an error wrapping ErrConnectionLoss (and the cause), except after
// a rejected auth packet, when every later call fails with an error
// wrapping zkproto.ErrAuthFailed, and after Close, when calls fail with
// ErrClosed.
package zkclient
