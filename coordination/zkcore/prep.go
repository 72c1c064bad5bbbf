package zkcore

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// Ephemeral owner markers (docs/zookeeper-protocol.md §5.4).
const (
	containerOwner int64 = math.MinInt64
	ttlOwnerMask   int64 = -0x0100000000000000 // 0xFF00000000000000
	maxTTLMs       int64 = 0xFFFFFFFFFF
)

// isNormalEphemeral reports whether a stored ephemeralOwner names a
// session, rather than persistent, container or TTL.
func isNormalEphemeral(owner int64) bool {
	return owner != 0 && owner != containerOwner && owner&ttlOwnerMask != ttlOwnerMask
}

// reservedPaths may never be deleted (docs/zookeeper-protocol.md §2.4 delete).
var reservedPaths = map[string]bool{
	"/": true, "/zookeeper": true, "/zookeeper/quota": true, "/zookeeper/config": true,
}

// prep validates one write against the view and builds its txn record. It
// collects the changes the txn will make in local, which the caller adds to
// the view only if the whole txn succeeds.
type prep struct {
	s         *Server
	sessionID int64 // 0 for the server's own requests (container reaping)
	ids       []zkproto.ID
	zxid      zxid.ID
	timeMs    int64
	// order holds the changes in the order they were made; local indexes
	// them by path once there are more than localScanMax (a multi), and is
	// nil before: a single write makes one or two changes, which a scan
	// finds sooner than a map that would be allocated for every write.
	local map[string]*change
	order []*change
	// reconfigZxid is set when the txn is a reconfiguration.
	reconfigZxid zxid.ID
}

func (s *Server) newPrep(sessionID int64, ids []zkproto.ID, z zxid.ID, timeMs int64) *prep {
	return &prep{s: s, sessionID: sessionID, ids: ids, zxid: z, timeMs: timeMs}
}

// localScanMax is how many changes prep finds by scanning before it
// indexes them by path.
const localScanMax = 8

// change returns the newest change this txn made to path, if any.
func (p *prep) change(path string) (*change, bool) {
	if p.local != nil {
		ch, ok := p.local[path]
		return ch, ok
	}
	for i := len(p.order) - 1; i >= 0; i-- {
		if p.order[i].path == path {
			return p.order[i], true
		}
	}
	return nil, false
}

func (p *prep) get(path string) (record, bool) {
	if ch, ok := p.change(path); ok {
		return ch.rec, ch.rec.exists
	}
	return p.s.view.get(path)
}

func (p *prep) put(path string, r record) {
	ch := p.s.view.newChange()
	*ch = change{zxid: p.zxid, path: path, rec: r}
	p.order = append(p.order, ch)
	switch {
	case p.local != nil:
		p.local[path] = ch
	case len(p.order) > localScanMax:
		p.local = make(map[string]*change, 2*len(p.order))
		for _, c := range p.order {
			p.local[c.path] = c // in order: the newest change to a path wins
		}
	}
}

// reset forgets the changes collected so far (a multi that failed).
func (p *prep) reset() {
	p.local = nil
	p.order = nil
}

func (p *prep) checkSession() error {
	if p.sessionID == 0 {
		return nil
	}
	if sess, ok := p.s.sessions.Get(p.sessionID); !ok || sess.Closing {
		return zkproto.ErrSessionExpired
	}
	return nil
}

func (p *prep) checkACL(r record, perm int32, path string) error {
	if !p.s.auth.Check(r.acl, perm, p.ids) {
		return zkproto.Errorf(zkproto.CodeNoAuth, path)
	}
	return nil
}

// op preps one write (top level or inside a multi) and returns its txn
// record.
func (p *prep) op(op zkproto.Op, body jute.Record) (jute.Record, error) {
	switch r := body.(type) {
	case *zkproto.CreateRequest:
		return p.create(op, r.Path, r.Data, r.ACL, r.Flags, -1)
	case *zkproto.CreateTTLRequest:
		return p.create(op, r.Path, r.Data, r.ACL, r.Flags, r.TTLMs)
	case *zkproto.DeleteRequest:
		return p.delete(r.Path, r.Version)
	case *zkproto.SetDataRequest:
		return p.setData(r.Path, r.Data, r.Version)
	case *zkproto.SetACLRequest:
		return p.setACL(r.Path, r.ACL, r.Version)
	case *zkproto.CheckVersionRequest:
		return p.check(r.Path, r.Version)
	case *zkproto.ReconfigRequest:
		return p.reconfig(r)
	}
	return nil, fmt.Errorf("zkcore: op %v with body %T is not a write: %w", op, body, zkproto.ErrMarshallingError)
}

