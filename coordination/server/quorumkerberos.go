package server

import (
	"fmt"
	"strings"

	"keeper/coordination/jaas"
	"keeper/coordination/krblogin"
	"keeper/coordination/sasl"
)

// quorumHostPattern is the part of quorum.auth.kerberos.servicePrincipal
// replaced by the host a learner connects to.
const quorumHostPattern = "_HOST"

// quorumServicePrincipal is the principal a learner asks a ticket for to
// reach the server at host, as ZooKeeper's SecurityUtils makes it: a
// setting of exactly two '/'-separated parts whose second is _HOST becomes
// service/<host in lower case>; any other setting is used as it is (so
// service/_HOST@REALM keeps its _HOST, as in ZooKeeper).
func quorumServicePrincipal(setting, host string) string {
	parts := strings.Split(setting, "/")
	if len(parts) != 2 || parts[1] != quorumHostPattern {
		return setting
	}
	return parts[0] + "/" + strings.ToLower(host)
}

// quorumKerberosLearner logs a quorum learner in to the KDC with the
// keytab of its JAAS section, at start, as ZooKeeper's learner logs in
// when it starts (a stale keytab or an unreachable KDC stops the start),
// and returns what starts the GSSAPI exchange of each connection it opens:
// a ticket (from the KDC, or the client's cache) for servicePrincipal with
// _HOST replaced by the host connected to, in the realm of
// -Dzookeeper.server.realm, else the learner's own, as in ZooKeeper.
func quorumKerberosLearner(krb *jaas.KerberosLogin, servicePrincipal string, props map[string]string) (func(host string) (*sasl.GSSAPIClient, error), string, error) {
	cfg, err := krblogin.Krb5Config(props)
	if err != nil {
		return nil, "", err
	}
	login, err := krblogin.WithKeytab(krb.KeyTab, krb.Principal, cfg)
	if err != nil {
		return nil, "", fmt.Errorf("the learner %w", err)
	}
	serverRealm := props["zookeeper.server.realm"]
	return func(host string) (*sasl.GSSAPIClient, error) {
		// Java's learner asks for its own principal as authorization id.
		return login.GSSAPI(quorumServicePrincipal(servicePrincipal, host), serverRealm)
	}, login.Principal(), nil
}
