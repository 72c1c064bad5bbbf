package bookie

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"keeper/ledgerstore/bookietls"
	"keeper/ledgerstore/bookietls/bookietlstest"
)

// TestListBookieInfoTLS: list_bookie_info asks bookies with the bookie's
// client TLS keys: a bookie that trusts the keys answers; with keys of
// another CA the handshake fails and the bookie is left out, rather than
// asked in plain text.
func TestListBookieInfoTLS(t *testing.T) {
	p := newPKI(t)
	tests := []struct {
		name   string
		client bookietls.Settings
		code   int
		want   string
	}{
		{"trusted", bookietlstest.Client(p.ca, p.client), 200, ": {Free: "},
		{"another CA", bookietlstest.Client(p.otherCA, p.otherClient), 404, "Not found any Bookie info."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, true)
			e.tweak = func(c *Config) {
				c.AdvertisedAddress = "127.0.0.1"
				c.HTTPServerAddr = "127.0.0.1:0"
				c.TLS = bookietlstest.Bookie(p.bookie, p.ca, true)
				c.ClientTLS = tc.client
			}
			b := e.start()
			resp, err := http.Get("http://" + b.HTTPAddr().String() + "/api/v1/bookie/list_bookie_info")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.want) {
				t.Fatalf("list_bookie_info: %d %q, want %d with %q", resp.StatusCode, body, tc.code, tc.want)
			}
		})
	}
}
