package jaas

import (
	"maps"
	"reflect"
	"strings"
	"testing"
)

// kazooServer is the Server section kazoo's test harness writes.
const kazooServer = `
Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="super_secret"
    user_jaasuser="jaas_password";
};`

func TestServerUsers(t *testing.T) {
	lookup := func(name string) (string, bool) {
		v, ok := map[string]string{"user.home": "/home/zk", "pw": "from-property"}[name]
		return v, ok
	}
	for _, tc := range []struct {
		name    string
		file    string
		section string
		want    map[string]string // nil: no usable section
	}{
		{"kazoo", kazooServer, "Server", map[string]string{"super": "super_secret", "jaasuser": "jaas_password"}},
		{"empty file", "", "Server", nil},
		{"other section only", `Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="a" password="b"; };`, "Server", nil},
		{"renamed section", `ZKServer { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b"; };`, "ZKServer", map[string]string{"a": "b"}},
		{"names are case-sensitive", `server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b"; };`, "Server", nil},
		{"section without modules", `Server { };`, "Server", nil},
		{"flag in any case, unquoted value", `Server { org.apache.zookeeper.server.auth.DigestLoginModule REQUIRED user_a=secret; };`, "Server", map[string]string{"a": "secret"}},
		{"comments", "// c\n/* block\n comment */ Server /* x */ {\n org.apache.zookeeper.server.auth.DigestLoginModule required / lone slash\n user_a=\"b\"; // end\n};", "Server", map[string]string{"a": "b"}},
		{"escapes", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="q\"b\\s\101\t"; };`, "Server", map[string]string{"a": "q\"b\\sA\t"}},
		{"quoted key and section", `"Server" { "org.apache.zookeeper.server.auth.DigestLoginModule" "optional" "user_bob@EXAMPLE.COM"="pw"; };`, "Server", map[string]string{"bob@EXAMPLE.COM": "pw"}},
		{"other options ignored", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required username="x" password="y" user_="empty"; };`, "Server", map[string]string{"": "empty"}},
		{"two modules, later wins", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="1" user_b="2"; org.apache.zookeeper.server.auth.DigestLoginModule optional user_a="3"; };`, "Server", map[string]string{"a": "3", "b": "2"}},
		{"duplicate key, last wins", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="1" user_a="2"; };`, "Server", map[string]string{"a": "2"}},
		{"expansion", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="${pw}" user_b="${user.home}${/}x" user_c="${open"; };`, "Server", map[string]string{"a": "from-property", "b": "/home/zk/x", "c": "${open"}},
		{"string ends at the end of the line", "Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a=\"open\n; };", "Server", map[string]string{"a": "open"}},
		{"unicode word", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_jörg=pässword; };`, "Server", map[string]string{"jörg": "pässword"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.file), lookup)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			users, ok, err := cfg.ServerUsers(tc.section)
			if err != nil {
				t.Fatalf("ServerUsers: %v", err)
			}
			if ok != (tc.want != nil) || !maps.Equal(users, tc.want) {
				t.Fatalf("ServerUsers(%q) = %v, %v; want %v", tc.section, users, ok, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, wantErr string
	}{
		{"duplicate section", "A { };\nA { };", "line 2: section \"A\" is given more than once"},
		{"bad flag", "A { m maybe; };", `invalid control flag "maybe"`},
		{"missing semicolon after section", "A { }", "expected ';', found end of file"},
		{"missing brace", "A m required;", "expected '{'"},
		{"value starting with a digit", "A { m required user_a=123; };", "found a number"},
		{"value starting with a dash", "A { m required user_a=-x; };", "found a number"},
		{"single quotes", "A { m required user_a='x'; };", "expected option value, found a single-quoted string"},
		{"hash is not a comment", "# comment\nA { };", "line 1: expected section name, found '#'"},
		{"missing equals", "A { m required user_a \"x\"; };", "expected '='"},
		{"unknown property", "A { m required\n user_a=\"${nope}\"; };", `line 2: option user_a: unable to expand property "nope"`},
		{"unterminated module", "A { m required user_a=\"secret\"", "expected option key, found end of file"},
		{"unterminated block comment", "A { /* m required ; };", "expected login module class, found end of file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file), nil)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse(%q) = %v; want an error containing %q", tc.file, err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error %q shows an option value", err)
			}
		})
	}
}

