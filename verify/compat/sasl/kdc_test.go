package sasl

import (
	"testing"

	"keeper/verify/compat/internal/mitkdc"
)

// realm is the test KDC's realm; servicePrincipal is the one ZooKeeper's
// Java client asks a ticket for when it connects to localhost.
const (
	realm            = mitkdc.Realm
	servicePrincipal = "zookeeper/localhost@" + realm
)

// kdc is an MIT KDC on loopback (mitkdc), under the names these tests use.
type kdc struct {
	*mitkdc.KDC
	dir      string
	krb5Conf string
	env      []string // KRB5_CONFIG and KRB5_KDC_PROFILE for the MIT tools
}

// startKDC starts the KDC for the test (mitkdc.Start).
func startKDC(t *testing.T) *kdc {
	t.Helper()
	k := mitkdc.Start(t)
	return &kdc{KDC: k, dir: k.Dir, krb5Conf: k.Krb5Conf, env: k.Env}
}

func (k *kdc) addPrincipal(t *testing.T, principal string) {
	t.Helper()
	k.AddPrincipal(t, principal)
}

func (k *kdc) keytab(t *testing.T, principal, name string) string {
	t.Helper()
	return k.Keytab(t, principal, name)
}

func lookPath(bin string) (string, error) { return mitkdc.LookPath(bin) }

// kdcUsers is a KDC with the service principal zookeeper/localhost and
// the users alice and eve, and their keytabs: stale holds the service's
// first key, which the later keytab made stale.
type kdcUsers struct {
	*kdc
	stale, service, alice, eve string
}

// startKDCUsers starts the KDC (startKDC) and adds the principals.
func startKDCUsers(t *testing.T) kdcUsers {
	t.Helper()
	k := startKDC(t)
	for _, p := range []string{"zookeeper/localhost", "alice", "eve"} {
		k.addPrincipal(t, p)
	}
	u := kdcUsers{kdc: k}
	u.stale = k.keytab(t, "zookeeper/localhost", "zk-stale.keytab")
	u.service = k.keytab(t, "zookeeper/localhost", "zk.keytab")
	u.alice = k.keytab(t, "alice", "alice.keytab")
	u.eve = k.keytab(t, "eve", "eve.keytab")
	return u
}
