package diff

import (
	"math/rand/v2"
	"slices"
	"strings"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// names are the node names of the fixed path space: three per level and
// depth at most three, so creates collide (NodeExists), parents are missing
// (NoNode) or busy (NotEmpty) and ephemerals get children asked of them
// often.
var names = []string{"a", "b", "c"}

// specialPaths are system nodes and paths that are invalid in one way or
// another (docs/zookeeper-protocol.md §2.5).
var specialPaths = []string{
	"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config", "/zookeeper/quota/x",
	"", "a", "/a/", "//a", "/a//b", "/a/.", "/a/..", "/.", "/a\x00", "/a\x01", "/\u00ff",
}

// Users whose digest identities the ACLs name. "alice:wrong" authenticates
// as an alice that matches none of alice's ACLs.
var (
	aliceID = digestID("alice", "pa")
	bobID   = digestID("bob", "pb")
)

// opKind is one kind of generated operation.
type opKind struct {
	name   string
	weight int // relative, in tenths
	gen    func(g *gen, st *step)
}

// opKinds lists every operation the generator makes. knownBugs (in
// diff_test.go) can switch kinds off by name.
var opKinds = []opKind{
	{"create", 130, (*gen).create},
	{"create2", 60, (*gen).create2},
	{"createContainer", 30, (*gen).createContainer},
	{"createTTL", 30, (*gen).createTTL},
	{"delete", 100, (*gen).delete},
	{"setData", 90, (*gen).setData},
	{"exists", 60, (*gen).exists},
	{"getData", 60, (*gen).getData},
	{"getChildren", 40, (*gen).getChildren},
	{"getChildren2", 40, (*gen).getChildren2},
	{"getACL", 40, (*gen).getACL},
	{"setACL", 50, (*gen).setACL},
	{"auth", 30, (*gen).auth},
	{"multi", 90, (*gen).multi},
	{"multiRead", 30, (*gen).multiRead},
	{"sync", 10, (*gen).sync},
	{"addWatch", 30, (*gen).addWatch},
	{"checkWatches", 20, (*gen).checkWatches},
	{"removeWatches", 30, (*gen).removeWatches},
	{"getAllChildrenNumber", 20, (*gen).allChildren},
	{"getEphemerals", 20, (*gen).ephemerals},
	{"whoAmI", 10, (*gen).whoAmI},
	{"closeSession", 10, (*gen).closeSession},
	{"reconnect", 10, (*gen).reconnect},
	{"badReattach", 5, (*gen).badReattach},
	{"refused", 3, (*gen).refused},
	{"setQuota", 30, (*gen).setQuota},
	{"delQuota", 8, (*gen).delQuota},
	{"readQuota", 20, (*gen).readQuota},
}

// gen makes a reproducible sequence of steps from a seed. What it knows of
// the tree it learns from ZooKeeper's replies (observe): it only steers the
// choice of paths and versions towards interesting cases, so a wrong guess
// costs nothing but a less interesting step.
type gen struct {
	r        *rand.Rand
	skip     map[string]string // kinds and variants switched off
	slots    int
	kinds    []opKind
	total    int
	known    map[string]int32 // path -> last seen version, -1 if unknown
	sorted   []string         // sortedKeys(known), nil when stale
	lastZxid int64            // the latest rebased zxid ZooKeeper reported
	regs     []slotWatches    // per slot: watch registrations (genwatch_test.go)
	queue    []*step          // steps of an operation begun earlier, sent first (genquota_test.go)
	quotas   []string         // paths the generator set quotas on
}

func newGen(seed uint64, slots int, skip map[string]string) *gen {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), slots: slots, known: map[string]int32{}, skip: skip,
		regs: make([]slotWatches, slots)}
	for _, k := range opKinds {
		if _, off := skip[k.name]; !off {
			g.kinds = append(g.kinds, k)
			g.total += k.weight
		}
	}
	return g
}

