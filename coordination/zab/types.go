package zab

import (
	"fmt"

	"keeper/coordination/zxid"
)

// PeerID is a server id: the N of server.N in zoo.cfg, and the myid file.
type PeerID int64

// Role is what a node is doing.
type Role uint8

// Roles.
const (
	Looking Role = iota
	Following
	Leading
	Observing
)

func (r Role) String() string {
	switch r {
	case Looking:
		return "looking"
	case Following:
		return "following"
	case Leading:
		return "leading"
	case Observing:
		return "observing"
	}
	return fmt.Sprintf("Role(%d)", r)
}

// MsgType is the type of a Message. The quorum types keep the numbers of
// ZooKeeper's QuorumPacket (docs/zookeeper-protocol.md §10.3), so the transport can frame them as
// QuorumPackets; the others are keeper's own and never cross a link.
type MsgType int32

// Message types.
const (
	MsgRequest      MsgType = 1  // learner to leader: a forwarded client request (payload opaque)
	MsgProposal     MsgType = 2  // leader to follower: a txn to log
	MsgAck          MsgType = 3  // follower to leader: logged up to Zxid
	MsgCommit       MsgType = 4  // leader to follower: committed up to Zxid
	MsgPing         MsgType = 5  // both ways: liveness (the learner's reply may carry session touches)
	MsgRevalidate   MsgType = 6  // both ways: is a session alive? (payload opaque: the caller's)
	MsgSync         MsgType = 7  // leader to learner: everything committed before the sync request is sent
	MsgInform       MsgType = 8  // leader to observer: a committed txn with its data
	MsgNewLeader    MsgType = 10 // leader to learner: sync done; Zxid = newEpoch<<32; Data: the last-seen configuration's Text
	MsgFollowerInfo MsgType = 11 // follower to leader: Zxid = acceptedEpoch<<32 (its last zxid comes in ACKEPOCH)
	MsgUpToDate     MsgType = 12 // leader to learner: start serving
	MsgDiff         MsgType = 13 // leader to learner: proposals up to Zxid follow
	MsgTrunc        MsgType = 14 // leader to learner: truncate the log to Zxid
	MsgSnap         MsgType = 15 // leader to learner: a snapshot at Zxid follows
	MsgObserverInfo MsgType = 16 // observer to leader: as FollowerInfo
	MsgLeaderInfo   MsgType = 17 // leader to learner: Zxid = newEpoch<<32
	MsgAckEpoch     MsgType = 18 // learner to leader: Zxid = lastZxid, Epoch = currentEpoch or -1

	// MsgCommitAndActivate is the COMMIT of a reconfiguration, to a
	// follower: committed up to Zxid; activate the configuration it made
	// and follow Designated.
	MsgCommitAndActivate MsgType = 9
	// MsgInformAndActivate is the INFORM of a reconfiguration, to an
	// observer: the txn, committed; activate its configuration and follow
	// Designated.
	MsgInformAndActivate MsgType = 19

	// MsgNotification is a fast-leader-election vote (on the election
	// port in Apache ZooKeeper).
	MsgNotification MsgType = 100
	// MsgDisconnected is not sent: the caller steps it when the link to
	// From went down.
	MsgDisconnected MsgType = 101
	// MsgSyncRequest is a learner asking the leader for a MsgSync.
	MsgSyncRequest MsgType = 102
)

var msgNames = map[MsgType]string{
	MsgRequest: "REQUEST", MsgProposal: "PROPOSAL", MsgAck: "ACK", MsgCommit: "COMMIT",
	MsgPing: "PING", MsgRevalidate: "REVALIDATE", MsgSync: "SYNC", MsgInform: "INFORM", MsgNewLeader: "NEWLEADER",
	MsgFollowerInfo: "FOLLOWERINFO", MsgUpToDate: "UPTODATE", MsgDiff: "DIFF", MsgTrunc: "TRUNC",
	MsgSnap: "SNAP", MsgObserverInfo: "OBSERVERINFO", MsgLeaderInfo: "LEADERINFO",
	MsgAckEpoch: "ACKEPOCH", MsgCommitAndActivate: "COMMITANDACTIVATE", MsgInformAndActivate: "INFORMANDACTIVATE",
	MsgNotification: "NOTIFICATION", MsgDisconnected: "DISCONNECTED",
	MsgSyncRequest: "SYNCREQUEST",
}

