package zoocfg

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// refusedKeys walks every protective setting keeper refuses, by its
// zoo.cfg spelling, with a value that asks for the protection and the
// feature the error names. TestProtectiveKeysRefused tries each under both
// spellings; TestRefusedKeysCoverProtections checks the list is complete.
var refusedKeys = []struct {
	key, value, feature string
}{
	{"client.secure", "true", tlsClients},
	{"fips-mode", "true", "FIPS mode"},
	{"ssl.context.supplier.class", "com.example.Supplier", "an SSLContext supplier class"},
	{"ssl.crl", "true", "certificate revocation checking (CRL)"},
	{"ssl.ocsp", "true", "certificate revocation checking (OCSP)"},
	{"ssl.authProvider", "sasl", "TLS authentication providers other than x509"},
	{"ssl.sslProvider", "OPENSSL", tlsOther},
	{"ssl.quorum.context.supplier.class", "com.example.Supplier", "an SSLContext supplier class"},
	{"ssl.quorum.crl", "true", "certificate revocation checking (CRL)"},
	{"ssl.quorum.ocsp", "true", "certificate revocation checking (OCSP)"},
	{"ssl.quorum.sslProvider", "OPENSSL", tlsQuorum},

	{"authProvider", "org.apache.zookeeper.server.auth.SASLAuthenticationProvider", "authentication providers other than digest and ip"},
	{"authProvider.1", "com.example.CustomAuthenticationProvider", "authentication providers other than digest and ip"},
	{"DigestAuthenticationProvider.enabled", "false", "turning digest authentication off"},
	{"DigestAuthenticationProvider.digestAlg", "SHA-256", "digest algorithms other than SHA1"},
	{"sasl.client", "true", saslClients},
	{"sasl.clientconfig", "Client", saslClients},
	{"sasl.client.username", "zookeeper", saslClients},
	{"SASLAuthenticationProvider.other", "x", saslClients},
	{"kerberos.canonicalizeHostNames", "true", kerberos},
	{"ensembleAuthName", "prod", "ensemble authentication"},
	{"quorum.auth.someFutureKey", "x", saslQuorum},
	{"kerberos.canonicalizeHostNames", "true", kerberos},
	{"kerberos.minReLoginTimeMs", "60000", kerberos},
	{"kinit", "/usr/bin/kinit", kerberos},
	{"security.auth_to_local", "RULE:[1:$1@$0](.*@EXAMPLE.COM)s/@.*//", kerberos},

	{"skipACL", "yes", "skipping ACL checks"},
	{"audit.enable", "true", auditLogs},
	{"audit.impl.class", "org.apache.zookeeper.audit.Slf4jAuditLogger", auditLogs},
	{"datadir.autocreate", "false", "refusing to create a missing data directory"},
	{"db.autocreate", "false", "keeping a server with an empty database from voting"},
}

// spellings returns key as zoo.cfg spells it and as the system property
// ZooKeeper makes of it.
func spellings(key string) []string {
	return []string{key, "zookeeper." + key}
}

func TestProtectiveKeysRefused(t *testing.T) {
	for _, tt := range refusedKeys {
		for _, key := range spellings(tt.key) {
			t.Run(key, func(t *testing.T) {
				c, w, err := Parse(strings.NewReader(base + key + "=" + tt.value + "\n"))
				if c != nil || w != nil {
					t.Errorf("Parse returned a config or warnings with its error")
				}
				var unsupported *UnsupportedError
				if !errors.As(err, &unsupported) || !errors.Is(err, ErrUnsupported) {
					t.Fatalf("Parse(%s=%s) = %v, want an *UnsupportedError", key, tt.value, err)
				}
				want := UnsupportedError{Source: "zoo.cfg", Line: 2, Key: key, Feature: tt.feature}
				if *unsupported != want {
					t.Errorf("got %+v, want %+v", *unsupported, want)
				}
				msg := err.Error()
				if wantMsg := "zoo.cfg:2: " + key + ": keeper does not support " + tt.feature + " yet"; msg != wantMsg {
					t.Errorf("message %q, want %q", msg, wantMsg)
				}
				if strings.Contains(msg, "hunter2") {
					t.Errorf("message %q shows the value", msg)
				}
			})
		}
	}
}

