package server

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"keeper/coordination/jaas"

	"keeper/coordination/quorumnet"
	"keeper/coordination/zoocfg"
)

// QuorumSASLFromZoo builds the SASL between members (quorum.auth.*;
// docs/sasl.md) from zoo.cfg and the JAAS file the environment names, as
// ZooKeeper's QuorumPeer does at start: nil without
// quorum.auth.enableSasl. With it, a missing JAAS file, a missing or empty
// QuorumServer or QuorumLearner section (or the sections zoo.cfg names),
// a login module other than DigestLoginModule or Krb5LoginModule, or
// (with learnerRequireSasl) a DIGEST-MD5 learner section without a
// username stops the start. A section with Krb5LoginModule makes that side
// use GSSAPI, and its login to the KDC at start must succeed. getenv is
// os.Getenv outside tests.
func QuorumSASLFromZoo(zc *zoocfg.Config, getenv func(string) string, logger *slog.Logger) (*quorumnet.SASL, error) {
	q := &zc.QuorumSASL
	if !q.Enabled {
		return nil, nil
	}
	file, err := loginConfigFile(&zc.SASL, getenv)
	if err != nil {
		return nil, err
	}
	if file == "" {
		return nil, errors.New("quorum sasl: quorum.auth.enableSasl is true but no JAAS file is named (-Djava.security.auth.login.config in SERVER_JVMFLAGS)")
	}
	props := zoocfg.ServerJVMProperties(getenv)
	cfg, err := readJAAS(file, props)
	if err != nil {
		return nil, fmt.Errorf("quorum sasl: %s: %w", file, err)
	}
	out := &quorumnet.SASL{LearnerRequire: q.LearnerRequire, ServerRequire: q.ServerRequire, Entropy: rand.Reader}
	if err := quorumServerSide(out, zc, cfg, props, logger); err != nil {
		return nil, fmt.Errorf("quorum sasl: %s: %w", file, err)
	}
	if err := quorumLearnerSide(out, q, cfg, props, logger); err != nil {
		return nil, fmt.Errorf("quorum sasl: %s: %w", file, err)
	}
	logger.Info("quorum sasl between members", "file", file, "serverSection", q.Server(), "learnerSection", q.Learner(),
		"learnerRequireSasl", q.LearnerRequire, "serverRequireSasl", q.ServerRequire)
	return out, nil
}

// quorumServerSide sets what the accepting side checks: the Kerberos
// acceptor of a Krb5LoginModule section, with the configuration's hosts as
// the hosts a learner's principal may name, or the DIGEST-MD5 users.
func quorumServerSide(out *quorumnet.SASL, zc *zoocfg.Config, cfg *jaas.Config, props map[string]string, logger *slog.Logger) error {
	q := &zc.QuorumSASL
	krb, err := cfg.ServerKerberos(q.Server())
	if err != nil {
		return err
	}
	if krb != nil {
		acc, err := kerberosAcceptor(krb, props)
		if err != nil {
			return fmt.Errorf("line %d: %w", krb.Line, err)
		}
		out.KerberosServer, out.Now = acc, time.Now
		out.AuthorizedHosts = map[string]bool{}
		for _, srv := range zc.Servers {
			out.AuthorizedHosts[srv.Host] = true
		}
		logger.Info("quorum sasl: accepting GSSAPI (Kerberos)", "principal", krb.Principal, "keyTab", krb.KeyTab, "servers", len(out.AuthorizedHosts))
		return nil
	}
	users, ok, err := cfg.ServerUsers(q.Server())
	if err == nil && !ok {
		err = fmt.Errorf("the JAAS configuration section %q could not be found", q.Server())
	}
	if err != nil {
		return err
	}
	out.Users = users
	logger.Info("quorum sasl: accepting DIGEST-MD5", "users", len(users))
	return nil
}

// quorumLearnerSide sets how this member authenticates: GSSAPI with the
// Kerberos login of a Krb5LoginModule section, logged in at start, or
// the DIGEST-MD5 user name and password.
func quorumLearnerSide(out *quorumnet.SASL, q *zoocfg.QuorumSASL, cfg *jaas.Config, props map[string]string, logger *slog.Logger) error {
	krb, err := cfg.LearnerKerberos(q.Learner())
	if err != nil {
		return err
	}
	if krb != nil {
		learner, principal, err := quorumKerberosLearner(krb, q.Principal(), props)
		if err != nil {
			return fmt.Errorf("line %d: %w", krb.Line, err)
		}
		out.KerberosLearner, out.KerberosPrincipal = learner, principal
		logger.Info("quorum sasl: authenticating with GSSAPI (Kerberos)", "principal", principal, "keyTab", krb.KeyTab,
			"servicePrincipal", q.Principal())
		return nil
	}
	user, password, ok, found, err := cfg.Credentials(q.Learner())
	switch {
	case err != nil:
	case !ok:
		err = fmt.Errorf("the JAAS configuration section %q could not be found", q.Learner())
	case q.LearnerRequire && !found:
		err = fmt.Errorf("the JAAS configuration section %q has no username", q.Learner())
	}
	if err != nil {
		return err
	}
	out.Username, out.Password = user, password
	return nil
}
