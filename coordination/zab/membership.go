package zab

import (
	"errors"
	"slices"

	"keeper/coordination/zxid"
)

// Membership is one configuration of the ensemble: who votes, who
// observes, and its version (docs/zookeeper-protocol.md §5.6 and §10.6).
// A configuration made by a reconfig txn has that txn's zxid as its
// version; the one a server starts with has the version its files give
// (0 when they give none).
type Membership struct {
	Version   zxid.ID
	Voters    []PeerID
	Observers []PeerID
	// Text is the caller's encoding of the configuration (ZooKeeper's
	// dynamic configuration text), which zab sends in NEWLEADER and in
	// election notifications and otherwise never reads.
	Text []byte
}

// IsVoter reports whether p votes in m.
func (m Membership) IsVoter(p PeerID) bool { return slices.Contains(m.Voters, p) }

// IsObserver reports whether p observes in m.
func (m Membership) IsObserver(p PeerID) bool { return slices.Contains(m.Observers, p) }

// quorum reports whether the voters in set are a majority of m's.
func (m Membership) quorum(set map[PeerID]bool) bool {
	k := 0
	for _, v := range m.Voters {
		if set[v] {
			k++
		}
	}
	return k > len(m.Voters)/2
}

// ackedBy returns the highest zxid a majority of m's voters made durable,
// from each server's durable point in acks (0 when none).
func (m Membership) ackedBy(acks map[PeerID]zxid.ID) zxid.ID {
	got := make([]zxid.ID, 0, len(m.Voters))
	for _, v := range m.Voters {
		if z, ok := acks[v]; ok {
			got = append(got, z)
		}
	}
	need := len(m.Voters)/2 + 1
	if len(got) < need {
		return 0
	}
	slices.Sort(got)
	slices.Reverse(got)
	return got[need-1]
}

func (m Membership) clone() Membership {
	m.Voters, m.Observers, m.Text = slices.Clone(m.Voters), slices.Clone(m.Observers), slices.Clone(m.Text)
	return m
}

// ConfigState is what a node persists about its configurations
// (Ready.Config): the one active, and the last one it saw proposed and
// not yet active (ZooKeeper's zoo.cfg.dynamic.next), if any.
type ConfigState struct {
	Active Membership
	Next   *Membership
}

// ReconfigCodec reads configurations out of the caller's bytes, which zab
// otherwise treats as opaque. A node without one takes no part in
// reconfiguration: it ignores the configuration in NEWLEADER and in
// notifications, and treats every txn as an ordinary one.
type ReconfigCodec interface {
	// Reconfig returns the configuration a txn installs; ok is false for
	// a txn that is not a reconfiguration. zab sets the version to the
	// txn's zxid.
	Reconfig(txn []byte) (m Membership, ok bool)
	// Parse reads a configuration's Text, version included.
	Parse(text []byte) (Membership, error)
	// Stamp returns text with its version replaced.
	Stamp(text []byte, version zxid.ID) ([]byte, error)
}

// ErrReconfigInProgress means Propose was given a reconfiguration while
// another one is proposed and not yet committed: only one may be in
// flight (ZooKeeper's ReconfigInProgress).
var ErrReconfigInProgress = errors.New("zab: a reconfiguration is already in progress")

// Membership returns the active configuration.
func (n *Node) Membership() Membership { return n.conf.clone() }

// LastSeen returns the newest configuration the node knows of: the one
// proposed and not yet active, or the active one.
func (n *Node) LastSeen() Membership { return n.lastSeen().clone() }

// ReconfigInProgress reports whether a reconfiguration was proposed or
// seen and not yet activated.
func (n *Node) ReconfigInProgress() bool { return n.next != nil }

// QuorumSynced reports whether the serving leader is in sync with a quorum
// of m's voters: itself when it is one, and the voters among its learners
// in broadcast (ZooKeeper's isQuorumSynced, which answers NewConfigNoQuorum
// when it fails).
//
// Unlike ZooKeeper, a follower the active configuration makes an observer
// does not count: it is leaving to come back as an observer, and observers
// never acknowledge proposals, so a reconfiguration that needs its ack
// would never commit (ZooKeeper counts it until its connection closes).
func (n *Node) QuorumSynced(m Membership) bool {
	if n.role != Leading || !n.serving {
		return false
	}
	set := map[PeerID]bool{n.id: true}
	for id, p := range n.lead.learners {
		if !p.observer && !n.conf.IsObserver(id) && p.phase == phaseUpToDate && p.quietTicks <= n.cfg.SyncLimitTicks {
			set[id] = true
		}
	}
	return m.quorum(set)
}

