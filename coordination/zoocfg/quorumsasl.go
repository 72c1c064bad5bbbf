package zoocfg

import (
	"errors"
	"strings"
)

// Default JAAS sections of SASL between ensemble members, as ZooKeeper
// names them.
const (
	DefaultQuorumLearnerSection = "QuorumLearner"
	DefaultQuorumServerSection  = "QuorumServer"
)

// DefaultQuorumServicePrincipal is ZooKeeper's default of
// quorum.auth.kerberos.servicePrincipal.
const DefaultQuorumServicePrincipal = "zkquorum/localhost"

// QuorumSASL is what zoo.cfg says about SASL (DIGEST-MD5, or GSSAPI when a
// JAAS section logs in with Kerberos) between ensemble members, on the quorum and election ports (quorum.auth.*; docs/sasl.md).
// A member authenticates, as a learner, on every connection it opens, and
// checks, as a server, every connection it accepts.
type QuorumSASL struct {
	// Enabled is quorum.auth.enableSasl: without it no other key counts.
	Enabled bool
	// LearnerRequire is quorum.auth.learnerRequireSasl: this member
	// authenticates on the connections it opens. Without it it sends no
	// authentication at all.
	LearnerRequire bool
	// ServerRequire is quorum.auth.serverRequireSasl: a connection that
	// does not authenticate, or fails to, is closed. Without it such a
	// connection is served (a rolling change to SASL).
	ServerRequire bool
	// LearnerSection and ServerSection are quorum.auth.learner.saslLoginContext
	// and quorum.auth.server.saslLoginContext, the JAAS sections holding
	// this member's own user name and password and the users it accepts;
	// empty means ZooKeeper's defaults (QuorumLearner, QuorumServer).
	LearnerSection, ServerSection string
	// ServicePrincipal is quorum.auth.kerberos.servicePrincipal: the
	// principal a Kerberos learner asks a ticket for, service/host or
	// service/_HOST, where _HOST is the host of the server it connects to
	// (lower case); empty means DefaultQuorumServicePrincipal.
	ServicePrincipal string
}

// Principal returns the Kerberos service principal setting.
func (q *QuorumSASL) Principal() string {
	if q.ServicePrincipal == "" {
		return DefaultQuorumServicePrincipal
	}
	return q.ServicePrincipal
}

// Learner returns the JAAS section of this member's own credentials.
func (q *QuorumSASL) Learner() string {
	if q.LearnerSection == "" {
		return DefaultQuorumLearnerSection
	}
	return q.LearnerSection
}

// Server returns the JAAS section of the users this member accepts.
func (q *QuorumSASL) Server() string {
	if q.ServerSection == "" {
		return DefaultQuorumServerSection
	}
	return q.ServerSection
}

// quorumSASLSettings are the quorum SASL keys keeper implements, by their
// zoo.cfg spelling; quorumSASLSetting also accepts the "zookeeper." one.
var quorumSASLSettings = map[string]setter{
	"quorum.auth.enableSasl":               boolField(func(c *Config) *bool { return &c.QuorumSASL.Enabled }),
	"quorum.auth.learnerRequireSasl":       boolField(func(c *Config) *bool { return &c.QuorumSASL.LearnerRequire }),
	"quorum.auth.serverRequireSasl":        boolField(func(c *Config) *bool { return &c.QuorumSASL.ServerRequire }),
	"quorum.auth.learner.saslLoginContext": sectionField(func(c *Config) *string { return &c.QuorumSASL.LearnerSection }),
	"quorum.auth.server.saslLoginContext":  sectionField(func(c *Config) *string { return &c.QuorumSASL.ServerSection }),
	"quorum.auth.kerberos.servicePrincipal": func(p *parser, v string) error {
		if v == "" {
			// ZooKeeper would ask the KDC for a ticket to "" at every
			// connection and fail each.
			return errors.New("the quorum service principal must not be empty")
		}
		p.c.QuorumSASL.ServicePrincipal = v
		return nil
	},
}

// quorumSASLSetting returns the setter of a quorum SASL key keeper
// implements, in either spelling.
func quorumSASLSetting(key string) (setter, bool) {
	set, ok := quorumSASLSettings[strings.TrimPrefix(key, "zookeeper.")]
	return set, ok
}

// sectionField sets a JAAS section name. An empty one is refused: ZooKeeper
// would look for a section named "" and fail its start.
func sectionField(field func(*Config) *string) setter {
	return func(p *parser, v string) error {
		if v == "" {
			return errors.New("a JAAS section name must not be empty")
		}
		*field(p.c) = v
		return nil
	}
}

// validate checks the keys against each other as ZooKeeper's
// QuorumPeerConfig does: requiring SASL needs it enabled, and a member
// that requires it of others must authenticate itself.
func (q *QuorumSASL) validate() []error {
	var errs []error
	if !q.Enabled && q.ServerRequire {
		errs = append(errs, errors.New("zoocfg: quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.serverRequireSasl"))
	}
	if !q.Enabled && q.LearnerRequire {
		errs = append(errs, errors.New("zoocfg: quorum.auth.enableSasl is disabled, so cannot enable quorum.auth.learnerRequireSasl"))
	}
	if !q.LearnerRequire && q.ServerRequire {
		errs = append(errs, errors.New("zoocfg: quorum.auth.learnerRequireSasl is disabled, so cannot enable quorum.auth.serverRequireSasl"))
	}
	return errs
}
