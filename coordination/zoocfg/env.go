package zoocfg

import (
	"fmt"
	"strings"
)

// Environment variables through which Apache ZooKeeper's scripts pass
// settings to java. zkServer.sh runs the server with SERVER_JVMFLAGS and
// JVMFLAGS; zkCli.sh runs the client with CLIENT_JVMFLAGS and JVMFLAGS;
// zkServer.sh turns ZOO_DATADIR_AUTOCREATE_DISABLE into
// -Dzookeeper.datadir.autocreate=false.
const (
	ServerJVMFlagsEnv           = "SERVER_JVMFLAGS"
	JVMFlagsEnv                 = "JVMFLAGS"
	ClientJVMFlagsEnv           = "CLIENT_JVMFLAGS"
	DataDirAutocreateDisableEnv = "ZOO_DATADIR_AUTOCREATE_DISABLE"
)

// CheckServerEnv checks the environment a ZooKeeper server started by
// zkServer.sh would read. keeper reads its settings only from zoo.cfg, so
// it refuses to start when the environment holds a setting it would
// otherwise ignore:
//
//   - a -D system property in SERVER_JVMFLAGS or JVMFLAGS that asks for a
//     protection keeper lacks: an *UnsupportedError;
//   - a -D system property there that sets a zoo.cfg setting keeper
//     implements (jute.maxbuffer, zookeeper.admin.enableServer, ...): an
//     error saying to move it into zoo.cfg;
//   - ZOO_DATADIR_AUTOCREATE_DISABLE set to anything: an *UnsupportedError.
//
// Other flags (heap, GC, logging, JMX, performance properties) are
// ignored. getenv is os.Getenv outside tests.
func CheckServerEnv(getenv func(string) string) error {
	if getenv(DataDirAutocreateDisableEnv) != "" {
		return &UnsupportedError{Source: "environment", Key: DataDirAutocreateDisableEnv,
			Feature: protections["datadir.autocreate"].feature}
	}
	for _, env := range []string{ServerJVMFlagsEnv, JVMFlagsEnv} {
		for _, prop := range jvmProperties(getenv(env)) {
			if err := checkServerSASLEnv(env, prop); err != nil {
				return err
			}
			if prop.name == loginConfigKey {
				continue // the JAAS file: read by ServerLoginConfig
			}
			if _, ok := tlsSetting(prop.name); ok || isX509Provider(prop.name, prop.value) {
				return fmt.Errorf("%s: %s: keeper reads its settings only from zoo.cfg; set it there", env, prop.name)
			}
			if _, ok := quorumSASLSetting(prop.name); ok {
				return fmt.Errorf("%s: %s: keeper reads its settings only from zoo.cfg; set it there", env, prop.name)
			}
			if p, ok := protectionOf(prop.name); ok {
				if err := p.check(env, 0, prop.name, prop.value); err != nil {
					return envError(env, prop, err)
				}
				continue
			}
			if _, ok := settings[prop.name]; ok {
				return fmt.Errorf("%s: %s: keeper reads its settings only from zoo.cfg; set it there", env, prop.name)
			}
		}
	}
	return nil
}

// CheckClientEnv checks the -D system properties in the environment
// variables vars, as a ZooKeeper client would read them (CLIENT_JVMFLAGS
// and JVMFLAGS for zkCli.sh; BOOKIE_EXTRA_OPTS, which BookKeeper's scripts
// pass to a bookie and its ZooKeeper client): it returns what
// ParseClientSecurity refuses, an *UnsupportedError for a setting that
// asks for a protection keeper's clients lack (revocation checks, an
// SSLContext supplier, a zookeeper.ssl.* key they do not know, Kerberos
// settings) or an error for an invalid value. TLS and SASL DIGEST-MD5 are
// implemented (client.go). Other flags are ignored.
func CheckClientEnv(getenv func(string) string, vars ...string) error {
	_, err := ParseClientSecurity(ClientEnvProperties(getenv, vars...))
	return err
}

// envError adds the variable and the property to an invalid-value error;
// an *UnsupportedError names them already.
func envError(env string, prop jvmProperty, err error) error {
	if _, ok := err.(*UnsupportedError); ok {
		return err
	}
	return fmt.Errorf("%s: %s: invalid value %q: %w", env, prop.name, prop.value, err)
}

// jvmProperty is one -Dname=value flag.
type jvmProperty struct {
	name, value string
}

// jvmProperties returns the -D flags in flags, split on blanks as the
// scripts' unquoted expansion splits them (quotes are not removed). A flag
// without '=' sets the empty value, as java does.
func jvmProperties(flags string) []jvmProperty {
	var props []jvmProperty
	for _, f := range strings.Fields(flags) {
		rest, ok := strings.CutPrefix(f, "-D")
		if !ok || rest == "" {
			continue
		}
		name, value, _ := strings.Cut(rest, "=")
		props = append(props, jvmProperty{name: name, value: value})
	}
	return props
}
