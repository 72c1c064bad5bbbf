package server

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"keeper/coordination/kerberos/kerberostest"
	"keeper/coordination/zoocfg"
	"keeper/internal/testhost"
)

func TestAuthFromZoo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	digest := write("digest.conf", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_super="s" user_bob="${bob.pw}"; };`)
	client := write("client.conf", `Client { org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="b"; };`)
	broken := write("broken.conf", `Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_bob="secret"`)
	krb := write("krb.conf", `Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };`)
	keytab := write("zk.keytab", string(kerberostest.Keytab(t, "zookeeper/localhost", "EXAMPLE.COM", "s")))
	// isInitiator=false: no KDC here to log in to at start.
	krbModule := func(name, keyTab, principal string) string {
		return write(name, `Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true isInitiator=false keyTab="`+
			keyTab+`" principal="`+principal+`"; };`)
	}
	krbInitiator := write("initiator.conf", `Server { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="`+
		keytab+`" principal="zookeeper/localhost@EXAMPLE.COM"; };`)
	noKDC := write("krb5.conf", "[libdefaults]\n default_realm = EXAMPLE.COM\n[realms]\n EXAMPLE.COM = {\n  kdc = "+testhost.DeadAddr(t)+"\n }\n")
	krbGood := krbModule("good.conf", keytab, "zookeeper/localhost@EXAMPLE.COM")
	krbOther := krbModule("other.conf", keytab, "zookeeper/otherhost@EXAMPLE.COM")
	krbMissing := krbModule("missing.conf", filepath.Join(dir, "none.keytab"), "zookeeper/localhost@EXAMPLE.COM")
	krbGarbled := krbModule("garbled.conf", digest, "zookeeper/localhost@EXAMPLE.COM")
	for _, tc := range []struct {
		name      string
		cfg       string // zoo.cfg lines
		flags     string // SERVER_JVMFLAGS
		wantUsers map[string]string
		err       string
		wantKrb   bool
	}{
		{"no jaas", "", "", nil, "", false},
		{"jaas in the environment", "", "-Djava.security.auth.login.config=" + digest + " -Dbob.pw=b", map[string]string{"super": "s", "bob": "b"}, "", false},
		{"jaas in zoo.cfg", "java.security.auth.login.config=" + digest, "-Dbob.pw=b", map[string]string{"super": "s", "bob": "b"}, "", false},
		{"super password", "SASLAuthenticationProvider.superPassword=other", "-Djava.security.auth.login.config=" + digest + " -Dbob.pw=b",
			map[string]string{"super": "other", "bob": "b"}, "", false},
		{"no server section", "", "-Djava.security.auth.login.config=" + client, nil, "", false},
		{"renamed section", "sasl.serverconfig=Client", "-Djava.security.auth.login.config=" + client, map[string]string{}, "", false},
		{"missing file", "", "-Djava.security.auth.login.config=" + filepath.Join(dir, "none.conf"), nil, `no JAAS configuration section named "Server"`, false},
		{"broken file", "", "-Djava.security.auth.login.config=" + broken, nil, "expected option key", false},
		{"unknown property", "", "-Djava.security.auth.login.config=" + digest, nil, `unable to expand property "bob.pw"`, false},
		{"kerberos without a keytab", "", "-Djava.security.auth.login.config=" + krb, nil, "storeKey=true", false},
		{"kerberos", "", "-Djava.security.auth.login.config=" + krbGood, nil, "", true},
		{"kerberos, principal not in the keytab", "", "-Djava.security.auth.login.config=" + krbOther, nil, "no key for zookeeper/otherhost", false},
		{"kerberos initiator, KDC down", "", "-Djava.security.auth.login.config=" + krbInitiator + " -Djava.security.krb5.conf=" + noKDC, nil,
			"could not log in to Kerberos as zookeeper/localhost@EXAMPLE.COM", false},
		{"kerberos, keytab missing", "", "-Djava.security.auth.login.config=" + krbMissing, nil, "none.keytab", false},
		{"kerberos, keytab garbled", "", "-Djava.security.auth.login.config=" + krbGarbled, nil, "keytab", false},
		{"two files", "java.security.auth.login.config=" + client, "-Djava.security.auth.login.config=" + digest, nil, "the environment names JAAS file", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zc, _, err := zoocfg.Parse(strings.NewReader("dataDir=/tmp/x\nclientPort=2181\n" + tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			getenv := func(k string) string {
				if k == zoocfg.ServerJVMFlagsEnv {
					return tc.flags
				}
				return ""
			}
			auth, err := AuthFromZoo(zc, getenv, slog.New(slog.DiscardHandler))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("error %q shows a password", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (auth.Kerberos != nil) != tc.wantKrb || (auth.Kerberos != nil) != (auth.Now != nil) {
				t.Fatalf("kerberos acceptor %v (clock %v), want %v", auth.Kerberos != nil, auth.Now != nil, tc.wantKrb)
			}
			if !maps.Equal(auth.SASLUsers, tc.wantUsers) || (auth.SASLUsers == nil) != (tc.wantUsers == nil) || (auth.SASLUsers != nil) != (auth.Entropy != nil) {
				t.Fatalf("users %v (entropy %v), want %v", auth.SASLUsers, auth.Entropy != nil, tc.wantUsers)
			}
		})
	}
}

func TestKrb5DefaultRealm(t *testing.T) {
	conf := "# comment\n[realms]\n default_realm = WRONG\n[libdefaults]\n  dns_lookup_kdc = false\n  default_realm = EXAMPLE.COM\n"
	if got := krb5DefaultRealm([]byte(conf)); got != "EXAMPLE.COM" {
		t.Fatalf("krb5DefaultRealm = %q", got)
	}
	if got := kerberosDefaultRealm(map[string]string{"java.security.krb5.realm": "R", "java.security.krb5.conf": "/nonexistent"}); got != "R" {
		t.Fatalf("kerberosDefaultRealm = %q", got)
	}
	if got := kerberosDefaultRealm(map[string]string{"java.security.krb5.conf": "/nonexistent"}); got != "" {
		t.Fatalf("kerberosDefaultRealm without a file = %q", got)
	}
}
