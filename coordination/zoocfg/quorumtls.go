package zoocfg

import (
	"errors"
	"strings"
	"time"
)

// DefaultHandshakeDetectionTimeout is how long a member with TLS on its
// quorum ports waits for an accepted connection's first byte, which tells
// TLS from plaintext (ZooKeeper's
// ssl.quorum.handshakeDetectionTimeoutMillis default).
const DefaultHandshakeDetectionTimeout = 5 * time.Second

// QuorumTLS is what zoo.cfg says about TLS between ensemble members, on
// the quorum and election ports (docs/tls.md). The store, protocol and
// cipher suite values are kept as written; clienttls checks them at start.
type QuorumTLS struct {
	// Enabled is sslQuorum: this member dials the others in TLS, and
	// (without PortUnification) accepts only TLS.
	Enabled bool
	// PortUnification is portUnification: the quorum and election ports
	// accept TLS and plaintext, for a rolling change to or from TLS.
	PortUnification bool
	// ReloadCertFiles is sslQuorumReloadCertFiles: a handshake that begins
	// after a store file changed uses the new files.
	ReloadCertFiles bool
	// KeyStore and TrustStore are ssl.quorum.keyStore.* and
	// ssl.quorum.trustStore.*.
	KeyStore, TrustStore TLSStore
	// ClientAuth is ssl.quorum.clientAuth as written: none, want or need
	// in any case; empty means need.
	ClientAuth string
	// Protocol is ssl.quorum.protocol; empty means TLSv1.2.
	Protocol string
	// EnabledProtocols and CipherSuites are ssl.quorum.enabledProtocols
	// and ssl.quorum.ciphersuites split on ','; nil means unset.
	EnabledProtocols, CipherSuites []string
	// HostnameVerification is ssl.quorum.hostnameVerification (true by
	// default): both ends of a quorum connection check that the other's
	// certificate names its address.
	HostnameVerification bool
	// ReverseDNSLookup is ssl.quorum.allowReverseDnsLookup (true by
	// default, as for ZooKeeper's quorum): a certificate may name the
	// host the peer's address resolves back to instead of the address.
	ReverseDNSLookup bool
	// HandshakeDetectionTimeout is ssl.quorum.handshakeDetectionTimeoutMillis.
	HandshakeDetectionTimeout time.Duration
}

// Active reports whether the quorum ports speak TLS at all: sslQuorum, or
// portUnification (which accepts TLS peers).
func (q *QuorumTLS) Active() bool { return q.Enabled || q.PortUnification }

// quorumTLSSettings are the quorum TLS keys keeper implements, by their
// zoo.cfg spelling. tlsSetting also accepts them with the "zookeeper."
// prefix.
var quorumTLSSettings = map[string]setter{
	"sslQuorum":                quorumBool(func(q *QuorumTLS) *bool { return &q.Enabled }),
	"portUnification":          quorumBool(func(q *QuorumTLS) *bool { return &q.PortUnification }),
	"sslQuorumReloadCertFiles": quorumBool(func(q *QuorumTLS) *bool { return &q.ReloadCertFiles }),

	"ssl.quorum.keyStore.location":       rawField(func(c *Config) *string { return &c.QuorumTLS.KeyStore.Location }),
	"ssl.quorum.keyStore.password":       rawField(func(c *Config) *string { return &c.QuorumTLS.KeyStore.Password }),
	"ssl.quorum.keyStore.passwordPath":   rawField(func(c *Config) *string { return &c.QuorumTLS.KeyStore.PasswordPath }),
	"ssl.quorum.keyStore.type":           rawField(func(c *Config) *string { return &c.QuorumTLS.KeyStore.Type }),
	"ssl.quorum.trustStore.location":     rawField(func(c *Config) *string { return &c.QuorumTLS.TrustStore.Location }),
	"ssl.quorum.trustStore.password":     rawField(func(c *Config) *string { return &c.QuorumTLS.TrustStore.Password }),
	"ssl.quorum.trustStore.passwordPath": rawField(func(c *Config) *string { return &c.QuorumTLS.TrustStore.PasswordPath }),
	"ssl.quorum.trustStore.type":         rawField(func(c *Config) *string { return &c.QuorumTLS.TrustStore.Type }),
	"ssl.quorum.clientAuth": func(p *parser, v string) error {
		switch strings.ToLower(v) {
		case "", "none", "want", "need":
			p.c.QuorumTLS.ClientAuth = v
			return nil
		}
		return errors.New("want none, want or need")
	},
	"ssl.quorum.protocol":              rawField(func(c *Config) *string { return &c.QuorumTLS.Protocol }),
	"ssl.quorum.enabledProtocols":      listField(func(c *Config) *[]string { return &c.QuorumTLS.EnabledProtocols }),
	"ssl.quorum.ciphersuites":          listField(func(c *Config) *[]string { return &c.QuorumTLS.CipherSuites }),
	"ssl.quorum.hostnameVerification":  quorumBool(func(q *QuorumTLS) *bool { return &q.HostnameVerification }),
	"ssl.quorum.allowReverseDnsLookup": quorumBool(func(q *QuorumTLS) *bool { return &q.ReverseDNSLookup }),
	"ssl.quorum.handshakeDetectionTimeoutMillis": func(p *parser, v string) error {
		n, err := parseInt(v)
		if err != nil {
			return err
		}
		if n <= 0 {
			return errors.New("must be positive")
		}
		p.c.QuorumTLS.HandshakeDetectionTimeout = time.Duration(n) * time.Millisecond
		return nil
	},
}

func quorumBool(field func(*QuorumTLS) *bool) setter {
	return boolField(func(c *Config) *bool { return field(&c.QuorumTLS) })
}

// validate checks the quorum TLS settings that span keys.
func (q *QuorumTLS) validate() []error {
	if q.Active() && q.KeyStore.Location == "" {
		return []error{errors.New("zoocfg: ssl.quorum.keyStore.location is not set; TLS between servers (sslQuorum or portUnification) needs this server's key and certificate")}
	}
	return nil
}

// AdminHTTPS reports whether the admin server speaks HTTPS
// (admin.forceHttps or admin.portUnification).
func (c *Config) AdminHTTPS() bool { return c.AdminForceHTTPS || c.AdminPortUnification }

// validateAdminTLS checks the admin server's TLS settings: HTTPS needs the
// ssl.quorum key store (ZooKeeper's admin server reads its stores from the
// ssl.quorum.* keys), and admin.needClientAuth without HTTPS would ask for
// a protection plaintext HTTP cannot give, so it is refused rather than
// ignored as ZooKeeper ignores it.
func (c *Config) validateAdminTLS() []error {
	if !c.AdminEnableServer {
		return nil
	}
	if c.AdminHTTPS() && c.QuorumTLS.KeyStore.Location == "" {
		return []error{errors.New("zoocfg: ssl.quorum.keyStore.location is not set; HTTPS on the admin server (admin.forceHttps or admin.portUnification) takes its key and certificate from it")}
	}
	if c.AdminNeedClientAuth && !c.AdminHTTPS() {
		return []error{errors.New("zoocfg: admin.needClientAuth is true but the admin server speaks plaintext HTTP only; set admin.forceHttps or admin.portUnification")}
	}
	return nil
}
