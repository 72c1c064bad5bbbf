package metadata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"keeper/coordination/zkclient"
)

// DefaultSessionTimeout is BookKeeper's zkTimeout default.
const DefaultSessionTimeout = 10 * time.Second

// minConnectWait is the least Dial waits for a first session when the
// session timeout is shorter: a server that is starting up or busy needs a
// few seconds whatever the timeout.
const minConnectWait = 10 * time.Second

// DialConfig configures Dial. Servers is required; the zero value of every
// other field is a sensible default.
type DialConfig struct {
	// Servers are the coordination servers, host:port.
	Servers []string
	// SessionTimeout is the session timeout to ask for; 0 means
	// DefaultSessionTimeout. The server may grant another within its
	// bounds.
	SessionTimeout time.Duration
	// ConnectTimeout bounds Dial's wait for the first session; 0 means
	// the session timeout, but at least 10 s.
	ConnectTimeout time.Duration
	// Logger receives session state changes (reattached, expired) and the
	// client's debug lines; nil discards them.
	Logger *slog.Logger
	// Security is the session's TLS and SASL towards the servers
	// (zkclient.NewSecurity); the zero value is plaintext without SASL.
	Security zkclient.Security
}

// Validate checks the configuration.
func (c DialConfig) Validate() error {
	if len(c.Servers) == 0 {
		return errors.New("metadata: no coordination servers to dial")
	}
	for _, s := range c.Servers {
		if s == "" || strings.ContainsAny(s, " ,;/") {
			return fmt.Errorf("metadata: server %q: want host:port", s)
		}
	}
	if c.SessionTimeout < 0 || c.ConnectTimeout < 0 {
		return fmt.Errorf("metadata: negative timeout (session %v, connect %v)", c.SessionTimeout, c.ConnectTimeout)
	}
	return nil
}

// Session is one session with the coordination service, opened by Dial,
// for the Stores of a process that owns its connection (a bookie). It is a
// zkclient.Session: after a lost connection it reattaches the session to
// the next server, and after an expiry it opens a new session and ends the
// old session's watches, so a Registration notices and registers again.
// Safe for concurrent use.
type Session struct {
	zk  *zkclient.Session
	log *slog.Logger
}

// Dial connects to the coordination service and waits until a session is
// established, ctx is done, or ConnectTimeout passes.
func Dial(ctx context.Context, cfg DialConfig) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	timeout := cfg.SessionTimeout
	if timeout == 0 {
		timeout = DefaultSessionTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	wait := cfg.ConnectTimeout
	if wait == 0 {
		wait = max(timeout, minConnectWait)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, wait, fmt.Errorf("no session within %v", wait))
	defer cancel()
	opts := zkclient.SessionOptions{Options: zkclient.Options{SessionTimeout: timeout, Logger: log}}
	cfg.Security.Apply(&opts.Options)
	zs, err := zkclient.OpenSession(ctx, cfg.Servers, opts)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return &Session{zk: zs, log: log}, nil
}

// NewStore returns a store over the session. Close the store before the
// session.
func (s *Session) NewStore(cfg Config) (*Store, error) {
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	return newStore(s.zk, cfg)
}

// OpenTree returns a store over the session with the layout the tree's
// LAYOUT names (cfg.Layout if it has none yet), after Init has made sure
// the tree exists: what a bookie does before it registers. Close the
// store before the session.
func (s *Session) OpenTree(ctx context.Context, cfg Config) (*Store, error) {
	probe, err := s.NewStore(cfg)
	if err != nil {
		return nil, err
	}
	layout, found, err := probe.StoredLayout(ctx)
	probe.Close()
	if err != nil {
		return nil, err
	}
	if found {
		cfg.Layout = layout
	}
	store, err := s.NewStore(cfg)
	if err != nil {
		return nil, err
	}
	if err := store.Init(ctx); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// SessionTimeout returns the session timeout asked for.
func (s *Session) SessionTimeout() time.Duration { return s.zk.SessionTimeout() }

// Close ends the session: the server deletes its ephemeral znodes, so every
// registration made on it goes at once.
func (s *Session) Close() {
	if err := s.zk.Close(); err != nil {
		s.log.Debug("metadata session close", "err", err)
	}
}
