package zoocfg

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SASL is what zoo.cfg (and, for the JAAS file, the environment) says about
// SASL authentication of clients, the sasl ACL scheme and enforced
// authentication (docs/sasl.md).
type SASL struct {
	// LoginConfig names the JAAS file (java.security.auth.login.config).
	// ZooKeeper takes it only as a -D flag, which keeper reads from
	// SERVER_JVMFLAGS and JVMFLAGS (ServerLoginConfig); keeper also takes
	// it in zoo.cfg. Empty means none: no SASL.
	LoginConfig string
	// ServerSection is the JAAS section the server reads its users from
	// (sasl.serverconfig); empty means "Server".
	ServerSection string
	// Provider: authProvider.N names ZooKeeper's SASLAuthenticationProvider,
	// which makes sasl ACL entries valid.
	Provider bool
	// SuperUsers are superUser and superUser.*: SASL ids that are super.
	SuperUsers []string
	// SuperPassword is SASLAuthenticationProvider.superPassword: the
	// password of the JAAS user "super", when the file has that user.
	SuperPassword string
	// AnyUser is letAnySaslUserDoX: a sasl ACL id that matches every sasl
	// identity.
	AnyUser string
	// AllowFailedClients keeps a client whose SASL exchange failed
	// (allowSaslFailedClients).
	AllowFailedClients bool
	// RemoveHostFromPrincipal and RemoveRealmFromPrincipal are
	// kerberos.removeHostFromPrincipal and kerberos.removeRealmFromPrincipal.
	RemoveHostFromPrincipal, RemoveRealmFromPrincipal bool
	// RequireClientAuth is sessionRequireClientSASLAuth.
	RequireClientAuth bool
	// EnforceAuth and EnforceAuthSchemes are enforce.auth.enabled and
	// enforce.auth.schemes (split on ',' and trimmed, as ZooKeeper does).
	EnforceAuth        bool
	EnforceAuthSchemes []string
}

// EnforcedSchemes returns the schemes a connection must have an identity
// of before any request but auth and sasl, nil when nothing is enforced:
// ["sasl"] with sessionRequireClientSASLAuth, which wins over
// enforce.auth.*, else enforce.auth.schemes when enforce.auth.enabled.
func (s *SASL) EnforcedSchemes() []string {
	switch {
	case s.RequireClientAuth:
		return []string{"sasl"}
	case s.EnforceAuth:
		return s.EnforceAuthSchemes
	}
	return nil
}

// Section returns the JAAS section the server reads.
func (s *SASL) Section() string {
	if s.ServerSection == "" {
		return "Server"
	}
	return s.ServerSection
}

func (s *SASL) validate() []error {
	if !s.RequireClientAuth && s.EnforceAuth && len(s.EnforceAuthSchemes) == 0 {
		return []error{errors.New("zoocfg: enforce.auth.enabled is true but enforce.auth.schemes is not set")}
	}
	return nil
}

// saslProviderClass is the class authProvider.N names to load the sasl
// provider.
const saslProviderClass = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"

// isSASLProvider reports an authProvider.N key (either spelling) naming
// the sasl provider. A bare authProvider key does nothing in ZooKeeper and
// stays refused (protect.go).
func isSASLProvider(key, value string) bool {
	name := strings.TrimPrefix(key, "zookeeper.")
	return strings.HasPrefix(name, "authProvider.") && value == saslProviderClass
}

// saslSettings are the SASL keys keeper implements, by their zoo.cfg
// spelling; all are system properties, accepted with the "zookeeper."
// prefix too (saslSetting), except the JAAS file's.
var saslSettings = map[string]setter{
	"sasl.serverconfig":                        stringField(func(c *Config) *string { return &c.SASL.ServerSection }),
	"SASLAuthenticationProvider.superPassword": func(p *parser, v string) error { p.c.SASL.SuperPassword = v; return nil },
	"letAnySaslUserDoX":                        func(p *parser, v string) error { p.c.SASL.AnyUser = v; return nil },
	"allowSaslFailedClients":                   boolField(func(c *Config) *bool { return &c.SASL.AllowFailedClients }),
	"kerberos.removeHostFromPrincipal":         exactBoolField(func(c *Config) *bool { return &c.SASL.RemoveHostFromPrincipal }),
	"kerberos.removeRealmFromPrincipal":        exactBoolField(func(c *Config) *bool { return &c.SASL.RemoveRealmFromPrincipal }),
	"sessionRequireClientSASLAuth":             boolField(func(c *Config) *bool { return &c.SASL.RequireClientAuth }),
	"enforce.auth.enabled":                     boolField(func(c *Config) *bool { return &c.SASL.EnforceAuth }),
	"enforce.auth.schemes":                     setEnforceAuthSchemes,
}

