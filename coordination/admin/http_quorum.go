package admin

import (
	"fmt"
	"net"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
)

// EnsembleFacts describe this member of an ensemble and the ensemble's
// configuration for the leader, voting_view, zabstate and observers
// commands.
type EnsembleFacts struct {
	MyID    int64
	Leading bool
	// LeaderID is the member this one follows or is (0 while it has none);
	// LeaderHost is the host of its quorum address.
	LeaderID   int64
	LeaderHost string
	// Phase is the Zab phase: "election", "discovery", "synchronization"
	// or "broadcast".
	Phase string
	// Voting is set on a member that votes (a participant, not an
	// observer).
	Voting bool
	// LastZxid is the last zxid in the member's log; ClientAddr is where
	// it serves clients ("host:port").
	LastZxid   zxid.ID
	ClientAddr string
	// Members are the ensemble's members in id order.
	Members []Member
	// Learners are a leader's learners in id order (nil on a learner).
	Learners []LearnerFacts
}

// Member is one server.N line.
type Member struct {
	ID                       int64
	QuorumAddr, ElectionAddr string // "host:port"
	// ClientAddr is the member's client address where this member knows
	// it (its own), "" otherwise.
	ClientAddr string
	Observer   bool
}

// LearnerFacts are what a leader measured about one learner since it
// connected or since the last observer_connection_stat_reset.
type LearnerFacts struct {
	ID                    int64
	Observer, Synced      bool
	LastZxid              zxid.ID // the last zxid it acknowledged or reported
	PacketsReceived       int64
	PacketsSent, Requests int64
	// Link is the quorum link to it, when one is up.
	Link *LinkFacts
}

// LinkFacts describe a leader's quorum link to a learner.
type LinkFacts struct {
	// Remote is the learner's address as Java prints a socket address
	// ("/127.0.0.1:40001").
	Remote string
	// EstablishedMs is when the link came up, in ms since the Unix epoch
	// (a java.util.Date as Jackson writes it).
	EstablishedMs int64
	// QueuedPackets are the messages waiting to be sent to the learner,
	// QueuedPacketsBytes their size as ZooKeeper approximates a
	// QuorumPacket's: 28 bytes and its data.
	QueuedPackets, QueuedPacketsBytes int64
}

// errNotInitialized is what ZooKeeper's leader command says on a server
// that is not an ensemble member.
const errNotInitialized = "server is not initialized"

// ensemble reads the ensemble facts on the core's goroutine. serving is
// false if the server is not serving; inQuorum is false for a standalone
// server.
func (a *Admin) ensemble() (f EnsembleFacts, inQuorum, serving bool) {
	serving = a.state() != "" && a.core.Inspect(func(*zkcore.Server) {
		if a.cfg.Ensemble != nil {
			f, inQuorum = a.cfg.Ensemble()
		}
	})
	return f, inQuorum, serving
}