// create follows the check order of docs/zookeeper-protocol.md §2.4; the first failing check
// decides the error.
func (p *prep) create(op zkproto.Op, path string, data []byte, acls []zkproto.ACL, flags int32, ttl int64) (jute.Record, error) {
	if flags < zkproto.FlagPersistent || flags > zkproto.FlagPersistentSequentialWithTTL {
		return nil, zkproto.Errorf(zkproto.CodeBadArguments, path)
	}
	ttlMode := flags == zkproto.FlagPersistentWithTTL || flags == zkproto.FlagPersistentSequentialWithTTL
	if ttlMode && !p.s.cfg.ExtendedTypes {
		return nil, zkproto.Errorf(zkproto.CodeUnimplemented, path)
	}
	if (ttlMode && (ttl <= 0 || ttl > maxTTLMs)) || (!ttlMode && ttl >= 0) {
		return nil, zkproto.Errorf(zkproto.CodeBadArguments, path)
	}
	if op == zkproto.OpCreateTTL && !ttlMode {
		// ZooKeeper 3.8 logs such a request as a CreateTTL txn whose ttl
		// no server can apply (its own apply throws and the server
		// exits). Refused here, it never reaches the log.
		return nil, zkproto.Errorf(zkproto.CodeBadArguments, path)
	}
	if err := p.checkSession(); err != nil {
		return nil, err
	}
	slash := strings.LastIndexByte(path, '/')
	if slash < 0 || strings.IndexByte(path, 0) >= 0 {
		return nil, zkproto.Errorf(zkproto.CodeBadArguments, path)
	}
	parentPath := path[:slash]
	if parentPath == "" {
		parentPath = "/"
	}
	fixed, err := p.s.auth.Fixup(acls, p.ids)
	if err != nil {
		return nil, zkproto.Errorf(zkproto.CodeInvalidACL, path)
	}
	parent, ok := p.get(parentPath)
	if !ok {
		return nil, zkproto.Errorf(zkproto.CodeNoNode, parentPath)
	}
	if err := p.checkACL(parent, zkproto.PermCreate, parentPath); err != nil {
		return nil, err
	}
	sequential := flags == zkproto.FlagPersistentSequential || flags == zkproto.FlagEphemeralSequential ||
		flags == zkproto.FlagPersistentSequentialWithTTL
	if sequential {
		path += fmt.Sprintf("%010d", parent.stat.Cversion)
	}
	if err := zkproto.ValidatePath(path); err != nil {
		return nil, zkproto.Errorf(zkproto.CodeBadArguments, path)
	}
	if _, exists := p.get(path); exists {
		return nil, zkproto.Errorf(zkproto.CodeNodeExists, path)
	}
	if isNormalEphemeral(parent.stat.EphemeralOwner) {
		return nil, zkproto.Errorf(zkproto.CodeNoChildrenForEphemerals, path)
	}
	if err := p.checkQuota(path, int64(len(data)), 1); err != nil {
		return nil, err
	}
	newCversion := parent.stat.Cversion + 1
	var rec jute.Record
	var owner int64
	switch op {
	case zkproto.OpCreateContainer:
		rec = &txn.CreateContainer{Path: path, Data: data, ACL: fixed, ParentCversion: newCversion}
		owner = containerOwner
	case zkproto.OpCreateTTL:
		rec = &txn.CreateTTL{Path: path, Data: data, ACL: fixed, ParentCversion: newCversion, TTL: ttl}
		owner = ttlOwnerMask | ttl
	default:
		ephemeral := flags == zkproto.FlagEphemeral || flags == zkproto.FlagEphemeralSequential
		rec = &txn.Create{Path: path, Data: data, ACL: fixed, Ephemeral: ephemeral, ParentCversion: newCversion}
		if ephemeral {
			owner = p.sessionID
		}
	}
	parent.numChildren++
	parent.stat.Cversion = newCversion
	parent.stat.Pzxid = int64(p.zxid)
	p.put(parentPath, parent)
	p.put(path, record{exists: true, acl: fixed, dataLen: len(data), stat: zkproto.StatPersisted{
		Czxid: int64(p.zxid), Mzxid: int64(p.zxid), Pzxid: int64(p.zxid),
		Ctime: p.timeMs, Mtime: p.timeMs, EphemeralOwner: owner,
	}})
	return rec, nil
}

