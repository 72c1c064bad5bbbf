package peer

import (
	"encoding/binary"
	"fmt"
	"slices"

	"keeper/coordination/txn"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zoocfg"
	"keeper/coordination/zxid"
)

// txnTypeOffset is where a txn payload's header holds its type: after
// long clientId, int cxid, long zxid, long time.
const txnTypeOffset = 8 + 4 + 8 + 8

// MembershipCodec is zab's ReconfigCodec over ZooKeeper's bytes
// (docs/zookeeper-protocol.md §10.6): a reconfig txn (type 16, a SetDataTxn
// of /zookeeper/config) carries the new configuration's text, the same
// text NEWLEADER and election notifications carry.
type MembershipCodec struct {
	// MaxBuffer bounds the buffers of a txn it decodes (jute.maxbuffer).
	MaxBuffer int
}

// Reconfig implements zab.ReconfigCodec. It reads only the header of a
// txn that is not a reconfig, since zab asks about every txn it commits.
func (c MembershipCodec) Reconfig(data []byte) (zab.Membership, bool) {
	if len(data) < txnTypeOffset+4 || zkproto.Op(int32(binary.BigEndian.Uint32(data[txnTypeOffset:]))) != zkproto.OpReconfig {
		return zab.Membership{}, false
	}
	t, err := txn.Unmarshal(data, c.MaxBuffer)
	if err != nil {
		return zab.Membership{}, false
	}
	sd, ok := t.Record.(*txn.SetData)
	if !ok {
		return zab.Membership{}, false
	}
	m, err := c.Parse(sd.Data)
	if err != nil {
		return zab.Membership{}, false
	}
	return m, true
}

// Parse implements zab.ReconfigCodec: the text is a configuration as
// /zookeeper/config holds it, server lines and a version line.
func (MembershipCodec) Parse(text []byte) (zab.Membership, error) {
	e, err := zoocfg.ParseNextDynamic(text, "configuration")
	if err != nil {
		return zab.Membership{}, err
	}
	if len(e.Servers) == 0 {
		return zab.Membership{}, fmt.Errorf("peer: configuration %q names no server", text)
	}
	m := zab.Membership{Version: zxid.ID(e.Version), Text: slices.Clone(text)}
	for _, s := range e.Servers {
		if s.Role == zoocfg.Observer {
			m.Observers = append(m.Observers, zab.PeerID(s.ID))
		} else {
			m.Voters = append(m.Voters, zab.PeerID(s.ID))
		}
	}
	return m, nil
}

// Stamp implements zab.ReconfigCodec: the same servers, in the same
// order, with the version line replaced.
func (MembershipCodec) Stamp(text []byte, version zxid.ID) ([]byte, error) {
	e, err := zoocfg.ParseNextDynamic(text, "configuration")
	if err != nil {
		return nil, err
	}
	e.Version = int64(version)
	return e.Data(), nil
}

// Ensemble answers what the leader's core asks to prepare a reconfig
// (zkcore.Ensemble) from the node.
func (p *Peer) Ensemble() zkcore.Ensemble { return ensembleView{p.node} }

type ensembleView struct{ node *zab.Node }

// LastSeen implements zkcore.Ensemble. A configuration whose text does
// not parse (a member without reconfiguration, whose text is empty) is
// reported as in progress, so that no reconfig is prepared against it.
func (v ensembleView) LastSeen() (*zoocfg.Ensemble, bool) {
	m := v.node.LastSeen()
	e, err := zoocfg.ParseNextDynamic(m.Text, "configuration")
	if err != nil || len(e.Servers) == 0 {
		return &zoocfg.Ensemble{}, true
	}
	return e, v.node.ReconfigInProgress()
}

// QuorumSynced implements zkcore.Ensemble.
func (v ensembleView) QuorumSynced(voters []int64) bool {
	m := zab.Membership{}
	for _, id := range voters {
		m.Voters = append(m.Voters, zab.PeerID(id))
	}
	return v.node.QuorumSynced(m)
}
