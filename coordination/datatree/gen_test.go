package datatree

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// gen produces random valid txn sequences, playing the prep stage: it
// keeps its own tree and derives each txn's post-validation values (parent
// cversion, new versions, closeSession paths) from it.
type gen struct {
	rng  *rand.Rand
	tree *Tree
	n    uint32
	// legacyClose lets closeSession txns have no body (pre-3.6 logs).
	// Replaying those is not idempotent, in Java either: a node the closed
	// session owned may since have been re-created by another session, and
	// the replayed close no longer deletes it.
	legacyClose bool
}

func newGen(seed uint64) *gen {
	return &gen{rng: rand.New(rand.NewPCG(seed, 0x5eed)), tree: New()}
}

var (
	genSessions = []int64{sess1, sess2, 0x0100000000000007}
	genACLs     = [][]zkproto.ACL{worldAll, digestACL, zkproto.ReadACLUnsafe, {}, nil,
		append(slices.Clone(worldAll), digestACL...)}
)

// sequence returns count txns, applying each to the generator's tree.
func (g *gen) sequence(count int) []*txn.Txn {
	out := make([]*txn.Txn, 0, count)
	for range count {
		out = append(out, g.next())
	}
	return out
}

func (g *gen) next() *txn.Txn {
	g.n++
	h := txn.Header{ClientID: genSessions[g.rng.IntN(len(genSessions))], Cxid: int32(g.n),
		Zxid: zxid.Make(2, g.n), Time: baseTime + int64(g.n)*7}
	var tx *txn.Txn
	switch r := g.rng.IntN(20); {
	case r < 2:
		tx = g.multi(h)
	case r < 3:
		h.Type = zkproto.OpCloseSession
		tx = &txn.Txn{Header: h, Record: g.closeSession(h.ClientID)}
	case r < 4:
		h.Type = zkproto.OpError
		tx = &txn.Txn{Header: h, Record: &txn.Error{Err: int32(zkproto.CodeNodeExists)}}
	default:
		tx = &txn.Txn{Header: h}
		tx.Header.Type, tx.Record = g.single(h)
	}
	g.tree.Apply(tx)
	return tx
}

// multi builds a multi from up to four single ops, generated one after the
// other against the generator's tree; sometimes it is a failed multi.
func (g *gen) multi(h txn.Header) *txn.Txn {
	h.Type = zkproto.OpMulti
	m := &txn.Multi{}
	if g.rng.IntN(4) == 0 {
		m.Ops = []txn.Op{{Type: zkproto.OpError, Record: &txn.Error{}},
			{Type: zkproto.OpError, Record: &txn.Error{Err: int32(zkproto.CodeBadVersion)}}}
		return &txn.Txn{Header: h, Record: m}
	}
	scratch := cloneTree(g.tree)
	for range 1 + g.rng.IntN(4) {
		sub := h
		op, rec := g.singleOn(scratch, h)
		if op == zkproto.OpSetACL {
			op, rec = zkproto.OpCheck, &txn.CheckVersion{Path: rec.(*txn.SetACL).Path, Version: 1}
		}
		sub.Type = op
		scratch.Apply(&txn.Txn{Header: sub, Record: rec})
		m.Ops = append(m.Ops, txn.Op{Type: op, Record: rec})
	}
	return &txn.Txn{Header: h, Record: m}
}

func (g *gen) closeSession(session int64) *txn.CloseSession {
	paths := g.tree.Ephemerals(session)
	switch g.rng.IntN(3) {
	case 0:
		if g.legacyClose {
			return &txn.CloseSession{NoBody: true}
		}
	case 1:
		g.rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	}
	if paths == nil {
		paths = []string{}
	}
	return &txn.CloseSession{Paths: paths}
}

func (g *gen) single(h txn.Header) (zkproto.Op, jute.Record) { return g.singleOn(g.tree, h) }

func (g *gen) singleOn(t *Tree, h txn.Header) (zkproto.Op, jute.Record) {
	paths := slices.Sorted(maps.Keys(t.nodes))
	path := paths[g.rng.IntN(len(paths))]
	n := t.nodes[path]
	switch r := g.rng.IntN(10); {
	case r < 5 && !n.IsEphemeral() && strings.Count(path, "/") < 5:
		return g.create(t, path, n, h)
	case r < 7 && len(n.children) == 0 && path != RootPath && !strings.HasPrefix(path, ZooKeeperPath):
		if g.rng.IntN(4) == 0 {
			return zkproto.OpDeleteContainer, &txn.Delete{Path: path}
		}
		return zkproto.OpDelete, &txn.Delete{Path: path}
	case r < 9:
		return zkproto.OpSetData, &txn.SetData{Path: path, Data: g.data(), Version: bump(n.stat.Version)}
	default:
		return zkproto.OpSetACL, &txn.SetACL{Path: path, ACL: genACLs[g.rng.IntN(len(genACLs))], Version: bump(n.stat.Aversion)}
	}
}

func (g *gen) create(t *Tree, parent string, p *Node, h txn.Header) (zkproto.Op, jute.Record) {
	name := fmt.Sprintf("n%d", g.rng.IntN(5))
	if g.rng.IntN(3) == 0 {
		name = fmt.Sprintf("s%010d", p.stat.Cversion) // sequential
	}
	path := strings.TrimSuffix(parent, "/") + "/" + name
	if n := t.nodes[path]; n != nil {
		return zkproto.OpSetData, &txn.SetData{Path: path, Data: g.data(), Version: bump(n.stat.Version)}
	}
	data, acl, pcv := g.data(), genACLs[g.rng.IntN(len(genACLs))], p.stat.Cversion+1
	switch g.rng.IntN(5) {
	case 0:
		return zkproto.OpCreate2, &txn.Create{Path: path, Data: data, ACL: acl, Ephemeral: true, ParentCversion: pcv}
	case 1:
		return zkproto.OpCreateContainer, &txn.CreateContainer{Path: path, Data: data, ACL: acl, ParentCversion: pcv}
	case 2:
		return zkproto.OpCreateTTL, &txn.CreateTTL{Path: path, Data: data, ACL: acl, ParentCversion: pcv, TTL: 1 + g.rng.Int64N(MaxTTL)}
	}
	return zkproto.OpCreate, &txn.Create{Path: path, Data: data, ACL: acl, ParentCversion: pcv}
}

func (g *gen) data() []byte {
	switch g.rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	b := make([]byte, g.rng.IntN(40))
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return b
}

// bump is the prep stage's version increment: -1 means "any version" in
// requests, so an increment that would produce it gives 0.
func bump(v int32) int32 {
	v++
	if v == -1 {
		v = 0
	}
	return v
}
