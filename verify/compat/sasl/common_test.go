package sasl

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"keeper/coordination/server"
	"keeper/coordination/zkcore"
	"keeper/coordination/zoocfg"
	"keeper/verify/compat/zkreal"
)

// jaasFile is kazoo's test users (Server) and a client login (Client) for
// zkCli.sh.
const jaasFile = `Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="super_secret"
    user_jaasuser="jaas_password";
};
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="jaasuser"
    password="%s";
};
`

// saslProvider is the zoo.cfg line that loads the sasl ACL scheme.
const saslProvider = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"

// writeJAAS writes the JAAS file with the client's password and returns
// its path.
func writeJAAS(t *testing.T, clientPassword string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(p, []byte(strings.Replace(jaasFile, "%s", clientPassword, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startZooKeeper starts Apache ZooKeeper with the JAAS file and the sasl
// provider, plus extra zoo.cfg lines.
func startZooKeeper(t *testing.T, jaas string, extra map[string]string) string {
	t.Helper()
	cfg := map[string]string{"authProvider.1": saslProvider}
	for k, v := range extra {
		cfg[k] = v
	}
	return zkreal.Start(t, zkreal.Options{ExtraConfig: cfg, JVMFlags: []string{"-Djava.security.auth.login.config=" + jaas}}).Addr()
}

// startKeeper starts an in-process keeper from the same settings, naming
// the JAAS file as ZooKeeper's scripts do, in SERVER_JVMFLAGS.
func startKeeper(t *testing.T, jaas string, extra map[string]string) string {
	t.Helper()
	return startKeeperFlags(t, "-Djava.security.auth.login.config="+jaas, extra)
}

// startKeeperFlags is startKeeper with SERVER_JVMFLAGS set to flags.
func startKeeperFlags(t *testing.T, flags string, extra map[string]string) string {
	t.Helper()
	lines := "dataDir=" + t.TempDir() + "\nclientPort=2181\nauthProvider.1=" + saslProvider + "\n"
	for k, v := range extra {
		lines += k + "=" + v + "\n"
	}
	zc, _, err := zoocfg.Parse(strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == zoocfg.ServerJVMFlagsEnv {
			return flags
		}
		return ""
	}
	auth, err := server.AuthFromZoo(zc, getenv, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{ClientAddr: "127.0.0.1:0", Core: zkcore.DefaultConfig(), FourLetterWhitelist: []string{"*"}}
	cfg.Core.Auth = auth
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr().String()
}

// keeperAuthErr is the error keeper's start meets reading its SASL
// settings with SERVER_JVMFLAGS set to flags.
func keeperAuthErr(t *testing.T, flags string) error {
	t.Helper()
	zc, _, err := zoocfg.Parse(strings.NewReader("dataDir=" + t.TempDir() + "\nclientPort=2181\nauthProvider.1=" + saslProvider + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == zoocfg.ServerJVMFlagsEnv {
			return flags
		}
		return ""
	}
	_, err = server.AuthFromZoo(zc, getenv, slog.New(slog.DiscardHandler))
	return err
}

// require skips the test when a client is missing, or fails it when
// KEEPER_REQUIRE_ZK is set.
func require(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if v := os.Getenv(zkreal.RequireEnv); v != "" && v != "0" {
		t.Fatalf("%s is required (%s=%s): %v", what, zkreal.RequireEnv, v, err)
	}
	t.Skipf("%s not available: %v", what, err)
}
