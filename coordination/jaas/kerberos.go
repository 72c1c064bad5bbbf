package jaas

import (
	"fmt"
	"strings"
)

// Krb5LoginModule is Java's Kerberos login module. A ZooKeeper server
// whose Server section logs in with it authenticates clients with SASL
// GSSAPI, as the principal the module names, with the keys of its keytab.
const Krb5LoginModule = "com.sun.security.auth.module.Krb5LoginModule"

// KerberosLogin is a server's Kerberos login: its keytab file and its
// service principal (service/host@REALM).
type KerberosLogin struct {
	KeyTab    string
	Principal string
	// Initiator is the module's isInitiator: true unless the option says
	// otherwise. An initiator logs in to the KDC with the keytab at start
	// (Java's Krb5LoginModule gets a TGT), which proves the keytab
	// current and the KDC reachable.
	Initiator bool
	Line      int // 1-based line of the module
}

// ServerKerberos returns the Kerberos login of section name, or nil when
// the section has no Krb5LoginModule (or does not exist). A section that
// logs in with Kerberos must be one Krb5LoginModule that takes the
// service's key from a keytab, as a server needs it to accept tickets:
// useKeyTab=true, storeKey=true, keyTab and principal set. Anything else
// is an error rather than a login that would fail at every client (Java
// finds no key to accept with) or fall back to a ticket cache.
func (c *Config) ServerKerberos(name string) (*KerberosLogin, error) {
	return c.kerberos(name, true)
}

// LearnerKerberos returns the Kerberos login of a quorum learner's
// section name, or nil when the section has no Krb5LoginModule. As for
// ServerKerberos the module must be the section's only one and log in
// with a keytab (useKeyTab=true, keyTab and principal set; a ticket cache
// is refused, since keeper reads none), but storeKey is not needed: a
// learner only asks the KDC for tickets. The principal may leave out the
// realm (the krb5.conf default realm is then used, as Java does).
func (c *Config) LearnerKerberos(name string) (*KerberosLogin, error) {
	return c.kerberos(name, false)
}

// krb5Module returns the Krb5LoginModule of section name, or nil when the
// section has none (or does not exist); it must be the section's only
// module. bad makes an error about it.
func (c *Config) krb5Module(name string) (krb *Module, bad func(what string) error, err error) {
	mods, ok := c.Section(name)
	if !ok {
		return nil, nil, nil
	}
	for i := range mods {
		if mods[i].Class == Krb5LoginModule {
			krb = &mods[i]
		}
	}
	if krb == nil {
		return nil, nil, nil
	}
	if len(mods) != 1 {
		return nil, nil, fmt.Errorf("jaas: section %s, line %d: %s must be the section's only login module", name, krb.Line, Krb5LoginModule)
	}
	return krb, func(what string) error {
		return fmt.Errorf("jaas: section %s, line %d: %s: %s", name, krb.Line, Krb5LoginModule, what)
	}, nil
}

func (c *Config) kerberos(name string, acceptor bool) (*KerberosLogin, error) {
	krb, bad, err := c.krb5Module(name)
	if krb == nil || err != nil {
		return nil, err
	}
	if !isTrue(krb.Options["useKeyTab"]) {
		return nil, bad("keeper needs useKeyTab=true: it logs in with the keys of a keytab")
	}
	if acceptor && !isTrue(krb.Options["storeKey"]) {
		return nil, bad("keeper needs storeKey=true: without it the server keeps no key to accept tickets with")
	}
	if isTrue(krb.Options["useTicketCache"]) {
		return nil, bad("useTicketCache=true is not supported for a server")
	}
	login := &KerberosLogin{KeyTab: krb.Options["keyTab"], Principal: krb.Options["principal"], Initiator: true, Line: krb.Line}
	if v, set := krb.Options["isInitiator"]; set {
		login.Initiator = isTrue(v)
	}
	if login.KeyTab == "" {
		return nil, bad("keyTab is not set")
	}
	if login.Principal == "" || login.Principal == "*" {
		if acceptor {
			return nil, bad("principal must name the service principal, service/host@REALM")
		}
		return nil, bad("principal must name the server's own principal")
	}
	if !acceptor && !login.Initiator {
		return nil, bad("isInitiator=false: a learner must get tickets from the KDC")
	}
	return login, nil
}

// isTrue reads a boolean option as Java's login modules do: "true" in any
// case is true, anything else false.
func isTrue(v string) bool { return strings.EqualFold(v, "true") }