// next makes the next step.
func (g *gen) next() *step {
	if len(g.queue) > 0 {
		st := g.queue[0]
		g.queue = g.queue[1:]
		return st
	}
	st := &step{slot: g.r.IntN(g.slots)}
	n := g.r.IntN(g.total + g.deleteBoost())
	for _, k := range g.kinds {
		w := k.weight
		if k.name == "delete" {
			w += g.deleteBoost()
		}
		if n < w {
			st.name = k.name
			k.gen(g, st)
			return st
		}
		n -= w
	}
	st.name = "delete"
	g.delete(st)
	return st
}

// deleteBoost adds weight to delete as the tree grows, so sequential
// creates do not make it grow without bound.
func (g *gen) deleteBoost() int {
	if _, off := g.kindIndex("delete"); off || len(g.known) < 40 {
		return 0
	}
	return 4 * (len(g.known) - 40)
}

func (g *gen) kindIndex(name string) (int, bool) {
	for i, k := range g.kinds {
		if k.name == name {
			return i, false
		}
	}
	return 0, true
}

// Variants of operation kinds that knownBugs or undecided can switch off.
const (
	variantWatcherType45   = "watcherType4and5" // check/removeWatches with Persistent or PersistentRecursive
	variantIPv6ACL         = "ipv6ACL"          // ip ACL ids that are IPv6 literals
	variantNullWatchList   = "nullWatchList"    // setWatches(2) with a null path vector
	variantAddWatchBadMode = "addWatchBadMode"  // addWatch with a mode other than 0 and 1
	// variantCheckOthersWatches lets checkWatches ask about a path another
	// slot may watch.
	variantCheckOthersWatches = "checkOthersWatches"
	// variantBadWatcherType sends WatcherType 0 or 6.
	variantBadWatcherType = "badWatcherType"
	// variantAllChildrenEmptyPath sends getAllChildrenNumber("").
	variantAllChildrenEmptyPath = "allChildrenEmptyPath"
	// variantCheckRelativePath sends checkWatches on paths without a
	// leading slash.
	variantCheckRelativePath = "checkRelativePath"
	// variantMultiReadWatch sets the watch flag of ops inside multiRead.
	variantMultiReadWatch = "multiReadWatch"
	// variantMultiReadWriteOp puts a check op inside multiRead.
	variantMultiReadWriteOp = "multiReadWriteOp"
	// variantMultiCreateFlags puts create-family ops with flags that do not
	// match the op (create with CONTAINER, createTTL with EPHEMERAL, ...)
	// inside multis.
	variantMultiCreateFlags = "multiCreateFlags"
	// variantUnreadableNodes lets ACLs deny READ to some sessions; when it
	// is off, every valid ACL the generator makes grants world READ.
	variantUnreadableNodes = "unreadableNodes"
	// variantMixedWatchModes lets one connection register watches of
	// different kinds on one path (see genwatch_test.go).
	variantMixedWatchModes = "mixedWatchModes"
)

