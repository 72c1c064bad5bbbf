package zoocfg

import (
	"slices"
	"strings"
	"testing"
)

func TestSASLKeys(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines string
		want  SASL
		err   string
	}{
		{"kazoo's harness", "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider", SASL{Provider: true}, ""},
		{"property spelling", "zookeeper.authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider", SASL{Provider: true}, ""},
		{"jaas file in zoo.cfg", "java.security.auth.login.config=/etc/zk/jaas.conf\nsasl.serverconfig=ZK", SASL{LoginConfig: "/etc/zk/jaas.conf", ServerSection: "ZK"}, ""},
		{"jaas file URL", "java.security.auth.login.config==file:/etc/zk/jaas.conf", SASL{LoginConfig: "/etc/zk/jaas.conf"}, ""},
		{"super users", "superUser=admin\nzookeeper.superUser.2=root\nsuperUser.3=admin", SASL{SuperUsers: []string{"admin", "root"}}, ""},
		{"require sasl", "sessionRequireClientSASLAuth=TRUE", SASL{RequireClientAuth: true}, ""},
		{"enforce", "enforce.auth.enabled=true\nenforce.auth.schemes= digest , sasl,,", SASL{EnforceAuth: true, EnforceAuthSchemes: []string{"digest", "sasl"}}, ""},
		{"enforce keeps an empty part in the middle", "enforce.auth.enabled=true\nenforce.auth.schemes=digest,,sasl", SASL{EnforceAuth: true, EnforceAuthSchemes: []string{"digest", "", "sasl"}}, ""},
		{"enforce without schemes", "enforce.auth.enabled=true", SASL{}, "enforce.auth.schemes is not set"},
		{"kerberos names", "kerberos.removeHostFromPrincipal=true\nzookeeper.kerberos.removeRealmFromPrincipal=false", SASL{RemoveHostFromPrincipal: true}, ""},
		{"kerberos names in upper case", "kerberos.removeHostFromPrincipal=TRUE", SASL{}, "in lower case"},
		{"the rest", "letAnySaslUserDoX=anyone\nallowSaslFailedClients=true\nSASLAuthenticationProvider.superPassword=s3cret",
			SASL{AnyUser: "anyone", AllowFailedClients: true, SuperPassword: "s3cret"}, ""},
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
			got := c.SASL
			if got.LoginConfig != tc.want.LoginConfig || got.ServerSection != tc.want.ServerSection || got.Provider != tc.want.Provider ||
				!slices.Equal(got.SuperUsers, tc.want.SuperUsers) || got.SuperPassword != tc.want.SuperPassword || got.AnyUser != tc.want.AnyUser ||
				got.AllowFailedClients != tc.want.AllowFailedClients || got.RemoveHostFromPrincipal != tc.want.RemoveHostFromPrincipal ||
				got.RemoveRealmFromPrincipal != tc.want.RemoveRealmFromPrincipal || got.RequireClientAuth != tc.want.RequireClientAuth ||
				got.EnforceAuth != tc.want.EnforceAuth || !slices.Equal(got.EnforceAuthSchemes, tc.want.EnforceAuthSchemes) {
				t.Fatalf("SASL = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestEnforcedSchemes(t *testing.T) {
	for _, tc := range []struct {
		s    SASL
		want []string
	}{
		{SASL{}, nil},
		{SASL{EnforceAuthSchemes: []string{"digest"}}, nil},
		{SASL{EnforceAuth: true, EnforceAuthSchemes: []string{"digest"}}, []string{"digest"}},
		{SASL{RequireClientAuth: true, EnforceAuth: true, EnforceAuthSchemes: []string{"digest"}}, []string{"sasl"}},
	} {
		if got := tc.s.EnforcedSchemes(); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: EnforcedSchemes = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestServerLoginConfig(t *testing.T) {
	env := map[string]string{
		ServerJVMFlagsEnv: "-Xmx1g -Djava.security.auth.login.config=/a.conf -Dzk.pw=x",
		JVMFlagsEnv:       "-Djava.security.auth.login.config==/b.conf",
	}
	getenv := func(k string) string { return env[k] }
	if got := ServerLoginConfig(getenv); got != "/b.conf" {
		t.Fatalf("ServerLoginConfig = %q, want the JVMFLAGS one", got)
	}
	if got := ServerJVMProperties(getenv)["zk.pw"]; got != "x" {
		t.Fatalf("property zk.pw = %q", got)
	}
	if err := CheckServerEnv(getenv); err != nil {
		t.Fatalf("CheckServerEnv: %v", err)
	}
	if err := CheckClientEnv(getenv, JVMFlagsEnv); err != nil {
		t.Fatalf("CheckClientEnv refused a JAAS file, which keeper's clients read: %v", err)
	}
	if got := ServerLoginConfig(func(string) string { return "" }); got != "" {
		t.Fatalf("ServerLoginConfig of an empty environment = %q", got)
	}
}
