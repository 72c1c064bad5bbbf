package mixed

import (
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"keeper/verify/compat/internal/adminjson"
	"keeper/verify/compat/internal/launcher"
)

// ensembleCommands are Apache ZooKeeper 3.8's admin commands whose answer
// depends on the member's place in an ensemble (its Commands.java): what
// each prints on a leader, a follower and an observer. 3.8 has no
// learners command; observer_connection_stat_reset is run apart
// (checkObserverReset), as it changes what observers reports.
var ensembleCommands = []string{
	"leader", "observers", "voting_view", "zabstate", "server_stats", "stats",
	"initial_configuration", "configuration", "is_read_only", "last_snapshot", "monitor",
}

// checkedByValueOnly are the commands whose fields are not compared by
// shape here: monitor's keys are mntr's, which compareMntr (mntr_test.go)
// compares role by role; its role is checked by value.
var checkedByValueOnly = []string{"monitor"}

// adminAnswer is what one member's admin server answered in one phase.
type adminAnswer struct {
	m     *Member
	kind  Kind
	role  string            // srvr's Mode: leader, follower or observer
	body  map[string]string // command -> its JSON answer
	reset map[string]string // observers before and after observer_connection_stat_reset
	conf  string            // the conf four-letter word's answer
}

// obj decodes the answer to command.
func (a adminAnswer) obj(t *testing.T, command string) map[string]any {
	t.Helper()
	return adminjson.Object(t, a.body[command])
}

func (a adminAnswer) String() string {
	return fmt.Sprintf("member %d (%s %s)", a.m.ID, a.kind, a.role)
}

// collectAdmin asks every running member of e, which must all serve, for
// the ensembleCommands, and the leader for observers around an
// observer_connection_stat_reset. If the test fails, the answers are
// logged when it ends.
func collectAdmin(t *testing.T, e *Ensemble) []adminAnswer {
	t.Helper()
	var out []adminAnswer
	for _, m := range e.Members {
		if !m.Running() {
			continue
		}
		a := adminAnswer{m: m, kind: m.Kind, role: m.Mode(), body: map[string]string{}}
		if a.role == "" {
			t.Fatalf("member %d (%s) does not serve", m.ID, m.Kind)
		}
		for _, c := range ensembleCommands {
			a.body[c] = adminjson.Command(t, m.AdminAddr(), c)
		}
		conf, err := launcher.FourLetter(m.Addr, "conf")
		if err != nil {
			t.Fatalf("conf of member %d (%s): %v", m.ID, m.Kind, err)
		}
		a.conf = conf
		if a.role == "leader" {
			a.reset = map[string]string{
				"before": adminjson.Command(t, m.AdminAddr(), "observers"),
				"reset":  adminjson.Command(t, m.AdminAddr(), "observer_connection_stat_reset"),
				"after":  adminjson.Command(t, m.AdminAddr(), "observers"),
			}
		}
		out = append(out, a)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, a := range out {
			for _, c := range ensembleCommands {
				t.Logf("%v %s: %s", a, c, a.body[c])
			}
			t.Logf("%v conf:\n%s", a, a.conf)
			for _, k := range slices.Sorted(maps.Keys(a.reset)) {
				t.Logf("%v observer_connection_stat_reset, %s: %s", a, k, a.reset[k])
			}
		}
	})
	return out
}

