package metadata

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
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
	// Logger receives session state changes, and go-zookeeper's own lines
	// at debug level; nil discards them.
	Logger *slog.Logger
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
// for the Stores of a process that owns its connection (a bookie). The
// go-zookeeper client behind it reconnects after a lost connection and,
// after an expiry, opens a new session by itself; a Registration notices
// the expiry and registers again. Safe for concurrent use.
type Session struct {
	conn    *zk.Conn
	timeout time.Duration
	log     *slog.Logger
	events  chan struct{} // closed when the event loop ends (the connection closed)
}

// Dial connects to the coordination service and waits until a session is
// established, ctx is done, or ConnectTimeout passes.
func Dial(ctx context.Context, cfg DialConfig) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Session{timeout: cfg.SessionTimeout, log: cfg.Logger, events: make(chan struct{})}
	if s.timeout == 0 {
		s.timeout = DefaultSessionTimeout
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	wait := cfg.ConnectTimeout
	if wait == 0 {
		wait = max(s.timeout, minConnectWait)
	}
	servers := strings.Join(cfg.Servers, ",")
	conn, events, err := zk.Connect(cfg.Servers, s.timeout, zk.WithLogger(zkLogger{s.log}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("metadata: connect to %s: %w", servers, err)
	}
	s.conn = conn
	established := make(chan struct{})
	go s.followEvents(events, established)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-established:
		FirstRoundTrip(conn)
		return s, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("no session within %v", wait)
	}
	s.Close()
	return nil, fmt.Errorf("metadata: connect to %s: %w", servers, err)
}

// FirstRoundTrip makes one request without a watch on a connection that
// just got its session, before its owner sets any watch. go-zookeeper
// v1.0.4 reads the connection's last zxid without a lock when it re-sends
// the watches it holds (sendSetWatches, right after a connection is made)
// while its receiving goroutine writes it: a watch answered before the
// connection's loop got there makes that a data race (go-zookeeper/zk pull
// request 35, unmerged). A round trip first lets the loop pass that point
// with no watches to re-send. It narrows the window; a reconnect with
// watches set can still meet it.
func FirstRoundTrip(conn *zk.Conn) {
	_, _, _ = conn.Exists("/")
}

// followEvents drains the session's event channel until the connection
// closes, signals established once, and logs expiries.
func (s *Session) followEvents(events <-chan zk.Event, established chan struct{}) {
	defer close(s.events)
	first := true
	for ev := range events {
		if ev.Type != zk.EventSession {
			continue
		}
		switch ev.State {
		case zk.StateHasSession:
			if first {
				first = false
				close(established)
			}
		case zk.StateExpired:
			s.log.Warn("metadata session expired; the client opens a new one")
		}
	}
}

// NewStore returns a store over the session's connection. Close the store
// before the session.
func (s *Session) NewStore(cfg Config) (*Store, error) {
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	return newStore(s.conn, cfg)
}

// SessionTimeout returns the session timeout asked for.
func (s *Session) SessionTimeout() time.Duration { return s.timeout }

// Close ends the session: the server deletes its ephemeral znodes, so every
// registration made on it goes at once.
func (s *Session) Close() {
	s.conn.Close()
	<-s.events
}

// zkLogger sends go-zookeeper's log lines to slog at debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("zookeeper client", "msg", fmt.Sprintf(format, args...))
}