// reconfigOf returns the configuration e installs, if it is a
// reconfiguration.
func (n *Node) reconfigOf(e Entry) (Membership, bool) {
	if n.codec == nil {
		return Membership{}, false
	}
	m, ok := n.codec.Reconfig(e.Data)
	if !ok {
		return Membership{}, false
	}
	m = m.clone()
	m.Version = e.Zxid
	return m, true
}

// lastSeen is the newest configuration the node knows of: the one in
// flight, or the active one.
func (n *Node) lastSeen() Membership {
	if n.next != nil {
		return *n.next
	}
	return n.conf
}

// isVoter reports whether p votes in the active configuration.
func (n *Node) isVoter(p PeerID) bool { return n.conf.IsVoter(p) }

// quorum reports whether set holds a majority of the active
// configuration's voters and, while a reconfiguration is in flight, of the
// proposed one's too: a leader needs both to establish its epoch, to stay
// in charge and to commit anything proposed after the reconfiguration.
func (n *Node) quorum(set map[PeerID]bool) bool {
	return n.conf.quorum(set) && (n.next == nil || n.next.quorum(set))
}

// seeEntry notes a reconfiguration logged (proposed by this leader, or
// received as a PROPOSAL or in a sync): the last-seen configuration,
// persisted before any message that follows it.
func (n *Node) seeEntry(e Entry) {
	m, ok := n.reconfigOf(e)
	if !ok || m.Version <= n.lastSeen().Version {
		return
	}
	n.next = &m
	n.persistConfig()
}

// activate makes m the active configuration; it is persisted before any
// message that follows.
func (n *Node) activate(m Membership) {
	if m.Version <= n.conf.Version {
		return
	}
	n.stats.Reconfigs++
	n.conf = m
	if n.next != nil && n.next.Version <= m.Version {
		n.next = nil
	}
	n.observer = m.IsObserver(n.id)
	n.persistConfig()
}

// stampConfig gives a configuration no ensemble has numbered yet (version
// 0, none in flight) the zxid of this leader's NEWLEADER as its version, as
// ZooKeeper's leader does with reconfigEnabled: it is seen now, sent in
// NEWLEADER, and active once the epoch is established.
func (n *Node) stampConfig(newEpoch zxid.Epoch) {
	if n.codec == nil || n.conf.Version != 0 || n.next != nil || len(n.conf.Text) == 0 {
		return
	}
	v := zxid.Make(newEpoch, 0)
	text, err := n.codec.Stamp(n.conf.Text, v)
	if err != nil {
		return // left unstamped, as ZooKeeper's leader leaves it when its copy fails
	}
	m := n.conf.clone()
	m.Version, m.Text = v, text
	n.next = &m
	n.persistConfig()
}

// forgetNextAbove drops a last-seen configuration whose txn a truncation
// removed from the log.
func (n *Node) forgetNextAbove(z zxid.ID) {
	if n.next != nil && n.next.Version > z {
		n.next = nil
		n.persistConfig()
	}
}

func (n *Node) persistConfig() {
	cs := ConfigState{Active: n.conf.clone()}
	if n.next != nil {
		nx := n.next.clone()
		cs.Next = &nx
	}
	n.ready.Config = &cs
}

// roleFits reports whether the node's learner role still fits the active
// configuration, and its leader still votes in it.
func (n *Node) roleFits() bool {
	if (n.role == Observing) != n.conf.IsObserver(n.id) {
		return false
	}
	return n.conf.IsVoter(n.leader)
}

// designatedLeader is the leader of the configuration v activates: this
// leader when it votes in it, else the voter of it that acknowledged the
// most of the log (which holds v), the lowest id among equals — as
// ZooKeeper's leader designates one, so that the change needs no election.
func (n *Node) designatedLeader(m Membership) PeerID {
	if m.IsVoter(n.id) {
		return n.id
	}
	var best PeerID
	var bestAcked zxid.ID
	for _, id := range n.sortedLearners() {
		p := n.lead.learners[id]
		if !m.IsVoter(id) || p.observer || p.phase != phaseUpToDate || p.acked < m.Version {
			continue
		}
		if best == 0 || p.acked > bestAcked {
			best, bestAcked = id, p.acked
		}
	}
	return best
}