// checkAgreement checks the values the members of one ensemble must agree
// on, whatever their kind: who leads and where, the voters and their
// addresses, each member's id, role, Zab phase and ports, the observers
// the leader has synced, the tree's size.
func checkAgreement(t *testing.T, e *Ensemble, answers []adminAnswer) {
	t.Helper()
	var leader *Member
	for _, a := range answers {
		if a.role == "leader" {
			leader = a.m
		}
	}
	if leader == nil {
		t.Fatalf("no leader among %v", answers)
	}
	var voters, observers []string
	for _, m := range e.Members {
		if m.Observer {
			if m.Running() {
				observers = append(observers, strconv.Itoa(m.ID))
			}
			continue
		}
		voters = append(voters, strconv.Itoa(m.ID))
	}
	slices.Sort(voters)
	slices.Sort(observers)
	nodes := map[float64][]string{}
	for _, a := range answers {
		isLeader := a.m == leader
		wantRole := "follower"
		switch {
		case isLeader:
			wantRole = "leader"
		case a.m.Observer:
			wantRole = "observer"
		}
		if a.role != wantRole {
			t.Errorf("%v: srvr says %s, want %s", a, a.role, wantRole)
		}
		check := func(command, field string, got, want any) {
			t.Helper()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%v: %s %s = %v, want %v", a, command, field, got, want)
			}
		}

		lead := a.obj(t, "leader")
		check("leader", "is_leader", lead["is_leader"], isLeader)
		check("leader", "leader_id", lead["leader_id"], leader.ID)
		check("leader", "leader_ip", lead["leader_ip"], "127.0.0.1")

		zab := a.obj(t, "zabstate")
		check("zabstate", "myid", zab["myid"], a.m.ID)
		check("zabstate", "is_leader", zab["is_leader"], isLeader)
		check("zabstate", "voting", zab["voting"], !a.m.Observer)
		check("zabstate", "zabstate", zab["zabstate"], "broadcast")
		quorumAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(a.m.QuorumPort))
		electionAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(a.m.ElecPort))
		if q, ok := zab["quorum_address"].(map[string]any); ok {
			check("zabstate", "quorum_address.all_addresses", q["all_addresses"], []string{quorumAddr})
		} else {
			t.Errorf("%v: zabstate quorum_address = %v", a, zab["quorum_address"])
		}
		if q, ok := zab["election_address"].(map[string]any); ok {
			check("zabstate", "election_address.all_addresses", q["all_addresses"], []string{electionAddr})
		} else {
			t.Errorf("%v: zabstate election_address = %v", a, zab["election_address"])
		}
		if z, err := strconv.ParseUint(strings.TrimPrefix(fmt.Sprint(zab["last_zxid"]), "0x"), 16, 64); err != nil {
			t.Errorf("%v: zabstate last_zxid = %v", a, zab["last_zxid"])
		} else {
			check("zabstate", "zab_epoch", zab["zab_epoch"], z>>32)
			check("zabstate", "zab_counter", zab["zab_counter"], z&0xffffffff)
			snap := a.obj(t, "last_snapshot")
			s, err := strconv.ParseUint(fmt.Sprint(snap["zxid"]), 16, 64)
			if err != nil || (s != ^uint64(0) && s > z) {
				t.Errorf("%v: last_snapshot zxid %v, last zxid %x", a, snap["zxid"], z)
			}
		}

		view, _ := a.obj(t, "voting_view")["current_config"].(map[string]any)
		if got := slices.Sorted(maps.Keys(view)); !slices.Equal(got, voters) {
			t.Errorf("%v: voting_view has %v, want %v", a, got, voters)
		}
		for id, v := range view {
			n, _ := strconv.Atoi(id)
			m := e.Member(n)
			s, _ := v.(map[string]any)
			check("voting_view", id+".server_addresses", s["server_addresses"],
				[]string{net.JoinHostPort("127.0.0.1", strconv.Itoa(m.QuorumPort))})
			check("voting_view", id+".election_addresses", s["election_addresses"],
				[]string{net.JoinHostPort("127.0.0.1", strconv.Itoa(m.ElecPort))})
			check("voting_view", id+".learner_type", s["learner_type"], "participant")
			// A member knows only its own client address.
			wantClient := ""
			if m == a.m {
				wantClient = m.Addr
			}
			check("voting_view", id+".client_address", s["client_address"], wantClient)
		}

		obs := a.obj(t, "observers")
		var sids []string
		list, _ := obs["observers"].([]any)
		for _, o := range list {
			sids = append(sids, fmt.Sprint(o.(map[string]any)["sid"]))
		}
		slices.Sort(sids)
		want := []string(nil)
		if isLeader {
			want = observers
		}
		check("observers", "synced_observers", obs["synced_observers"], len(want))
		check("observers", "sids", sids, want)

		stats := a.obj(t, "server_stats")
		check("server_stats", "read_only", stats["read_only"], false)
		ss, _ := stats["server_stats"].(map[string]any)
		check("server_stats", "server_stats.server_state", ss["server_state"], wantRole)
		_, hasProposals := stats["proposal_stats"]
		check("server_stats", "has proposal_stats", hasProposals, isLeader)
		if n, ok := stats["node_count"].(float64); ok {
			nodes[n] = append(nodes[n], a.String())
		}
		check("monitor", "server_state", a.obj(t, "monitor")["server_state"], wantRole)
		check("is_read_only", "read_only", a.obj(t, "is_read_only")["read_only"], false)

		conf := a.obj(t, "configuration")
		check("configuration", "server_id", conf["server_id"], a.m.ID)
		check("configuration", "client_port", conf["client_port"], a.m.ClientPort)

		// ZooKeeper's QuorumPeerMain never records the file it read, so an
		// ensemble member of it answers null; keeper gives the text
		// (docs/observability.md, "AdminServer commands").
		var wantCfg any
		if a.kind == Keeper {
			b, err := os.ReadFile(a.m.CfgPath())
			if err != nil {
				t.Fatal(err)
			}
			wantCfg = string(b)
		}
		check("initial_configuration", "initial_configuration", a.obj(t, "initial_configuration")["initial_configuration"], wantCfg)

		if isLeader {
			checkObserverReset(t, a)
		}
	}
	checkConf(t, answers)
	if len(nodes) != 1 {
		t.Errorf("server_stats node_count differs: %v", nodes)
	}
}

