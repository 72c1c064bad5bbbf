package zoocfg

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseTLSKeys checks that each TLS key lands in its field, under both
// spellings where ZooKeeper reads it as a system property.
func TestParseTLSKeys(t *testing.T) {
	tests := []struct {
		key, value    string
		bothSpellings bool
		want          func(*ClientTLS)
	}{
		{"secureClientPort", "2281", false, func(c *ClientTLS) { c.SecurePort = 2281 }},
		{"secureClientPortAddress", "127.0.0.1", false, func(c *ClientTLS) { c.SecurePortAddress = "127.0.0.1" }},
		{"client.portUnification", "TRUE", true, func(c *ClientTLS) { c.PortUnification = true }},
		{"client.certReload", "true", true, func(c *ClientTLS) { c.CertReload = true }},
		{"ssl.keyStore.location", "/etc/zk/ks.p12", true, func(c *ClientTLS) { c.KeyStore.Location = "/etc/zk/ks.p12" }},
		{"ssl.keyStore.password", "hunter2", true, func(c *ClientTLS) { c.KeyStore.Password = "hunter2" }},
		{"ssl.keyStore.passwordPath", "/etc/zk/ks.pass", true, func(c *ClientTLS) { c.KeyStore.PasswordPath = "/etc/zk/ks.pass" }},
		{"ssl.keyStore.type", "jks", true, func(c *ClientTLS) { c.KeyStore.Type = "jks" }},
		{"ssl.trustStore.location", "/etc/zk/ts.pem", true, func(c *ClientTLS) { c.TrustStore.Location = "/etc/zk/ts.pem" }},
		{"ssl.trustStore.password", "hunter2", true, func(c *ClientTLS) { c.TrustStore.Password = "hunter2" }},
		{"ssl.trustStore.passwordPath", "/etc/zk/ts.pass", true, func(c *ClientTLS) { c.TrustStore.PasswordPath = "/etc/zk/ts.pass" }},
		{"ssl.trustStore.type", "PEM", true, func(c *ClientTLS) { c.TrustStore.Type = "PEM" }},
		{"ssl.clientAuth", "Want", true, func(c *ClientTLS) { c.ClientAuth = "Want" }},
		{"ssl.protocol", "TLSv1.3", true, func(c *ClientTLS) { c.Protocol = "TLSv1.3" }},
		{"ssl.enabledProtocols", "TLSv1.2, TLSv1.3", true, func(c *ClientTLS) { c.EnabledProtocols = []string{"TLSv1.2", "TLSv1.3"} }},
		{"ssl.ciphersuites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", true,
			func(c *ClientTLS) { c.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"} }},
		{"ssl.hostnameVerification", "false", true, func(c *ClientTLS) { c.HostnameVerification = false }},
		{"ssl.allowReverseDnsLookup", "true", true, func(*ClientTLS) {}},
		{"X509AuthenticationProvider.superUser", "CN=admin,O=Example", true, func(c *ClientTLS) { c.X509SuperUser = "CN=admin,O=Example" }},
		{"authProvider.x509", x509ProviderClass, true, func(c *ClientTLS) { c.X509Provider = true }},
		{"authProvider.1", x509ProviderClass, true, func(c *ClientTLS) { c.X509Provider = true }},
	}
	for _, tt := range tests {
		keys := []string{tt.key}
		if tt.bothSpellings {
			keys = spellings(tt.key)
		}
		for _, key := range keys {
			t.Run(key, func(t *testing.T) {
				c, w := mustParse(t, base+key+"="+tt.value)
				if len(w) != 0 {
					t.Errorf("warnings: %v", w)
				}
				want := parsedBase().TLS
				tt.want(&want)
				if !reflect.DeepEqual(c.TLS, want) {
					t.Errorf("TLS\n got %+v\nwant %+v", c.TLS, want)
				}
			})
		}
	}
}

func TestParseTLSKeysInvalid(t *testing.T) {
	tests := []struct{ in, want string }{
		{"secureClientPort=", `secureClientPort: invalid value "": not an integer`},
		{"secureClientPort=70000", `secureClientPort: invalid value "70000": port out of range 0-65535`},
		{"ssl.clientAuth=sometimes", `ssl.clientAuth: invalid value "sometimes": want none, want or need`},
		{"zookeeper.client.portUnification=yes", `want true or false`},
		{"ssl.enabledProtocols=,", `ssl.enabledProtocols: invalid value ",": empty list`},
		{"ssl.handshakeDetectionTimeoutMillis=soon", `not an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, _, err := Parse(strings.NewReader(base + tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tt.in, err, tt.want)
			}
		})
	}
}

// TestValidateTLS checks the rules that span TLS keys, and the address of
// the TLS-only port.
func TestValidateTLS(t *testing.T) {
	tests := []struct {
		name       string
		lines      string
		wantErr    string // "" for valid
		wantSecure string
	}{
		{"tls only", "secureClientPort=2281\nssl.keyStore.location=/k.p12", "", "0.0.0.0:2281"},
		{"both ports", "clientPort=2181\nsecureClientPort=2281\nsecureClientPortAddress=127.0.0.1\nssl.keyStore.location=/k.p12", "", "127.0.0.1:2281"},
		{"unification", "clientPort=2181\nclient.portUnification=true\nssl.keyStore.location=/k.p12", "", ""},
		{"no key store", "secureClientPort=2281", "ssl.keyStore.location is not set", "0.0.0.0:2281"},
		{"unification without a key store", "clientPort=2181\nclient.portUnification=true", "ssl.keyStore.location is not set", ""},
		{"address without port", "clientPort=2181\nsecureClientPortAddress=127.0.0.1", "secureClientPortAddress is set but secureClientPort is not set", ""},
		{"unification without a client port", "secureClientPort=2281\nclient.portUnification=true\nssl.keyStore.location=/k.p12",
			"client.portUnification is true but there is no client port", "0.0.0.0:2281"},
		{"no port at all", "ssl.keyStore.location=/k.p12", "no client port", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := mustParse(t, base+tt.lines)
			err := c.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
			if got := c.SecureClientAddress(); got != tt.wantSecure {
				t.Errorf("SecureClientAddress = %q, want %q", got, tt.wantSecure)
			}
		})
	}
}

func TestX509Enabled(t *testing.T) {
	tests := []struct {
		tls  ClientTLS
		want bool
	}{
		{ClientTLS{}, false},
		{ClientTLS{SecurePort: 2281}, true},
		{ClientTLS{PortUnification: true}, true},
		{ClientTLS{X509Provider: true}, true},
	}
	for _, tt := range tests {
		if got := tt.tls.X509Enabled(); got != tt.want {
			t.Errorf("%+v.X509Enabled() = %v, want %v", tt.tls, got, tt.want)
		}
	}
}
