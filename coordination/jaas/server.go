package jaas

import (
	"fmt"
	"strings"
)

// Names Apache ZooKeeper gives to its JAAS settings.
const (
	// DefaultServerSection is the section a ZooKeeper server logs in with,
	// unless zookeeper.sasl.serverconfig names another.
	DefaultServerSection = "Server"
	// DigestLoginModule is ZooKeeper's login module for DIGEST-MD5: its
	// user_<name>="<password>" options are the users.
	DigestLoginModule = "org.apache.zookeeper.server.auth.DigestLoginModule"
	// userPrefix marks the options that are users.
	userPrefix = "user_"
)

// ServerUsers returns the DIGEST-MD5 users of section name, as ZooKeeper's
// server reads them: every option user_<name>="<password>" of every module
// of the section (a later one wins), by name. ok is false when the file has
// no such section, or it lists no modules; ZooKeeper then runs without
// SASL.
//
// Every module of the section must be DigestLoginModule: any other is an
// error, because keeper does not implement what it asks for. Callers ask
// ServerKerberos first: a section with Java's Krb5LoginModule makes
// ZooKeeper use GSSAPI instead.
func (c *Config) ServerUsers(name string) (users map[string]string, ok bool, err error) {
	mods, ok := c.Section(name)
	if !ok {
		return nil, false, nil
	}
	users = map[string]string{}
	for _, m := range mods {
		if m.Class != DigestLoginModule {
			return nil, true, fmt.Errorf("jaas: section %s, line %d: login module %s: keeper supports only %s (DIGEST-MD5)",
				name, m.Line, m.Class, DigestLoginModule)
		}
		for k, v := range m.Options {
			if user, found := strings.CutPrefix(k, userPrefix); found {
				users[user] = v
			}
		}
	}
	return users, true, nil
}