// TestRefusedKeysCoverProtections checks that refusedKeys names every
// entry of protections and every family of protectedPrefixes, and that no
// key keeper implements is also refused.
func TestRefusedKeysCoverProtections(t *testing.T) {
	listed := map[string]bool{}
	for _, tt := range refusedKeys {
		listed[tt.key] = true
	}
	for key := range protections {
		if !listed[key] {
			t.Errorf("protection %s is not in refusedKeys", key)
		}
	}
	for _, f := range protectedPrefixes {
		found := false
		for key := range listed {
			if _, exact := protections[key]; !exact && strings.HasPrefix(key, f.prefix) {
				found = true
			}
		}
		if !found {
			t.Errorf("no key of the family %s* is in refusedKeys", f.prefix)
		}
	}
	for key := range settings {
		if _, ok := protectionOf(key); ok {
			t.Errorf("%s is both implemented and refused", key)
		}
	}
	// The ssl.* keys keeper implements for its client port stay in the
	// refused "ssl." family, for the clients' environment (CheckClientEnv);
	// no other TLS key may be refused too.
	for key := range tlsSettings {
		if _, ok := protectionOf(key); ok && !strings.HasPrefix(key, "ssl.") {
			t.Errorf("%s is both implemented and refused", key)
		}
	}
}

// TestProtectiveKeysOff checks that a protective key whose value asks for
// nothing keeper lacks is accepted without a warning, under both spellings.
func TestProtectiveKeysOff(t *testing.T) {
	tests := []struct{ key, value string }{
		{"client.portUnification", "false"},
		{"client.certReload", "false"},
		{"ssl.crl", "false"},
		{"ssl.ocsp", "FALSE"},
		{"ssl.authProvider", "x509"},
		{"client.secure", "False"},
		{"sslQuorum", "false"},
		{"portUnification", "FALSE"},
		{"sslQuorumReloadCertFiles", "false"},
		{"fips-mode", "false"},
		{"admin.forceHttps", "false"},
		{"admin.portUnification", "false"},
		{"admin.needClientAuth", "false"},
		{"ssl.keyStore.location", ""},
		{"ssl.quorum.trustStore.password", ""},
		{"ssl.quorum.crl", "false"},
		{"ssl.quorum.ocsp", "false"},
		{"authProvider.1", "org.apache.zookeeper.server.auth.DigestAuthenticationProvider"},
		{"authProvider.ip", "org.apache.zookeeper.server.auth.IPAuthenticationProvider"},
		{"DigestAuthenticationProvider.enabled", "true"},
		{"DigestAuthenticationProvider.digestAlg", "SHA1"},
		{"DigestAuthenticationProvider.digestAlg", "sha-1"},
		{"sessionRequireClientSASLAuth", "false"},
		{"sasl.client", "false"},
		{"enforce.auth.enabled", "false"},
		{"quorum.auth.enableSasl", "false"},
		{"quorum.auth.learnerRequireSasl", "false"},
		{"quorum.auth.serverRequireSasl", "false"},
		{"kerberos.removeHostFromPrincipal", "false"},
		{"skipACL", "no"},
		{"audit.enable", "false"},
		{"datadir.autocreate", "true"},
		{"db.autocreate", "true"},
	}
	for _, tt := range tests {
		for _, key := range spellings(tt.key) {
			t.Run(key+"="+tt.value, func(t *testing.T) {
				c, w := mustParse(t, base+key+"="+tt.value)
				if len(w) != 0 {
					t.Errorf("warnings: %v", w)
				}
				if !reflect.DeepEqual(c, parsedBase()) {
					t.Errorf("Parse changed the config: %+v", c)
				}
			})
		}
	}
}