// off reports whether a kind or variant is switched off.
func (g *gen) off(name string) bool {
	_, ok := g.skip[name]
	return ok
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func pick[T any](g *gen, list []T) T { return list[g.r.IntN(len(list))] }

// fixedPath is a path of the fixed space, depth 1 to 3.
func (g *gen) fixedPath() string {
	depth := 1
	if x := g.r.IntN(100); x >= 45 {
		depth = 2
		if x >= 80 {
			depth = 3
		}
	}
	var b strings.Builder
	for range depth {
		b.WriteString("/" + pick(g, names))
	}
	return b.String()
}

// knownPath is a path ZooKeeper showed to exist (perhaps since deleted).
func (g *gen) knownPath() string {
	if len(g.known) == 0 {
		return g.fixedPath()
	}
	if g.sorted == nil {
		g.sorted = sortedKeys(g.known)
	}
	return pick(g, g.sorted)
}

// path picks a path for any operation.
func (g *gen) path() string {
	switch x := g.r.IntN(100); {
	case x < 45:
		return g.fixedPath()
	case x < 85:
		return g.knownPath()
	case x < 95:
		return join(g.knownPath(), pick(g, names))
	default:
		return pick(g, specialPaths)
	}
}

// watchPath picks a path for a read that may set a watch: more often one
// that exists, so the watch has something to fire on.
func (g *gen) watchPath() string {
	if g.chance(0.4) {
		return g.knownPath()
	}
	return g.path()
}

// join appends a child name to a parent path.
func join(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// createPath picks a path for a create: the fixed space, or under a known
// node; for sequential modes, a prefix the server appends a number to.
func (g *gen) createPath(sequential bool) string {
	if !sequential {
		if g.chance(0.6) {
			return g.fixedPath()
		}
		return g.path()
	}
	parent := "/"
	switch x := g.r.IntN(100); {
	case x < 40:
		parent = g.fixedPath()
	case x < 85:
		parent = g.knownPath()
	case x < 90:
		return pick(g, []string{"/", "/a/", "//s-", "/zookeeper/s-"})
	}
	return join(parent, pick(g, []string{"s-", "s-", "", "q"}))
}

// version picks a version for path: the last one seen, any, or a wrong one.
func (g *gen) version(path string) int32 {
	v, ok := g.known[path]
	if !ok || v < 0 {
		v = 0
	}
	switch x := g.r.IntN(100); {
	case x < 45:
		return v
	case x < 75:
		return -1
	case x < 90:
		return v + 1
	case x < 95:
		return int32(g.r.IntN(4))
	default:
		return pick(g, []int32{-2, 1 << 30})
	}
}

func (g *gen) data() []byte {
	switch x := g.r.IntN(100); {
	case x < 15:
		return nil
	case x < 30:
		return []byte{}
	case x < 95:
		b := make([]byte, 1+g.r.IntN(12))
		for i := range b {
			b[i] = byte('a' + g.r.IntN(26))
		}
		return b
	default:
		b := make([]byte, 2000+g.r.IntN(2000))
		for i := range b {
			b[i] = byte(g.r.UintN(256))
		}
		return b
	}
}

// acl picks an ACL list: mostly open, often restrictive, sometimes
// invalid (docs/zookeeper-protocol.md §7.3).
func (g *gen) acl() []zkproto.ACL {
	if g.chance(0.08) {
		return g.invalidACL()
	}
	list := g.validACL()
	if g.off(variantUnreadableNodes) {
		for _, a := range list {
			if a.ID == (zkproto.ID{Scheme: "world", ID: "anyone"}) && a.Perms&zkproto.PermRead != 0 {
				return list
			}
		}
		return append(slices.Clip(list), zkproto.ACL{Perms: zkproto.PermRead, ID: zkproto.ID{Scheme: "world", ID: "anyone"}})
	}
	return list
}

func world(perms int32) zkproto.ACL {
	return zkproto.ACL{Perms: perms, ID: zkproto.ID{Scheme: "world", ID: "anyone"}}
}

func entry(perms int32, scheme, id string) zkproto.ACL {
	return zkproto.ACL{Perms: perms, ID: zkproto.ID{Scheme: scheme, ID: id}}
}

// validACL picks an ACL list that is mostly valid (a few ip ids test the
// edges of validity).
func (g *gen) validACL() []zkproto.ACL {
	all := zkproto.PermAll
	switch x := g.r.IntN(92); {
	case x < 45:
		return zkproto.OpenACLUnsafe
	case x < 52:
		return zkproto.CreatorAllACL
	case x < 56:
		return zkproto.ReadACLUnsafe
	case x < 61:
		return []zkproto.ACL{entry(all, "digest", aliceID)}
	case x < 66:
		return []zkproto.ACL{world(zkproto.PermRead), entry(all, "digest", bobID)}
	case x < 69:
		return []zkproto.ACL{entry(all, "ip", "127.0.0.1")}
	case x < 71:
		return []zkproto.ACL{entry(all, "ip", "127.0.0.0/8")}
	case x < 73:
		return []zkproto.ACL{entry(all, "ip", "10.0.0.0/8"), world(zkproto.PermRead)}
	case x < 80:
		return []zkproto.ACL{world(int32(g.r.IntN(32)))}
	case x < 83:
		return []zkproto.ACL{entry(zkproto.PermRead|zkproto.PermWrite, "auth", ""), world(zkproto.PermRead)}
	case x < 86:
		return []zkproto.ACL{world(all), world(all), entry(all, "digest", aliceID), entry(all, "digest", aliceID)}
	case x < 88:
		return []zkproto.ACL{world(pick(g, []int32{0, 32, 63, -1}))}
	default:
		// ip ids at the edges of Java's Integer.parseInt and of the masks.
		id := pick(g, []string{"127.0.0.01", "+127.0.0.1", "127.0.0.1/+8", "127.0.0.1/08",
			"127.0.0.1/", "-0.0.0.0/0", "0.0.0.0/0", "127.1.2.3/8", "127.0.0.1/32", "127.0.0.1/0"})
		if !g.off(variantIPv6ACL) && g.chance(0.3) {
			id = pick(g, []string{"::1", "fe80::/10", "::/0", "0:0:0:0:0:0:0:1"})
		}
		return []zkproto.ACL{entry(all, "ip", id)}
	}
}

// invalidACL picks an ACL list that create and setACL refuse.
func (g *gen) invalidACL() []zkproto.ACL {
	all := zkproto.PermAll
	return pick(g, [][]zkproto.ACL{
		{entry(all, "world", "someone")},
		{entry(all, "digest", "nocolon")},
		{entry(all, "super", "x")},
		{},
		nil,
		{entry(all, "foo", "bar")},
		{entry(all, "ip", "256.0.0.1")},
		{entry(all, "ip", "127.0.0.1/33")},
		{entry(all, "ip", "1.2.3")},
		{entry(all, "ip", "")},
		{world(all), entry(all, "auth", "")},
	})
}

// createFlags picks a CreateMode for create(1)/create2(15), mostly valid.
func (g *gen) createFlags() int32 {
	if g.chance(0.9) {
		return int32(g.r.IntN(4))
	}
	return pick(g, []int32{4, 5, 6, 7, -1})
}

// createRecord makes the request of a create-family op. inMulti keeps the
// flags matching the op unless variantMultiCreateFlags is on: inside a
// multi ZooKeeper derives the kind of node from the flags, not the op.
func (g *gen) createRecord(op zkproto.Op, inMulti bool) jute.Record {
	mismatch := g.chance(0.1) && !(inMulti && g.off(variantMultiCreateFlags))
	switch op {
	case zkproto.OpCreateContainer:
		flags := zkproto.FlagContainer
		if mismatch {
			flags = pick(g, []int32{0, 1, 2, 5})
		}
		return &zkproto.CreateRequest{Path: g.createPath(false), Data: g.data(), ACL: g.acl(), Flags: flags}
	case zkproto.OpCreateTTL:
		flags := pick(g, []int32{5, 6})
		if mismatch {
			flags = pick(g, []int32{0, 1, 2, 3, 4})
		}
		ttl := int64(1000 + g.r.IntN(100000))
		if g.chance(0.1) {
			ttl = pick(g, []int64{0, -1, 1<<40 - 1, 1 << 40})
		}
		if flags != 5 && flags != 6 && ttl < 0 {
			// 3.8.0 accepts this request and then fails to apply its txn:
			// the server shuts down (ZooKeeperCriticalThread).
			ttl = 0
		}
		return &zkproto.CreateTTLRequest{Path: g.createPath(flags == 6), Data: g.data(), ACL: g.acl(), Flags: flags, TTLMs: ttl}
	}
	flags := g.createFlags()
	for inMulti && g.off(variantMultiCreateFlags) && flags >= 4 && flags <= 6 {
		flags = g.createFlags()
	}
	return &zkproto.CreateRequest{Path: g.createPath(flags == 2 || flags == 3 || flags == 6), Data: g.data(), ACL: g.acl(), Flags: flags}
}

func (g *gen) create(st *step) { st.op = zkproto.OpCreate; st.req = g.createRecord(st.op, false) }

func (g *gen) create2(st *step) { st.op = zkproto.OpCreate2; st.req = g.createRecord(st.op, false) }

func (g *gen) createContainer(st *step) {
	st.op = zkproto.OpCreateContainer
	st.req = g.createRecord(st.op, false)
}

func (g *gen) createTTL(st *step) { st.op = zkproto.OpCreateTTL; st.req = g.createRecord(st.op, false) }

func (g *gen) delete(st *step) {
	p := g.path()
	if g.chance(0.5) {
		p = g.knownPath()
	}
	st.op, st.req = zkproto.OpDelete, &zkproto.DeleteRequest{Path: p, Version: g.version(p)}
}

func (g *gen) setData(st *step) {
	p := g.path()
	st.op, st.req = zkproto.OpSetData, &zkproto.SetDataRequest{Path: p, Data: g.data(), Version: g.version(p)}
}

// watch decides whether a read on path sets a standard watch in table.
func (g *gen) watch(slot int, table watchTable, path string, p float64) bool {
	return g.chance(p) && g.standardOK(slot, table, path)
}

func (g *gen) exists(st *step) {
	p := g.watchPath()
	st.op, st.req = zkproto.OpExists, &zkproto.ExistsRequest{Path: p, Watch: g.watch(st.slot, dataTable, p, 0.5)}
}

func (g *gen) getData(st *step) {
	p := g.watchPath()
	st.op, st.req = zkproto.OpGetData, &zkproto.GetDataRequest{Path: p, Watch: g.watch(st.slot, dataTable, p, 0.4)}
}

func (g *gen) getChildren(st *step) {
	p := g.watchPath()
	st.op, st.req = zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: p, Watch: g.watch(st.slot, childTable, p, 0.4)}
}

func (g *gen) getChildren2(st *step) {
	p := g.watchPath()
	st.op, st.req = zkproto.OpGetChildren2, &zkproto.GetChildren2Request{Path: p, Watch: g.watch(st.slot, childTable, p, 0.4)}
}

func (g *gen) getACL(st *step) {
	st.op, st.req = zkproto.OpGetACL, &zkproto.GetACLRequest{Path: g.path()}
}

func (g *gen) setACL(st *step) {
	p := g.path()
	for p == "/" {
		p = g.path() // a restrictive root ACL would starve the rest of the run
	}
	v := int32(-1)
	if g.chance(0.5) {
		v = pick(g, []int32{0, 1, 2, -2})
	}
	st.op, st.req = zkproto.OpSetACL, &zkproto.SetACLRequest{Path: p, ACL: g.acl(), Version: v}
}

func (g *gen) auth(st *step) {
	creds := pick(g, []struct{ scheme, auth string }{
		{"digest", "alice:pa"}, {"digest", "alice:pa"}, {"digest", "bob:pb"}, {"digest", "bob:pb"},
		{"digest", "alice:wrong"}, {"digest", superUser + ":" + superPass}, {"digest", "nocolon"},
		{"ip", "anything"},
	})
	st.op, st.req = zkproto.OpAuth, &zkproto.AuthPacket{Scheme: creds.scheme, Auth: []byte(creds.auth)}
}

func (g *gen) sync(st *step) { st.op, st.req = zkproto.OpSync, &zkproto.SyncRequest{Path: g.path()} }

func (g *gen) addWatch(st *step) {
	st.op = zkproto.OpAddWatch
	if !g.off(variantAddWatchBadMode) && g.chance(0.03) {
		st.req = &zkproto.AddWatchRequest{Path: g.path(), Mode: 2}
		return
	}
	for range 5 {
		p := g.path()
		if g.chance(0.4) {
			p = pick(g, []string{"/", "/a", "/b", "/c"}) // watch much of the tree
		}
		if mode, ok := g.addWatchMode(st.slot, p, int32(g.r.IntN(2))); ok {
			st.req = &zkproto.AddWatchRequest{Path: p, Mode: mode}
			return
		}
	}
	st.op, st.req = zkproto.OpSync, &zkproto.SyncRequest{Path: "/"}
}

func (g *gen) watcherType() zkproto.WatcherType {
	if !g.off(variantBadWatcherType) && g.chance(0.03) {
		return pick(g, []zkproto.WatcherType{0, 6})
	}
	if g.off(variantWatcherType45) {
		return zkproto.WatcherType(1 + g.r.IntN(3))
	}
	return zkproto.WatcherType(1 + g.r.IntN(5))
}

func (g *gen) checkWatches(st *step) {
	p := g.path()
	t := g.watcherTypeFor(st.slot, p, g.watcherType())
	for try := 0; g.off(variantCheckOthersWatches) && g.othersWatch(st.slot, p, t); try++ {
		p = g.path()
		if try == 5 {
			p = "/unwatched"
		}
		t = g.watcherTypeFor(st.slot, p, g.watcherType())
	}
	if !strings.HasPrefix(p, "/") && g.off(variantCheckRelativePath) {
		p = "/unwatched"
	}
	st.op, st.req = zkproto.OpCheckWatches, &zkproto.CheckWatchesRequest{Path: p, Type: t}
}

func (g *gen) removeWatches(st *step) {
	p := g.path()
	st.op, st.req = zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: p, Type: g.watcherTypeFor(st.slot, p, g.watcherType())}
}

