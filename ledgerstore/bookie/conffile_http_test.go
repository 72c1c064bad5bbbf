package bookie

import (
	"maps"
	"strings"
	"testing"
)

// TestHTTPServerKeys: httpServerEnabled, httpServerPort and httpServerHost
// with BookKeeper's defaults (off, 8080, 0.0.0.0); the API gets the
// configuration as read.
func TestHTTPServerKeys(t *testing.T) {
	tests := []struct {
		name     string
		props    map[string]string
		wantAddr string
		wantErr  string
	}{
		{name: "off by default", props: map[string]string{}, wantAddr: ""},
		{name: "off with a port", props: map[string]string{"httpServerEnabled": "false", "httpServerPort": "9000"}},
		{name: "defaults", props: map[string]string{"httpServerEnabled": "true"}, wantAddr: "0.0.0.0:8080"},
		{name: "port and host", props: map[string]string{"httpServerEnabled": "TRUE", "httpServerPort": "9090",
			"httpServerHost": "127.0.0.1"}, wantAddr: "127.0.0.1:9090"},
		{name: "IPv6 host", props: map[string]string{"httpServerEnabled": "true", "httpServerHost": "::1"},
			wantAddr: "[::1]:8080"},
		{name: "empty host", props: map[string]string{"httpServerEnabled": "true", "httpServerHost": ""},
			wantAddr: "0.0.0.0:8080"},
		{name: "bad flag", props: map[string]string{"httpServerEnabled": "yes"}, wantErr: "httpServerEnabled"},
		{name: "bad port", props: map[string]string{"httpServerEnabled": "true", "httpServerPort": "65536"},
			wantErr: "httpServerPort"},
		{name: "bad port while off", props: map[string]string{"httpServerPort": "x"}, wantErr: "httpServerPort"},
		{name: "TLS refused", props: map[string]string{"httpServerEnabled": "true", "httpServerTlsEnable": "true"},
			wantErr: "httpServerTlsEnable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]string{"journalDirectories": "/j", "ledgerDirectories": "/l"}
			maps.Copy(props, tc.props)
			c, ignored, err := ConfigFromProperties(props)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ignored) != 0 {
				t.Errorf("ignored %v", ignored)
			}
			if c.HTTPServerAddr != tc.wantAddr {
				t.Errorf("HTTPServerAddr %q, want %q", c.HTTPServerAddr, tc.wantAddr)
			}
			if tc.wantAddr != "" && !maps.Equal(c.Properties, props) {
				t.Errorf("Properties %v, want %v", c.Properties, props)
			}
			if tc.wantAddr == "" && c.Properties != nil {
				t.Errorf("Properties %v without the API", c.Properties)
			}
		})
	}
}