func (p *prep) delete(path string, version int32) (jute.Record, error) {
	if err := p.checkSession(); err != nil {
		return nil, err
	}
	slash := strings.LastIndexByte(path, '/')
	if slash < 0 || strings.IndexByte(path, 0) >= 0 || reservedPaths[path] {
		return nil, zkproto.Errorf(zkproto.CodeBadArguments, path)
	}
	parentPath := path[:slash]
	if parentPath == "" {
		parentPath = "/"
	}
	parent, ok := p.get(parentPath)
	if !ok {
		return nil, zkproto.Errorf(zkproto.CodeNoNode, parentPath)
	}
	if err := p.checkACL(parent, zkproto.PermDelete, path); err != nil {
		return nil, err
	}
	node, ok := p.get(path)
	if !ok {
		return nil, zkproto.Errorf(zkproto.CodeNoNode, path)
	}
	if version != -1 && version != node.stat.Version {
		return nil, zkproto.Errorf(zkproto.CodeBadVersion, path)
	}
	if node.numChildren > 0 {
		return nil, zkproto.Errorf(zkproto.CodeNotEmpty, path)
	}
	p.removeNode(path, parentPath, parent)
	return &txn.Delete{Path: path}, nil
}

// removeNode records the deletion of path under its parent record.
func (p *prep) removeNode(path, parentPath string, parent record) {
	parent.numChildren--
	parent.stat.Pzxid = int64(p.zxid)
	p.put(parentPath, parent)
	p.put(path, record{})
}

// nextVersion is the version after an update; -1 means "any version" in
// requests, so the counter skips it (docs/zookeeper-protocol.md §5.3).
func nextVersion(v int32) int32 {
	if v+1 == -1 {
		return 0
	}
	return v + 1
}

func (p *prep) setData(path string, data []byte, version int32) (jute.Record, error) {
	if err := p.checkSession(); err != nil {
		return nil, err
	}
	if err := zkproto.ValidatePath(path); err != nil {
		return nil, zkproto.Errorf(zkproto.CodeBadArguments, path)
	}
	node, ok := p.get(path)
	if !ok {
		return nil, zkproto.Errorf(zkproto.CodeNoNode, path)
	}
	if err := p.checkACL(node, zkproto.PermWrite, path); err != nil {
		return nil, err
	}
	if err := p.checkQuota(path, int64(len(data)-node.dataLen), 0); err != nil {
		return nil, err
	}
	if version != -1 && version != node.stat.Version {
		return nil, zkproto.Errorf(zkproto.CodeBadVersion, path)
	}
	node.stat.Version = nextVersion(node.stat.Version)
	node.stat.Mzxid = int64(p.zxid)
	node.stat.Mtime = p.timeMs
	node.dataLen = len(data)
	p.put(path, node)
	return &txn.SetData{Path: path, Data: data, Version: node.stat.Version}, nil
}

