package diff

import (
	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// multi makes a write multi of 0 to 5 ops. Later ops often build on earlier
// ones (a child of a node the multi creates, a setData or delete of it), so
// that both all-succeed multis and failures at every position are common.
func (g *gen) multi(st *step) {
	n := g.r.IntN(6)
	if n == 0 && g.chance(0.7) {
		n = 2
	}
	var created []string
	var ops []zkproto.MultiOp
	for range n {
		target := g.path()
		if len(created) > 0 && g.chance(0.4) {
			target = pick(g, created)
		}
		switch x := g.r.IntN(100); {
		case x < 40:
			op := pick(g, []zkproto.Op{zkproto.OpCreate, zkproto.OpCreate, zkproto.OpCreate2,
				zkproto.OpCreateContainer, zkproto.OpCreateTTL})
			rec := g.createRecord(op, true)
			if len(created) > 0 && g.chance(0.4) {
				setCreatePath(rec, join(pick(g, created), pick(g, names)))
			}
			if p, ok := requestPath(rec); ok {
				created = append(created, p)
			}
			ops = append(ops, zkproto.MultiOp{Op: op, Record: rec})
		case x < 60:
			ops = append(ops, zkproto.MultiOp{Op: zkproto.OpDelete,
				Record: &zkproto.DeleteRequest{Path: target, Version: g.version(target)}})
		case x < 80:
			ops = append(ops, zkproto.MultiOp{Op: zkproto.OpSetData,
				Record: &zkproto.SetDataRequest{Path: target, Data: g.data(), Version: g.version(target)}})
		case x < 98:
			ops = append(ops, zkproto.MultiOp{Op: zkproto.OpCheck,
				Record: &zkproto.CheckVersionRequest{Path: target, Version: g.version(target)}})
		default: // a read op inside a write multi: the whole request is refused
			ops = append(ops, zkproto.MultiOp{Op: zkproto.OpGetData,
				Record: &zkproto.GetDataRequest{Path: target}})
		}
	}
	st.op, st.req = zkproto.OpMulti, &zkproto.MultiRequest{Ops: ops}
}

// setCreatePath replaces the path of a create record.
func setCreatePath(rec jute.Record, path string) {
	switch r := rec.(type) {
	case *zkproto.CreateRequest:
		r.Path = path
	case *zkproto.CreateTTLRequest:
		r.Path = path
	}
}

// multiRead makes a multiRead of 0 to 4 getData/getChildren ops.
func (g *gen) multiRead(st *step) {
	var ops []zkproto.MultiOp
	watchP := 0.1
	if g.off(variantMultiReadWatch) {
		watchP = 0
	}
	for range g.r.IntN(5) {
		p := g.path()
		switch x := g.r.IntN(100); {
		case x < 50:
			ops = append(ops, zkproto.MultiOp{Op: zkproto.OpGetData,
				Record: &zkproto.GetDataRequest{Path: p, Watch: g.watch(st.slot, dataTable, p, watchP)}})
		case x < 98 || g.off(variantMultiReadWriteOp):
			ops = append(ops, zkproto.MultiOp{Op: zkproto.OpGetChildren,
				Record: &zkproto.GetChildrenRequest{Path: p, Watch: g.watch(st.slot, childTable, p, watchP)}})
		default: // a write op inside multiRead: the whole request is refused
			ops = append(ops, zkproto.MultiOp{Op: zkproto.OpCheck,
				Record: &zkproto.CheckVersionRequest{Path: p, Version: -1}})
		}
	}
	st.op, st.req = zkproto.OpMultiRead, &zkproto.MultiRequest{Ops: ops}
}

// observe learns from ZooKeeper's outcome of st which paths exist and
// their versions. z is ZooKeeper's outcome, base its base zxid.
func (g *gen) observe(st *step, z *outcome, base int64) {
	if z.hasReply && z.reply.hdr.Zxid > base {
		g.lastZxid = z.reply.hdr.Zxid - base
	}
	if st.kind != kindRequest || !z.hasReply {
		return
	}
	h := z.reply.hdr
	if st.op == zkproto.OpMulti || st.op == zkproto.OpMultiRead {
		resp, ok := z.reply.rec.(*zkproto.MultiResponse)
		req, _ := st.req.(*zkproto.MultiRequest)
		if !ok || req == nil || len(resp.Results) != len(req.Ops) {
			return
		}
		for i, res := range resp.Results {
			code := res.Err
			if e, ok := res.Record.(*zkproto.ErrorResponse); ok {
				code = e.Err
			}
			g.learn(req.Ops[i].Op, req.Ops[i].Record, res.Record, code)
		}
		return
	}
	g.learn(st.op, st.req, z.reply.rec, h.Err)
}

// learn updates the known paths from one request and its result.
func (g *gen) learn(op zkproto.Op, req, resp jute.Record, code zkproto.Code) {
	path, ok := requestPath(req)
	if !ok {
		return
	}
	if code == zkproto.CodeNoNode && !isCreate(op) {
		g.forget(path)
		return
	}
	if code != zkproto.CodeOK {
		return
	}
	switch r := resp.(type) {
	case *zkproto.CreateResponse:
		g.remember(r.Path, 0)
	case *zkproto.Create2Response:
		g.remember(r.Path, 0)
	case *zkproto.ExistsResponse:
		g.remember(path, r.Stat.Version)
	case *zkproto.GetDataResponse:
		g.remember(path, r.Stat.Version)
	case *zkproto.SetDataResponse:
		g.remember(path, r.Stat.Version)
	case *zkproto.GetChildrenResponse:
		g.rememberChildren(path, r.Children)
	case *zkproto.GetChildren2Response:
		g.rememberChildren(path, r.Children)
	case nil:
		if op == zkproto.OpDelete {
			g.forget(path)
		}
	}
}

func isCreate(op zkproto.Op) bool {
	switch op {
	case zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL:
		return true
	}
	return false
}

func (g *gen) remember(path string, version int32) {
	if isQuotaStats(path) {
		return // random data there would stop ZooKeeper (genquota_test.go)
	}
	if _, ok := g.known[path]; !ok {
		g.sorted = nil
	}
	g.known[path] = version
}

func (g *gen) rememberChildren(parent string, children []string) {
	for _, c := range children {
		p := join(parent, c)
		if _, ok := g.known[p]; !ok && p != "/zookeeper" && p[:min(len(p), 11)] != "/zookeeper/" {
			g.remember(p, -1)
		}
	}
}

func (g *gen) forget(path string) {
	if _, ok := g.known[path]; ok {
		delete(g.known, path)
		g.sorted = nil
	}
}
