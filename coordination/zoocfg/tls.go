package zoocfg

import (
	"errors"
	"strings"
)

// ClientTLS is what zoo.cfg says about TLS for clients and the x509
// identities it gives them (docs/tls.md). The values are kept as written;
// clienttls checks the stores, protocols and cipher suites at start.
type ClientTLS struct {
	// SecurePort is the TLS-only client port (secureClientPort); 0 means
	// none.
	SecurePort int
	// SecurePortAddress is the address it binds to
	// (secureClientPortAddress); empty means all addresses.
	SecurePortAddress string
	// PortUnification makes the plaintext client port accept TLS clients
	// too (client.portUnification).
	PortUnification bool
	// CertReload reloads the stores when their files change
	// (client.certReload).
	CertReload bool
	// KeyStore and TrustStore are ssl.keyStore.* and ssl.trustStore.*.
	KeyStore, TrustStore TLSStore
	// ClientAuth is ssl.clientAuth as written: none, want or need in any
	// case; empty means need.
	ClientAuth string
	// Protocol is ssl.protocol; empty means TLSv1.2.
	Protocol string
	// EnabledProtocols is ssl.enabledProtocols split on ','; nil means
	// unset (Protocol alone).
	EnabledProtocols []string
	// CipherSuites is ssl.ciphersuites split on ','; nil means ZooKeeper's
	// default list.
	CipherSuites []string
	// HostnameVerification is ssl.hostnameVerification (true by default).
	// On the server it checks nothing about clients: ZooKeeper 3.8 never
	// verifies a client certificate's host name on the client port.
	HostnameVerification bool
	// X509Provider: authProvider.N names ZooKeeper's
	// X509AuthenticationProvider. A TLS client port turns the provider on
	// anyway; use X509Enabled.
	X509Provider bool
	// X509SuperUser is X509AuthenticationProvider.superUser: the subject
	// DN whose holder is super.
	X509SuperUser string
}

// TLSStore is a key or trust store: ssl.keyStore.{location,password,
// passwordPath,type} or the ssl.trustStore.* ones.
type TLSStore struct {
	Location, Password, PasswordPath, Type string
}

// Enabled reports whether clients may connect over TLS: a secure client
// port, or port unification on the client port.
func (t *ClientTLS) Enabled() bool { return t.SecurePort != 0 || t.PortUnification }

// X509Enabled reports whether the x509 authentication provider is on: as
// in ZooKeeper, with TLS for clients or when authProvider.N names it.
func (t *ClientTLS) X509Enabled() bool { return t.Enabled() || t.X509Provider }

// SecureClientAddress returns the host:port of the TLS-only client port,
// "" without one.
func (c *Config) SecureClientAddress() string {
	if c.TLS.SecurePort == 0 {
		return ""
	}
	host := c.TLS.SecurePortAddress
	if host == "" {
		host = "0.0.0.0"
	}
	return joinHostPort(host, c.TLS.SecurePort)
}

// x509ProviderClass is the class authProvider.N names to turn the x509
// provider on.
const x509ProviderClass = "org.apache.zookeeper.server.auth.X509AuthenticationProvider"

// isX509Provider reports whether key=value is an authProvider.N line (in
// either spelling) naming the x509 provider.
func isX509Provider(key, value string) bool {
	name := strings.TrimPrefix(key, "zookeeper.")
	return (name == "authProvider" || strings.HasPrefix(name, "authProvider.")) && value == x509ProviderClass
}