func (p *prep) setACL(path string, acls []zkproto.ACL, version int32) (jute.Record, error) {
	if err := p.checkSession(); err != nil {
		return nil, err
	}
	if err := zkproto.ValidatePath(path); err != nil {
		return nil, zkproto.Errorf(zkproto.CodeBadArguments, path)
	}
	fixed, err := p.s.auth.Fixup(acls, p.ids)
	if err != nil {
		return nil, zkproto.Errorf(zkproto.CodeInvalidACL, path)
	}
	node, ok := p.get(path)
	if !ok {
		return nil, zkproto.Errorf(zkproto.CodeNoNode, path)
	}
	if err := p.checkACL(node, zkproto.PermAdmin, path); err != nil {
		return nil, err
	}
	if version != -1 && version != node.stat.Aversion {
		return nil, zkproto.Errorf(zkproto.CodeBadVersion, path)
	}
	node.stat.Aversion = nextVersion(node.stat.Aversion)
	node.acl = fixed
	p.put(path, node)
	return &txn.SetACL{Path: path, ACL: fixed, Version: node.stat.Aversion}, nil
}

func (p *prep) check(path string, version int32) (jute.Record, error) {
	if err := p.checkSession(); err != nil {
		return nil, err
	}
	if err := zkproto.ValidatePath(path); err != nil {
		return nil, zkproto.Errorf(zkproto.CodeBadArguments, path)
	}
	node, ok := p.get(path)
	if !ok {
		return nil, zkproto.Errorf(zkproto.CodeNoNode, path)
	}
	if err := p.checkACL(node, zkproto.PermRead, path); err != nil {
		return nil, err
	}
	if version != -1 && version != node.stat.Version {
		return nil, zkproto.Errorf(zkproto.CodeBadVersion, path)
	}
	return &txn.CheckVersion{Path: path, Version: nextVersion(node.stat.Version)}, nil
}

// multi preps every sub-op against the effects of the ones before it. If one
// fails, nothing changes and every sub-txn becomes an error txn: 0 before
// the failure, its code at it, RuntimeInconsistency after (docs/zookeeper-protocol.md §2.3).
//
// A create op with TTL flags that is not a createTTL, and an op whose quota
// check cannot parse the quota's nodes, are requests Apache ZooKeeper fails
// as a whole when prep reaches them (MarshallingError).
func (p *prep) multi(m *zkproto.MultiRequest) (*txn.Multi, error) {
	ops := make([]txn.Op, len(m.Ops))
	for i, sub := range m.Ops {
		if cr, ok := sub.Record.(*zkproto.CreateRequest); ok &&
			(cr.Flags == zkproto.FlagPersistentWithTTL || cr.Flags == zkproto.FlagPersistentSequentialWithTTL) {
			p.reset()
			return nil, zkproto.Errorf(zkproto.CodeMarshallingError, cr.Path)
		}
		rec, err := p.op(sub.Op, sub.Record)
		if err == nil {
			ops[i] = txn.Op{Type: loggedMultiOp(sub.Op), Record: rec}
			continue
		}
		p.reset()
		if isQuotaData(err) {
			return nil, err
		}
		for j := range ops {
			code := zkproto.CodeOK
			switch {
			case j == i:
				code = zkproto.CodeOf(err)
			case j > i:
				code = zkproto.CodeRuntimeInconsistency
			}
			ops[j] = txn.Op{Type: zkproto.OpError, Record: &txn.Error{Err: int32(code)}}
		}
		break
	}
	return &txn.Multi{Ops: ops}, nil
}

// loggedMultiOp is the type a multi's sub-txn is logged with. A create2
// op is logged as create, as Apache ZooKeeper logs it (its multi decoder
// makes every create op a create, or a createContainer by its flags): 3.8
// replays no create2 sub-txn, and a ZooKeeper follower or a ZooKeeper
// server reading keeper's log would drop the rest of the multi. Only the
// reply shows that the op was a create2.
func loggedMultiOp(op zkproto.Op) zkproto.Op {
	if op == zkproto.OpCreate2 {
		return zkproto.OpCreate
	}
	return op
}

// closeSession deletes every ephemeral the session will own once pending
// txns apply, in path order.
func (p *prep) closeSession() *txn.CloseSession {
	owned := p.s.view.ephemeralsOf(p.sessionID)
	paths := make([]string, 0, len(owned))
	for path := range owned {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	for _, path := range paths {
		parentPath := zkproto.ParentPath(path)
		parent, ok := p.get(parentPath)
		if !ok {
			continue
		}
		p.removeNode(path, parentPath, parent)
	}
	return &txn.CloseSession{Paths: paths}
}