// checkConf checks the conf four-letter word of every member of one
// phase: the same keys in the same order on every member, whatever its
// kind, with the ensemble's lines ZooKeeper's QuorumZooKeeperServer adds
// after serverId holding each member's id, limits, ports and peer type,
// and the same membership (the configuration's text) everywhere.
func checkConf(t *testing.T, answers []adminAnswer) {
	t.Helper()
	var keys0 []string
	var membership0 string
	var first adminAnswer
	for i, a := range answers {
		lines, membership, ok := strings.Cut(a.conf, "membership: \n")
		if !ok {
			t.Errorf("%v: conf has no membership:\n%s", a, a.conf)
			continue
		}
		values := map[string]string{}
		var keys []string
		for _, line := range strings.Split(strings.TrimSuffix(lines, "\n"), "\n") {
			k, v, _ := strings.Cut(line, "=")
			keys = append(keys, k)
			values[k] = v
		}
		peerType := "0"
		if a.m.Observer {
			peerType = "1"
		}
		want := map[string]int{"serverId": a.m.ID, "initLimit": initLimit, "syncLimit": syncLimit, "electionAlg": 3,
			"electionPort": a.m.ElecPort, "quorumPort": a.m.QuorumPort, "clientPort": a.m.ClientPort}
		for k, w := range want {
			if values[k] != strconv.Itoa(w) {
				t.Errorf("%v: conf %s=%q, want %d", a, k, values[k], w)
			}
		}
		if values["peerType"] != peerType {
			t.Errorf("%v: conf peerType=%q, want %s", a, values["peerType"], peerType)
		}
		if i == 0 {
			keys0, membership0, first = keys, membership, a
			continue
		}
		if !slices.Equal(keys, keys0) {
			t.Errorf("conf keys differ:\n%v: %v\n%v: %v", first, keys0, a, keys)
		}
		if membership != membership0 {
			t.Errorf("conf membership differs:\n%v: %q\n%v: %q", first, membership0, a, membership)
		}
	}
}