// TestProtectiveKeysInvalid checks that a protective key with a value that
// is neither on nor off is an invalid value, not a silent off.
func TestProtectiveKeysInvalid(t *testing.T) {
	tests := []struct{ in, want string }{
		{"sslQuorum=yes", `zoo.cfg:2: sslQuorum: invalid value "yes": want true or false`},
		{"zookeeper.client.secure=1", `zookeeper.client.secure: invalid value "1": want true or false`},
		{"skipACL=true", `skipACL: invalid value "true": want yes or no`},
		{"zookeeper.skipACL=YES", `zookeeper.skipACL: invalid value "YES": want yes or no`},
		{"datadir.autocreate=off", `datadir.autocreate: invalid value "off": want true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, _, err := Parse(strings.NewReader(base + tt.in))
			var perr *Error
			if !errors.As(err, &perr) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) = %v, want an *Error containing %q", tt.in, err, tt.want)
			}
		})
	}
}

// TestPerformanceKeysWarn checks that settings which only tune performance
// (or that keeper is as safe without) stay warnings, including Netty as the
// connection factory, with or without TLS.
func TestPerformanceKeysWarn(t *testing.T) {
	const ignored = "zookeeper setting not supported by keeper; ignored"
	tests := []struct {
		in   string
		want []Warning
	}{
		{"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
			[]Warning{{2, "serverCnxnFactory", ignored}}},
		{"quorum.cnxn.threads.size=20", []Warning{{2, "quorum.cnxn.threads.size", ignored}}},
		{"digest.enabled=false", []Warning{{2, "digest.enabled", ignored}}},
		{"metricsProvider.httpPort=7000", []Warning{{2, "metricsProvider.httpPort", ignored}}},
		{"netty.server.earlyDropSecureConnectionHandshakes=true",
			[]Warning{{2, "netty.server.earlyDropSecureConnectionHandshakes", "unknown key; ignored"}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, got := mustParse(t, base+tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("warnings\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	c, _ := mustParse(t, base+"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\nsecureClientPort=2281\n")
	if c.TLS.SecurePort != 2281 {
		t.Errorf("Netty with TLS: secureClientPort %d, want 2281", c.TLS.SecurePort)
	}
}

// TestProtectiveKeyLastValueWins checks that a repeated key is judged by
// its last value, the one ZooKeeper uses.
func TestProtectiveKeyLastValueWins(t *testing.T) {
	_, w := mustParse(t, base+"audit.enable=true\naudit.enable=false\n")
	if len(w) != 1 || w[0].Key != "audit.enable" {
		t.Errorf("warnings %v, want the duplicate", w)
	}
	_, _, err := Parse(strings.NewReader(base + "audit.enable=false\naudit.enable=true\n"))
	if want := "zoo.cfg:3: audit.enable: keeper does not support audit logs yet"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestJVMProperties(t *testing.T) {
	tests := []struct {
		in   string
		want []jvmProperty
	}{
		{"", nil},
		{"-Xmx1g -XX:+UseG1GC", nil},
		{" -Da=b\t-Dc -D -Dd=e=f  -cp x", []jvmProperty{{"a", "b"}, {"c", ""}, {"d", "e=f"}}},
		{"-Dzookeeper.authProvider.1='x'", []jvmProperty{{"zookeeper.authProvider.1", "'x'"}}},
	}
	for _, tt := range tests {
		if got := jvmProperties(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("jvmProperties(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestCheckServerEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string // "" for no error
	}{
		{"empty", nil, ""},
		{"jvm tuning", map[string]string{"SERVER_JVMFLAGS": "-Xmx1g -XX:+UseG1GC -Dzookeeper.log.dir=/var/log/zk",
			"JVMFLAGS": "-Djava.net.preferIPv4Stack=true -Dcom.sun.management.jmxremote"}, ""},
		{"performance property", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory"}, ""},
		{"off value", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.audit.enable=false -Dzookeeper.skipACL=no"}, ""},
		{"client tls property", map[string]string{"CLIENT_JVMFLAGS": "-Dzookeeper.client.secure=true"}, ""},
		{"quorum tls", map[string]string{"SERVER_JVMFLAGS": "-Xmx1g -Dzookeeper.ssl.quorum.keyStore.location=/etc/zk/q.p12"},
			"SERVER_JVMFLAGS: zookeeper.ssl.quorum.keyStore.location: keeper reads its settings only from zoo.cfg; set it there"},
		{"quorum revocation", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.ssl.quorum.ocsp=true"},
			"SERVER_JVMFLAGS: zookeeper.ssl.quorum.ocsp: keeper does not support certificate revocation checking (OCSP) yet"},
		{"keystore", map[string]string{"JVMFLAGS": "-Dzookeeper.ssl.keyStore.password=hunter2"},
			"JVMFLAGS: zookeeper.ssl.keyStore.password: keeper reads its settings only from zoo.cfg; set it there"},
		{"x509 provider", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider"},
			"SERVER_JVMFLAGS: zookeeper.authProvider.x509: keeper reads its settings only from zoo.cfg; set it there"},
		{"jaas", map[string]string{"SERVER_JVMFLAGS": "-Djava.security.auth.login.config=/etc/zk/jaas.conf"}, ""},
		{"sasl provider", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"},
			"SERVER_JVMFLAGS: zookeeper.authProvider.1: keeper reads its settings only from zoo.cfg; set it there"},
		{"skip acl", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.skipACL=yes"},
			"SERVER_JVMFLAGS: zookeeper.skipACL: keeper does not support skipping ACL checks yet"},
		{"server flags first", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.kinit=/usr/bin/kinit", "JVMFLAGS": "-Dzookeeper.sslQuorum=true"},
			"SERVER_JVMFLAGS: zookeeper.kinit: keeper does not support Kerberos yet"},
		{"quorum service principal", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.quorum.auth.kerberos.servicePrincipal=zk/_HOST"},
			"SERVER_JVMFLAGS: zookeeper.quorum.auth.kerberos.servicePrincipal: keeper reads its settings only from zoo.cfg; set it there"},
		{"quorum sasl setting", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.quorum.auth.enableSasl=true"},
			"SERVER_JVMFLAGS: zookeeper.quorum.auth.enableSasl: keeper reads its settings only from zoo.cfg; set it there"},
		{"sasl setting", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.sessionRequireClientSASLAuth=true"},
			"SERVER_JVMFLAGS: zookeeper.sessionRequireClientSASLAuth: keeper reads its settings only from zoo.cfg; set it there"},
		{"invalid value", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.audit.enable=on"},
			`SERVER_JVMFLAGS: zookeeper.audit.enable: invalid value "on": want true or false`},
		{"implemented setting", map[string]string{"SERVER_JVMFLAGS": "-Xmx2g -Djute.maxbuffer=4194304"},
			"SERVER_JVMFLAGS: jute.maxbuffer: keeper reads its settings only from zoo.cfg; set it there"},
		{"implemented container setting", map[string]string{"SERVER_JVMFLAGS": "-Dznode.container.checkIntervalMs=1000"},
			"SERVER_JVMFLAGS: znode.container.checkIntervalMs: keeper reads its settings only from zoo.cfg; set it there"},
		{"implemented admin setting", map[string]string{"JVMFLAGS": "-Dzookeeper.admin.enableServer=false"},
			"JVMFLAGS: zookeeper.admin.enableServer: keeper reads its settings only from zoo.cfg; set it there"},
		{"trusting an empty snapshot", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.snapshot.trust.empty=true"},
			"SERVER_JVMFLAGS: zookeeper.snapshot.trust.empty: keeper reads its settings only from zoo.cfg; set it there"},
		{"datadir autocreate", map[string]string{"ZOO_DATADIR_AUTOCREATE_DISABLE": "1"},
			"environment: ZOO_DATADIR_AUTOCREATE_DISABLE: keeper does not support refusing to create a missing data directory yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckServerEnv(func(k string) string { return tt.env[k] })
			checkEnvError(t, err, tt.want)
		})
	}
}

func TestCheckClientEnv(t *testing.T) {
	vars := []string{"CLIENT_JVMFLAGS", "JVMFLAGS"}
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"empty", nil, ""},
		{"sasl off", map[string]string{"CLIENT_JVMFLAGS": "-Dzookeeper.sasl.client=false -Xmx256m"}, ""},
		{"server settings are not the client's", map[string]string{"JVMFLAGS": "-Djute.maxbuffer=4194304"}, ""},
		{"unread variable", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.sslQuorum=true"}, ""},
		{"client tls", map[string]string{"CLIENT_JVMFLAGS": "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty -Dzookeeper.client.secure=true"}, ""},
		{"client key store", map[string]string{"CLIENT_JVMFLAGS": "-Dzookeeper.ssl.keyStore.location=/etc/zk/client.p12"}, ""},
		{"client jaas", map[string]string{"JVMFLAGS": "-Djava.security.auth.login.config=/etc/zk/client-jaas.conf"}, ""},
		{"sasl login section", map[string]string{"CLIENT_JVMFLAGS": "-Dzookeeper.sasl.clientconfig=Client"}, ""},
		{"client crl", map[string]string{"CLIENT_JVMFLAGS": "-Dzookeeper.ssl.crl=true"},
			"CLIENT_JVMFLAGS: zookeeper.ssl.crl: keeper does not support certificate revocation checking (CRL) yet"},
		{"client kerberos", map[string]string{"CLIENT_JVMFLAGS": "-Dzookeeper.kinit=/usr/bin/kinit"},
			"CLIENT_JVMFLAGS: zookeeper.kinit: keeper does not support Kerberos yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckClientEnv(func(k string) string { return tt.env[k] }, vars...)
			checkEnvError(t, err, tt.want)
		})
	}
}

func checkEnvError(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want == "":
	case err == nil || err.Error() != want:
		t.Fatalf("got %v, want %q", err, want)
	case strings.Contains(want, "keeper does not support") && !errors.Is(err, ErrUnsupported):
		t.Errorf("%v does not wrap ErrUnsupported", err)
	}
}
