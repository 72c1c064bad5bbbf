package sim

import (
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// sampleEphemerals checks, on every running replica, that every ephemeral
// znode's owner is a session the replica knows: an ephemeral never outlives
// the close of its session where that close was applied.
func (c *Cluster) sampleEphemerals() {
	for _, s := range c.upServers() {
		zk := s.core
		for _, owner := range zk.Tree().EphemeralSessions() {
			if _, ok := zk.Sessions().Get(owner); !ok {
				c.violate("ephemeral", "server %d (at %s) holds ephemerals %v of session %#x, which it does not know",
					s.id, zk.LastZxid(), zk.Tree().Ephemerals(owner), hex(owner))
			}
		}
	}
}

// checkEphemerals checks sessions and their ephemerals against the final
// history:
//   - once a session's closeSession (by the client, or expiry) is
//     committed, no txn of that session takes effect, so no ephemeral of it
//     can appear again;
//   - an ephemeral is created only by a session that exists;
//   - no client got a successful reply on a session at a zxid after its
//     close: while a client can still use its session, its ephemerals are
//     there;
//   - once every client left, every session expired and no ephemeral is left;
//   - with Options.CheckEarlyExpiry, no session expired early (checkExpiries).
func (c *Cluster) checkEphemerals() {
	f := c.oracle.final
	for _, t := range f.txns {
		sid, z := t.Header.ClientID, t.Header.Zxid
		w, closed := f.closed[sid]
		switch {
		case !closed || z <= w || t.Header.Type == zkproto.OpError:
		case t.Header.Type == zkproto.OpCloseSession:
			// A second close changes nothing; it is counted (Stats.DoubleCloses),
			// not flagged: it shows a server that kept a closed session.
			c.stats.DoubleCloses++
		default:
			c.violate("ephemeral", "session %#x was closed at %s, yet its txn %s (%s) took effect", hex(sid), w, z, describe(t))
		}
		if cr, ok := t.Record.(*txn.Create); ok && cr.Ephemeral {
			if born, ok := f.created[sid]; !ok || born > z {
				c.violate("ephemeral", "txn %s creates ephemeral %s for session %#x, which does not exist yet", z, cr.Path, hex(sid))
			}
		}
	}
	for _, o := range c.hist.ops {
		if !o.done || o.hdr.Err != zkproto.CodeOK || o.session == 0 {
			continue
		}
		w, ok := f.closed[o.session]
		if !ok || zxid.ID(o.hdr.Zxid) < w || (zxid.ID(o.hdr.Zxid) == w && o.kind == zkproto.OpCloseSession) {
			continue
		}
		c.violate("ephemeral", "client %d's %v on session %#x succeeded at zxid %s on server %d, after the session was closed at %s",
			o.client, o.kind, hex(o.session), zx(o.hdr.Zxid), o.server, w)
	}
	if n := f.last.EphemeralCount(); n != 0 {
		c.violate("ephemeral", "%d ephemerals are left after every session expired", n)
	}
	if c.opts.CheckEarlyExpiry {
		c.checkExpiries()
	}
}

// expirySlackTicks is how much earlier than "timeout after the last request
// it answered" a session may expire: touches reach the leader with the next
// ping, and a learner cut off from the leader keeps serving until it gives
// up on it (syncLimit ticks), its touches lost.
const expirySlackTicks = 5 + 2

// checkExpiries checks that no session expired while it was provably alive:
// the leader must not decide an expiry sooner than the session timeout
// after a request on the session that some server answered (less the
// slack above). An early expiry takes the session's ephemerals away from a
// client that did everything right.
func (c *Cluster) checkExpiries() {
	f := c.oracle.final
	alive := map[int64][]*op{} // answered requests per session, by call time
	for _, o := range c.hist.ops {
		if o.done && o.hdr.Err == zkproto.CodeOK && o.session != 0 {
			alive[o.session] = append(alive[o.session], o)
		}
	}
	timeouts := map[int64]int32{}
	for _, s := range c.hist.sessions {
		timeouts[s.id] = s.timeoutMs
	}
	for i, t := range f.txns {
		sid := t.Header.ClientID
		if t.Header.Type != zkproto.OpCloseSession || t.Header.Cxid != 0 || timeouts[sid] == 0 || f.closed[sid] != f.zxids[i] {
			continue
		}
		by := c.oracle.proposer(f.zxids[i])
		atMs := t.Header.Time - wallEpochMs - c.servers[by].wallSkewMs
		var last *op
		for _, o := range alive[sid] {
			if o.callMs < atMs && zx(o.hdr.Zxid) < f.zxids[i] && (last == nil || o.callMs > last.callMs) {
				last = o
			}
		}
		if last != nil && atMs < last.callMs+int64(timeouts[sid])-expirySlackTicks*c.opts.TickMs {
			c.violate("expiry", "server %d expired session %#x (timeout %d ms) at t=%dms, %d ms after server %d answered its %v sent at t=%dms",
				by, hex(sid), timeouts[sid], atMs, atMs-last.callMs, last.server, last.kind, last.callMs)
		}
	}
}

// hex formats a session id for messages.
func hex(id int64) uint64 { return uint64(id) }
