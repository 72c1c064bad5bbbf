package server

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/quorumnet"
	"keeper/coordination/zab"
	"keeper/coordination/zoocfg"
)

// quorumJAAS is ZooKeeper's documented quorum SASL example.
const quorumJAAS = `
QuorumServer {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_test="test";
};
QuorumLearner {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       username="test"
       password="test";
};
`

// TestQuorumSASLFromZoo checks what a member starts with, or why it does
// not, for the quorum.auth.* keys and the JAAS file.
func TestQuorumSASLFromZoo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.conf", quorumJAAS)
	renamed := write("renamed.conf", strings.NewReplacer("QuorumServer", "QS", "QuorumLearner", "QL").Replace(quorumJAAS))
	noLearner := write("nolearner.conf", quorumJAAS[:strings.Index(quorumJAAS, "QuorumLearner")])
	noUser := write("nouser.conf", strings.Replace(quorumJAAS, `username="test"`, "", 1))
	kerberos := write("krb.conf", strings.Replace(quorumJAAS, "org.apache.zookeeper.server.auth.DigestLoginModule required\n       user_test",
		"com.sun.security.auth.module.Krb5LoginModule required\n       useKeyTab=true keyTab=\"/k\" principal=\"zkquorum/host@R\"\n       x", 1))
	kerberosNoKeytab := write("krb2.conf", strings.Replace(quorumJAAS, "org.apache.zookeeper.server.auth.DigestLoginModule required\n       user_test",
		"com.sun.security.auth.module.Krb5LoginModule required\n       useKeyTab=true storeKey=true keyTab=\"/nonexistent/k\" principal=\"zkquorum/host@R\"\n       x", 1))
	kerberosLearner := write("krb3.conf", strings.Replace(quorumJAAS, "org.apache.zookeeper.server.auth.DigestLoginModule required\n       username",
		"com.sun.security.auth.module.Krb5LoginModule required\n       useKeyTab=true keyTab=\"/nonexistent/k\" principal=\"zkquorum/host@R\"\n       x", 1))
	const required = "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\nquorum.auth.serverRequireSasl=true\n"
	for _, tc := range []struct {
		name, zoo, jaas string
		want            *quorumnet.SASL
		err             string
	}{
		{"off", "", good, nil, ""},
		{"required", required, good, &quorumnet.SASL{LearnerRequire: true, ServerRequire: true, Username: "test", Password: "test"}, ""},
		{"enabled only", "quorum.auth.enableSasl=true\n", good, &quorumnet.SASL{Username: "test", Password: "test"}, ""},
		{"renamed sections", required + "quorum.auth.server.saslLoginContext=QS\nquorum.auth.learner.saslLoginContext=QL\n", renamed,
			&quorumnet.SASL{LearnerRequire: true, ServerRequire: true, Username: "test", Password: "test"}, ""},
		{"no jaas file", required, "", nil, "no JAAS file is named"},
		{"no server section", required + "quorum.auth.server.saslLoginContext=Nope\n", good, nil, `section "Nope" could not be found`},
		{"no learner section", "quorum.auth.enableSasl=true\n", noLearner, nil, `section "QuorumLearner" could not be found`},
		{"no username", required, noUser, nil, `section "QuorumLearner" has no username`},
		{"no username, not required", "quorum.auth.enableSasl=true\n", noUser, &quorumnet.SASL{}, ""},
		{"kerberos server module without storeKey", required, kerberos, nil, "keeper needs storeKey=true"},
		{"kerberos server module, no keytab file", required, kerberosNoKeytab, nil, "no such file"},
		{"kerberos learner module, no keytab file", required, kerberosLearner, nil, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zc, _, err := zoocfg.Parse(strings.NewReader("dataDir=/tmp/x\nclientPort=2181\n" + tc.zoo))
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{}
			if tc.jaas != "" {
				env["SERVER_JVMFLAGS"] = "-Djava.security.auth.login.config=" + tc.jaas
			}
			got, err := QuorumSASLFromZoo(zc, func(k string) string { return env[k] }, slog.New(slog.DiscardHandler))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "zkquorum/host") {
					t.Fatalf("error %v shows an option value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if got == nil {
				return
			}
			if got.LearnerRequire != tc.want.LearnerRequire || got.ServerRequire != tc.want.ServerRequire ||
				got.Username != tc.want.Username || got.Password != tc.want.Password || got.Users["test"] != "test" || got.Entropy == nil {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// quorumSASL is a member's SASL with ZooKeeper's example users, requiring
// authentication both ways, logging in with password.
func quorumSASL(password string) *quorumnet.SASL {
	return &quorumnet.SASL{LearnerRequire: true, ServerRequire: true, Username: "test", Password: password,
		Users: map[string]string{"test": "test"}}
}

// TestEnsembleQuorumSASL runs three members that require SASL of each
// other: they form an ensemble and replicate.
func TestEnsembleQuorumSASL(t *testing.T) {
	servers := startEnsembleWith(t, 3, func(_ zab.PeerID, cfg *Config) { cfg.Quorum.SASL = quorumSASL("test") })
	waitServing(t, servers, 3)
	checkReplicated(t, servers, servers)
}

// TestEnsembleQuorumSASLWrongPassword: a member with the wrong password
// never joins (every connection it opens is refused, and so is every
// one the others open to it, since it cannot prove itself either way),
// while the other two serve.
func TestEnsembleQuorumSASLWrongPassword(t *testing.T) {
	servers := startEnsembleWith(t, 3, func(id zab.PeerID, cfg *Config) {
		pw := "test"
		if id == 3 {
			pw = "wrong"
		}
		cfg.Quorum.SASL = quorumSASL(pw)
	})
	waitServing(t, servers[:2], 2)
	checkReplicated(t, servers[:2], servers[:2])
	if role := servers[2].quorumRole(); role != "" {
		t.Fatalf("the member with the wrong password is %q", role)
	}
}

// waitServing waits for servers to hold one leader and n serving members.
func waitServing(t *testing.T, servers []*Server, n int) {
	t.Helper()
	eventually(t, 2*waitTimeout, func() bool {
		leaders, serving := 0, 0
		for _, s := range servers {
			switch s.quorumRole() {
			case "leader":
				leaders++
				serving++
			case "follower":
				serving++
			}
		}
		return leaders == 1 && serving == n
	}, "an ensemble of %d", n)
}

// checkReplicated writes through the first of writers and reads the
// writes back from each of readers after a sync.
func checkReplicated(t *testing.T, writers, readers []*Server) {
	t.Helper()
	c, _, err := zk.Connect([]string{writers[0].Addr().String()}, 10*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 10 {
		if _, err := c.Create(fmt.Sprintf("/sasl%d", i), []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	for i, s := range readers {
		c2, _, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogger(quietLogger{}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c2.Sync("/"); err != nil {
			t.Fatalf("sync on %d: %v", i, err)
		}
		if _, _, err := c2.Get("/sasl9"); err != nil {
			t.Fatalf("server %d: %v", i, err)
		}
		c2.Close()
	}
}

// TestQuorumServicePrincipalHost: _HOST is replaced only as ZooKeeper's
// SecurityUtils replaces it, by the host in lower case, and only in a
// setting of exactly service/_HOST.
func TestQuorumServicePrincipalHost(t *testing.T) {
	for _, tc := range []struct{ setting, host, want string }{
		{"zkquorum/_HOST", "Host1.Example.COM", "zkquorum/host1.example.com"},
		{"zkquorum/localhost", "host1", "zkquorum/localhost"},
		{"zkquorum/_HOST@EXAMPLE.COM", "host1", "zkquorum/_HOST@EXAMPLE.COM"},
		{"zkquorum", "host1", "zkquorum"},
		{"a/b/_HOST", "host1", "a/b/_HOST"},
		{"zkquorum/_host", "host1", "zkquorum/_host"},
	} {
		if got := quorumServicePrincipal(tc.setting, tc.host); got != tc.want {
			t.Errorf("quorumServicePrincipal(%q, %q) = %q, want %q", tc.setting, tc.host, got, tc.want)
		}
	}
}
