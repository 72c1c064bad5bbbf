package server

import (
	"crypto/rand"
	"fmt"
	"strings"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"keeper/coordination/jaas"
	"keeper/coordination/kerberos"
	"keeper/coordination/krblogin"
)

// kerberosAcceptor reads the login's keytab and checks that it holds a key
// for the principal, and, for an initiator (isInitiator, true by default),
// logs in to the KDC with it as Java's Krb5LoginModule does at
// ZooKeeper's start: a stale keytab or an unreachable KDC stops the start
// there, and here too (docs/sasl.md).
func kerberosAcceptor(krb *jaas.KerberosLogin, props map[string]string) (*kerberos.Acceptor, error) {
	data, err := krblogin.ReadKeytab(krb.KeyTab)
	if err != nil {
		return nil, err
	}
	acc, err := kerberos.NewAcceptor(kerberos.Config{Keytab: data, Principal: krb.Principal, Entropy: rand.Reader})
	if err != nil {
		return nil, err
	}
	if krb.Initiator {
		if err := kdcLogin(krb.Principal, data, props); err != nil {
			return nil, fmt.Errorf("the server could not log in to Kerberos as %s with keytab %s (isInitiator=false skips this): %w",
				krb.Principal, krb.KeyTab, err)
		}
	}
	return acc, nil
}

// kdcLogin gets a TGT for principal with the keytab from the KDC of the
// krb5.conf Java would read (-Djava.security.krb5.conf, else
// /etc/krb5.conf), and throws it away.
func kdcLogin(principal string, keytabBytes []byte, props map[string]string) error {
	cfg, err := krblogin.Krb5Config(props)
	if err != nil {
		return err
	}
	kt := keytab.New()
	if err := kt.Unmarshal(keytabBytes); err != nil {
		return err
	}
	name, realm, _ := strings.Cut(principal, "@")
	cl := client.NewWithKeytab(name, realm, kt, cfg, client.DisablePAFXFAST(true))
	defer cl.Destroy()
	return cl.Login()
}
