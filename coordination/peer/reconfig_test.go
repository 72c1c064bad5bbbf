package peer

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"testing"

	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// memConfigs is a ConfigStore in memory; it survives a peer's crash.
type memConfigs struct{ saved []zab.ConfigState }

func (m *memConfigs) SaveConfig(cs zab.ConfigState) error {
	m.saved = append(m.saved, cs)
	return nil
}

func (m *memConfigs) last() (zab.ConfigState, bool) {
	if len(m.saved) == 0 {
		return zab.ConfigState{}, false
	}
	return m.saved[len(m.saved)-1], true
}

func serverLines(ids ...int) string {
	s := ""
	for _, id := range ids {
		s += fmt.Sprintf("server.%d=127.0.0.1:20%02d:30%02d:participant;127.0.0.1:40%02d\n", id, id, id, id)
	}
	return s
}

// newReconfigEnsemble runs three peers with reconfiguration on: the
// codec, a configuration store, the core's view of the ensemble, and the
// super user super:pw.
func newReconfigEnsemble(t *testing.T) (*ensemble, map[zab.PeerID]*memConfigs) {
	stores := map[zab.PeerID]*memConfigs{}
	initial := serverLines(1, 2, 3) + "version=0"
	sum := sha1.Sum([]byte("super:pw"))
	e := newEnsembleWith(t, 3, func(id zab.PeerID, zc *zkcore.Config, nc *zab.Config) {
		if stores[id] == nil {
			stores[id] = &memConfigs{}
		}
		text, version := []byte(initial), zxid.ID(0)
		if cs, ok := stores[id].last(); ok {
			text, version, nc.NextConfig = cs.Active.Text, cs.Active.Version, cs.Next
		}
		zc.ReconfigEnabled, zc.EnsembleConfig, zc.EnsembleConfigVersion = true, text, int64(version)
		zc.SuperDigest = "super:" + base64.StdEncoding.EncodeToString(sum[:])
		nc.ConfigText, nc.ConfigVersion = text, version
		nc.Reconfigs = MembershipCodec{MaxBuffer: jute.DefaultMaxBuffer}
	}, func(id zab.PeerID, p *Peer) {
		p.Core().SetEnsemble(p.Ensemble())
		p.SetConfigStore(stores[id])
	})
	return e, stores
}

func configNode(p *Peer) string { return string(p.Core().Tree().Node(datatree.ConfigPath).Data()) }

// The whole path in memory: the first leader numbers the configuration,
// every member shows and stores it; a super user's reconfig removes a
// follower, commits with both quorums, and every member activates the new
// configuration, shows it in /zookeeper/config and stores it; writes go
// on with the two voters left.
func TestEnsembleReconfig(t *testing.T) {
	e, stores := newReconfigEnsemble(t)
	e.until(2000, "serving", func() bool { _, ok := e.serving(); return ok })
	leader, _ := e.serving()
	stamped := serverLines(1, 2, 3) + "version=100000000"
	for _, id := range e.ids {
		e.until(200, "stamped", func() bool { return configNode(e.peers[id]) == stamped })
		if cs, _ := stores[id].last(); cs.Active.Version != zxid.Make(1, 0) {
			t.Fatalf("peer %d stored %+v", id, cs)
		}
	}
	leaving := e.ids[0]
	if leaving == leader {
		leaving = e.ids[1]
	}
	e.connect(leader, 1)
	e.request(leader, 1, 1, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("super:pw")})
	e.request(leader, 1, 2, zkproto.OpReconfig, &zkproto.ReconfigRequest{LeavingServers: fmt.Sprint(leaving), CurConfigID: -1})
	e.until(2000, "reconfig answered", func() bool { _, ok := e.reply(leader, 1, 2); return ok })
	h, _ := e.reply(leader, 1, 2)
	if h.Err != 0 {
		t.Fatalf("reconfig: %v", h.Err)
	}
	var left []int
	for _, id := range e.ids {
		if id != leaving {
			left = append(left, int(id))
		}
	}
	want := serverLines(left...) + fmt.Sprintf("version=%x", uint64(h.Zxid))
	bodies := e.bodies[leader][1]
	var resp zkproto.GetDataResponse
	d := jute.NewDecoder(bodies[len(bodies)-1][16:], 0)
	resp.Decode(d)
	if string(resp.Data) != want || resp.Stat.Mzxid != h.Zxid || resp.Stat.Version != -1 {
		t.Fatalf("reply %q %+v, want %q", resp.Data, resp.Stat, want)
	}
	for _, id := range e.ids {
		e.until(500, "activated", func() bool {
			return e.peers[id].Node().Membership().Version == zxid.ID(h.Zxid) && configNode(e.peers[id]) == want
		})
		if cs, _ := stores[id].last(); cs.Active.Version != zxid.ID(h.Zxid) || cs.Next != nil {
			t.Fatalf("peer %d stored %+v", id, cs)
		}
	}
	e.crash(leaving)
	e.request(leader, 1, 3, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/after", ACL: zkproto.OpenACLUnsafe})
	e.until(2000, "a write with the two voters left", func() bool { _, ok := e.reply(leader, 1, 3); return ok })
	if h, _ := e.reply(leader, 1, 3); h.Err != 0 {
		t.Fatalf("create: %v", h.Err)
	}
}
