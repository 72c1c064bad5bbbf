package tlscompat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"keeper/coordination/server"
	"keeper/coordination/zkclient"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zoocfg"
	"keeper/internal/testhost"
	"keeper/verify/compat/zkreal"
)

// clientJAAS holds the server's DIGEST-MD5 user and the client's login.
const clientJAAS = `Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_bob="bob-secret";
};
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="bob"
    password="%s";
};
`

// TestKeeperClientSideBySide connects keeper's own client, configured
// from the -D flags zkCli.sh would be given, to keeper and to Apache
// ZooKeeper 3.8 running with the same key stores (ssl.clientAuth=need),
// the same JAAS file and the sasl provider, and expects
// the same outcome from both: served with the right certificate and
// password, AuthFailed with the wrong password, a refused handshake with
// an untrusted certificate.
func TestKeeperClientSideBySide(t *testing.T) {
	p := newPKI(t)
	keyStore := p.p12(t, p.server, "server")
	trustStore := p.trustStore(t, "PKCS12", ".p12")
	clientStore := p.p12(t, p.client, "client")
	rogueStore := p.p12(t, p.untrusted, "rogue")
	dir := t.TempDir()
	jaas := func(name, password string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, fmt.Appendf(nil, clientJAAS, password), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	serverJAAS := jaas("server.conf", "bob-secret")
	keys := storeKeys(keyStore, trustStore, "need")
	keys["authProvider.1"] = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
	// Not sessionRequireClientSASLAuth: zkreal checks that ZooKeeper
	// serves a plaintext read before it hands it over. A failed exchange
	// ends the connection with AuthFailed either way; keeper's own tests
	// (coordination/zkclient, cmd/keeper) cover required SASL.

	servers := []tlsServer{startKeeper(t, keys, func(cfg *server.Config) {
		cfg.Core.Auth = keeperAuth(t, keys, serverJAAS)
	})}
	if !testing.Short() {
		if err := zkreal.Available(); err != nil {
			zkreal.Start(t, zkreal.Options{}) // skips, or fails under KEEPER_REQUIRE_ZK
		}
		port := testhost.Port(t)
		cfg := map[string]string{"serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
			"secureClientPort": fmt.Sprint(port), "secureClientPortAddress": "127.0.0.1"}
		for k, v := range keys {
			cfg[k] = v
		}
		zk := zkreal.Start(t, zkreal.Options{ExtraConfig: cfg, JVMFlags: []string{"-Djava.security.auth.login.config=" + serverJAAS}})
		servers = append(servers, tlsServer{name: "zookeeper", plain: zk.Addr(), secure: fmt.Sprintf("127.0.0.1:%d", port)})
	}
	flags := func(keyStore, jaasFile string) string {
		return "-Dzookeeper.client.secure=true -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty" +
			" -Dzookeeper.ssl.keyStore.location=" + keyStore + " -Dzookeeper.ssl.keyStore.password=" + storePass +
			" -Dzookeeper.ssl.trustStore.location=" + trustStore + " -Dzookeeper.ssl.trustStore.password=" + storePass +
			" -Djava.security.auth.login.config=" + jaasFile
	}
	cells := []struct {
		name, flags string
		want        string // served, authfailed or handshake
	}{
		{"right password", flags(clientStore, serverJAAS), "served"},
		{"wrong password", flags(clientStore, jaas("wrong.conf", "guess")), "authfailed"},
		{"untrusted certificate", flags(rogueStore, serverJAAS), "handshake"},
	}
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			cs, err := zoocfg.ParseClientSecurity(zoocfg.ClientEnvProperties(func(string) string { return c.flags }, zoocfg.ClientJVMFlagsEnv))
			if err != nil {
				t.Fatal(err)
			}
			sec, err := zkclient.NewSecurity(cs)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range servers {
				got := keeperClientOutcome(s.secure, sec)
				t.Logf("%s: %s", s.name, got)
				if !strings.HasPrefix(got, c.want) {
					t.Errorf("%s: %s, want %s", s.name, got, c.want)
				}
			}
		})
	}
}

// keeperClientOutcome dials addr with sec and creates a znode: "served",
// "authfailed: ..." or "handshake: ..." (the TLS handshake or the
// connection failed before the session), or "other: ...".
func keeperClientOutcome(addr string, sec zkclient.Security) string {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	var opts zkclient.Options
	sec.Apply(&opts)
	c, err := zkclient.Dial(ctx, addr, opts)
	if err == nil {
		defer c.Close()
		_, _, err = c.Create(ctx, "/keeper-client", nil, zkclient.CreateOptions{})
		if err == nil || errors.Is(err, zkproto.ErrNodeExists) {
			return "served"
		}
	}
	switch {
	case errors.Is(err, zkproto.ErrAuthFailed):
		return "authfailed: " + err.Error()
	case strings.Contains(err.Error(), "TLS handshake"), strings.Contains(err.Error(), "handshake with"):
		return "handshake: " + err.Error()
	}
	return "other: " + err.Error()
}

// keeperAuth reads the SASL settings as keeper server does, from keys and
// the JAAS file named in SERVER_JVMFLAGS.
func keeperAuth(t *testing.T, keys map[string]string, jaas string) zkcore.AuthConfig {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=2181\n", t.TempDir())
	for k, v := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	zc, _, err := zoocfg.Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == zoocfg.ServerJVMFlagsEnv {
			return "-Djava.security.auth.login.config=" + jaas
		}
		return ""
	}
	auth, err := server.AuthFromZoo(zc, getenv, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return auth
}
