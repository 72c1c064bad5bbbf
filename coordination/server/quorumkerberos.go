package server

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"keeper/coordination/jaas"
	"keeper/coordination/kerberos"
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

// readKeytab reads a keytab file, at most maxKeytabBytes of it.
func readKeytab(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeytabBytes+1))
	if err != nil {
		return nil, fmt.Errorf("keytab %s: %w", file, err)
	}
	if len(data) > maxKeytabBytes {
		return nil, fmt.Errorf("keytab %s is larger than %d bytes", file, maxKeytabBytes)
	}
	return data, nil
}

// krb5Config loads the krb5.conf Java would read: -Djava.security.krb5.conf,
// else /etc/krb5.conf.
func krb5Config(props map[string]string) (*config.Config, error) {
	file := props["java.security.krb5.conf"]
	if file == "" {
		file = "/etc/krb5.conf"
	}
	cfg, err := config.Load(file)
	if err != nil {
		return nil, fmt.Errorf("krb5.conf %s: %w", file, err)
	}
	return cfg, nil
}

// quorumKerberosLearner logs a quorum learner in to the KDC with the
// keytab of its JAAS section, at start, as ZooKeeper's learner logs in
// when it starts (a stale keytab or an unreachable KDC stops the start),
// and returns what starts the GSSAPI exchange of each connection it opens:
// a ticket (from the KDC, or the client's cache) for servicePrincipal with
// _HOST replaced by the host connected to, in the realm of
// -Dzookeeper.server.realm, else the learner's own, as in ZooKeeper.
func quorumKerberosLearner(krb *jaas.KerberosLogin, servicePrincipal string, props map[string]string) (func(host string) (*sasl.GSSAPIClient, error), string, error) {
	data, err := readKeytab(krb.KeyTab)
	if err != nil {
		return nil, "", err
	}
	cfg, err := krb5Config(props)
	if err != nil {
		return nil, "", err
	}
	kt := keytab.New()
	if err := kt.Unmarshal(data); err != nil {
		return nil, "", fmt.Errorf("keytab %s: %w", krb.KeyTab, err)
	}
	name, realm, hasRealm := strings.Cut(krb.Principal, "@")
	if !hasRealm {
		realm = cfg.LibDefaults.DefaultRealm
		if realm == "" {
			return nil, "", fmt.Errorf("principal %s names no realm, and krb5.conf has no default_realm", krb.Principal)
		}
	}
	principal := name + "@" + realm
	cl := client.NewWithKeytab(name, realm, kt, cfg, client.DisablePAFXFAST(true))
	if err := cl.Login(); err != nil {
		return nil, "", fmt.Errorf("the learner could not log in to Kerberos as %s with keytab %s: %w", principal, krb.KeyTab, err)
	}
	serverRealm := props["zookeeper.server.realm"]
	if serverRealm == "" {
		serverRealm = realm
	}
	return func(host string) (*sasl.GSSAPIClient, error) {
		spn := quorumServicePrincipal(servicePrincipal, host)
		svc, svcRealm, has := strings.Cut(spn, "@")
		if !has {
			svcRealm = serverRealm
		}
		parts := strings.Split(svc, "/")
		if svc == "" || strings.Contains(svcRealm, "@") {
			return nil, fmt.Errorf("service principal %q is not service[/host][@REALM]", spn)
		}
		// gokrb5 asks for the ticket in the realm krb5.conf's
		// domain_realm maps the host to, else in the learner's own; a
		// ticket of another realm than ZooKeeper's would not be the one
		// ZooKeeper asks for.
		r := cl.Config.ResolveRealm(parts[len(parts)-1])
		if r == "" {
			r = realm
		}
		if r != svcRealm {
			return nil, fmt.Errorf("service principal %s@%s: krb5.conf maps its host to realm %q; keeper asks only for tickets of that realm", svc, svcRealm, r)
		}
		tkt, key, err := cl.GetServiceTicket(svc)
		if err != nil {
			return nil, fmt.Errorf("ticket for %s@%s: %w", svc, svcRealm, err)
		}
		in, first, err := kerberos.NewInitiator(kerberos.InitiatorConfig{Client: cl.Credentials.CName(), Realm: realm,
			Ticket: tkt, SessionKey: key, Now: time.Now(), Entropy: rand.Reader})
		if err != nil {
			return nil, err
		}
		// Java's learner asks for its own principal as authorization id.
		return sasl.NewGSSAPIClient(in, first, principal), nil
	}, principal, nil
}