func (t MsgType) String() string {
	if n, ok := msgNames[t]; ok {
		return n
	}
	return fmt.Sprintf("MsgType(%d)", int32(t))
}

// Vote is a fast-leader-election proposal: who should lead, and the facts
// that rank the candidate (docs/zookeeper-protocol.md §10.2).
type Vote struct {
	Leader PeerID
	Zxid   zxid.ID    // the candidate's last logged zxid
	Epoch  zxid.Epoch // the candidate's currentEpoch (peerEpoch)
}

// beats reports whether v ranks above w: higher epoch, then higher zxid,
// then higher id (the "total order predicate").
func (v Vote) beats(w Vote) bool {
	if v.Epoch != w.Epoch {
		return v.Epoch > w.Epoch
	}
	if v.Zxid != w.Zxid {
		return v.Zxid > w.Zxid
	}
	return v.Leader > w.Leader
}

// Dialect is the Zab a peer speaks, as it announced it in discovery: a
// learner in FOLLOWERINFO or OBSERVERINFO, a leader in LEADERINFO
// (docs/zookeeper-protocol.md §10.5). The zero value is Apache ZooKeeper's,
// so a peer that announced nothing keeper recognises gets exactly what a
// Java server sends.
type Dialect uint8

// Dialects.
const (
	// DialectZooKeeper is Apache ZooKeeper's Zab: one COMMIT per PROPOSAL,
	// in zxid order, none for a NEWLEADER zxid and none for txns the
	// learner held before the sync; one ACK per proposal.
	DialectZooKeeper Dialect = iota
	// DialectKeeper is keeper's: COMMITs and ACKs are cumulative (one
	// names every txn up to its zxid), so a run of them may be cut to its
	// last, and a COMMIT before NEWLEADER may cover what the learner
	// already logged.
	DialectKeeper
)

func (d Dialect) String() string {
	if d == DialectKeeper {
		return "keeper"
	}
	return "zookeeper"
}

// Message is one message between peers.
type Message struct {
	Type MsgType
	From PeerID
	To   PeerID
	// Zxid is the QuorumPacket zxid field; its meaning depends on Type.
	Zxid zxid.ID
	// Data is the QuorumPacket data: a txn for PROPOSAL, INFORM and
	// INFORMANDACTIVATE, the request for REQUEST, session touches in a
	// learner's PING, the configuration's Text in NEWLEADER and in a
	// notification (empty without a ReconfigCodec).
	Data []byte
	// Designated is the leader of the new configuration in
	// COMMITANDACTIVATE and INFORMANDACTIVATE.
	Designated PeerID
	// ConfigVersion is the version of the learner's active configuration
	// in FOLLOWERINFO and OBSERVERINFO.
	ConfigVersion zxid.ID

	// Epoch is ACKEPOCH's currentEpoch (-1: the learner had already
	// accepted the new epoch); for FOLLOWERINFO, the acceptedEpoch.
	Epoch int64
	// LastZxid is the learner's last logged zxid in FOLLOWERINFO.
	LastZxid zxid.ID
	// Dialect is the sender's Zab in FOLLOWERINFO, OBSERVERINFO and
	// LEADERINFO (the transport carries it in the protocol version).
	Dialect Dialect
	// AuthInfo is a REQUEST's QuorumPacket authinfo: the client's
	// identities, jute-encoded as ZooKeeper's vector<Id> (count, then
	// {ustring scheme; ustring id} each), or nil for none. Opaque to zab.
	AuthInfo []byte

	// Election notifications (MsgNotification).
	State Role   // the sender's state
	Round uint64 // the sender's election round (logical clock)
	Vote  Vote   // the sender's current vote
}

func (m Message) String() string {
	switch m.Type {
	case MsgNotification:
		return fmt.Sprintf("%d->%d %s state=%s round=%d vote=(%d,%s,%d)", m.From, m.To, m.Type,
			m.State, m.Round, m.Vote.Leader, m.Vote.Zxid, m.Vote.Epoch)
	case MsgAckEpoch, MsgFollowerInfo, MsgObserverInfo:
		return fmt.Sprintf("%d->%d %s zxid=%s epoch=%d last=%s", m.From, m.To, m.Type, m.Zxid, m.Epoch, m.LastZxid)
	}
	return fmt.Sprintf("%d->%d %s zxid=%s", m.From, m.To, m.Type, m.Zxid)
}

