package diff

import (
	"slices"
	"strings"

	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// Quota operations: the znode requests zkCli 3.8's setquota and delquota
// send, one request per step, in their order, on one slot (the first step
// is the one the generator was asked for; the rest wait in g.queue). Both
// servers run with enforceQuota, so the creates, setDatas and multis the
// other kinds make below a quota are checked against its limits, and every
// reply, Stat and read of a zookeeper_stats node is compared.
//
// The generator never writes data into a zookeeper_stats node: ZooKeeper
// parses it whenever it applies a write below the quota, and stops the
// server when it cannot (keeper keeps the node as it is). Limits may be
// malformed: only the check at preparation parses them, and both servers
// then answer MarshallingError.

// isQuotaStats reports whether path names a zookeeper_stats node.
func isQuotaStats(path string) bool {
	return strings.HasPrefix(path, datatree.QuotaPath+"/") && strings.HasSuffix(path, "/"+datatree.QuotaStatNode)
}

// quotaTarget picks a path to put a quota on: one already used, or a path
// of the fixed space one or two levels deep, so quotas nest.
func (g *gen) quotaTarget() string {
	if len(g.quotas) > 0 && g.chance(0.6) {
		return pick(g, g.quotas)
	}
	p := "/" + pick(g, names)
	if g.chance(0.4) {
		p += "/" + pick(g, names)
	}
	return p
}

// quotaLimits makes the data of a zookeeper_limits node: mostly what
// zkCli 3.8 writes (the four keys, one or two of them set), often the 3.4
// form, sometimes data no StatsTrack parses.
func (g *gen) quotaLimits() []byte {
	count := func() int64 { return int64(1 + g.r.IntN(8)) }
	bytes := func() int64 {
		if g.chance(0.1) {
			return 5000 // above the generator's large data
		}
		return int64(g.r.IntN(60))
	}
	switch x := g.r.IntN(100); {
	case x < 70:
		var st datatree.StatsTrack
		for _, k := range []string{datatree.QuotaCount, datatree.QuotaBytes, datatree.QuotaCountHardLimit, datatree.QuotaByteHardLimit} {
			st.Set(k, -1)
		}
		for range 1 + g.r.IntN(2) {
			switch g.r.IntN(4) {
			case 0:
				st.Set(datatree.QuotaCount, count())
			case 1:
				st.Set(datatree.QuotaBytes, bytes())
			case 2:
				st.Set(datatree.QuotaCountHardLimit, count())
			default:
				st.Set(datatree.QuotaByteHardLimit, bytes())
			}
		}
		return []byte(st.String())
	case x < 90:
		var st datatree.StatsTrack
		st.Set(datatree.QuotaCount, count())
		st.Set(datatree.QuotaBytes, bytes())
		return []byte(st.String())
	case x < 95:
		return []byte(pick(g, []string{"countHardLimit=2;count=1,bytes=", "countHardLimit=3", "byteHardLimit=+5", "", "count=-1,bytes=-1"}))
	default:
		if g.chance(0.3) {
			return nil
		}
		return []byte(pick(g, []string{"count=x", "garbage", ",count=1", "count=", "countHardLimit=1.5"}))
	}
}

// quotaStep makes one more request of the operation st began.
func quotaStep(st *step, op zkproto.Op, req jute.Record) *step {
	return &step{kind: kindRequest, slot: st.slot, name: st.name, op: op, req: req}
}

// setQuota sends what zkCli's setquota does for a new quota (the quota
// directories with null data, the limits, then the stats at zero) or, for
// a quota that may exist, the setData of its limits.
func (g *gen) setQuota(st *step) {
	target := g.quotaTarget()
	dir := datatree.QuotaPath + target
	limitPath := dir + "/" + datatree.QuotaLimitNode
	if slices.Contains(g.quotas, target) && g.chance(0.4) {
		st.op, st.req = zkproto.OpSetData, &zkproto.SetDataRequest{Path: limitPath, Data: g.quotaLimits(), Version: -1}
		return
	}
	var reqs []*step
	parts := strings.Split(target, "/")[1:]
	for i := range parts {
		reqs = append(reqs, quotaStep(st, zkproto.OpCreate, &zkproto.CreateRequest{
			Path: datatree.QuotaPath + "/" + strings.Join(parts[:i+1], "/"), ACL: zkproto.OpenACLUnsafe}))
	}
	reqs = append(reqs,
		quotaStep(st, zkproto.OpCreate, &zkproto.CreateRequest{Path: limitPath, Data: g.quotaLimits(), ACL: zkproto.OpenACLUnsafe}),
		quotaStep(st, zkproto.OpCreate, &zkproto.CreateRequest{Path: dir + "/" + datatree.QuotaStatNode,
			Data: []byte("count=0,bytes=0"), ACL: zkproto.OpenACLUnsafe}))
	st.op, st.req = reqs[0].op, reqs[0].req
	g.queue = append(g.queue, reqs[1:]...)
	if !slices.Contains(g.quotas, target) {
		g.quotas = append(g.quotas, target)
	}
}

// delQuota sends what zkCli's delquota does: a setData of the limits with
// one of them reset, or the deletes of the stats and limits nodes and then
// of the quota directories, deepest first (a delete of one that is not
// empty fails alike on both servers).
func (g *gen) delQuota(st *step) {
	target := g.quotaTarget()
	dir := datatree.QuotaPath + target
	if g.chance(0.4) {
		st.op, st.req = zkproto.OpSetData, &zkproto.SetDataRequest{Path: dir + "/" + datatree.QuotaLimitNode, Data: g.quotaLimits(), Version: -1}
		return
	}
	del := func(p string) *step {
		return quotaStep(st, zkproto.OpDelete, &zkproto.DeleteRequest{Path: p, Version: -1})
	}
	reqs := []*step{del(dir + "/" + datatree.QuotaStatNode), del(dir + "/" + datatree.QuotaLimitNode)}
	if g.chance(0.5) {
		reqs[0], reqs[1] = reqs[1], reqs[0] // the order of getChildren
	}
	for d := dir; d != datatree.QuotaPath; d = d[:strings.LastIndexByte(d, '/')] {
		reqs = append(reqs, del(d))
	}
	st.op, st.req = reqs[0].op, reqs[0].req
	g.queue = append(g.queue, reqs[1:]...)
}

// readQuota reads a quota's nodes as listquota does, sometimes with a
// watch: updates of zookeeper_stats must fire none.
func (g *gen) readQuota(st *step) {
	dir := datatree.QuotaPath + g.quotaTarget()
	switch x := g.r.IntN(100); {
	case x < 45:
		p := dir + "/" + datatree.QuotaStatNode
		st.op, st.req = zkproto.OpGetData, &zkproto.GetDataRequest{Path: p, Watch: g.watch(st.slot, dataTable, p, 0.3)}
	case x < 75:
		p := dir + "/" + datatree.QuotaLimitNode
		st.op, st.req = zkproto.OpGetData, &zkproto.GetDataRequest{Path: p, Watch: g.watch(st.slot, dataTable, p, 0.3)}
	case x < 90:
		st.op, st.req = zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: dir, Watch: g.watch(st.slot, childTable, dir, 0.3)}
	default:
		p := dir + "/" + datatree.QuotaStatNode
		st.op, st.req = zkproto.OpExists, &zkproto.ExistsRequest{Path: p, Watch: g.watch(st.slot, dataTable, p, 0.3)}
	}
}
