package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/zab"
)

// adminJSON fetches an admin command from s.
func adminJSON(t *testing.T, s *Server, name string) map[string]any {
	t.Helper()
	resp, err := http.Get("http://" + s.AdminAddr().String() + "/commands/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// An ensemble of two voters and an observer answers the quorum commands
// with ZooKeeper 3.8's fields, and the leader counts what its observer
// forwarded until observer_connection_stat_reset.
func TestEnsembleAdminCommands(t *testing.T) {
	servers := startEnsembleWith(t, 3, func(_ zab.PeerID, cfg *Config) {
		cfg.AdminAddr = "127.0.0.1:0"
		cfg.Quorum.Voters = []zab.PeerID{1, 2}
		cfg.Quorum.Observers = []zab.PeerID{3}
		// /zookeeper/config as zoo.cfg's server lines make it.
		var text strings.Builder
		for id := zab.PeerID(1); id <= 3; id++ {
			role := "participant"
			if id == 3 {
				role = "observer"
			}
			_, eport, _ := net.SplitHostPort(cfg.Quorum.Peers[id].Election)
			fmt.Fprintf(&text, "server.%d=%s:%s:%s\n", id, cfg.Quorum.Peers[id].Quorum, eport, role)
		}
		text.WriteString("version=0")
		cfg.Core.EnsembleConfig = []byte(text.String())
	})
	observer := servers[2]
	var leader *Server
	deadline := time.Now().Add(20 * time.Second)
	for leader == nil {
		for _, s := range servers[:2] {
			if s.quorumRole() == "leader" && observer.quorumRole() == "observer" &&
				adminJSON(t, s, "observers")["synced_observers"] == 1.0 {
				leader = s
			}
		}
		if leader == nil && time.Now().After(deadline) {
			t.Fatal("no leader with a synced observer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	leaderID := float64(leader.cfg.Quorum.MyID)
	for _, s := range servers {
		m := adminJSON(t, s, "leader")
		if m["is_leader"] != (s == leader) || m["leader_id"] != leaderID || m["leader_ip"] != "127.0.0.1" || m["error"] != nil {
			t.Errorf("server %d leader: %v", s.cfg.Quorum.MyID, m)
		}
	}
	// An observer's mntr names the member it syncs from right after its
	// peer_state, as ZooKeeper's ObserverZooKeeperServer does; voters
	// print no such key.
	for _, s := range servers {
		out := string(s.fourLetter(0, "mntr", 0))
		want := ""
		if s == observer {
			want = strconv.FormatFloat(leaderID, 'f', -1, 64)
			if !strings.Contains(out, "zk_peer_state\tobserving - broadcast\nzk_observer_master_id\t"+want+"\n") {
				t.Errorf("observer mntr: no zk_observer_master_id %s after its peer_state:\n%s", want, out)
			}
		}
		if got := mntrValue(out, "zk_observer_master_id"); got != want {
			t.Errorf("server %d mntr: zk_observer_master_id %q, want %q", s.cfg.Quorum.MyID, got, want)
		}
	}
	z := adminJSON(t, observer, "zabstate")
	if z["myid"] != 3.0 || z["voting"] != false || z["zabstate"] != "broadcast" || z["is_leader"] != false ||
		z["client_address"] != observer.Addr().String() || !strings.HasPrefix(z["last_zxid"].(string), "0x") {
		t.Errorf("observer zabstate: %v", z)
	}
	qa, _ := z["quorum_address"].(map[string]any)
	if qa["one"] != observer.cfg.Quorum.ListenQuorum || qa["empty"] != false {
		t.Errorf("observer quorum_address: %v", qa)
	}
	if z := adminJSON(t, leader, "zabstate"); z["voting"] != true || z["is_leader"] != true || z["zabstate"] != "broadcast" {
		t.Errorf("leader zabstate: %v", z)
	}
	view, _ := adminJSON(t, servers[0], "voting_view")["current_config"].(map[string]any)
	if len(view) != 2 || view["3"] != nil {
		t.Fatalf("voting_view lists %v, want the two voters", view)
	}
	one, _ := view["1"].(map[string]any)
	if one["learner_type"] != "participant" || one["client_address"] != servers[0].Addr().String() ||
		fmt.Sprint(one["server_addresses"]) != fmt.Sprintf("[%s]", servers[0].cfg.Quorum.ListenQuorum) {
		t.Errorf("voting_view of server 1: %v", one)
	}

	// The session's creation and a write through the observer are two
	// requests the leader counts.
	c, _, err := zk.Connect([]string{observer.Addr().String()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/via-observer", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	// conf adds ZooKeeper's quorum lines after serverId, then the active
	// configuration as /zookeeper/config holds it.
	config, _, err := c.Get("/zookeeper/config")
	if err != nil || !strings.HasPrefix(string(config), "server.1=") {
		t.Fatalf("/zookeeper/config: %q, %v", config, err)
	}
	for _, s := range servers {
		q := s.cfg.Quorum
		_, qport, _ := net.SplitHostPort(q.Peers[q.MyID].Quorum)
		_, eport, _ := net.SplitHostPort(q.Peers[q.MyID].Election)
		peerType := 0
		if s == observer {
			peerType = 1
		}
		want := fmt.Sprintf("\nserverId=%d\ninitLimit=20\nsyncLimit=10\nelectionAlg=3\nelectionPort=%s\nquorumPort=%s\npeerType=%d\nmembership: \n%s",
			q.MyID, eport, qport, peerType, config)
		if got := string(s.fourLetter(0, "conf", 0)); !strings.HasSuffix(got, want) {
			t.Errorf("server %d conf:\n%s\nwant it to end with:%s", q.MyID, got, want)
		}
	}
	obs := func() map[string]any {
		list, _ := adminJSON(t, leader, "observers")["observers"].([]any)
		if len(list) != 1 {
			t.Fatalf("observers: %v", list)
		}
		return list[0].(map[string]any)
	}
	if o := obs(); o["sid"] != 3.0 || o["requests"] != 2.0 || o["packets_sent"].(float64) < 1 || o["packets_received"].(float64) < 2 {
		t.Errorf("the observer after two forwarded requests: %v", o)
	}
	// The link's socket, its start and its send queue, in ZooKeeper's
	// order and forms; a queue is empty or holds at least a packet's base.
	o := obs()
	if addr, _ := o["remote_socket_address"].(string); !strings.HasPrefix(addr, "/127.0.0.1:") {
		t.Errorf("remote_socket_address %v", o["remote_socket_address"])
	}
	if est, _ := o["established"].(float64); est < float64(time.Now().Add(-time.Hour).UnixMilli()) || est > float64(time.Now().UnixMilli()) {
		t.Errorf("established %v, want the link's start in ms", o["established"])
	}
	if n, size := o["queued_packets"].(float64), o["queued_packets_size"].(float64); n < 0 || size < 28*n {
		t.Errorf("queued_packets %v, queued_packets_size %v", n, size)
	}
	if got := adminBody(t, leader, "observers"); !regexp.MustCompile(`"remote_socket_address"\s*:\s*"[^"]+",\s*"sid"\s*:\s*3,\s*"established"\s*:\s*\d+,\s*"queued_packets"\s*:\s*\d+,\s*"queued_packets_size"\s*:\s*\d+,\s*"packets_received"`).MatchString(got) {
		t.Errorf("observers fields out of ZooKeeper's order:\n%s", got)
	}
	// configuration names each member's id; server_stats and stats add
	// the sizes of the proposals on the leader only, the create's
	// included.
	for _, s := range servers {
		if m := adminJSON(t, s, "configuration"); m["server_id"] != float64(s.cfg.Quorum.MyID) {
			t.Errorf("server %d configuration: %v", s.cfg.Quorum.MyID, m)
		}
		for _, name := range []string{"server_stats", "stats"} {
			p, ok := adminJSON(t, s, name)["proposal_stats"].(map[string]any)
			if ok != (s == leader) {
				t.Errorf("server %d %s: proposal_stats %v, want it on the leader only", s.cfg.Quorum.MyID, name, p)
			}
			if ok && (p["last_buffer_size"].(float64) <= 0 || p["min_buffer_size"].(float64) <= 0 ||
				p["max_buffer_size"].(float64) < p["min_buffer_size"].(float64)) {
				t.Errorf("leader %s: proposal_stats %v after a create", name, p)
			}
		}
	}
	if got := adminBody(t, leader, "server_stats"); !regexp.MustCompile(`"client_response"\s*:\s*\{[^}]*\},\s*"proposal_stats"\s*:\s*\{\s*"last_buffer_size"\s*:\s*\d+,\s*"min_buffer_size"\s*:\s*\d+,\s*"max_buffer_size"\s*:\s*\d+\s*\},\s*"node_count"`).MatchString(got) {
		t.Errorf("server_stats fields out of ZooKeeper's order:\n%s", got)
	}
	if m := adminJSON(t, leader, "orst"); m["error"] != nil {
		t.Fatalf("orst: %v", m)
	}
	if o := obs(); o["requests"] != 0.0 {
		t.Errorf("the observer after orst: %v", o)
	}
}

// adminBody fetches an admin command's JSON text from s.
func adminBody(t *testing.T, s *Server, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + s.AdminAddr().String() + "/commands/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mntrValue returns a key's value in a mntr answer, or "".
func mntrValue(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok && k == key {
			return v
		}
	}
	return ""
}

// The leader's mntr reports its uptime as leader, the sizes of its
// proposals and the quorum counters; a follower counts what it received.
func TestEnsembleMntrQuorumFigures(t *testing.T) {
	servers := startEnsemble(t, 3)
	var leader *Server
	deadline := time.Now().Add(20 * time.Second)
	for leader == nil {
		serving := 0
		for _, s := range servers {
			switch s.quorumRole() {
			case "leader":
				leader = s
				serving++
			case "follower":
				serving++
			}
		}
		if serving < 3 {
			leader = nil
		}
		if leader == nil && time.Now().After(deadline) {
			t.Fatal("no ensemble")
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := string(leader.fourLetter(0, "mntr", 0))
	if mntrValue(out, "zk_last_proposal_size") != "-1" || mntrValue(out, "zk_synced_non_voting_followers") != "0" {
		t.Errorf("leader before any write:\n%s", out)
	}
	c, _, err := zk.Connect([]string{leader.Addr().String()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/p", make([]byte, 100), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	out = string(leader.fourLetter(0, "mntr", 0))
	// Two txns: the session's creation and the create.
	for key, want := range map[string]string{"zk_proposal_count": "2", "zk_commit_count": "2",
		"zk_learner_proposal_received_count": "0"} {
		if got := mntrValue(out, key); got != want {
			t.Errorf("leader %s = %q, want %s", key, got, want)
		}
	}
	if size, err := strconv.Atoi(mntrValue(out, "zk_max_proposal_size")); err != nil || size <= 100 {
		t.Errorf("zk_max_proposal_size = %d (%v), want over 100 (the data)", size, err)
	}
	if v := mntrValue(out, "zk_leader_uptime"); v == "" || v == "0" {
		t.Errorf("zk_leader_uptime = %q", v)
	}
	if mntrValue(out, "zk_diff_count") == "0" && mntrValue(out, "zk_snap_count") == "0" {
		t.Errorf("the leader synced no learner:\n%s", out)
	}
	// An election, a span out of broadcast, each learner's sync begun
	// with how many were syncing, both txns acked and committed by a
	// quorum; nothing only a learner measures. Acks may still be on their way
	// when the reply is.
	eventually(t, waitTimeout, func() bool {
		out = string(leader.fourLetter(0, "mntr", 0))
		return quorumTimings(out, map[string]string{"election_time": ">=1", "unavailable_time": ">=1",
			"leader_unavailable_time": ">=1", "observer_sync_time": "0", "proposal_latency": "0",
			"commit_propagation_latency": "0", "proposal_ack_creation_latency": "2", "quorum_ack_latency": "2"})
	}, "the leader's quorum timings")
	figure := func(key string) int { return mustAtoi(t, mntrValue(out, "zk_"+key)) }
	if figure("cnt_inflight_diff_count")+figure("cnt_inflight_snap_count") != figure("diff_count")+figure("snap_count") {
		t.Errorf("one inflight figure per sync begun, got:\n%s", out)
	}
	if figure("max_inflight_diff_count")+figure("max_inflight_snap_count") == 0 {
		t.Errorf("no sync in flight when one began:\n%s", out)
	}
	for _, s := range servers {
		if s == leader {
			continue
		}
		// The follower got the PROPOSALs and COMMITs; poll, they may
		// still be on their way.
		for {
			f := string(s.fourLetter(0, "mntr", 0))
			if mntrValue(f, "zk_learner_proposal_received_count") == "2" && mntrValue(f, "zk_learner_commit_received_count") != "0" &&
				mntrValue(f, "zk_proposal_count") == "0" && mntrValue(f, "zk_leader_uptime") == "" &&
				quorumTimings(f, map[string]string{"election_time": ">=1", "follower_sync_time": ">=1", "observer_sync_time": "0",
					"unavailable_time": ">=1", "proposal_latency": "2",
					"commit_propagation_latency": "2", "proposal_ack_creation_latency": "2", "quorum_ack_latency": "0"}) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("follower mntr:\n%s", f)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// quorumTimings reports whether each summary in want has the count it
// names (its cnt_ key; ">=N" for at least N: a loaded machine may hold
// more than one election) in a mntr answer, and every counted one a sum of
// at least 0 and its maximum at least its minimum.
func quorumTimings(out string, want map[string]string) bool {
	for name, cnt := range want {
		got := mntrValue(out, "zk_cnt_"+name)
		if least, ok := strings.CutPrefix(cnt, ">="); ok {
			g, err := strconv.Atoi(got)
			if n, _ := strconv.Atoi(least); err != nil || g < n {
				return false
			}
		} else if got != cnt {
			return false
		}
		lo, _ := strconv.Atoi(mntrValue(out, "zk_min_"+name))
		hi, _ := strconv.Atoi(mntrValue(out, "zk_max_"+name))
		if sum, err := strconv.Atoi(mntrValue(out, "zk_sum_"+name)); err != nil || sum < 0 || hi < lo {
			return false
		}
	}
	return true
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}
