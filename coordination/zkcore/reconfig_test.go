package zkcore

import (
	"crypto/sha1"
	"encoding/base64"
	"testing"

	"keeper/coordination/datatree"
	"keeper/coordination/zkproto"
	"keeper/coordination/zoocfg"
	"keeper/coordination/zxid"
	"keeper/internal/metric"
)

// fakeEnsemble answers the core's questions from fields.
type fakeEnsemble struct {
	last       *zoocfg.Ensemble
	inProgress bool
	synced     map[int64]bool
}

func (f *fakeEnsemble) LastSeen() (*zoocfg.Ensemble, bool) { return f.last, f.inProgress }

func (f *fakeEnsemble) QuorumSynced(voters []int64) bool {
	k := 0
	for _, v := range voters {
		if f.synced[v] {
			k++
		}
	}
	return k > len(voters)/2
}

const threeConfig = "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\n" +
	"server.2=127.0.0.1:2002:3002:participant;127.0.0.1:4002\n" +
	"server.3=127.0.0.1:2003:3003:participant;127.0.0.1:4003\nversion=100000000"

func superDigestOf(userPass string) string {
	h := sha1.Sum([]byte(userPass))
	user := userPass[:len(userPass)-len("pw")-1]
	return user + ":" + base64.StdEncoding.EncodeToString(h[:])
}

// reconfigLeader is a leader core of epoch 1 over the three servers of
// threeConfig, with the super user super:pw.
func reconfigLeader(t *testing.T, enabled bool, f *fakeEnsemble) *harness {
	t.Helper()
	last, err := zoocfg.ParseNextDynamic([]byte(threeConfig), "zoo.cfg.dynamic.next")
	if err != nil {
		t.Fatal(err)
	}
	f.last = last
	h := newHarness(t, func(c *Config) {
		c.ReconfigEnabled = enabled
		c.Ensemble = f
		c.SuperDigest = superDigestOf("super:pw")
	})
	h.s.SetMode(Leader, 1, h.now)
	return h
}

// Every check of a reconfig, in ZooKeeper's order: the first that fails
// decides the error, and the failed request is an error txn.
func TestReconfigChecks(t *testing.T) {
	all := map[int64]bool{1: true, 2: true, 3: true, 4: true}
	grow := &zkproto.ReconfigRequest{JoiningServers: "server.4=127.0.0.1:2004:3004;4004", CurConfigID: -1}
	members := "server.1=127.0.0.1:2001:3001;4001,server.2=127.0.0.1:2002:3002;4002"
	tests := []struct {
		name       string
		disabled   bool
		standalone bool
		inProgress bool
		synced     map[int64]bool
		super      bool
		req        *zkproto.ReconfigRequest
		want       zkproto.Code
	}{
		{name: "disabled", disabled: true, inProgress: true, req: grow, want: zkproto.CodeReconfigDisabled},
		{name: "standalone", standalone: true, super: true, synced: all, req: grow, want: zkproto.CodeUnimplemented},
		{name: "in progress before a stale version", inProgress: true, req: &zkproto.ReconfigRequest{CurConfigID: 5},
			want: zkproto.CodeReconfigInProgress},
		{name: "stale version", req: &zkproto.ReconfigRequest{LeavingServers: "3", CurConfigID: 0x100000001}, want: zkproto.CodeBadVersion},
		{name: "bad joining spec", req: &zkproto.ReconfigRequest{JoiningServers: "server.4=h:1", CurConfigID: 0x100000000},
			want: zkproto.CodeBadArguments},
		{name: "leaving not a number", req: &zkproto.ReconfigRequest{LeavingServers: "x", CurConfigID: -1},
			want: zkproto.CodeMarshallingError},
		{name: "replacement by nothing", req: &zkproto.ReconfigRequest{NewMembers: new(string), CurConfigID: -1},
			want: zkproto.CodeBadArguments},
		{name: "one voter left", req: &zkproto.ReconfigRequest{LeavingServers: "1,2", CurConfigID: -1},
			want: zkproto.CodeBadArguments},
		{name: "new quorum not synced", synced: map[int64]bool{1: true, 2: true}, req: grow, want: zkproto.CodeNewConfigNoQuorum},
		{name: "no WRITE on /zookeeper/config", synced: all, req: grow, want: zkproto.CodeNoAuth},
		{name: "grow", synced: all, super: true, req: grow},
		{name: "replace", synced: all, super: true, req: &zkproto.ReconfigRequest{NewMembers: &members, CurConfigID: 0x100000000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEnsemble{inProgress: tc.inProgress, synced: tc.synced}
			h := reconfigLeader(t, !tc.disabled, f)
			if tc.standalone {
				h.s.cfg.Ensemble = nil
			}
			h.open(1)
			if tc.super {
				h.send(1, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("super:pw")})
				h.take(1)
			}
			x := h.send(1, zkproto.OpReconfig, tc.req)
			fs := h.expect(1, zkproto.ReplyHeader{Xid: x, Err: tc.want})
			if tc.want != zkproto.CodeOK {
				if n := h.s.Tree().Node(datatree.ConfigPath); len(n.Data()) != 0 {
					t.Fatalf("a failed reconfig wrote %q", n.Data())
				}
				return
			}
			var resp zkproto.GetDataResponse
			h.decode(fs[0], &resp)
			z := fs[0].hdr.Zxid
			n := h.s.Tree().Node(datatree.ConfigPath)
			if string(resp.Data) != string(n.Data()) || resp.Stat != n.Stat() {
				t.Fatalf("reply %q %+v, node %q %+v", resp.Data, resp.Stat, n.Data(), n.Stat())
			}
			if resp.Stat.Version != -1 || resp.Stat.Mzxid != z {
				t.Fatalf("stat %+v: want version -1 and mzxid %#x", resp.Stat, z)
			}
			next, err := zoocfg.ParseNextDynamic(resp.Data, "reply")
			if err != nil || next.Version != z {
				t.Fatalf("reply %q: version %#x, want %#x (%v)", resp.Data, next.Version, z, err)
			}
		})
	}
}

