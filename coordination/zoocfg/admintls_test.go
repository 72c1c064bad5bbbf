package zoocfg

import (
	"strings"
	"testing"
)

// TestAdminTLSSettings walks the admin server's TLS settings: each is
// parsed under both spellings, and Validate refuses HTTPS without the
// ssl.quorum key store and admin.needClientAuth over plaintext HTTP with an
// error naming the key; a disabled admin server checks none of it.
func TestAdminTLSSettings(t *testing.T) {
	const store = "ssl.quorum.keyStore.location=/etc/zk/key.p12\n"
	tests := []struct {
		name    string
		lines   string
		wantErr string // "" means Parse succeeds
		force   bool
		unify   bool
		need    bool
	}{
		{name: "plaintext default", lines: ""},
		{name: "force https", lines: store + "admin.forceHttps=true\n", force: true},
		{name: "port unification", lines: store + "admin.portUnification=true\n", unify: true},
		{name: "need client auth over https", lines: store + "admin.forceHttps=true\nadmin.needClientAuth=true\n", force: true, need: true},
		{name: "system property spelling", lines: store + "zookeeper.admin.portUnification=true\nzookeeper.admin.needClientAuth=true\n", unify: true, need: true},
		{name: "https without key store", lines: "admin.forceHttps=true\n", wantErr: "ssl.quorum.keyStore.location is not set"},
		{name: "unification without key store", lines: "admin.portUnification=true\n", wantErr: "ssl.quorum.keyStore.location is not set"},
		{name: "need client auth over plaintext", lines: store + "admin.needClientAuth=true\n", wantErr: "admin.needClientAuth is true"},
		{name: "disabled admin server", lines: "admin.enableServer=false\nadmin.forceHttps=true\nadmin.needClientAuth=true\n", force: true, need: true},
		{name: "not a boolean", lines: "admin.forceHttps=yes\n", wantErr: "admin.forceHttps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := Parse(strings.NewReader(base + "clientPort=2181\n" + tt.lines))
			if err == nil {
				err = c.Validate()
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if c.AdminForceHTTPS != tt.force || c.AdminPortUnification != tt.unify || c.AdminNeedClientAuth != tt.need {
				t.Errorf("forceHttps, portUnification, needClientAuth = %v, %v, %v; want %v, %v, %v",
					c.AdminForceHTTPS, c.AdminPortUnification, c.AdminNeedClientAuth, tt.force, tt.unify, tt.need)
			}
			if c.AdminHTTPS() != (tt.force || tt.unify) {
				t.Errorf("AdminHTTPS() = %v", c.AdminHTTPS())
			}
		})
	}
}
