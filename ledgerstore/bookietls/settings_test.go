package bookietls

import (
	"os"
	"strings"
	"testing"
	"time"
)

func getter(props map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := props[k]
		return strings.TrimSpace(v), ok
	}
}

// TestParse: each side's spelling of the keys, BookKeeper's fallbacks,
// and the values refused with their key named.
func TestParse(t *testing.T) {
	on := map[string]string{"tlsProviderFactoryClass": FactoryClass}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range on {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tt := range []struct {
		name    string
		side    Side
		props   map[string]string
		want    func(Settings) bool
		refused string
	}{
		{"off", Bookie, map[string]string{}, func(s Settings) bool { return !s.Enabled }, ""},
		{"on", Bookie, with(), func(s Settings) bool { return s.Enabled }, ""},
		{"client falls back to tls keys", Client, with("tlsTrustStore", "/t", "tlsKeyStore", "/k"),
			func(s Settings) bool { return s.TrustStore == "/t" && s.KeyStore == "/k" }, ""},
		{"client keys first", Client, with("tlsTrustStore", "/t", "clientTrustStore", "/ct", "clientKeyStoreType", "pkcs12"),
			func(s Settings) bool { return s.TrustStore == "/ct" && s.KeyStoreType == "pkcs12" }, ""},
		{"bookie ignores client keys", Bookie, with("clientKeyStore", "/ck"), func(s Settings) bool { return s.KeyStore == "" }, ""},
		{"lists", Bookie, with("tlsEnabledProtocols", " TLSv1.2 , TLSv1.3", "tlsEnabledCipherSuites", ""),
			func(s Settings) bool { return len(s.EnabledProtocols) == 2 && s.EnabledCipherSuites == nil }, ""},
		{"timeout", Client, with("startTLSTimeoutSecs", "3"), func(s Settings) bool { return s.HandshakeTimeout == 3*time.Second }, ""},
		{"providers", Bookie, with("tlsProvider", "jdk"), func(s Settings) bool { return true }, ""},
		{"other factory", Bookie, with("tlsProviderFactoryClass", "a.B"), nil, "tlsProviderFactoryClass"},
		{"other provider", Bookie, with("tlsProvider", "Conscrypt"), nil, "tlsProvider"},
		{"store type", Bookie, with("tlsKeyStoreType", "JCEKS"), nil, "tlsKeyStoreType"},
		{"bool", Bookie, with("tlsClientAuthentication", "1"), nil, "tlsClientAuthentication"},
		{"zero timeout", Client, with("startTLSTimeoutSecs", "0"), nil, "startTLSTimeoutSecs"},
		{"auth without factory", Bookie, map[string]string{"tlsClientAuthentication": "true"}, nil, "tlsProviderFactoryClass is not set"},
		{"hostname without factory", Client, map[string]string{"tlsHostnameVerificationEnabled": "TRUE"}, nil, "tlsProviderFactoryClass is not set"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.side, getter(tt.props))
			if tt.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("got %v, want an error naming %s", err, tt.refused)
				}
				return
			}
			if err != nil || !tt.want(s) {
				t.Fatalf("got %+v, %v", s, err)
			}
		})
	}
}

func TestUnknownKey(t *testing.T) {
	if k, ok := UnknownKey([]string{"tlsKeyStore", "zkServers", "clientTrustStoreX", "tlsZ"}); !ok || k != "clientTrustStoreX" {
		t.Fatalf("got %q %v", k, ok)
	}
	if k, ok := UnknownKey(Keys(Client)); ok {
		t.Fatalf("known key %s reported", k)
	}
}

// TestNewRefuses: what a side lacks is refused by New, naming the key.
func TestNewRefuses(t *testing.T) {
	for _, tt := range []struct {
		side Side
		s    Settings
		key  string
	}{
		{Bookie, Settings{Enabled: true}, "tlsKeyStore"},
		{Bookie, Settings{Enabled: true, KeyStoreType: "PEM", KeyStore: "/k"}, "tlsCertificatePath"},
		{Bookie, Settings{Enabled: true, KeyStore: "/k.jks", ClientAuthentication: true}, "tlsTrustStore"},
		{Client, Settings{Enabled: true}, "clientTrustStore"},
		{Client, Settings{Enabled: true, TrustStore: "/t", ClientAuthentication: true}, "clientKeyStore"},
		{Client, Settings{Enabled: true, TrustStoreType: "PEM", TrustStore: "/missing.pem"}, "clientTrustStore"},
		{Bookie, Settings{}, "tlsProviderFactoryClass"},
	} {
		if _, err := New(tt.side, tt.s, nil); err == nil || !strings.Contains(err.Error(), tt.key) {
			t.Errorf("%+v: got %v, want an error naming %s", tt.s, err, tt.key)
		}
	}
}

// TestReloadPeriod: the files are looked at no more often than the
// refresh period, and a file that no longer loads keeps the previous
// configuration.
func TestReloadPeriod(t *testing.T) {
	dir := t.TempDir()
	ca := writeCA(t, dir)
	now := time.Unix(1000, 0)
	c, err := New(Client, Settings{Enabled: true, TrustStoreType: "PEM", TrustStore: ca, CertFilesRefresh: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return now }
	c.lastCheck = now
	first := c.current()
	writeCAto(t, ca)
	now = now.Add(30 * time.Second)
	if c.current() != first {
		t.Fatal("reloaded before the refresh period")
	}
	now = now.Add(31 * time.Second)
	second := c.current()
	if second == first {
		t.Fatal("not reloaded after the refresh period")
	}
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if c.current() != second {
		t.Fatal("a broken file replaced the configuration")
	}
}
