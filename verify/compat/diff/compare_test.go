package diff

import (
	"fmt"
	"slices"
	"strings"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// Everything a step showed is rendered per side into lines in which the
// parts that may legitimately differ (zxid offsets, session ids, times) are
// already normalized; the test compares the lines. Rendering field by field
// keeps every compared field visible in a failure report.

// zxid renders a zxid relative to the side's base. Zero and negative values
// (system nodes, notifications, auth and Unimplemented replies) are
// rendered as they are.
func (s *side) zxid(z int64) string {
	if z <= 0 {
		return fmt.Sprint(z)
	}
	return fmt.Sprintf("+%d", z-s.base)
}

// session renders a session id as its slot label.
func (s *side) session(id int64) string {
	if id == 0 {
		return "0"
	}
	if l, ok := s.labels[id]; ok {
		return l
	}
	return fmt.Sprintf("unknown(%#x)", id)
}

// nodeData renders node data, rewritten by the side's data replacer (an
// ensemble's ports in /zookeeper/config).
func (s *side) nodeData(b []byte) string {
	if b != nil && s.data != nil {
		b = []byte(s.data.Replace(string(b)))
	}
	return data(b)
}

// stat renders a Stat. ctime and mtime are replaced by what both servers
// must agree on: whether ctime is set, that mtime equals ctime while the
// node has never been written (version 0), and that mtime is never before
// ctime. Their exact values are wall-clock times.
func (s *side) stat(st zkproto.Stat) string {
	ctime := "set"
	if st.Ctime == 0 {
		ctime = "zero"
	}
	mtime := "ok"
	switch {
	case st.Version == 0 && st.Mtime != st.Ctime:
		mtime = "differs-from-ctime-at-version-0"
	case st.Mtime < st.Ctime:
		mtime = "before-ctime"
	}
	return fmt.Sprintf("{czxid=%s mzxid=%s pzxid=%s ctime=%s mtime=%s version=%d cversion=%d aversion=%d owner=%s dataLength=%d numChildren=%d}",
		s.zxid(st.Czxid), s.zxid(st.Mzxid), s.zxid(st.Pzxid), ctime, mtime,
		st.Version, st.Cversion, st.Aversion, s.session(st.EphemeralOwner), st.DataLength, st.NumChildren)
}

// sortedNames renders a list of names in order; ZooKeeper returns children
// and ephemerals in hash order. A null vector is "null".
func sortedNames(list []string) string {
	if list == nil {
		return "null"
	}
	sorted := slices.Clone(list)
	slices.Sort(sorted)
	return fmt.Sprintf("%q", sorted)
}

// canonicalACL sorts each run of consecutive digest entries with the same
// perms. An "auth" entry expands to one entry per identity of the
// connection, and ZooKeeper keeps those in a hash set, so the order within
// such a run is the hash order. Other entries keep the order the client
// gave, and that order is compared.
func canonicalACL(list []zkproto.ACL) []zkproto.ACL {
	if list == nil {
		return nil
	}
	out := slices.Clone(list)
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && out[i].ID.Scheme == "digest" && out[j].ID.Scheme == "digest" && out[j].Perms == out[i].Perms {
			j++
		}
		slices.SortFunc(out[i:j], func(a, b zkproto.ACL) int { return strings.Compare(a.ID.ID, b.ID.ID) })
		i = j
	}
	return out
}

