package zkclient

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"keeper/coordination/jaas"
	"keeper/coordination/krblogin"
	"keeper/coordination/zoocfg"
)

// The client's Kerberos keys, from the -D flags, as ZooKeeper 3.8's Java
// client reads them (docs/sasl.md, "keeper's own clients").
const (
	// serverPrincipalKey names the server's principal outright.
	serverPrincipalKey = "zookeeper.server.principal"
	// saslUsernameKey is the service part of the server's principal
	// (default zookeeper), whose host part is the server's host.
	saslUsernameKey = "zookeeper.sasl.client.username"
	// canonicalizeKey: true (the default) takes the host part from a
	// reverse lookup of the server's address.
	canonicalizeKey = "zookeeper.sasl.client.canonicalize.hostname"
	// serverRealmKey is the realm of a server principal that names none;
	// by default the client's own.
	serverRealmKey = "zookeeper.server.realm"
)

// reverseLookupTimeout bounds the reverse lookup of a server's address.
const reverseLookupTimeout = 5 * time.Second

// kerberosClient returns the Options.SASL of a login section with a
// Krb5LoginModule, or nil when the section has none. It logs in now: from
// the credential cache when useTicketCache is set, else (or when the
// cache has no valid ticket and a keytab is named too, as Java's module
// falls back) with the keytab. Each connection then asks the KDC (or the
// login's tickets) for a ticket to the server's principal and runs SASL
// GSSAPI with it.
func kerberosClient(cs zoocfg.ClientSecurity, conf *jaas.Config, now time.Time) (func(string, net.Addr) (SASLClient, error), error) {
	krb, err := conf.ClientKerberos(cs.SASLSection)
	if err != nil || krb == nil {
		if err != nil {
			err = fmt.Errorf("%s: %s: %w", loginConfigKey, cs.LoginConfig, err)
		}
		return nil, err
	}
	props := cs.JVMProperties
	krb5, err := krblogin.Krb5Config(props)
	if err != nil {
		return nil, err
	}
	var login *krblogin.Login
	if krb.UseTicketCache {
		file := krb.TicketCache
		if file == "" {
			if file, err = krblogin.DefaultCCache(os.Getenv); err != nil {
				return nil, fmt.Errorf("%s: %s, line %d: %w", loginConfigKey, cs.LoginConfig, krb.Line, err)
			}
		}
		login, err = krblogin.FromCCache(file, krb.Principal, krb5, now)
	}
	if login == nil && krb.KeyTab != "" {
		cacheErr := err
		if login, err = krblogin.WithKeytab(krb.KeyTab, krb.Principal, krb5); err != nil && cacheErr != nil {
			err = fmt.Errorf("%w; and from the ticket cache: %w", err, cacheErr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s, line %d: %w", loginConfigKey, cs.LoginConfig, krb.Line, err)
	}
	realm := props[serverRealmKey]
	return func(addr string, remote net.Addr) (SASLClient, error) {
		return login.GSSAPI(serverPrincipal(props, addr, remote, net.DefaultResolver.LookupAddr), realm)
	}, nil
}

// serverPrincipal is the principal the client asks a ticket for to reach
// the server it dialled at addr, whose connection comes from remote, as
// ZooKeeper 3.8's client names it: zookeeper.server.principal when set,
// else <zookeeper.sasl.client.username>/<host>, where host is the name a
// reverse lookup of the server's address gives (unless
// zookeeper.sasl.client.canonicalize.hostname is false, or the lookup
// gives nothing but the address itself), else the host as dialled.
func serverPrincipal(props map[string]string, addr string, remote net.Addr,
	lookup func(context.Context, string) ([]string, error)) string {
	if p := props[serverPrincipalKey]; p != "" {
		return p
	}
	user := props[saslUsernameKey]
	if user == "" {
		user = "zookeeper"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	canonicalize := true
	if v, set := props[canonicalizeKey]; set {
		// Java's Boolean.parseBoolean: anything but "true" is false.
		canonicalize = strings.EqualFold(strings.TrimSpace(v), "true")
	}
	if tcp, ok := remote.(*net.TCPAddr); ok && canonicalize {
		ip := tcp.IP.String()
		ctx, cancel := context.WithTimeout(context.Background(), reverseLookupTimeout)
		names, err := lookup(ctx, ip)
		cancel()
		if err == nil && len(names) > 0 {
			if name := strings.TrimSuffix(names[0], "."); name != "" && name != ip {
				host = name
			}
		}
	}
	return user + "/" + host
}
