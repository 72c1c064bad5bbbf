package jaas

import "fmt"

// Credentials returns the DIGEST-MD5 user name and password of section
// name, as ZooKeeper's quorum learner (and client) logs in with them: the
// username and password options of the section's first module that has a
// username. ok is false when the file has no such section or it lists no
// modules; found is false when no module names a user (ZooKeeper then
// fails when it first authenticates).
//
// As for ServerUsers, every module must be DigestLoginModule. Callers ask
// LearnerKerberos first: a section with Java's Krb5LoginModule makes
// ZooKeeper's learner use GSSAPI instead.
func (c *Config) Credentials(name string) (user, password string, ok, found bool, err error) {
	mods, ok := c.Section(name)
	if !ok {
		return "", "", false, false, nil
	}
	for _, m := range mods {
		if m.Class != DigestLoginModule {
			return "", "", true, false, fmt.Errorf("jaas: section %s, line %d: login module %s: keeper supports only %s (DIGEST-MD5)",
				name, m.Line, m.Class, DigestLoginModule)
		}
	}
	for _, m := range mods {
		if u, has := m.Options["username"]; has {
			return u, m.Options["password"], true, true, nil
		}
	}
	return "", "", true, false, nil
}
