// Package quorumnet carries zab messages between servers over TCP, with
// Apache ZooKeeper's framing on both of its ports (docs/zookeeper-protocol.md §10), so that
// keeper servers could later join a ZooKeeper ensemble.
//
// # Election port
//
// Fast-leader-election notifications travel on connections between every
// pair of voters (and from observers to voters), dialled when the first
// notification for a peer is sent. The dialling side first sends
//
//	+---------------------+-----------+------------+----------------------+
//	| long -65536 (proto) | long sid  | int length | length bytes address |
//	+---------------------+-----------+------------+----------------------+
//
// where the address (at most 2048 bytes) is the dialler's election
// host:port. Only a connection dialled by the larger id survives: a server
// that receives one from a smaller id closes it and dials back (to the
// address in its own configuration, not the one sent), and a server that
// dials a larger id sends the handshake and closes, waiting for that dial
// back. After the handshake each message is framed as
//
//	+------------------------+---------------------+
//	| int length (1..512 KB) | notification        |
//	+------------------------+---------------------+
//
// and a notification (version 2, the format sent) is
//
//	+-----------+-------------+-----------+--------------------+----------------+
//	| int state | long leader | long zxid | long electionEpoch | long peerEpoch |
//	+-----------+-------------+-----------+--------------------+----------------+
//	| int version = 2 | int configLength | config text (zab.Message.Data) |
//	+-----------------+------------------+--------------------------------+
//
// The 28-byte (no peer epoch) and 40-byte (peer epoch, version 1) forms of
// older servers are accepted. The config text is the sender's active
// configuration, empty from a member without reconfiguration. A
// dial that fails is retried, with backoff, when the next notification for
// the peer is sent; queued notifications are dropped then, since FLE
// retransmits and only the newest vote matters.
//
// # Quorum port
//
// A learner dials the leader's quorum port when zab sends FOLLOWERINFO or
// OBSERVERINFO, which is also the first packet on the connection and
// names the learner. The leader only ever answers on connections learners
// opened. Packets are ZooKeeper's QuorumPacket with no length prefix:
//
//	+----------+-----------+-------------+----------------------------+
//	| int type | long zxid | buffer data | vector<Id> authinfo        |
//	+----------+-----------+-------------+----------------------------+
//
// (buffer: int length, -1 for null, then the bytes; Id: two ustrings).
// authinfo is null except on REQUEST, where it carries the client's
// identities (zab.Message.AuthInfo, an empty vector when there are none);
// on other types a received one is checked and dropped. Per type, as
// ZooKeeper lays them out:
//
//	type              zxid                     data
//	REQUEST (1)       -1                       opaque: long session; int cxid; int op; body (no length)
//	PROPOSAL (2)      txn zxid                 opaque txn
//	ACK (3)           acked zxid               null
//	COMMIT (4)        committed zxid           null
//	PING (5)          leader: last proposed    leader: null; learner: its session touches
//	                  learner: echoed          ({long session; int timeout}*, never null)
//	REVALIDATE (6)    -1                       learner: {long sessionId; int timeout};
//	                                           leader: {long sessionId; boolean valid}
//	SYNC (7)          0                        null
//	INFORM (8)        txn zxid                 opaque txn
//	COMMITANDACT. (9) committed zxid           long designated leader (zab.Message.Designated)
//	NEWLEADER (10)    newEpoch<<32             dynamic config text ("" without reconfiguration)
//	FOLLOWERINFO (11) acceptedEpoch<<32        LearnerInfo{long sid; int version; long configVersion}
//	UPTODATE (12)     -1                       null
//	DIFF (13)         leader's last zxid       null
//	TRUNC (14)        zxid to truncate to      null
//	SNAP (15)         snapshot zxid            null; the snapshot follows (below)
//	OBSERVERINFO (16) as FOLLOWERINFO          as FOLLOWERINFO
//	LEADERINFO (17)   newEpoch<<32             int version
//	ACKEPOCH (18)     learner's last zxid      int currentEpoch, or -1
//	INFORMANDACT.(19) txn zxid                 long designated leader; opaque txn
//
// The protocol version is ZooKeeper's 0x10000, or 0x14b50 from a keeper
// server, which announces zab.DialectKeeper (docs/zookeeper-protocol.md
// §10.5); zab.Message.Dialect carries it both ways, and a link cuts runs of
// ACKs or COMMITs only to a peer that announced it. zab.Message carries
// FOLLOWERINFO's acceptedEpoch and ACKEPOCH's epoch in Epoch, the learner's
// id in From, its configVersion in ConfigVersion (8-, 12- and 20-byte
// forms are accepted; the 8-byte one announces no dialect, the shorter
// ones configVersion 0). zab's LastZxid on
// FOLLOWERINFO has no place in ZooKeeper's packet and is not sent: the
// leader learns the learner's last zxid from ACKEPOCH. zab's
// MsgSyncRequest is sent as ZooKeeper forwards a client's sync: a REQUEST
// whose op is sync(9) (the data in Message.Data, or session 0, cxid 0 and
// path "/" when it is nil), and every such REQUEST decodes as
// MsgSyncRequest, so a MsgRequest must never carry a sync.
// COMMITANDACTIVATE must carry exactly the designated leader's long;
// anything after it, which ZooKeeper would ignore, closes the link.
//
// SNAP is followed on the stream, as ZooKeeper does, by the snapshot body
// (the snapshot file of docs/zookeeper-protocol.md §9.4 without its header and seals, starting
// with the session list) and then the ustring "BenWasHere":
//
//	+--------------+---------------------------------------+--------------------------+
//	| QuorumPacket | int sessions; {long; int}*; ACL cache; | int 10, "BenWasHere"     |
//	| type 15      | nodes...; ustring "/"                  |                          |
//	+--------------+---------------------------------------+--------------------------+
//
// The body has no length prefix: the receiver walks its jute structure to
// find its end, and the sender checks the same before writing it. The
// body is zab.Message.Data of the SNAP message on both sides.
//
// # TLS
//
// With Config.TLS (zoo.cfg sslQuorum, portUnification, ssl.quorum.*;
// docs/tls.md) both ports run a TLS handshake before the framing above:
// a dialled connection as a client when TLS.Dial, an accepted one as a
// server when its first byte is 0x16 (a TLS handshake record), which no
// plaintext peer sends first; a plaintext first byte is let in only with
// TLS.AcceptPlaintext. Both sides check the other's certificate against
// the trust store and, with TLS.HostnameVerification, against the address
// of the far end. A refused handshake closes that connection only.
//
// # SASL
//
// With Config.SASL (zoo.cfg quorum.auth.*; docs/sasl.md) the side that
// opens a connection authenticates to the side that accepts it, after any
// TLS handshake: a learner right after its dial of the quorum port, an
// election dialler right after its handshake (whichever id is larger).
// Both send QuorumAuthPackets with no length prefix:
//
//	+-------------------------------+------------+--------------+
//	| long magic 0x5f2435013501edcc | int status | buffer token |
//	+-------------------------------+------------+--------------+
//
// status is 0 in progress, 1 success, -1 error. The learner (only with
// SASL.LearnerRequire) sends an empty token, gets the DIGEST-MD5 challenge
// (status 0), sends its response, and is in when the answer is status 1
// with an rspauth that proves the server knows its password; anything else
// closes the connection. With Kerberos (SASL.KerberosLearner) it sends the
// GSSAPI initial context token first, gets the AP-REP, sends an empty
// token, gets the wrapped security-layer offer and answers it with no
// layer and its own principal; a server with SASL.KerberosServer lets in
// only a principal service/host@REALM whose host is one of the
// configuration's (SASL.AuthorizedHosts). The accepting side peeks at the first long: the
// magic starts the exchange, anything else is the connection's own traffic,
// let in only without SASL.ServerRequire. A failed exchange gets status -1
// and, with ServerRequire, the close; without it the connection is served
// (the learner, which requires its own authentication, closes it). Only
// peers of the configuration are let in, authenticated or not.
//
// # Limits
//
// A received packet's data may not exceed Config.MaxPacketDataBytes
// (DefaultMaxPacketDataBytes, 4 MiB: twice what a default Java peer
// accepts) and a snapshot Config.MaxSnapshotBytes; an election frame may
// not exceed 512 KB. Anything malformed or over a limit closes that
// connection only.
//
// # Links, queues and MsgDisconnected
//
// Each quorum link has one bounded send queue (Config.QueueMessages) and
// one writer goroutine, so messages to a peer leave in Send order; Send
// never blocks. A reader goroutine per connection delivers what arrives on
// Recv in order. When a quorum link goes down — the peer closed it, a read
// or write failed, input was malformed, or its queue overflowed —
// MsgDisconnected{From: peer} follows the link's last message on Recv; a
// quorum message for a peer with no link is dropped and reported the same
// way. A link closed because zab asked (Disconnect), or replaced by the
// learner's own new FOLLOWERINFO, is not reported to this side. A leader's
// MsgDisconnected for a learner's old link always arrives before the
// FOLLOWERINFO of its new one. Election connections are never reported:
// FLE does not depend on them.
package quorumnet