// record renders a reply body.
func (s *side) record(rec jute.Record) string {
	switch r := rec.(type) {
	case nil:
		return "none"
	case *zkproto.CreateResponse:
		return fmt.Sprintf("create{path=%q}", r.Path)
	case *zkproto.Create2Response:
		return fmt.Sprintf("create2{path=%q stat=%s}", r.Path, s.stat(r.Stat))
	case *zkproto.ExistsResponse:
		return "stat" + s.stat(r.Stat)
	case *zkproto.SetDataResponse:
		return "stat" + s.stat(r.Stat)
	case *zkproto.SetACLResponse:
		return "stat" + s.stat(r.Stat)
	case *zkproto.GetDataResponse:
		return fmt.Sprintf("data{%s stat=%s}", s.nodeData(r.Data), s.stat(r.Stat))
	case *zkproto.GetACLResponse:
		return fmt.Sprintf("acl{%s stat=%s}", acls(canonicalACL(r.ACL)), s.stat(r.Stat))
	case *zkproto.GetChildrenResponse:
		return "children" + sortedNames(r.Children)
	case *zkproto.GetChildren2Response:
		return fmt.Sprintf("children2{%s stat=%s}", sortedNames(r.Children), s.stat(r.Stat))
	case *zkproto.SyncResponse:
		return fmt.Sprintf("sync{path=%q}", r.Path)
	case *zkproto.GetEphemeralsResponse:
		return "ephemerals" + sortedNames(r.Ephemerals)
	case *zkproto.GetAllChildrenNumberResponse:
		return fmt.Sprintf("allChildren{%d}", r.TotalNumber)
	case *zkproto.ErrorResponse:
		return fmt.Sprintf("error{%v(%d)}", r.Err, int32(r.Err))
	case *zkproto.WhoAmIResponse:
		// ZooKeeper keeps a connection's identities in a hash set.
		parts := make([]string, len(r.ClientInfo))
		for i, ci := range r.ClientInfo {
			parts[i] = ci.AuthScheme + ":" + ci.User
		}
		slices.Sort(parts)
		return "whoAmI" + fmt.Sprintf("%q", parts)
	case *zkproto.MultiResponse:
		if r.Results == nil {
			return "multi[]"
		}
		parts := make([]string, len(r.Results))
		for i, res := range r.Results {
			parts[i] = fmt.Sprintf("%v/%v(%d):%s", res.Op, res.Err, int32(res.Err), s.record(res.Record))
		}
		return "multi[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprintf("%T%+v", rec, rec)
}

// replyLine renders a reply: code, zxid, body length and body.
func (s *side) replyLine(what string, r reply) string {
	return fmt.Sprintf("%s: err=%v(%d) zxid=%s bodyLen=%d body=%s",
		what, r.hdr.Err, int32(r.hdr.Err), s.zxid(r.hdr.Zxid), r.bodyLen, s.record(r.rec))
}

// render turns an outcome into the lines the test compares.
func (s *side) render(o *outcome) []string {
	var lines []string
	switch {
	case o.hasReply:
		lines = append(lines, s.replyLine("reply", o.reply))
	case o.lost:
		lines = append(lines, "reply: none, connection closed")
	}
	if o.notClosed {
		lines = append(lines, "connection stayed open after the reply")
	}
	if o.readCheck != nil {
		lines = append(lines, s.replyLine("read check getData", *o.readCheck))
	}
	if o.watchRep != nil {
		lines = append(lines, s.replyLine("setWatches", *o.watchRep))
	}
	for slot, closed := range o.closed {
		if closed {
			lines = append(lines, fmt.Sprintf("slot %d: server closed the connection", slot))
		}
	}
	for slot, gone := range o.gone {
		if gone {
			lines = append(lines, fmt.Sprintf("slot %d: session left to expire", slot))
		}
	}
	if a := o.attempt; a != nil {
		lines = append(lines, fmt.Sprintf("reattach attempt: timeout=%d session=%s passwd=%x readOnly=%v/%v closed=%v",
			a.resp.TimeoutMs, s.session(a.resp.SessionID), a.resp.Passwd, a.resp.HasReadOnly, a.resp.ReadOnly, a.closed))
	}
	for _, c := range o.connects {
		r := c.resp
		lines = append(lines, fmt.Sprintf("slot %d: connect: timeout=%d session=%s passwdLen=%d readOnly=%v/%v",
			c.slot, r.TimeoutMs, s.session(r.SessionID), len(r.Passwd), r.HasReadOnly, r.ReadOnly))
	}
	for slot, evs := range o.events {
		var evLines []string
		for _, e := range evs {
			evLines = append(evLines, fmt.Sprintf("slot %d: event %v(%d) %q state=%d zxid=%s",
				slot, e.ev.Type, int32(e.ev.Type), e.ev.Path, e.ev.State, s.zxid(e.zxid)))
		}
		if o.unordered {
			slices.Sort(evLines)
		}
		lines = append(lines, evLines...)
	}
	return lines
}

// firstDifference returns the index of the first differing line, or -1.
func firstDifference(a, b []string) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

// statLen is the size of a Stat on the wire.
const statLen = 68

// normalizer applies the intended differences (see the package doc) and
// counts each time it does.
type normalizer struct {
	counts map[string]int
}

// apply rewrites keeper's or ZooKeeper's outcome where they differ only in
// an intended way.
func (n *normalizer) apply(st *step, k, z *outcome) {
	if !k.hasReply || !z.hasReply {
		return
	}
	if st.noRead && k.reply.hdr.Err == zkproto.CodeNoAuth && z.reply.hdr.Err == zkproto.CodeOK &&
		z.readCheck != nil && z.readCheck.hdr.Err == zkproto.CodeNoAuth {
		// exists needs READ on 3.8.4+ (docs/zookeeper-protocol.md §2.4, §7.1); 3.8.0 answers.
		z.reply = reply{hdr: zkproto.ReplyHeader{Xid: z.reply.hdr.Xid, Zxid: z.reply.hdr.Zxid, Err: zkproto.CodeNoAuth}}
		n.counts["exists without READ: keeper NoAuth, 3.8.0 Stat"]++
	}
	if st.op == zkproto.OpMulti {
		n.multiCreate2(st, k, z)
	}
}

// multiCreate2 rewrites keeper's create2 results inside a multi to the
// create results 3.8.0 sends (docs/zookeeper-protocol.md §2.3, §11), after checking that keeper's
// Stat is that of a node this multi created.
func (n *normalizer) multiCreate2(st *step, k, z *outcome) {
	req, _ := st.req.(*zkproto.MultiRequest)
	kr, ok1 := k.reply.rec.(*zkproto.MultiResponse)
	zr, ok2 := z.reply.rec.(*zkproto.MultiResponse)
	if req == nil || !ok1 || !ok2 || len(kr.Results) != len(req.Ops) || len(zr.Results) != len(req.Ops) {
		return
	}
	for i, op := range req.Ops {
		kres, zres := kr.Results[i], zr.Results[i]
		if op.Op != zkproto.OpCreate2 || kres.Op != zkproto.OpCreate2 || zres.Op != zkproto.OpCreate {
			continue
		}
		c2, ok := kres.Record.(*zkproto.Create2Response)
		if !ok {
			continue
		}
		zx := k.reply.hdr.Zxid
		if st := c2.Stat; st.Czxid != zx || st.Mzxid != zx || st.Pzxid != zx || st.Version != 0 || st.Cversion != 0 || st.Aversion != 0 {
			continue // left as is: the difference shows
		}
		kr.Results[i] = zkproto.MultiResult{Op: zkproto.OpCreate, Record: &zkproto.CreateResponse{Path: c2.Path}}
		k.reply.bodyLen -= statLen
		n.counts["create2 in multi: keeper create2 result, 3.8.0 create result"]++
	}
}
