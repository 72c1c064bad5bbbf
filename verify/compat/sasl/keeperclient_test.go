package sasl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/coordination/zoocfg"
	"keeper/internal/testhost"
	"keeper/verify/compat/zkreal"
)

// keeperClient opens a session of keeper's own client (what keeper shell,
// keeper bench zk and the ledger store use) to addr, with the client
// settings of the -D flags, as the tools read them from CLIENT_JVMFLAGS.
func keeperClient(t *testing.T, addr string, flags ...string) (*zkclient.Conn, error) {
	t.Helper()
	var props []zoocfg.ClientProperty
	for _, f := range flags {
		name, value, _ := strings.Cut(strings.TrimPrefix(f, "-D"), "=")
		props = append(props, zoocfg.ClientProperty{Source: "CLIENT_JVMFLAGS", Name: name, Value: value})
	}
	cs, err := zoocfg.ParseClientSecurity(props)
	if err != nil {
		return nil, err
	}
	sec, err := zkclient.NewSecurity(cs)
	if err != nil {
		return nil, err
	}
	opts := zkclient.Options{SessionTimeout: 10 * time.Second}
	sec.Apply(&opts)
	ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(30*time.Second))
	defer cancel()
	c, err := zkclient.Dial(ctx, addr, opts)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// TestKerberosKeeperClientSideBySide authenticates keeper's own client
// with GSSAPI against Apache ZooKeeper and against keeper started from the
// same files, with a real MIT KDC: alice logs in with a keytab and no
// zookeeper.server.principal (the server's principal is made from the
// host dialled, as the Java client makes it), creates a node only she may
// read and reads it; eve logs in from the credential cache kinit filled
// (useTicketCache) and is refused the node; a client asking for a service
// principal the KDC does not know gets no session; a ticket cache of
// another principal than the section names stops the client at start.
func TestKerberosKeeperClientSideBySide(t *testing.T) {
	if err := zkreal.Available(); err != nil {
		require(t, "Apache ZooKeeper", err)
	}
	u := startKDCUsers(t)
	k := u.kdc
	service, alice, eve := u.service, u.alice, u.eve
	serverJAAS := k.jaasFile(t, "server.jaas", service, alice, "alice@"+realm)
	// The cache's file, for the JAAS file's ticketCache.
	eveCache := strings.TrimPrefix(k.Kinit(t, "eve@"+realm, eve), "FILE:")
	clientJAAS := func(name, module string) string {
		p := filepath.Join(k.dir, name)
		text := "Client {\n    com.sun.security.auth.module.Krb5LoginModule required\n    " + module + ";\n};\n"
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return "-Djava.security.auth.login.config=" + p
	}
	krbFlag := "-Djava.security.krb5.conf=" + k.krb5Conf
	aliceFlag := clientJAAS("alice.jaas", fmt.Sprintf(`useKeyTab=true keyTab="%s" principal="alice@%s"`, alice, realm))
	eveFlag := clientJAAS("eve.jaas", fmt.Sprintf(`useTicketCache=true ticketCache="%s"`, eveCache))
	notEve := clientJAAS("not-eve.jaas", fmt.Sprintf(`useTicketCache=true ticketCache="%s" principal="alice"`, eveCache))

	servers := map[string]string{
		"zookeeper": zkreal.Start(t, zkreal.Options{
			ExtraConfig: map[string]string{"authProvider.1": saslProvider},
			JVMFlags:    []string{"-Djava.security.auth.login.config=" + serverJAAS, krbFlag},
		}).Addr(),
		"keeper": startKeeperFlags(t, "-Djava.security.auth.login.config="+serverJAAS+" "+krbFlag, nil),
	}
	outcomes := map[string][]string{}
	for kind, addr := range servers {
		// localhost: the server's principal is zookeeper/<host>.
		_, port, _ := strings.Cut(addr, ":")
		addr = "localhost:" + port
		var got []string
		ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(30*time.Second))
		a, err := keeperClient(t, addr, aliceFlag, krbFlag)
		if err != nil {
			t.Fatalf("%s: alice: %v", kind, err)
		}
		acl := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: "sasl", ID: "alice@" + realm}}}
		if _, _, err := a.Create(ctx, "/krb", []byte("secret-data"), zkclient.CreateOptions{ACL: acl}); err != nil {
			t.Fatalf("%s: alice create: %v", kind, err)
		}
		data, _, err := a.Get(ctx, "/krb", false)
		got = append(got, fmt.Sprintf("alice get: %q %v", data, err))
		acls, _, err := a.GetACL(ctx, "/krb")
		got = append(got, fmt.Sprintf("alice acl: %v %v", acls, err))

		e, err := keeperClient(t, addr, eveFlag, krbFlag)
		if err != nil {
			t.Fatalf("%s: eve: %v", kind, err)
		}
		_, _, err = e.Get(ctx, "/krb", false)
		got = append(got, fmt.Sprintf("eve get: noauth=%v", errors.Is(err, zkproto.ErrNoAuth)))

		_, err = keeperClient(t, addr, aliceFlag, krbFlag, "-Dzookeeper.server.principal=zookeeper/nohost@"+realm)
		got = append(got, fmt.Sprintf("unknown service principal: refused=%v", err != nil))
		if err != nil && !strings.Contains(err.Error(), "zookeeper/nohost") {
			t.Errorf("%s: an unknown service principal: %v, want an error naming it", kind, err)
		}
		cancel()
		outcomes[kind] = got
		t.Logf("%s: %q", kind, got)
	}
	if z, kp := strings.Join(outcomes["zookeeper"], "\n"), strings.Join(outcomes["keeper"], "\n"); z != kp {
		t.Errorf("zookeeper:\n%s\nkeeper:\n%s", z, kp)
	}
	// What both must show, not only agree on.
	want := []string{`alice get: "secret-data" <nil>`, "eve get: noauth=true", "unknown service principal: refused=true"}
	for _, w := range want {
		if !strings.Contains(strings.Join(outcomes["keeper"], "\n"), w) {
			t.Errorf("keeper: no %q in %q", w, outcomes["keeper"])
		}
	}
	if _, err := keeperClient(t, servers["keeper"], notEve, krbFlag); err == nil || !strings.Contains(err.Error(), "holds the tickets of eve@") {
		t.Errorf("a ticket cache of another principal: %v, want a refusal naming it", err)
	}
}
