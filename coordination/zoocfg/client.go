package zoocfg

import (
	"errors"
	"fmt"
	"strings"
)

// This file reads what a ZooKeeper client's configuration asks of its
// connections, as Java's ZKClientConfig reads it: the -D system
// properties of the environment variable the tool's Java counterpart
// reads (CLIENT_JVMFLAGS and JVMFLAGS for zkCli.sh, BOOKIE_EXTRA_OPTS for
// a bookie), then a client configuration file (zkCli's
// -client-configuration, a properties file with the same keys), which
// wins. docs/tls.md and docs/sasl.md list the keys.

// ClientProperty is one client setting and where it came from.
type ClientProperty struct {
	Source      string // the environment variable or the file
	Name, Value string
}

// ClientEnvProperties returns the -D flags of the variables vars, in
// order (a later one wins when ParseClientSecurity reads them).
func ClientEnvProperties(getenv func(string) string, vars ...string) []ClientProperty {
	var out []ClientProperty
	for _, env := range vars {
		for _, p := range jvmProperties(getenv(env)) {
			out = append(out, ClientProperty{Source: env, Name: p.name, Value: p.value})
		}
	}
	return out
}

// ParseClientProperties parses a client configuration file's content
// (Java's properties format); source names it in errors.
func ParseClientProperties(source string, data []byte) ([]ClientProperty, error) {
	props, err := parseProperties(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	out := make([]ClientProperty, 0, len(props))
	for _, p := range props {
		out = append(out, ClientProperty{Source: fmt.Sprintf("%s:%d", source, p.line), Name: p.key, Value: p.value})
	}
	return out, nil
}

// ClientSecurity is what a client's properties ask of its connections to
// ZooKeeper: TLS (Secure and the stores) and SASL (a JAAS file's login
// section). The zero value is not the default: start from
// DefaultClientSecurity.
type ClientSecurity struct {
	// Secure is zookeeper.client.secure: connect with TLS.
	Secure bool
	// KeyStore and TrustStore are zookeeper.ssl.keyStore.* and
	// zookeeper.ssl.trustStore.* (location, password, passwordPath,
	// type). Without a trust store location the system's roots are
	// trusted, as Java's default trust store.
	KeyStore, TrustStore TLSStore
	// HostnameVerification is zookeeper.ssl.hostnameVerification (true
	// by default): the server's certificate must name the host dialled.
	HostnameVerification bool
	// Protocol, EnabledProtocols and CipherSuites are zookeeper.ssl.protocol,
	// zookeeper.ssl.enabledProtocols and zookeeper.ssl.ciphersuites.
	Protocol                       string
	EnabledProtocols, CipherSuites []string
	// SASL is zookeeper.sasl.client (true by default): authenticate with
	// SASL when a JAAS file is named.
	SASL bool
	// SASLSection is zookeeper.sasl.clientconfig, the JAAS file's login
	// section ("Client" by default).
	SASLSection string
	// LoginConfig is the JAAS file (java.security.auth.login.config);
	// "" for none.
	LoginConfig string
	// JVMProperties are every property read, the last one winning: what a
	// JAAS file's ${name} may refer to.
	JVMProperties map[string]string
}

// DefaultClientSecurity is a Java client's configuration with no
// properties set.
func DefaultClientSecurity() ClientSecurity {
	return ClientSecurity{HostnameVerification: true, SASL: true, SASLSection: "Client", JVMProperties: map[string]string{}}
}

// SASLEnabled reports whether the client authenticates with SASL: a JAAS
// file is named and zookeeper.sasl.client is not false.
func (c *ClientSecurity) SASLEnabled() bool { return c.SASL && c.LoginConfig != "" }

// The Java client's socket classes: Netty (which TLS needs in Java) and
// NIO (the default, plaintext only).
const (
	nettySocket = "org.apache.zookeeper.ClientCnxnSocketNetty"
	nioSocket   = "org.apache.zookeeper.ClientCnxnSocketNIO"
)

// clientSetters are the client keys keeper implements, by name.
var clientSetters = map[string]func(c *ClientSecurity, v string) error{
	"zookeeper.client.secure": clientBool(func(c *ClientSecurity) *bool { return &c.Secure }),
	"zookeeper.clientCnxnSocket": func(c *ClientSecurity, v string) error {
		if v != nettySocket && v != nioSocket && v != "" {
			return fmt.Errorf("keeper's clients implement %s and %s, not %s", nettySocket, nioSocket, v)
		}
		return nil
	},
	"zookeeper.ssl.keyStore.location":     clientString(func(c *ClientSecurity) *string { return &c.KeyStore.Location }),
	"zookeeper.ssl.keyStore.password":     clientString(func(c *ClientSecurity) *string { return &c.KeyStore.Password }),
	"zookeeper.ssl.keyStore.passwordPath": clientString(func(c *ClientSecurity) *string { return &c.KeyStore.PasswordPath }),
	"zookeeper.ssl.keyStore.type":         clientString(func(c *ClientSecurity) *string { return &c.KeyStore.Type }),
	"zookeeper.ssl.trustStore.location":   clientString(func(c *ClientSecurity) *string { return &c.TrustStore.Location }),
	"zookeeper.ssl.trustStore.password":   clientString(func(c *ClientSecurity) *string { return &c.TrustStore.Password }),
	"zookeeper.ssl.trustStore.passwordPath": clientString(func(c *ClientSecurity) *string {
		return &c.TrustStore.PasswordPath
	}),
	"zookeeper.ssl.trustStore.type":      clientString(func(c *ClientSecurity) *string { return &c.TrustStore.Type }),
	"zookeeper.ssl.hostnameVerification": clientBool(func(c *ClientSecurity) *bool { return &c.HostnameVerification }),
	"zookeeper.ssl.protocol":             clientString(func(c *ClientSecurity) *string { return &c.Protocol }),
	"zookeeper.ssl.enabledProtocols":     clientList(func(c *ClientSecurity) *[]string { return &c.EnabledProtocols }),
	"zookeeper.ssl.ciphersuites":         clientList(func(c *ClientSecurity) *[]string { return &c.CipherSuites }),
	"zookeeper.sasl.client":              clientBool(func(c *ClientSecurity) *bool { return &c.SASL }),
	"zookeeper.sasl.clientconfig":        clientString(func(c *ClientSecurity) *string { return &c.SASLSection }),
	loginConfigKey:                       func(c *ClientSecurity, v string) error { c.LoginConfig = loginConfigPath(v); return nil },
}

// ParseClientSecurity reads props in order, a later value of a key
// winning. A key keeper implements sets its field; any other key that
// asks for a protection keeper lacks (revocation checks, an SSLContext
// supplier, a zookeeper.ssl.* key it does not know, Kerberos settings) is
// an *UnsupportedError naming it; the rest (heap, logging, performance)
// is ignored. zookeeper.client.secure with the NIO socket named is
// refused: Java would speak plaintext there.
func ParseClientSecurity(props []ClientProperty) (ClientSecurity, error) {
	c := DefaultClientSecurity()
	var socket string
	for _, p := range props {
		c.JVMProperties[p.Name] = p.Value
		if set, ok := clientSetters[p.Name]; ok {
			if err := set(&c, p.Value); err != nil {
				return c, fmt.Errorf("%s: %s: invalid value %q: %w", p.Source, p.Name, p.Value, err)
			}
			if p.Name == "zookeeper.clientCnxnSocket" {
				socket = p.Value
			}
			continue
		}
		if prot, ok := protectionOf(p.Name); ok {
			if err := prot.check(p.Source, 0, p.Name, p.Value); err != nil {
				return c, envError(p.Source, jvmProperty{name: p.Name, value: p.Value}, err)
			}
		}
	}
	if c.Secure && socket == nioSocket {
		return c, errors.New("zookeeper.client.secure=true with zookeeper.clientCnxnSocket=" + nioSocket +
			": the NIO socket speaks no TLS; name " + nettySocket + " or leave it unset")
	}
	if c.SASLSection == "" {
		return c, errors.New("zookeeper.sasl.clientconfig: empty JAAS section name")
	}
	return c, nil
}

func clientString(field func(*ClientSecurity) *string) func(*ClientSecurity, string) error {
	return func(c *ClientSecurity, v string) error { *field(c) = v; return nil }
}

// clientBool parses true or false in any case; any other word is refused
// rather than read as false, as Java's Boolean.parseBoolean would.
func clientBool(field func(*ClientSecurity) *bool) func(*ClientSecurity, string) error {
	return func(c *ClientSecurity, v string) error {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			*field(c) = true
		case "false":
			*field(c) = false
		default:
			return errors.New("want true or false")
		}
		return nil
	}
}

// clientList splits a comma-separated list, trimming each element.
func clientList(field func(*ClientSecurity) *[]string) func(*ClientSecurity, string) error {
	return func(c *ClientSecurity, v string) error {
		var out []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		*field(c) = out
		return nil
	}
}
