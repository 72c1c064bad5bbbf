package clienttls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
)

// Config is the client port's TLS configuration, from zoo.cfg's ssl.* and
// client.certReload keys, or the quorum ports', from ssl.quorum.* and
// sslQuorumReloadCertFiles (Prefix "ssl.quorum.").
type Config struct {
	// Prefix is the zoo.cfg prefix of the keys, for error messages: ""
	// means "ssl.", the client port's.
	Prefix string
	// KeyStore holds the server's private key and certificate chain;
	// required.
	KeyStore Store
	// TrustStore holds the certificates a client's certificate must chain
	// to; with no Location, the system's roots, as Java's default trust
	// store.
	TrustStore Store
	// ClientAuth is ssl.clientAuth.
	ClientAuth ClientAuth
	// Protocol is ssl.protocol ("" is DefaultProtocol); with
	// EnabledProtocols nil it is the one version enabled.
	Protocol string
	// EnabledProtocols is ssl.enabledProtocols, Java's names; nil means
	// Protocol alone.
	EnabledProtocols []string
	// CipherSuites is ssl.ciphersuites, Java's names; nil means
	// ZooKeeper's default list.
	CipherSuites []string
	// Reload is client.certReload: a handshake that begins after either
	// store file changed gets the new files' key, certificate and trust.
	Reload bool
	// Logger receives reload failures; nil discards them.
	Logger *slog.Logger
}

// Server hands out the client port's tls.Config. It is safe for
// concurrent use.
type Server struct {
	cfg  Config
	log  *slog.Logger
	base *tls.Config // versions, suites, client auth; no key or trust

	mu sync.Mutex // guards the fields below
	// cur is the configuration handshakes use now.
	cur *tls.Config
	// loaded are the store files' states cur was loaded from; failed are
	// the states a reload last failed on, so a broken file is tried once
	// per change, not once per handshake.
	loaded, failed storeStates
	statFailed     bool // the last stat failed (logged once)
}

// storeStates are the key and trust store files' stats; trust is nil
// without a trust store.
type storeStates struct{ key, trust os.FileInfo }

// New checks cfg and loads the stores. An error names the zoo.cfg key and
// the file, never a password.
func New(cfg Config) (*Server, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = "ssl."
	}
	if cfg.KeyStore.Location == "" {
		return nil, errors.New(cfg.Prefix + "keyStore.location: not set; a TLS port needs the server's key and certificate")
	}
	lo, hi, err := versionRange(cfg.Prefix, cfg.Protocol, cfg.EnabledProtocols)
	if err != nil {
		return nil, err
	}
	suites, err := cipherSuites(cfg.Prefix, cfg.CipherSuites, lo, hi)
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg: cfg,
		log: logger,
		base: &tls.Config{
			MinVersion:   lo,
			MaxVersion:   hi,
			CipherSuites: suites,
			ClientAuth:   cfg.ClientAuth.tls(),
		},
	}
	states, err := s.stat()
	if err != nil {
		return nil, err
	}
	cur, err := s.load()
	if err != nil {
		return nil, err
	}
	s.cur, s.loaded = cur, states
	return s, nil
}

// TLSConfig returns the configuration to serve the client port with. With
// Reload, it picks up changed store files at each handshake.
func (s *Server) TLSConfig() *tls.Config {
	if !s.cfg.Reload {
		return s.current()
	}
	return &tls.Config{
		MinVersion: s.base.MinVersion,
		MaxVersion: s.base.MaxVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.current(), nil
		},
	}
}

// Current returns the configuration for a handshake beginning now: the
// stores' certificate and trust (ClientCAs: the trust store, or without
// one the system's roots; nil if they cannot be read) with the versions, suites and
// client authentication of the Config. With Reload, it first picks up
// changed store files. The result must not be modified.
func (s *Server) Current() *tls.Config { return s.current() }

// current returns the configuration for a handshake beginning now,
// reloading the stores first if Reload is on and a file changed. A reload
// that fails keeps the configuration in use and logs why.
func (s *Server) current() *tls.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cfg.Reload {
		return s.cur
	}
	states, err := s.stat()
	if err != nil {
		// A file missing for a moment while it is replaced: keep serving.
		if !s.statFailed {
			s.log.Warn("tls store reload failed; serving the previous certificate", "err", err)
		}
		s.statFailed = true
		return s.cur
	}
	s.statFailed = false
	if states.equal(s.loaded) || states.equal(s.failed) {
		return s.cur
	}
	cur, err := s.load()
	if err != nil {
		s.log.Warn("tls store reload failed; serving the previous certificate", "err", err)
		s.failed = states
		return s.cur
	}
	s.log.Info("tls stores reloaded", "keyStore", s.cfg.KeyStore.Location, "trustStore", s.cfg.TrustStore.Location)
	s.cur, s.loaded, s.failed = cur, states, storeStates{}
	return s.cur
}

// stat reads the store files' states.
func (s *Server) stat() (storeStates, error) {
	var st storeStates
	var err error
	if st.key, err = os.Stat(s.cfg.KeyStore.Location); err != nil {
		return st, wrapKey(s.cfg.Prefix+"keyStore.location", err)
	}
	if s.cfg.TrustStore.Location != "" {
		if st.trust, err = os.Stat(s.cfg.TrustStore.Location); err != nil {
			return st, wrapKey(s.cfg.Prefix+"trustStore.location", err)
		}
	}
	return st, nil
}

// load reads both stores into a configuration.
func (s *Server) load() (*tls.Config, error) {
	ks := s.cfg.KeyStore
	ks.Key = s.cfg.Prefix + "keyStore"
	cert, err := LoadKeyPair(ks)
	if err != nil {
		return nil, err
	}
	c := s.base.Clone()
	c.Certificates = []tls.Certificate{cert}
	if s.cfg.TrustStore.Location != "" {
		ts := s.cfg.TrustStore
		ts.Key = s.cfg.Prefix + "trustStore"
		certs, err := LoadTrusted(ts)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		for _, cert := range certs {
			pool.AddCert(cert)
		}
		c.ClientCAs = pool
	} else if pool, err := x509.SystemCertPool(); err == nil {
		// The system's roots, which verification uses for a nil ClientCAs
		// too; set, they are also the CA names a CertificateRequest
		// carries, as a Java server with its default trust store names
		// every CA of it.
		c.ClientCAs = pool
	}
	return c, nil
}

// Identity returns the subject of the client's certificate as Java
// formats it, if the client presented one and the handshake verified it.
func Identity(cs *tls.ConnectionState) (string, bool) {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return "", false
	}
	dn, err := SubjectDN(cs.PeerCertificates[0].RawSubject)
	if err != nil {
		return "", false
	}
	return dn, true
}

func (a storeStates) equal(b storeStates) bool {
	return sameFile(a.key, b.key) && sameFile(a.trust, b.trust)
}

// sameFile reports whether two stats are of the same unchanged file.
func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}

// wrapKey names the zoo.cfg key in a file error.
func wrapKey(key string, err error) error {
	return fmt.Errorf("%s: %w", key, err)
}