func (g *gen) allChildren(st *step) {
	p := g.path()
	if p == "" && g.off(variantAllChildrenEmptyPath) {
		p = "/"
	}
	st.op, st.req = zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: p}
}

func (g *gen) ephemerals(st *step) {
	prefix := g.path()
	if g.chance(0.5) {
		prefix = pick(g, []string{"", "/", " ", "/a", "/a/b", "/b", "/x", "a", "/a/"})
	}
	st.op, st.req = zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: prefix}
}

func (g *gen) whoAmI(st *step) { st.op = zkproto.OpWhoAmI }

func (g *gen) closeSession(st *step) {
	g.resetWatches(st.slot)
	st.kind, st.op = kindClose, zkproto.OpCloseSession
	st.timeoutMs = defaultTimeoutMs
	if g.chance(0.3) {
		st.timeoutMs = pick(g, []int32{1, 5000, 100000000})
	}
}

// reconnect drops the connection; most of the time the new connection
// restores a random set of watches, with a relative zxid that makes some
// of them fire at once (docs/zookeeper-protocol.md §3.4).
func (g *gen) reconnect(st *step) {
	st.kind = kindReconnect
	g.resetWatches(st.slot)
	if g.chance(0.25) {
		return
	}
	st.op = zkproto.OpSetWatches2
	if g.chance(0.5) {
		st.op = zkproto.OpSetWatches
	}
	list := func() []string {
		out := []string{} // clients send empty lists, never null ones
		if !g.off(variantNullWatchList) && g.chance(0.05) {
			out = nil
		}
		for range g.r.IntN(3) {
			out = append(out, g.path())
		}
		return out
	}
	w := &zkproto.SetWatches2{
		DataWatches:  g.keepWatchable(st.slot, list(), watchStandard, dataTable),
		ExistWatches: g.keepWatchable(st.slot, list(), watchStandard, dataTable),
		ChildWatches: g.keepWatchable(st.slot, list(), watchStandard, childTable),
	}
	if st.op == zkproto.OpSetWatches2 {
		w.PersistentWatches = g.keepWatchable(st.slot, list(), watchPersistent)
		w.PersistentRecursiveWatches = g.keepWatchable(st.slot, list(), watchRecursive)
	}
	if g.lastZxid > 0 {
		w.RelativeZxid = g.r.Int64N(g.lastZxid + 1)
	}
	st.watches = w
}

// badReattach presents a session the server must refuse. A wrong password
// for a live session also costs the slot its connection, and so its
// watches.
func (g *gen) badReattach(st *step) {
	st.kind = kindBadReattach
	st.stale = g.chance(0.5)
	if !st.stale {
		g.resetWatches(st.slot)
	}
}

// refused makes a request the server answers by closing the connection
// (the session survives, and the test reattaches it): an unknown opcode
// or an auth scheme no provider handles.
func (g *gen) refused(st *step) {
	g.resetWatches(st.slot)
	st.expectClose = true
	if g.chance(0.5) {
		st.op = zkproto.Op(999)
		return
	}
	st.op, st.req = zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "foo", Auth: []byte("bar")}
}
