package krblogin

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/config"
)

func TestDefaultCCache(t *testing.T) {
	uidCache := filepath.Join("/tmp", "krb5cc_"+strconv.Itoa(os.Getuid()))
	tests := []struct{ env, want, wantErr string }{
		{env: "", want: uidCache},
		{env: "/tmp/cc", want: "/tmp/cc"},
		{env: "FILE:/tmp/cc", want: "/tmp/cc"},
		{env: "KEYRING:persistent:1000", wantErr: "only FILE"},
		{env: "KCM:", wantErr: "only FILE"},
	}
	for _, tc := range tests {
		got, err := DefaultCCache(func(k string) string {
			if k == "KRB5CCNAME" {
				return tc.env
			}
			return ""
		})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("KRB5CCNAME=%q: %q, %v; want an error %q", tc.env, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("KRB5CCNAME=%q: %q, %v; want %q", tc.env, got, err, tc.want)
		}
	}
}

// TestLoginFilesRefused: credentials that cannot be read stop a login
// with the file named, before any KDC is asked.
func TestLoginFilesRefused(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not a keytab or a cache"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, MaxKeytabBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.New()
	cfg.LibDefaults.DefaultRealm = "EXAMPLE.COM"
	for name, err := range map[string]error{
		"missing keytab": func() error { _, err := WithKeytab(filepath.Join(dir, "none"), "alice", cfg); return err }(),
		"garbage keytab": func() error { _, err := WithKeytab(garbage, "alice", cfg); return err }(),
		"huge keytab":    func() error { _, err := WithKeytab(big, "alice", cfg); return err }(),
		"missing cache":  func() error { _, err := FromCCache(filepath.Join(dir, "none"), "", cfg, time.Now()); return err }(),
		"garbage cache":  func() error { _, err := FromCCache(garbage, "", cfg, time.Now()); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
}