// checkObserverReset checks that the leader's observer_connection_stat_reset
// answered with the bare envelope and zeroed what observers counts: each
// observer sent far fewer packets since (pings) than in the phase before,
// which wrote through it.
func checkObserverReset(t *testing.T, a adminAnswer) {
	t.Helper()
	if got := adminjson.Shape(t, a.reset["reset"]); !slices.Equal(got, []string{"command:string", "error:null"}) {
		t.Errorf("%v: observer_connection_stat_reset answered %s", a, a.reset["reset"])
	}
	received := func(body string) map[string]float64 {
		out := map[string]float64{}
		list, _ := adminjson.Object(t, body)["observers"].([]any)
		for _, o := range list {
			o := o.(map[string]any)
			n, _ := o["packets_received"].(float64)
			out[fmt.Sprint(o["sid"])] = n
		}
		return out
	}
	before, after := received(a.reset["before"]), received(a.reset["after"])
	for sid, n := range before {
		if m, ok := after[sid]; !ok || m >= n {
			t.Errorf("%v: observer %s sent %v packets before observer_connection_stat_reset, %v (ok=%v) after",
				a, sid, n, m, ok)
		}
	}
}

// compareAdminShapes holds keeper's answers to ZooKeeper's, role by role:
// for each command, the top-level fields in order and every nested field
// with its JSON type (adminjson.DeepShape; a map keyed by member id by its
// values). Every role must have been answered by both kinds.
func compareAdminShapes(t *testing.T, answers []adminAnswer) {
	t.Helper()
	type key struct {
		role    string
		kind    Kind
		command string
	}
	top := map[key][]string{}
	deep := map[key]map[string]bool{}
	for _, a := range answers {
		for _, c := range ensembleCommands {
			if slices.Contains(checkedByValueOnly, c) {
				continue
			}
			k := key{a.role, a.kind, c}
			shape := adminjson.Shape(t, a.body[c])
			if c == "initial_configuration" {
				// null on ZooKeeper, the text on keeper: checked by value.
				shape = []string{"command:string", "initial_configuration:*", "error:null"}
			}
			if prev, ok := top[k]; ok && !slices.Equal(prev, shape) {
				t.Errorf("%v: %s fields %v, another %s %s answered %v", a, c, shape, a.kind, a.role, prev)
			}
			top[k] = shape
			if deep[k] == nil {
				deep[k] = map[string]bool{}
			}
			for _, p := range adminjson.DeepShape(adminjson.Object(t, a.body[c])) {
				if c == "initial_configuration" && strings.HasPrefix(p, "initial_configuration:") {
					continue
				}
				deep[k][p] = true
			}
		}
	}
	compared, names := 0, []string{}
	for _, role := range []string{"leader", "follower", "observer"} {
		for _, c := range ensembleCommands {
			if slices.Contains(checkedByValueOnly, c) {
				continue
			}
			zk, kp := key{role, ZooKeeper, c}, key{role, Keeper, c}
			if top[zk] == nil || top[kp] == nil {
				t.Errorf("%s %s: answered by ZooKeeper %v, keeper %v", role, c, top[zk] != nil, top[kp] != nil)
				continue
			}
			if !slices.Equal(top[zk], top[kp]) {
				t.Errorf("%s %s: fields differ:\nZooKeeper: %v\nkeeper:    %v", role, c, top[zk], top[kp])
			}
			zkDeep, kpDeep := slices.Sorted(maps.Keys(deep[zk])), slices.Sorted(maps.Keys(deep[kp]))
			var onlyZK, onlyKeeper []string
			for _, p := range zkDeep {
				if !deep[kp][p] {
					onlyZK = append(onlyZK, p)
				}
			}
			for _, p := range kpDeep {
				if !deep[zk][p] {
					onlyKeeper = append(onlyKeeper, p)
				}
			}
			if len(onlyZK)+len(onlyKeeper) > 0 {
				t.Errorf("%s %s: nested fields differ:\nonly ZooKeeper: %v\nonly keeper:    %v", role, c, onlyZK, onlyKeeper)
			}
			compared++
			if !slices.Contains(names, c) {
				names = append(names, c)
			}
		}
	}
	t.Logf("compared the fields of %d commands in three roles with ZooKeeper's (%d answers): %v", len(names), compared, names)
}