// loginConfigKey is the JAAS file's system property.
const loginConfigKey = "java.security.auth.login.config"

// saslSetting returns the setter of a SASL key keeper implements.
func saslSetting(key string) (setter, bool) {
	if key == loginConfigKey {
		return func(p *parser, v string) error { p.c.SASL.LoginConfig = loginConfigPath(v); return nil }, true
	}
	name := strings.TrimPrefix(key, "zookeeper.")
	if set, ok := saslSettings[name]; ok {
		return set, true
	}
	if name == "superUser" || strings.HasPrefix(name, "superUser.") {
		return func(p *parser, v string) error {
			if v != "" && !slices.Contains(p.c.SASL.SuperUsers, v) {
				p.c.SASL.SuperUsers = append(p.c.SASL.SuperUsers, v)
			}
			return nil
		}, true
	}
	return nil, false
}

// loginConfigPath is the file a java.security.auth.login.config value
// names: Java's "==file" (use only this file) is "=" and the file, and a
// file: URL names a file too.
func loginConfigPath(v string) string {
	v = strings.TrimPrefix(v, "=")
	if rest, ok := strings.CutPrefix(v, "file://"); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(v, "file:"); ok {
		return rest
	}
	return v
}

// exactBoolField parses true or false exactly: ZooKeeper compares these
// kerberos.* values with "true", so "TRUE" would mean false there; keeper
// refuses any other spelling rather than guess.
func exactBoolField(field func(*Config) *bool) setter {
	return func(p *parser, v string) error {
		switch v {
		case "true", "false":
			*field(p.c) = v == "true"
			return nil
		}
		return errors.New(`want true or false, in lower case (ZooKeeper reads any other value as false)`)
	}
}

// setEnforceAuthSchemes splits the list as Java's String.split(",") does
// (trailing empty parts dropped) and trims each part; an empty part in the
// middle stays, and fails at start for want of a provider, as in
// ZooKeeper.
func setEnforceAuthSchemes(p *parser, v string) error {
	parts := strings.Split(v, ",")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	p.c.SASL.EnforceAuthSchemes = nil
	for _, s := range parts {
		p.c.SASL.EnforceAuthSchemes = append(p.c.SASL.EnforceAuthSchemes, strings.TrimSpace(s))
	}
	return nil
}

// ServerLoginConfig returns the JAAS file named by the last
// -Djava.security.auth.login.config flag in SERVER_JVMFLAGS, then
// JVMFLAGS (zkServer.sh puts JVMFLAGS last, and java keeps the last of a
// repeated flag); "" when there is none.
func ServerLoginConfig(getenv func(string) string) string {
	v := ServerJVMProperties(getenv)[loginConfigKey]
	return loginConfigPath(v)
}

// ServerJVMProperties returns every -D flag of SERVER_JVMFLAGS and
// JVMFLAGS, the last one winning: the system properties a JAAS file's
// ${name} may refer to.
func ServerJVMProperties(getenv func(string) string) map[string]string {
	props := map[string]string{}
	for _, env := range []string{ServerJVMFlagsEnv, JVMFlagsEnv} {
		for _, prop := range jvmProperties(getenv(env)) {
			props[prop.name] = prop.value
		}
	}
	return props
}

// checkServerSASLEnv reports a -D flag for a SASL key keeper implements in
// zoo.cfg (all but the JAAS file's, which belongs in the environment).
func checkServerSASLEnv(env string, prop jvmProperty) error {
	if prop.name == loginConfigKey {
		return nil
	}
	if _, ok := saslSetting(prop.name); ok || isSASLProvider(prop.name, prop.value) {
		return fmt.Errorf("%s: %s: keeper reads its settings only from zoo.cfg; set it there", env, prop.name)
	}
	return nil
}
