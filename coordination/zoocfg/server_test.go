package zoocfg

import (
	"strings"
	"testing"
)

func TestParseServer(t *testing.T) {
	tests := []struct {
		value string
		want  Server
	}{
		{"127.0.0.1:2888:3888", Server{Host: "127.0.0.1", QuorumPort: 2888, ElectionPort: 3888}},
		{"h:2888:3888:observer;2181", Server{Host: "h", QuorumPort: 2888, ElectionPort: 3888, Role: Observer,
			ClientHost: "0.0.0.0", ClientPort: 2181}},
		{"h:2888:3888;127.0.0.1:2181", Server{Host: "h", QuorumPort: 2888, ElectionPort: 3888,
			ClientHost: "127.0.0.1", ClientPort: 2181}},
		{"h:2888:3888:participant", Server{Host: "h", QuorumPort: 2888, ElectionPort: 3888}},
		{"h:2888:3888: OBSERVER ", Server{Host: "h", QuorumPort: 2888, ElectionPort: 3888, Role: Observer}},
		{"zk1.example.com:2888:3888:participant;0.0.0.0:2181", Server{Host: "zk1.example.com", QuorumPort: 2888,
			ElectionPort: 3888, ClientHost: "0.0.0.0", ClientPort: 2181}},
		{"[::1]:2888:3888", Server{Host: "::1", QuorumPort: 2888, ElectionPort: 3888}},
		{"[fe80::1]:2888:3888:observer;[::1]:2181", Server{Host: "fe80::1", QuorumPort: 2888, ElectionPort: 3888,
			Role: Observer, ClientHost: "::1", ClientPort: 2181}},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			got, err := parseServer(7, tt.value)
			if err != nil {
				t.Fatalf("parseServer(%q): %v", tt.value, err)
			}
			tt.want.ID = 7
			if got != tt.want {
				t.Errorf("parseServer(%q)\n got %+v\nwant %+v", tt.value, got, tt.want)
			}
			// String gives a line that parses back to the same server.
			again, err := parseServer(7, got.String())
			if err != nil || again != got {
				t.Errorf("parseServer(%q) = %+v, %v; want %+v", got.String(), again, err, got)
			}
		})
	}
}

func TestParseServerErrors(t *testing.T) {
	tests := []struct {
		value string
		want  string
	}{
		{"", "empty host or port"},
		{"h", "want host:quorumPort:electionPort"},
		{"h:2888", "want host:quorumPort:electionPort"},
		{"h:1:2:observer:x", "want host:quorumPort:electionPort"},
		{"h::3888", "empty host or port"},
		{":2888:3888", "empty host or port"},
		{"h:2888:3888:", "empty host or port"},
		{"h:x:3888", `quorum port: "x" is not a number`},
		{"h:2888:y", `election port: "y" is not a number`},
		{"h:0:3888", "quorum port: 0 out of range"},
		{"h:2888:65536", "election port: 65536 out of range"},
		{"h:2888:2888", "quorum and election ports must differ"},
		{"h:2888:3888:leader", `unknown role "leader"`},
		{"h:2888:3888;", "client address: empty host or port"},
		{"h:2888:3888;a:b:c", "client address: want [host:]port"},
		{"h:2888:3888;h:port", `client port: "port" is not a number`},
		{"h:2888:3888;2181;2182", "more than one ';'"},
		{"a:2888:3888|b:2888:3888", "multiple addresses"},
		{"[::1:2888:3888", "'[' without matching ']'"},
		{"[::1]2888:3888", "want a port after ']:'"},
		{"[::1]:", "want a port after ']:'"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			_, err := parseServer(1, tt.value)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseServer(%q) = %v, want error containing %q", tt.value, err, tt.want)
			}
		})
	}
}

func TestRoleString(t *testing.T) {
	for r, want := range map[Role]string{Participant: "participant", Observer: "observer", Role(9): "Role(9)"} {
		if got := r.String(); got != want {
			t.Errorf("Role(%d).String() = %q, want %q", int(r), got, want)
		}
	}
}