func TestServerUsersRefusesOtherModules(t *testing.T) {
	file := `Server {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true keyTab="/etc/zk.keytab" principal="zookeeper/host@EXAMPLE.COM";
};`
	cfg, err := Parse([]byte(file), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, ok, err := cfg.ServerUsers("Server")
	if !ok || err == nil || !strings.Contains(err.Error(), "Krb5LoginModule") || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("ServerUsers = %v, %v; want an error naming Krb5LoginModule on line 2", ok, err)
	}
}

func TestCredentials(t *testing.T) {
	for _, tc := range []struct {
		name, file       string
		user, password   string
		ok, found, isErr bool
	}{
		{"zookeeper's quorum example", `QuorumLearner { org.apache.zookeeper.server.auth.DigestLoginModule required username="test" password="test"; };`,
			"test", "test", true, true, false},
		{"no section", `QuorumServer { org.apache.zookeeper.server.auth.DigestLoginModule required user_test="test"; };`, "", "", false, false, false},
		{"no username", `QuorumLearner { org.apache.zookeeper.server.auth.DigestLoginModule required password="test"; };`, "", "", true, false, false},
		{"no password", `QuorumLearner { org.apache.zookeeper.server.auth.DigestLoginModule required username="test"; };`, "test", "", true, true, false},
		{"first module with a user", `QuorumLearner { org.apache.zookeeper.server.auth.DigestLoginModule optional; org.apache.zookeeper.server.auth.DigestLoginModule required username="b" password="c"; };`,
			"b", "c", true, true, false},
		{"kerberos", `QuorumLearner { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k" principal="zkquorum/h@R"; };`,
			"", "", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.file), nil)
			if err != nil {
				t.Fatal(err)
			}
			user, password, ok, found, err := cfg.Credentials("QuorumLearner")
			if user != tc.user || password != tc.password || ok != tc.ok || found != tc.found || (err != nil) != tc.isErr {
				t.Fatalf("got %q %q %v %v %v", user, password, ok, found, err)
			}
			if err != nil && strings.Contains(err.Error(), "zkquorum") {
				t.Fatalf("error %v names an option value", err)
			}
		})
	}
}