// quorumCommands are the AdminServer commands about the ensemble, the
// snapshot and the configuration, with ZooKeeper 3.8's names and fields.
var quorumCommands = []httpCommand{
	{[]string{"initial_configuration", "icfg"}, func(a *Admin, _ url.Values) ([]field, string) {
		if !a.serving() {
			return nil, notServing
		}
		var text any // null, as ZooKeeper answers, when no file was read
		if a.cfg.InitialConfig != "" {
			text = a.cfg.InitialConfig
		}
		return []field{{"initial_configuration", text}}, ""
	}},
	{[]string{"last_snapshot", "lsnp"}, func(a *Admin, _ url.Values) ([]field, string) {
		if !a.serving() {
			return nil, notServing
		}
		z, at, ok := zxid.ID(0), time.Time{}, false
		if a.cfg.LastSnapshot != nil {
			z, at, ok = a.cfg.LastSnapshot()
		}
		if !ok {
			return []field{{"zxid", strconv.FormatUint(^uint64(0), 16)}, {"timestamp", -1}}, ""
		}
		return []field{{"zxid", strconv.FormatUint(uint64(z), 16)}, {"timestamp", at.Unix()}}, ""
	}},
	{[]string{"leader", "lead"}, func(a *Admin, _ url.Values) ([]field, string) {
		f, inQuorum, serving := a.ensemble()
		switch {
		case !serving:
			return nil, notServing
		case !inQuorum:
			return []field{{"error", errNotInitialized}}, ""
		}
		id := f.LeaderID
		if id == 0 {
			id = -1
		}
		return []field{{"is_leader", f.Leading}, {"leader_id", id}, {"leader_ip", f.LeaderHost}}, ""
	}},
	{[]string{"observers", "obsr"}, func(a *Admin, _ url.Values) ([]field, string) {
		f, _, serving := a.ensemble()
		if !serving {
			return nil, notServing
		}
		observers := []object{}
		for _, l := range f.Learners {
			if !l.Observer || !l.Synced {
				continue
			}
			// ZooKeeper's LearnerHandler prints "<null>" for a handler
			// without a socket.
			link := LinkFacts{Remote: "<null>"}
			if l.Link != nil {
				link = *l.Link
			}
			observers = append(observers, object{
				{"remote_socket_address", link.Remote},
				{"sid", l.ID},
				{"established", link.EstablishedMs},
				{"queued_packets", link.QueuedPackets},
				{"queued_packets_size", link.QueuedPacketsBytes},
				{"packets_received", l.PacketsReceived},
				{"packets_sent", l.PacketsSent},
				{"requests", l.Requests},
				{"last_zxid", int64(l.LastZxid)},
			})
		}
		return []field{{"synced_observers", len(observers)}, {"observers", observers}}, ""
	}},
	{[]string{"observer_connection_stat_reset", "orst"}, func(a *Admin, _ url.Values) ([]field, string) {
		ok := a.state() != "" && a.core.Inspect(func(*zkcore.Server) {
			if a.cfg.ResetObservers != nil {
				a.cfg.ResetObservers()
			}
		})
		return nil, servingError(ok)
	}},
	{[]string{"system_properties", "sysp"}, func(a *Admin, _ url.Values) ([]field, string) {
		return a.systemProperties(), ""
	}},
	{[]string{"voting_view"}, func(a *Admin, _ url.Values) ([]field, string) {
		f, _, serving := a.ensemble()
		if !serving {
			return nil, notServing
		}
		view := object{}
		for _, m := range f.Members {
			if m.Observer {
				continue
			}
			view = append(view, field{strconv.FormatInt(m.ID, 10), object{
				{"server_addresses", []string{m.QuorumAddr}},
				{"election_addresses", []string{m.ElectionAddr}},
				{"client_address", m.ClientAddr},
				{"learner_type", "participant"},
			}})
		}
		return []field{{"current_config", view}}, ""
	}},
	{[]string{"zabstate"}, func(a *Admin, _ url.Values) ([]field, string) {
		f, inQuorum, serving := a.ensemble()
		if !serving || !inQuorum {
			return []field{{"voting", false}, {"zabstate", ""}}, ""
		}
		var self Member
		for _, m := range f.Members {
			if m.ID == f.MyID {
				self = m
			}
		}
		return []field{
			{"myid", f.MyID},
			{"is_leader", f.Leading},
			{"quorum_address", addressObject(self.QuorumAddr)},
			{"election_address", addressObject(self.ElectionAddr)},
			{"client_address", f.ClientAddr},
			{"voting", f.Voting},
			{"last_zxid", fmt.Sprintf("0x%x", uint64(f.LastZxid))},
			{"zab_epoch", int64(f.LastZxid.Epoch())},
			{"zab_counter", int64(f.LastZxid.Counter())},
			{"zabstate", f.Phase},
		}, ""
	}},
}

// addressObject describes a member's address as ZooKeeper serialises its
// MultipleAddresses. keeper has one address per member (no multiAddress),
// so each list holds it and the reachable ones are that address: keeper
// does not probe it.
func addressObject(addr string) object {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return object{{"empty", true}}
	}
	p, _ := strconv.Atoi(port)
	wildcard := net.JoinHostPort("0.0.0.0", port)
	if strings.Contains(host, ":") {
		wildcard = net.JoinHostPort("::", port)
	}
	return object{
		{"empty", false},
		{"all_addresses", []string{addr}},
		{"all_reachable_addresses", []string{addr}},
		{"one", addr},
		{"reachable_address", addr},
		{"wildcard_addresses", []string{wildcard}},
		{"all_ports", []int{p}},
		{"all_host_strings", []string{host}},
		{"all_reachable_addresses_or_all", []string{addr}},
		{"reachable_or_one", addr},
	}
}

// systemProperties are keeper's counterpart of the JVM's system
// properties: the runtime's facts under the Java property names that have
// a Go meaning, go.version, and the settings the server runs with
// (Config.SystemProperties), in key order as ZooKeeper sorts them.
func (a *Admin) systemProperties() []field {
	props := map[string]string{
		"file.separator": "/",
		"line.separator": "\n",
		"path.separator": ":",
	}
	if runtime.GOOS == "windows" {
		props["file.separator"], props["line.separator"], props["path.separator"] = `\`, "\r\n", ";"
	}
	for _, f := range a.environment() {
		switch f.key {
		case "go.version", "os.name", "os.arch", "os.version", "user.name", "user.home", "user.dir":
			props[f.key] = f.value.(string)
		}
	}
	for k, v := range a.cfg.SystemProperties {
		props[k] = v
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]field, 0, len(keys))
	for _, k := range keys {
		out = append(out, field{k, props[k]})
	}
	return out
}