// A second reconfig while the first is prepared and not applied is
// ReconfigInProgress, even before Zab has seen the first; after the first
// applies, the next one goes through, and a watch on /zookeeper/config
// fires.
func TestReconfigOneInFlight(t *testing.T) {
	f := &fakeEnsemble{synced: map[int64]bool{1: true, 2: true, 3: true, 4: true, 5: true}}
	h := reconfigLeader(t, true, f)
	h.open(1)
	h.open(2)
	h.send(1, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("super:pw")})
	h.take(1)
	h.send(2, zkproto.OpGetData, &zkproto.GetDataRequest{Path: datatree.ConfigPath, Watch: true})
	h.take(2)
	h.autoApply = false
	x1 := h.send(1, zkproto.OpReconfig, &zkproto.ReconfigRequest{JoiningServers: "server.4=127.0.0.1:2004:3004;4004", CurConfigID: -1})
	x2 := h.send(1, zkproto.OpReconfig, &zkproto.ReconfigRequest{LeavingServers: "3", CurConfigID: -1})
	h.applyN(len(h.pending))
	h.expect(1, zkproto.ReplyHeader{Xid: x1}, zkproto.ReplyHeader{Xid: x2, Err: zkproto.CodeReconfigInProgress})
	if fs := h.take(2); len(fs) != 1 || fs[0].hdr.Xid != zkproto.XidNotification {
		t.Fatalf("watch on /zookeeper/config: %+v", headers(fs))
	}
	x3 := h.send(1, zkproto.OpReconfig, &zkproto.ReconfigRequest{JoiningServers: "server.5=127.0.0.1:2005:3005;4005", CurConfigID: -1})
	h.applyN(len(h.pending))
	h.expect(1, zkproto.ReplyHeader{Xid: x3, Zxid: int64(zxid.Make(1, 5))})
}

// TestSetEnsembleConfigCountsWrite: storing the ensemble's configuration
// outside a txn counts as a write in the "zookeeper" namespace, as
// ZooKeeper's data tree counts initConfigInZKDatabase's setData (path
// and data bytes).
func TestSetEnsembleConfigCountsWrite(t *testing.T) {
	reg := metric.NewRegistry()
	h := newHarness(t, func(c *Config) { c.Metrics = reg })
	data := []byte(threeConfig)
	h.s.SetEnsembleConfig(data, 0x100000000, h.now)
	m, ok := reg.Lookup("write_per_namespace")
	if !ok {
		t.Fatal("no write_per_namespace")
	}
	var got []metric.Keyed
	for _, k := range m.(*metric.SummarySet).Snapshot() {
		if k.Key == "zookeeper" {
			got = append(got, k)
		}
	}
	want := int64(len(datatree.ConfigPath) + len(data))
	if len(got) != 1 || got[0].Snapshot.Count != 1 || got[0].Snapshot.Sum != want {
		t.Fatalf("write_per_namespace for zookeeper: %+v, want one write of %d bytes", got, want)
	}
}
