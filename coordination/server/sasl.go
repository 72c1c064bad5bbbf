package server

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"keeper/coordination/jaas"
	"keeper/coordination/zkcore"
	"keeper/coordination/zoocfg"
)

// AuthFromZoo builds the core's SASL and enforced-authentication settings
// from zoo.cfg and the environment ZooKeeper's scripts pass to java
// (docs/sasl.md). It reads the JAAS file named by
// -Djava.security.auth.login.config in SERVER_JVMFLAGS or JVMFLAGS (or by
// java.security.auth.login.config in zoo.cfg; the two must agree), and the
// Kerberos default realm. As in ZooKeeper, a JAAS file that cannot be read
// or parsed stops the start, and one without the server's section leaves
// SASL off. getenv is os.Getenv outside tests.
func AuthFromZoo(zc *zoocfg.Config, getenv func(string) string, logger *slog.Logger) (zkcore.AuthConfig, error) {
	s := &zc.SASL
	auth := zkcore.AuthConfig{
		SASLProvider:             s.Provider,
		SASLAnyUser:              s.AnyUser,
		SASLSuperUsers:           s.SuperUsers,
		RemoveHostFromPrincipal:  s.RemoveHostFromPrincipal,
		RemoveRealmFromPrincipal: s.RemoveRealmFromPrincipal,
		AllowSASLFailedClients:   s.AllowFailedClients,
		EnforceSchemes:           s.EnforcedSchemes(),
	}
	props := zoocfg.ServerJVMProperties(getenv)
	auth.KerberosRealm = kerberosDefaultRealm(props)

	file, err := loginConfigFile(s, getenv)
	if err != nil {
		return auth, err
	}
	if file == "" {
		if len(auth.EnforceSchemes) > 0 && s.RequireClientAuth {
			logger.Warn("sessionRequireClientSASLAuth is true but no JAAS file is named: no client can authenticate")
		}
		return auth, nil
	}
	section := s.Section()
	cfg, err := readJAAS(file, props)
	if err != nil {
		return auth, fmt.Errorf("sasl: no JAAS configuration section named %q was found in %s: %w", section, file, err)
	}
	krb, err := cfg.ServerKerberos(section)
	if err != nil {
		return auth, fmt.Errorf("sasl: %s: %w", file, err)
	}
	if krb != nil {
		acc, err := kerberosAcceptor(krb, props)
		if err != nil {
			return auth, fmt.Errorf("sasl: %s, line %d: %w", file, krb.Line, err)
		}
		auth.Kerberos, auth.Now = acc, time.Now
		logger.Info("sasl: GSSAPI (Kerberos) for clients", "file", file, "section", section, "principal", krb.Principal,
			"keyTab", krb.KeyTab, "isInitiator", krb.Initiator, "defaultRealm", auth.KerberosRealm, "saslProvider", s.Provider)
		return auth, nil
	}
	users, ok, err := cfg.ServerUsers(section)
	if err != nil {
		return auth, fmt.Errorf("sasl: %s: %w", file, err)
	}
	if !ok {
		logger.Info("no JAAS section for the server; SASL is off", "file", file, "section", section)
		return auth, nil
	}
	if _, hasSuper := users["super"]; hasSuper && s.SuperPassword != "" {
		users["super"] = s.SuperPassword
	}
	auth.SASLUsers = users
	auth.Entropy = rand.Reader
	logger.Info("sasl: DIGEST-MD5 for clients", "file", file, "section", section, "users", len(users), "saslProvider", s.Provider)
	return auth, nil
}

// loginConfigFile is the JAAS file the environment (or zoo.cfg) names; ""
// when none.
func loginConfigFile(s *zoocfg.SASL, getenv func(string) string) (string, error) {
	file := zoocfg.ServerLoginConfig(getenv)
	if s.LoginConfig != "" {
		if file != "" && file != s.LoginConfig {
			return "", fmt.Errorf("sasl: the environment names JAAS file %s and zoo.cfg names %s", file, s.LoginConfig)
		}
		file = s.LoginConfig
	}
	return file, nil
}

// readJAAS reads and parses a JAAS file.
func readJAAS(file string, props map[string]string) (*jaas.Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return jaas.Parse(data, javaProperty(props))
}

// javaProperty resolves ${name} in a JAAS file as the JVM would: the -D
// flags first, then the few system properties every JVM has.
func javaProperty(props map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if v, ok := props[name]; ok {
			return v, true
		}
		switch name {
		case "user.home":
			h, err := os.UserHomeDir()
			return h, err == nil
		case "user.dir":
			d, err := os.Getwd()
			return d, err == nil
		case "user.name":
			u := os.Getenv("USER")
			return u, u != ""
		case "java.io.tmpdir":
			return os.TempDir(), true
		case "file.separator":
			return "/", true
		}
		return "", false
	}
}

// kerberosDefaultRealm is the realm Java's Kerberos configuration names:
// -Djava.security.krb5.realm, else default_realm in the [libdefaults] of
// the krb5.conf -Djava.security.krb5.conf names (or /etc/krb5.conf); ""
// without one.
func kerberosDefaultRealm(props map[string]string) string {
	if r := props["java.security.krb5.realm"]; r != "" {
		return r
	}
	file := props["java.security.krb5.conf"]
	if file == "" {
		file = "/etc/krb5.conf"
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	return krb5DefaultRealm(data)
}

// krb5DefaultRealm reads default_realm from the [libdefaults] section of a
// krb5.conf.
func krb5DefaultRealm(data []byte) string {
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		if section != "libdefaults" {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "default_realm" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
