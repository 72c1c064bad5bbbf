package zoocfg

import (
	"strings"
	"testing"
)

// TestQuorumSASLKeys walks the quorum.auth.* keys and ZooKeeper's rules
// between them (the rolling-upgrade modes are the valid combinations).
func TestQuorumSASLKeys(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines string
		want  QuorumSASL
		err   string
	}{
		{"off", "", QuorumSASL{}, ""},
		{"enabled, nothing required", "quorum.auth.enableSasl=true", QuorumSASL{Enabled: true}, ""},
		{"learner required", "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true",
			QuorumSASL{Enabled: true, LearnerRequire: true}, ""},
		{"both required", "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\nquorum.auth.serverRequireSasl=TRUE",
			QuorumSASL{Enabled: true, LearnerRequire: true, ServerRequire: true}, ""},
		{"property spelling and sections", "zookeeper.quorum.auth.enableSasl=true\nquorum.auth.learner.saslLoginContext=L\nzookeeper.quorum.auth.server.saslLoginContext=S",
			QuorumSASL{Enabled: true, LearnerSection: "L", ServerSection: "S"}, ""},
		{"server requires without learner", "quorum.auth.enableSasl=true\nquorum.auth.serverRequireSasl=true", QuorumSASL{},
			"quorum.auth.learnerRequireSasl is disabled, so cannot enable quorum.auth.serverRequireSasl"},
		{"learner requires while disabled", "quorum.auth.learnerRequireSasl=true", QuorumSASL{},
			"quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.learnerRequireSasl"},
		{"server requires while disabled", "quorum.auth.enableSasl=false\nquorum.auth.learnerRequireSasl=true\nquorum.auth.serverRequireSasl=true", QuorumSASL{},
			"quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.serverRequireSasl"},
		{"not a boolean", "quorum.auth.enableSasl=yes", QuorumSASL{}, "want true or false"},
		{"empty section", "quorum.auth.server.saslLoginContext=", QuorumSASL{}, "must not be empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := Parse(strings.NewReader("dataDir=/tmp/zk\nclientPort=2181\n" + tc.lines))
			if err == nil {
				err = c.Validate()
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.QuorumSASL != tc.want {
				t.Fatalf("QuorumSASL = %+v, want %+v", c.QuorumSASL, tc.want)
			}
		})
	}
}

func TestQuorumSASLSections(t *testing.T) {
	var q QuorumSASL
	if q.Learner() != "QuorumLearner" || q.Server() != "QuorumServer" {
		t.Fatalf("defaults %q %q", q.Learner(), q.Server())
	}
	q = QuorumSASL{LearnerSection: "L", ServerSection: "S"}
	if q.Learner() != "L" || q.Server() != "S" {
		t.Fatalf("sections %q %q", q.Learner(), q.Server())
	}
}

// TestQuorumServicePrincipal: quorum.auth.kerberos.servicePrincipal is
// read in both spellings, defaults to ZooKeeper's, and may not be empty.
func TestQuorumServicePrincipal(t *testing.T) {
	for _, tc := range []struct{ cfg, want, err string }{
		{cfg: "", want: "zkquorum/localhost"},
		{cfg: "quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST\n", want: "zkquorum/_HOST"},
		{cfg: "zookeeper.quorum.auth.kerberos.servicePrincipal=zk/host1@EXAMPLE.COM\n", want: "zk/host1@EXAMPLE.COM"},
		{cfg: "quorum.auth.kerberos.servicePrincipal=\n", err: `zoo.cfg:3: quorum.auth.kerberos.servicePrincipal: invalid value "": the quorum service principal must not be empty`},
	} {
		c, _, err := Parse(strings.NewReader("dataDir=/tmp/zk\nquorum.auth.enableSasl=true\n" + tc.cfg))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%q: err = %v, want %q", tc.cfg, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.cfg, err)
		}
		if got := c.QuorumSASL.Principal(); got != tc.want {
			t.Fatalf("%q: principal %q, want %q", tc.cfg, got, tc.want)
		}
	}
}
