package server

import (
	"strings"
	"testing"

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
		"zookeeper.DigestAuthenticationProvider.superDigest": "(set)",
	} {
		if got := cfg.SystemProperties[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}
