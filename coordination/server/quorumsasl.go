package server

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"

	"keeper/coordination/quorumnet"
	"keeper/coordination/zoocfg"
)

// QuorumSASLFromZoo builds the SASL between members (quorum.auth.*;
// docs/sasl.md) from zoo.cfg and the JAAS file the environment names, as
// ZooKeeper's QuorumPeer does at start: nil without
// quorum.auth.enableSasl. With it, a missing JAAS file, a missing or empty
// QuorumServer or QuorumLearner section (or the sections zoo.cfg names),
// a login module other than DigestLoginModule, or (with
// learnerRequireSasl) a learner section without a username stops the
// start. getenv is os.Getenv outside tests.
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
	cfg, err := readJAAS(file, zoocfg.ServerJVMProperties(getenv))
	if err != nil {
		return nil, fmt.Errorf("quorum sasl: %s: %w", file, err)
	}
	users, ok, err := cfg.ServerUsers(q.Server())
	if err == nil && !ok {
		err = fmt.Errorf("the JAAS configuration section %q could not be found", q.Server())
	}
	if err != nil {
		return nil, fmt.Errorf("quorum sasl: %s: %w", file, err)
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
		return nil, fmt.Errorf("quorum sasl: %s: %w", file, err)
	}
	logger.Info("quorum sasl: DIGEST-MD5 between members", "file", file, "serverSection", q.Server(), "learnerSection", q.Learner(),
		"users", len(users), "learnerRequireSasl", q.LearnerRequire, "serverRequireSasl", q.ServerRequire)
	return &quorumnet.SASL{LearnerRequire: q.LearnerRequire, Username: user, Password: password,
		ServerRequire: q.ServerRequire, Users: users, Entropy: rand.Reader}, nil
}
