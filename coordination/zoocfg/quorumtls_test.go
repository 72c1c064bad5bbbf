package zoocfg

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestQuorumTLSKeys(t *testing.T) {
	tests := []struct {
		name, in string
		want     QuorumTLS
	}{
		{"off", "", QuorumTLS{HostnameVerification: true, ReverseDNSLookup: true, HandshakeDetectionTimeout: 5 * time.Second}},
		{"tls only, zoo.cfg spelling", `sslQuorum=true
sslQuorumReloadCertFiles=TRUE
ssl.quorum.keyStore.location=/etc/zk/q.p12
ssl.quorum.keyStore.password=hunter2
ssl.quorum.keyStore.type=PKCS12
ssl.quorum.trustStore.location=/etc/zk/trust.jks
ssl.quorum.trustStore.passwordPath=/etc/zk/trust.pass
ssl.quorum.trustStore.type=jks
ssl.quorum.clientAuth=want
ssl.quorum.protocol=TLSv1.3
ssl.quorum.enabledProtocols=TLSv1.2, TLSv1.3
ssl.quorum.ciphersuites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
ssl.quorum.hostnameVerification=false
ssl.quorum.allowReverseDnsLookup=false
ssl.quorum.handshakeDetectionTimeoutMillis=250
`, QuorumTLS{Enabled: true, ReloadCertFiles: true,
			KeyStore:   TLSStore{Location: "/etc/zk/q.p12", Password: "hunter2", Type: "PKCS12"},
			TrustStore: TLSStore{Location: "/etc/zk/trust.jks", PasswordPath: "/etc/zk/trust.pass", Type: "jks"},
			ClientAuth: "want", Protocol: "TLSv1.3", EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"},
			CipherSuites:              []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
			HandshakeDetectionTimeout: 250 * time.Millisecond}},
		{"unified, system property spelling", `zookeeper.portUnification=true
zookeeper.ssl.quorum.keyStore.location=/etc/zk/q.pem
`, QuorumTLS{PortUnification: true, KeyStore: TLSStore{Location: "/etc/zk/q.pem"},
			HostnameVerification: true, ReverseDNSLookup: true, HandshakeDetectionTimeout: 5 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, w := mustParse(t, base+tt.in)
			if len(w) != 0 {
				t.Errorf("warnings: %v", w)
			}
			if !reflect.DeepEqual(c.QuorumTLS, tt.want) {
				t.Errorf("got  %+v\nwant %+v", c.QuorumTLS, tt.want)
			}
			if c.TLS.Enabled() {
				t.Errorf("quorum keys turned on TLS for clients")
			}
		})
	}
}

func TestQuorumTLSErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"sslQuorum=true", "ssl.quorum.keyStore.location is not set"},
		{"portUnification=true", "ssl.quorum.keyStore.location is not set"},
		{"sslQuorum=yes", `sslQuorum: invalid value "yes": want true or false`},
		{"ssl.quorum.clientAuth=sometimes", "want none, want or need"},
		{"ssl.quorum.handshakeDetectionTimeoutMillis=0", "must be positive"},
		{"ssl.quorum.crl=true", "keeper does not support certificate revocation checking (CRL) yet"},
		{"ssl.quorum.sslProvider=OPENSSL", "keeper does not support this TLS setting between servers yet"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, _, err := Parse(strings.NewReader(base + tt.in + "\n"))
			if err == nil {
				err = c.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