// tlsSettings are the TLS keys keeper implements, by their zoo.cfg
// spelling; all but the two secureClientPort keys (which QuorumPeerConfig
// reads itself) are system properties, accepted with the "zookeeper."
// prefix too (tlsSetting).
var tlsSettings = map[string]setter{
	"secureClientPort":        portField(func(c *Config) *int { return &c.TLS.SecurePort }),
	"secureClientPortAddress": stringField(func(c *Config) *string { return &c.TLS.SecurePortAddress }),
	"client.portUnification":  boolField(func(c *Config) *bool { return &c.TLS.PortUnification }),
	"client.certReload":       boolField(func(c *Config) *bool { return &c.TLS.CertReload }),

	"ssl.keyStore.location":       rawField(func(c *Config) *string { return &c.TLS.KeyStore.Location }),
	"ssl.keyStore.password":       rawField(func(c *Config) *string { return &c.TLS.KeyStore.Password }),
	"ssl.keyStore.passwordPath":   rawField(func(c *Config) *string { return &c.TLS.KeyStore.PasswordPath }),
	"ssl.keyStore.type":           rawField(func(c *Config) *string { return &c.TLS.KeyStore.Type }),
	"ssl.trustStore.location":     rawField(func(c *Config) *string { return &c.TLS.TrustStore.Location }),
	"ssl.trustStore.password":     rawField(func(c *Config) *string { return &c.TLS.TrustStore.Password }),
	"ssl.trustStore.passwordPath": rawField(func(c *Config) *string { return &c.TLS.TrustStore.PasswordPath }),
	"ssl.trustStore.type":         rawField(func(c *Config) *string { return &c.TLS.TrustStore.Type }),
	"ssl.clientAuth":              setClientAuth,
	"ssl.protocol":                rawField(func(c *Config) *string { return &c.TLS.Protocol }),
	"ssl.enabledProtocols":        listField(func(c *Config) *[]string { return &c.TLS.EnabledProtocols }),
	"ssl.ciphersuites":            listField(func(c *Config) *[]string { return &c.TLS.CipherSuites }),
	"ssl.hostnameVerification":    boolField(func(c *Config) *bool { return &c.TLS.HostnameVerification }),
	// Host name checks of client certificates, which ZooKeeper does not
	// make on the client port either: any boolean is accepted.
	"ssl.allowReverseDnsLookup": boolField(func(*Config) *bool { return new(bool) }),
	// The first-byte detection timeout of ZooKeeper's quorum sockets;
	// keeper's client port is bounded by the handshake timeout.
	"ssl.handshakeDetectionTimeoutMillis": func(p *parser, v string) error {
		if _, err := parseInt(v); err != nil {
			return err
		}
		p.warn("applies to ZooKeeper's quorum sockets only; ignored")
		return nil
	},

	"X509AuthenticationProvider.superUser": rawField(func(c *Config) *string { return &c.TLS.X509SuperUser }),
}

// tlsSetting returns the setter of a TLS key, for clients or between
// servers, in either spelling.
func tlsSetting(key string) (setter, bool) {
	if set, ok := tlsSettings[key]; ok {
		return set, true
	}
	if set, ok := quorumTLSSettings[strings.TrimPrefix(key, "zookeeper.")]; ok {
		return set, true
	}
	name, ok := strings.CutPrefix(key, "zookeeper.")
	if !ok || name == "secureClientPort" || name == "secureClientPortAddress" {
		return nil, false
	}
	set, ok := tlsSettings[name]
	return set, ok
}

// rawField keeps a value as written; empty means unset, as ZooKeeper reads
// an empty property.
func rawField(field func(*Config) *string) setter {
	return func(p *parser, v string) error {
		*field(p.c) = v
		return nil
	}
}

// listField splits a comma-separated list, trimming each name; an empty
// value is unset.
func listField(field func(*Config) *[]string) setter {
	return func(p *parser, v string) error {
		if v == "" {
			*field(p.c) = nil
			return nil
		}
		var out []string
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				out = append(out, n)
			}
		}
		if len(out) == 0 {
			return errors.New("empty list")
		}
		*field(p.c) = out
		return nil
	}
}

// setClientAuth checks ssl.clientAuth: none, want or need in any case.
func setClientAuth(p *parser, v string) error {
	switch strings.ToLower(v) {
	case "", "none", "want", "need":
		p.c.TLS.ClientAuth = v
		return nil
	}
	return errors.New("want none, want or need")
}

// validate checks the TLS settings that span keys.
func (t *ClientTLS) validate() []error {
	var errs []error
	if t.SecurePortAddress != "" && t.SecurePort == 0 {
		errs = append(errs, errors.New("zoocfg: secureClientPortAddress is set but secureClientPort is not set"))
	}
	if t.Enabled() && t.KeyStore.Location == "" {
		errs = append(errs, errors.New("zoocfg: ssl.keyStore.location is not set; TLS for clients (secureClientPort or client.portUnification) needs the server's key and certificate"))
	}
	return errs
}
