package zkcore

import (
	"errors"

	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zoocfg"
	"keeper/coordination/zxid"
)

// Ensemble is what the leader's core asks of the ensemble to prepare a
// reconfig (op 16); the driver answers from Zab and the configurations it
// persisted (docs/zookeeper-protocol.md §10.6).
type Ensemble interface {
	// LastSeen returns the last configuration seen (the one in flight,
	// or the active one) and whether a reconfiguration is in flight.
	LastSeen() (last *zoocfg.Ensemble, inProgress bool)
	// QuorumSynced reports whether the leader is in sync with a quorum of
	// the given voters (itself included when it is one of them).
	QuorumSynced(voters []int64) bool
}

// EnsembleConfigVersion is the version of the configuration
// /zookeeper/config holds (Config.EnsembleConfigVersion, or the last
// SetEnsembleConfig).
func (s *Server) EnsembleConfigVersion() zxid.ID { return zxid.ID(s.cfg.EnsembleConfigVersion) }

// SetEnsemble gives the core its view of the ensemble (Config.Ensemble),
// for a driver that builds it after the core.
func (s *Server) SetEnsemble(e Ensemble) { s.cfg.Ensemble = e }

// SetEnsembleConfig makes a configuration the ensemble activated outside a
// reconfig txn (a leader's NEWLEADER stamp, a learner's sync, a looking
// member that heard of it) what /zookeeper/config holds, as ZooKeeper's
// initConfigInZKDatabase does, and what Restore writes from now on. It is
// not a txn; a watch on the node fires.
func (s *Server) SetEnsembleConfig(data []byte, version int64, now Now) {
	s.cfg.EnsembleConfig, s.cfg.EnsembleConfigVersion = data, version
	s.storeEnsembleConfig(s.tree, now)
	n := s.tree.Node(datatree.ConfigPath)
	if n == nil {
		return
	}
	s.notify([]datatree.Change{{Type: zkproto.EventNodeDataChanged, Path: datatree.ConfigPath, ACL: s.tree.ACL(n)}})
}

// storeEnsembleConfig writes the configuration the core holds into
// tree's /zookeeper/config, outside a txn. ZooKeeper's data tree counts
// such a store (initConfigInZKDatabase's setData, at start, after a
// learner's sync, on activation) in write_per_namespace under the
// namespace "zookeeper", path and data bytes, and so does keeper.
func (s *Server) storeEnsembleConfig(tree *datatree.Tree, now Now) {
	tree.SetEnsembleConfig(s.cfg.EnsembleConfig, s.cfg.EnsembleConfigVersion, now.WallMs)
	s.metrics.written(&txn.SetData{Path: datatree.ConfigPath, Data: s.cfg.EnsembleConfig})
}

// reconfig prepares a reconfig in the order of ZooKeeper 3.8's leader
// (docs/zookeeper-protocol.md §2.4): ReconfigDisabled, the session,
// Unimplemented without an ensemble (standalone), ReconfigInProgress,
// BadVersion for a curConfigId that is not -1 nor the last seen version,
// the new membership (BadArguments, or MarshallingError for an id that is
// not a number), NewConfigNoQuorum, then WRITE on /zookeeper/config. Its
// txn is a setData of /zookeeper/config to the new configuration's text,
// version -1, whose version is the txn's zxid.
func (p *prep) reconfig(r *zkproto.ReconfigRequest) (jute.Record, error) {
	cfg := &p.s.cfg
	if !cfg.ReconfigEnabled {
		return nil, zkproto.ErrReconfigDisabled
	}
	if err := p.checkSession(); err != nil {
		return nil, err
	}
	if cfg.Ensemble == nil || p.s.mode != Leader {
		return nil, zkproto.Errorf(zkproto.CodeUnimplemented, "")
	}
	last, inProgress := cfg.Ensemble.LastSeen()
	if inProgress || p.s.reconfigPending != 0 {
		return nil, zkproto.Errorf(zkproto.CodeReconfigInProgress, "")
	}
	if r.CurConfigID != -1 && r.CurConfigID != last.Version {
		return nil, zkproto.Errorf(zkproto.CodeBadVersion, "")
	}
	change := zoocfg.Reconfig{Joining: r.JoiningServers, Leaving: r.LeavingServers}
	if r.NewMembers != nil {
		change.NewMembers, change.Replace = *r.NewMembers, true
	}
	next, err := last.Reconfigure(change, int64(p.zxid), cfg.StandaloneEnabled)
	switch {
	case err == nil:
	case errors.Is(err, zoocfg.ErrReconfigMarshalling):
		return nil, zkproto.ErrMarshallingError
	default:
		return nil, zkproto.Errorf(zkproto.CodeBadArguments, "")
	}
	var voters []int64
	for _, s := range next.Servers {
		if s.Role == zoocfg.Participant {
			voters = append(voters, s.ID)
		}
	}
	if !cfg.Ensemble.QuorumSynced(voters) {
		return nil, zkproto.Errorf(zkproto.CodeNewConfigNoQuorum, "")
	}
	node, ok := p.get(datatree.ConfigPath)
	if !ok {
		return nil, zkproto.Errorf(zkproto.CodeNoNode, datatree.ConfigPath)
	}
	if err := p.checkACL(node, zkproto.PermWrite, datatree.ConfigPath); err != nil {
		return nil, err
	}
	data := next.Data()
	node.stat.Version = -1
	node.stat.Mzxid = int64(p.zxid)
	node.stat.Mtime = p.timeMs
	node.dataLen = len(data)
	p.put(datatree.ConfigPath, node)
	p.reconfigZxid = p.zxid
	return &txn.SetData{Path: datatree.ConfigPath, Data: data, Version: -1}, nil
}