func TestServerKerberos(t *testing.T) {
	const good = `com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k/zk.keytab" storeKey=true principal="zookeeper/localhost@EXAMPLE.COM";`
	tests := []struct {
		name, section, wantErr string
		want                   *KerberosLogin
	}{
		{"keytab login", good, "", &KerberosLogin{KeyTab: "/k/zk.keytab", Principal: "zookeeper/localhost@EXAMPLE.COM", Initiator: true, Line: 2}},
		{"not an initiator", `com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k" storeKey=true isInitiator=False principal="zookeeper/h@R";`, "",
			&KerberosLogin{KeyTab: "/k", Principal: "zookeeper/h@R", Line: 2}},
		{"digest only", `org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b";`, "", nil},
		{"no keytab use", `com.sun.security.auth.module.Krb5LoginModule required keyTab="/k" storeKey=true principal="zookeeper/h@R";`, "useKeyTab=true", nil},
		{"no storeKey", `com.sun.security.auth.module.Krb5LoginModule required useKeyTab=TRUE keyTab="/k" principal="zookeeper/h@R";`, "storeKey=true", nil},
		{"ticket cache", `com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true useTicketCache=true keyTab="/k" principal="zookeeper/h@R";`, "useTicketCache", nil},
		{"no keyTab", `com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true principal="zookeeper/h@R";`, "keyTab is not set", nil},
		{"any principal", `com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="/k" principal="*";`, "principal must", nil},
		{"mixed", good + "\norg.apache.zookeeper.server.auth.DigestLoginModule required user_a=\"b\";", "only login module", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte("Server {\n"+tc.section+"\n};\n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cfg.ServerKerberos("Server")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestLearnerKerberos: a quorum learner's Kerberos section logs in with a
// keytab, like a server's, but needs no storeKey and must talk to the KDC.
func TestLearnerKerberos(t *testing.T) {
	const mod = `com.sun.security.auth.module.Krb5LoginModule required `
	tests := []struct {
		name, section, wantErr string
		want                   *KerberosLogin
	}{
		{"keytab login", mod + `useKeyTab=true keyTab="/k/q.keytab" storeKey=true principal="zkquorum/host1@EXAMPLE.COM";`, "",
			&KerberosLogin{KeyTab: "/k/q.keytab", Principal: "zkquorum/host1@EXAMPLE.COM", Initiator: true, Line: 2}},
		{"no storeKey, no realm", mod + `useKeyTab=true keyTab="/k" principal="zkquorum/host1";`, "",
			&KerberosLogin{KeyTab: "/k", Principal: "zkquorum/host1", Initiator: true, Line: 2}},
		{"digest", `org.apache.zookeeper.server.auth.DigestLoginModule required username="a" password="b";`, "", nil},
		{"no keytab use", mod + `keyTab="/k" principal="zkquorum/h@R";`, "useKeyTab=true", nil},
		{"ticket cache", mod + `useKeyTab=true useTicketCache=true keyTab="/k" principal="zkquorum/h@R";`, "useTicketCache", nil},
		{"no keyTab", mod + `useKeyTab=true principal="zkquorum/h@R";`, "keyTab is not set", nil},
		{"no principal", mod + `useKeyTab=true keyTab="/k";`, "principal must", nil},
		{"not an initiator", mod + `useKeyTab=true keyTab="/k" isInitiator=false principal="zkquorum/h@R";`, "isInitiator=false", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte("QuorumLearner {\n"+tc.section+"\n};\n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cfg.LearnerKerberos("QuorumLearner")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestClientKerberos: a client's Kerberos section logs in with a keytab or
// a ticket cache, and nothing else.
func TestClientKerberos(t *testing.T) {
	const mod = `com.sun.security.auth.module.Krb5LoginModule required `
	tests := []struct {
		name, section, wantErr string
		want                   *ClientKerberos
	}{
		{name: "keytab", section: mod + `useKeyTab=true keyTab="/k/alice.keytab" principal="alice@EXAMPLE.COM";`,
			want: &ClientKerberos{KeyTab: "/k/alice.keytab", Principal: "alice@EXAMPLE.COM", Line: 2}},
		{name: "ticket cache", section: mod + `useTicketCache=true;`, want: &ClientKerberos{UseTicketCache: true, Line: 2}},
		{name: "named cache", section: mod + `useTicketCache=TRUE ticketCache="/tmp/cc" principal="alice";`,
			want: &ClientKerberos{UseTicketCache: true, TicketCache: "/tmp/cc", Principal: "alice", Line: 2}},
		{name: "both", section: mod + `useTicketCache=true useKeyTab=true keyTab="/k" principal="alice";`,
			want: &ClientKerberos{UseTicketCache: true, KeyTab: "/k", Principal: "alice", Line: 2}},
		{name: "neither", section: mod + `doNotPrompt=true;`, wantErr: "cannot prompt"},
		{name: "keytab without principal", section: mod + `useKeyTab=true keyTab="/k";`, wantErr: "principal must name"},
		{name: "keytab without file", section: mod + `useKeyTab=true principal="alice";`, wantErr: "keyTab is not set"},
		{name: "cache named but off", section: mod + `ticketCache="/tmp/cc" useKeyTab=true keyTab="/k" principal="a";`,
			wantErr: "without useTicketCache"},
		{name: "two modules", section: mod + `useTicketCache=true;
			org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="x";`, wantErr: "only login module"},
		{name: "digest", section: `org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="x";`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte("Client {\n"+tc.section+"\n};"), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cfg.ClientKerberos("Client")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	cfg, err := Parse([]byte("Other { "+mod+"useTicketCache=true; };"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cfg.ClientKerberos("Client"); got != nil || err != nil {
		t.Fatalf("a missing section: %+v, %v", got, err)
	}
}
