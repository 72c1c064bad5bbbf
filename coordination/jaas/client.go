package jaas

// ClientKerberos is a ZooKeeper client's Kerberos login, from its Client
// section (docs/sasl.md, "keeper's own clients").
type ClientKerberos struct {
	// KeyTab and Principal: log in with the principal's keys from the
	// keytab (useKeyTab=true).
	KeyTab    string
	Principal string
	// UseTicketCache: take the tickets kinit left in a credential cache
	// (useTicketCache=true); TicketCache names it (ticketCache=), else the
	// cache KRB5CCNAME names, else /tmp/krb5cc_<uid>, as Java looks for it.
	// With a keytab as well, the cache is tried first and the keytab is
	// used when the cache has no valid ticket, as Java's module does.
	UseTicketCache bool
	TicketCache    string
	Line           int // 1-based line of the module
}

// ClientKerberos returns the Kerberos login of the client section name,
// or nil when the section has no Krb5LoginModule (or does not exist). The
// module must be the section's only one and say where its credentials
// come from, a keytab (useKeyTab=true, with keyTab and principal) or a
// ticket cache (useTicketCache=true): keeper cannot prompt for a password,
// so a module with neither is refused rather than left to fail at the
// first connection.
func (c *Config) ClientKerberos(name string) (*ClientKerberos, error) {
	krb, bad, err := c.krb5Module(name)
	if krb == nil || err != nil {
		return nil, err
	}
	login := &ClientKerberos{Principal: krb.Options["principal"], UseTicketCache: isTrue(krb.Options["useTicketCache"]),
		TicketCache: krb.Options["ticketCache"], Line: krb.Line}
	if login.TicketCache != "" && !login.UseTicketCache {
		return nil, bad("ticketCache is set without useTicketCache=true")
	}
	if isTrue(krb.Options["useKeyTab"]) {
		login.KeyTab = krb.Options["keyTab"]
		if login.KeyTab == "" {
			return nil, bad("keyTab is not set")
		}
		if login.Principal == "" || login.Principal == "*" {
			return nil, bad("principal must name the client's principal to log in with the keytab")
		}
	}
	if login.KeyTab == "" && !login.UseTicketCache {
		return nil, bad("keeper needs useKeyTab=true (with keyTab and principal) or useTicketCache=true: it cannot prompt for a password")
	}
	return login, nil
}
