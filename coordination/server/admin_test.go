package server

import (
	"strings"
	"testing"

	"keeper/coordination/clienttls"
	"keeper/coordination/zoocfg"
)

// TestConfigFromZooAdmin checks the mapping of admin.enableServer,
// admin.serverAddress and admin.serverPort onto Config.AdminAddr.
func TestConfigFromZooAdmin(t *testing.T) {
	tests := []struct {
		cfg  string
		want string
	}{
		{"", "0.0.0.0:8080"},
		{"admin.serverPort=9090\nadmin.serverAddress=127.0.0.1\n", "127.0.0.1:9090"},
		{"admin.serverAddress=::1\n", "[::1]:8080"},
		{"admin.enableServer=false\nadmin.serverPort=9090\n", ""},
	}
	for _, tt := range tests {
		zc, _, err := zoocfg.Parse(strings.NewReader("dataDir=/tmp/x\nclientPort=2181\n" + tt.cfg))
		if err != nil {
			t.Fatalf("%q: %v", tt.cfg, err)
		}
		if got := ConfigFromZoo(zc, nil).AdminAddr; got != tt.want {
			t.Errorf("%q: AdminAddr = %q, want %q", tt.cfg, got, tt.want)
		}
	}
}

// TestConfigFromZooAdminTLS checks the mapping of admin.forceHttps,
// admin.portUnification and admin.needClientAuth onto Config.AdminTLS:
// the ssl.quorum stores, client certificates asked for only with
// needClientAuth, and forceHttps winning over portUnification.
func TestConfigFromZooAdminTLS(t *testing.T) {
	const stores = "ssl.quorum.keyStore.location=/k.p12\nssl.quorum.keyStore.password=kp\n" +
		"ssl.quorum.trustStore.location=/t.jks\nssl.quorum.trustStore.type=JKS\n"
	tests := []struct {
		name          string
		cfg           string
		wantTLS       bool
		wantPlainToo  bool
		wantClientCrt clienttls.ClientAuth
	}{
		{name: "plaintext", cfg: stores},
		{name: "forceHttps", cfg: stores + "admin.forceHttps=true\n", wantTLS: true, wantClientCrt: clienttls.None},
		{name: "portUnification", cfg: stores + "admin.portUnification=true\n", wantTLS: true, wantPlainToo: true, wantClientCrt: clienttls.None},
		{name: "both", cfg: stores + "admin.portUnification=true\nadmin.forceHttps=true\n", wantTLS: true, wantClientCrt: clienttls.None},
		{name: "needClientAuth", cfg: stores + "admin.forceHttps=true\nadmin.needClientAuth=true\n", wantTLS: true, wantClientCrt: clienttls.Need},
		{name: "disabled", cfg: stores + "admin.enableServer=false\nadmin.forceHttps=true\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			zc, _, err := zoocfg.Parse(strings.NewReader("dataDir=/tmp/x\nclientPort=2181\n" + tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			cfg := ConfigFromZoo(zc, nil)
			if (cfg.AdminTLS != nil) != tt.wantTLS || cfg.AdminPlaintextToo != tt.wantPlainToo {
				t.Fatalf("AdminTLS set %v, AdminPlaintextToo %v; want %v, %v", cfg.AdminTLS != nil, cfg.AdminPlaintextToo, tt.wantTLS, tt.wantPlainToo)
			}
			if cfg.AdminTLS == nil {
				return
			}
			got := *cfg.AdminTLS
			want := clienttls.Store{Location: "/k.p12", Password: "kp"}
			if got.KeyStore != want || got.TrustStore != (clienttls.Store{Location: "/t.jks", Type: "JKS"}) ||
				got.Prefix != "ssl.quorum." || got.ClientAuth != tt.wantClientCrt {
				t.Errorf("AdminTLS = %+v", got)
			}
		})
	}
}

// TestConfigFromZooForTheAdminServer checks what system_properties gets
// from zoo.cfg: the settings in effect under ZooKeeper's system property
// names, defaults included.
func TestConfigFromZooForTheAdminServer(t *testing.T) {
	text := "dataDir=/tmp/x\nclientPort=2181\n# a comment\nsnapCount=5000\n4lw.commands.whitelist=ruok, mntr\n" +
		"DigestAuthenticationProvider.superDigest=super:abc=\n"
	zc, _, err := zoocfg.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	cfg := ConfigFromZoo(zc, nil)
	for k, want := range map[string]string{
		"zookeeper.snapCount":                                "5000",
		"zookeeper.4lw.commands.whitelist":                   "ruok,mntr",
		"jute.maxbuffer":                                     "1048575",
		"zookeeper.admin.serverPort":                         "8080",
		"zookeeper.admin.forceHttps":                         "false",
		"zookeeper.DigestAuthenticationProvider.superDigest": "(set)",
	} {
		if got := cfg.SystemProperties[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}