// Entry is one transaction in the log.
type Entry struct {
	Zxid zxid.ID
	Data []byte
}

// HardState is what a node must persist before it sends messages that
// depend on it (the files acceptedEpoch and currentEpoch, docs/zookeeper-protocol.md §9.1).
type HardState struct {
	AcceptedEpoch zxid.Epoch
	CurrentEpoch  zxid.Epoch
}

// Ready is a batch of work for the caller; see the package comment for the
// order in which to carry it out.
type Ready struct {
	// Role, when not nil, reports a change of role, leader or epoch.
	Role *RoleChange
	// Config, when not nil, is the node's configurations, to persist with
	// State: after the log, before Messages (an ACK of a reconfiguration
	// promises the peer saw it, a COMMITANDACTIVATE that the leader
	// activated it). The caller writes them as ZooKeeper does
	// (zoo.cfg.dynamic.next for Next, the dynamic file for Active).
	Config *ConfigState
	// State, when not nil, must be persisted after Truncate,
	// InstallSnapshot and Entries are durable, and before Messages are
	// sent (see the package comment for why in that order).
	State *HardState
	// Truncate, when not nil, asks for the log to be cut after this zxid
	// (and the state machine to be rebuilt from what is left).
	Truncate *zxid.ID
	// InstallSnapshot asks the caller to replace its state machine and log
	// with the snapshot the leader is streaming, taken at SnapshotZxid.
	InstallSnapshot bool
	SnapshotZxid    zxid.ID
	// SendSnapshots lists learners the caller must stream a snapshot of its
	// state to, right after the SNAP message in Messages for that learner.
	SendSnapshots []PeerID
	// Entries are appended to the log, then synced.
	Entries []Entry
	// Early are messages that promise nothing about this batch's State or
	// Entries: the caller may send them before it persists the batch, and
	// must send them no later than Messages. They are the serving leader's
	// broadcast (PROPOSAL, COMMIT, INFORM, PING, SYNC and REVALIDATE
	// answers) and a serving learner's forwarded requests, sync requests,
	// revalidations and pings, as Apache ZooKeeper's leader sends a proposal
	// while it logs it. A message goes here only while no message to the
	// same peer waits in Messages of this or an earlier batch not yet
	// Advanced, so each link keeps the order the node sent in. TakeEarly
	// hands them out between batches.
	Early []Message
	// Messages are sent once State and Entries are durable.
	Messages []Message
	// Committed are applied to the state machine, in order.
	Committed []Entry
	// Snapshot is the state streamed by the leader with SNAP, to install
	// when InstallSnapshot is set.
	Snapshot []byte
	// SyncsDone lists sync requests (RequestSync) that completed with this
	// batch, oldest first: each value k says the sync completes once the
	// first k entries of Committed are applied (it must be answered then,
	// before the rest, or its reply would carry a later zxid than replies
	// that follow it).
	SyncsDone []int
	// Disconnect lists peers whose quorum link the caller must close (the
	// peer then sees MsgDisconnected): learners the leader dropped, or the
	// leader a learner gave up on.
	Disconnect []PeerID
}

// RoleChange describes a node's new role.
type RoleChange struct {
	Role   Role
	Leader PeerID     // 0 while looking
	Epoch  zxid.Epoch // the epoch being established or served
	// Serving is set once a learner received UPTODATE, or a leader got a
	// quorum of NEWLEADER acks: the node may serve clients.
	Serving bool
}

func (r *Ready) empty() bool {
	return r.Role == nil && r.State == nil && r.Config == nil && r.Truncate == nil && !r.InstallSnapshot &&
		len(r.SendSnapshots) == 0 && len(r.Entries) == 0 && len(r.Messages) == 0 && len(r.Early) == 0 &&
		len(r.Committed) == 0 && len(r.SyncsDone) == 0 && len(r.Disconnect) == 0
}
