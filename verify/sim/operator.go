package sim

import (
	"strconv"
	"strings"

	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/zab"
	"keeper/coordination/zkproto"
	"keeper/coordination/zoocfg"
)

// The operator (Options.Reconfig) is one more client, with the same
// session, connection and timeout rules as the others, that authenticates
// as the super user on every connection, as zkCli's addauth does, and
// mixes reconfigs into the ordinary workload: add a server (as a voter or
// an observer), remove one (often the leader), turn a member into an
// observer or back, or replace the whole membership; now and then against
// the version it last saw. Every outcome a member may give is legal
// (ReconfigInProgress, NewConfigNoQuorum, BadVersion, BadArguments, a
// timeout); the checkers judge what was committed. A reconfig is a write:
// its reply promises its txn is committed, and the durability, order and
// session checks hold it to that like any other.

// authenticate sends the super user's credentials, first on a new
// connection, with the xid ZooKeeper's clients give auth packets.
func (c *Cluster) authenticate(cl *client) {
	cl.conn.authed = true
	o := &op{kind: zkproto.OpAuth, xid: zkproto.XidAuth}
	c.send(cl, o)
	c.hist.ops = append(c.hist.ops, o)
}

// reconfigOp draws the operator's next membership change.
func (c *Cluster) reconfigOp(cl *client) *op {
	members := cl.members(c)
	req := &zkproto.ReconfigRequest{CurConfigID: -1}
	if c.rng.IntN(5) == 0 && cl.config != nil {
		req.CurConfigID = cl.config.Version
	}
	n := len(c.ids)
	role := func(observer bool) string {
		if observer {
			return "observer"
		}
		return "participant"
	}
	line := func(id zab.PeerID, observer bool) string {
		return "server." + strconv.Itoa(int(id)) + "=" + serverSpec(id, role(observer))
	}
	switch r := c.rng.IntN(100); {
	case r < 30: // add a server
		id := zab.PeerID(1 + c.rng.IntN(n))
		req.JoiningServers = line(id, c.rng.IntN(4) == 0)
	case r < 55: // remove one, often the leader
		id := members[c.rng.IntN(len(members))].ID
		if l := c.servingLeader(); l != nil && c.rng.IntN(2) == 0 {
			id = int64(l.id)
		}
		req.LeavingServers = strconv.FormatInt(id, 10)
	case r < 75: // a voter becomes an observer, or an observer a voter
		m := members[c.rng.IntN(len(members))]
		req.JoiningServers = line(zab.PeerID(m.ID), m.Role != zoocfg.Observer)
	default: // a new member list
		var lines []string
		for _, id := range c.ids {
			if c.rng.IntN(3) != 0 {
				lines = append(lines, line(id, c.rng.IntN(4) == 0))
			}
		}
		all := strings.Join(lines, ",")
		req.NewMembers = &all
	}
	c.stats.ReconfigsSent++
	c.tracef("client %d: sends reconfig %s", cl.id, describeReconfig(req))
	return &op{kind: zkproto.OpReconfig, path: datatree.ConfigPath, reconfig: req}
}

// members returns the servers of the configuration the operator last saw,
// or of the first one.
func (cl *client) members(c *Cluster) []zoocfg.Server {
	if cl.config != nil && len(cl.config.Servers) > 0 {
		return cl.config.Servers
	}
	var out []zoocfg.Server
	for _, id := range c.ids[:c.opts.Voters] {
		out = append(out, zoocfg.Server{ID: int64(id), Role: zoocfg.Participant})
	}
	return out
}

// reconfigAnswered notes a reconfig's reply: on success, the new
// configuration it returns.
func (c *Cluster) reconfigAnswered(cl *client, o *op, rec jute.Record) {
	r, ok := rec.(*zkproto.GetDataResponse)
	if o.hdr.Err != zkproto.CodeOK || !ok {
		c.tracef("client %d: reconfig %s: %v", cl.id, describeReconfig(o.reconfig), o.hdr.Err)
		return
	}
	c.stats.ReconfigsOK++
	e, err := zoocfg.ParseNextDynamic(r.Data, "reconfig reply")
	if err != nil {
		c.violate("reconfig", "client %d: the reply to its reconfig does not parse: %v (%q)", cl.id, err, r.Data)
		return
	}
	cl.config = e
	c.tracef("client %d: reconfig committed at %s: %q", cl.id, zx(o.hdr.Zxid), r.Data)
}

// describeReconfig renders a reconfig request for a trace.
func describeReconfig(r *zkproto.ReconfigRequest) string {
	s := "joining=" + strconv.Quote(r.JoiningServers) + " leaving=" + strconv.Quote(r.LeavingServers)
	if r.NewMembers != nil {
		s = "members=" + strconv.Quote(*r.NewMembers)
	}
	return s + " from=" + strconv.FormatInt(r.CurConfigID, 10)
}
