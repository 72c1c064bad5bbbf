package zkclient

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"keeper/coordination/zkproto"
)

// Session states, as Java's KeeperState numbers them. A Session reports
// them on States, and a watch that ends without its node changing fires
// with one of them (Type zkproto.EventNone).
const (
	// StateDisconnected: the connection broke; the session is being
	// reattached elsewhere. Watches stay armed.
	StateDisconnected int32 = 0
	// StateConnected: a connection carries the session (again).
	StateConnected = zkproto.StateSyncConnected
	// StateExpired: the session is gone, with its ephemeral nodes and
	// watches; a new one is being opened.
	StateExpired int32 = -112
	// StateClosed: Close was called.
	StateClosed int32 = 7
)

// Defaults for zero SessionOptions fields.
const (
	// DefaultFirstBackoff is the pause after a round over every server
	// failed; it doubles up to DefaultMaxBackoff.
	DefaultFirstBackoff = 50 * time.Millisecond
	// DefaultMaxBackoff caps the pause between rounds: short enough to
	// reattach well within a session timeout, long enough not to spin on
	// an ensemble that is down.
	DefaultMaxBackoff = time.Second
	// DefaultStateBuffer is the capacity of States. States are levels, so
	// when it is full the oldest is dropped (see States).
	DefaultStateBuffer = 16
	// maxSessionWatches bounds the one-shot watches a Session keeps
	// (GetW, ExistsW, ChildrenW not yet fired): a caller that arms
	// watches in a loop without reading them fails instead of growing
	// the map for ever.
	maxSessionWatches = 1 << 16
)

// ErrTooManyWatches is the error of a watch call beyond maxSessionWatches.
var ErrTooManyWatches = errors.New("zkclient: too many watches armed on the session")

// SessionOptions configures OpenSession.
type SessionOptions struct {
	// Options applies to every connection; its SessionID, SessionPasswd,
	// LastZxidSeen and Watches must be zero (the Session sets them when
	// it reattaches).
	Options
	// FirstBackoff and MaxBackoff shape the pause between rounds over the
	// servers; zero means DefaultFirstBackoff and DefaultMaxBackoff.
	FirstBackoff, MaxBackoff time.Duration
	// StateBuffer is the capacity of States; zero means
	// DefaultStateBuffer.
	StateBuffer int
	// Seed seeds the shuffling of the servers; zero draws one.
	Seed uint64
}

// SessionEvent is a change of a Session's state.
type SessionEvent struct {
	State     int32 // one of the State* constants
	SessionID int64 // the session it concerns
}

// watchKey names the one-shot watches one notification fires: data
// watches (getData, exists) or child watches, on a path.
type watchKey struct {
	path  string
	child bool
}

// Session is a ZooKeeper session that outlives its connections, as the
// Java client's is: when the connection breaks it reattaches the session
// to the next server of the list (shuffled, with backoff between rounds)
// and sets its watches again there; when the session expired (the server
// says so, or no server took it back within the session timeout) it opens
// a new one, fires every armed watch with StateExpired and says so on
// States. It is safe for concurrent use.
//
// A call made while no connection is up waits for the next one (or for
// its ctx). A call in flight when the connection breaks fails with an
// error wrapping ErrConnectionLoss: its outcome is unknown.
//
// Watches are one-shot channels (GetW, ExistsW, ChildrenW) of capacity
// one, each receiving exactly one event: the notification that fired it,
// or an event of Type zkproto.EventNone with StateExpired or StateClosed
// when the watch ended with its session or with Close. The connection's
// reader goroutine hands each notification out as it reads it, in order
// with the replies, so a watch fires only on a change made after the
// reply that set it; it never blocks on a reader.
type Session struct {
	servers  []string
	opts     Options
	first    time.Duration
	maxPause time.Duration
	rng      *rand.Rand // owned by the run goroutine once OpenSession returns
	next     int        // index into servers of the next to try

	life   context.Context // cancelled by Close
	cancel context.CancelFunc
	states chan SessionEvent
	done   chan struct{} // closed when the run goroutine ends

	mu       sync.Mutex
	conn     *Conn         // nil while reconnecting
	id       int64         // the session's id: conn's, or the one being reattached
	ready    chan struct{} // closed when conn is set again
	closed   bool
	watchers map[watchKey][]chan zkproto.WatcherEvent
	nWatches int // watchers, plus slots reserved by calls in flight
}

// ParseServers splits a connect string "host:port,host:port,...". A
// chroot suffix is refused: the Session has none.
func ParseServers(connect string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(connect, ",") {
		s = strings.TrimSpace(s)
		if s == "" || strings.ContainsAny(s, " /;") {
			return nil, fmt.Errorf("zkclient: connect string %q: want host:port, comma-separated", connect)
		}
		out = append(out, s)
	}
	return out, nil
}

// OpenSession opens a session on one of servers (host:port), trying them
// in a shuffled order with backoff between rounds until one accepts or
// ctx ends.
func OpenSession(ctx context.Context, servers []string, opts SessionOptions) (*Session, error) {
	if len(servers) == 0 {
		return nil, errors.New("zkclient: no servers")
	}
	if opts.SessionID != 0 || opts.Watches != nil || opts.LastZxidSeen != 0 {
		return nil, errors.New("zkclient: a Session sets the session id, zxid and watches itself")
	}
	if opts.FirstBackoff < 0 || opts.MaxBackoff < 0 || opts.StateBuffer < 0 {
		return nil, errors.New("zkclient: negative session option")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Session{servers: append([]string(nil), servers...), opts: opts.withDefaults(),
		first: opts.FirstBackoff, maxPause: opts.MaxBackoff, done: make(chan struct{}),
		ready: make(chan struct{}), watchers: map[watchKey][]chan zkproto.WatcherEvent{}}
	if s.first == 0 {
		s.first = DefaultFirstBackoff
	}
	if s.maxPause == 0 {
		s.maxPause = max(DefaultMaxBackoff, s.first)
	}
	if opts.StateBuffer == 0 {
		opts.StateBuffer = DefaultStateBuffer
	}
	s.states = make(chan SessionEvent, opts.StateBuffer)
	// Notifications are handed out on each connection's reader goroutine,
	// in order with the replies: a watch armed by a reply's callback then
	// never takes a notification the server sent before that reply (a
	// change the reply already shows).
	s.opts.onEvent = s.fire
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	s.rng = rand.New(rand.NewPCG(seed, 0x5e55))
	s.shuffle()
	c, err := s.dialLoop(ctx, s.opts, false)
	if err != nil {
		return nil, fmt.Errorf("zkclient: open a session on %s: %w", strings.Join(servers, ","), err)
	}
	s.life, s.cancel = context.WithCancel(context.Background())
	s.conn, s.id = c, c.SessionID()
	close(s.ready)
	go s.run(c)
	return s, nil
}

// shuffle reorders the servers for the next round.
func (s *Session) shuffle() {
	s.rng.Shuffle(len(s.servers), func(i, j int) { s.servers[i], s.servers[j] = s.servers[j], s.servers[i] })
	s.next = 0
}

// States returns the channel of state changes: StateDisconnected,
// StateConnected (after a reattach or a new session), StateExpired, and
// finally StateClosed, after which it is closed. It is bounded; when it is
// full the oldest event is dropped, so a reader that falls behind still
// ends up seeing the latest state.
func (s *Session) States() <-chan SessionEvent { return s.states }

// offerState queues ev on States, dropping the oldest if it is full. Only
// the run goroutine sends.
func (s *Session) offerState(ev SessionEvent) {
	for {
		select {
		case s.states <- ev:
			return
		default:
		}
		select {
		case <-s.states:
		default:
		}
	}
}

// SessionID returns the session's id. While a lost connection is being
// replaced it is the id of the session being reattached; it changes when
// a new session replaces an expired one.
func (s *Session) SessionID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// SessionTimeout returns the session timeout asked for.
func (s *Session) SessionTimeout() time.Duration { return s.opts.SessionTimeout }

// Conn returns the current connection, waiting for one while the session
// is being reattached or renewed. The connection may break at any time;
// the Session then moves on to another, so do not keep it.
func (s *Session) Conn(ctx context.Context) (*Conn, error) {
	for {
		s.mu.Lock()
		c, ready, closed := s.conn, s.ready, s.closed
		s.mu.Unlock()
		switch {
		case closed:
			return nil, ErrClosed
		case c != nil:
			return c, nil
		}
		select {
		case <-ready:
		case <-s.life.Done():
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Close ends the session (the server deletes its ephemeral nodes) if a
// connection carries it, fires every armed watch with StateClosed, and
// waits for the Session's goroutine. Calls made after Close fail with
// ErrClosed.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.closed = true
	c := s.conn
	s.mu.Unlock()
	s.cancel()
	var err error
	if c != nil {
		err = c.Close()
	}
	<-s.done
	return err
}

// run follows the session: it hands out the current connection's events
// and, when that connection ends, reattaches the session or opens a new
// one, until Close.
func (s *Session) run(c *Conn) {
	defer close(s.done)
	defer close(s.states)
	defer s.fireAll(StateClosed)
	defer s.offerState(SessionEvent{State: StateClosed})
	for {
		for range c.Events() {
			// Handed out already, by the reader (opts.onEvent).
		}
		if !s.setConn(nil) {
			return
		}
		id := c.SessionID()
		s.offerState(SessionEvent{State: StateDisconnected, SessionID: id})
		s.opts.Logger.Debug("session disconnected", "session", fmt.Sprintf("%#x", id), "err", c.Err())
		next, restore, err := s.reattach(c)
		if s.life.Err() != nil {
			return
		}
		if err != nil {
			s.opts.Logger.Warn("session expired; opening a new one", "session", fmt.Sprintf("%#x", id), "err", err)
			s.fireAll(StateExpired)
			s.offerState(SessionEvent{State: StateExpired, SessionID: id})
			if next, err = s.newSession(); err != nil {
				return // closed
			}
		}
		if !s.setConn(next) {
			next.Close()
			return
		}
		next.restoreWatchesAsync(restore)
		s.offerState(SessionEvent{State: StateConnected, SessionID: next.SessionID()})
		c = next
	}
}

// setConn installs c as the current connection (nil: none while
// reconnecting). It reports false if the Session is closed.
func (s *Session) setConn(c *Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	switch {
	case c == nil && s.conn != nil:
		s.ready = make(chan struct{})
	case c != nil && s.conn == nil:
		close(s.ready)
	}
	s.conn = c
	if c != nil {
		s.id = c.SessionID()
	}
	return true
}

// reattach dials the servers in turn with old's session until one takes
// it back, and returns old's watches, to set again there once the run
// goroutine reads the new connection's events. It fails with an error
// wrapping zkproto.ErrSessionExpired when a server says the session is
// gone or when a session timeout passed since old last heard from its
// server (the server has expired it by then), and with the Session's
// context error after Close.
func (s *Session) reattach(old *Conn) (*Conn, *zkproto.SetWatches2, error) {
	deadline := old.lastHeard().Add(old.SessionTimeout())
	ctx, cancel := context.WithDeadline(s.life, deadline)
	defer cancel()
	ws := old.Watches()
	opts := s.opts
	opts.SessionID, opts.SessionPasswd, opts.LastZxidSeen = old.SessionID(), old.SessionPasswd(), old.LastZxid()
	c, err := s.dialLoop(ctx, opts, true)
	if err != nil && s.life.Err() == nil && !errors.Is(err, zkproto.ErrSessionExpired) {
		err = fmt.Errorf("no server took the session back within %v (%w): %w", old.SessionTimeout(), err, zkproto.ErrSessionExpired)
	}
	if err != nil {
		return nil, nil, err
	}
	s.opts.Logger.Info("session reattached", "session", fmt.Sprintf("%#x", c.SessionID()), "addr", c.Addr())
	return c, &ws, nil
}

// newSession opens a new session, trying the servers until one accepts or
// the Session is closed.
func (s *Session) newSession() (*Conn, error) {
	return s.dialLoop(s.life, s.opts, false)
}

// dialLoop dials the servers in turn, starting after the last one tried,
// pausing between rounds, until a dial succeeds or ctx ends. When
// reattaching, a server's word that the session expired ends it at once.
func (s *Session) dialLoop(ctx context.Context, opts Options, reattaching bool) (*Conn, error) {
	pause := s.first
	var last error
	for {
		for range len(s.servers) {
			addr := s.servers[s.next]
			s.next++
			if s.next == len(s.servers) {
				s.shuffle()
			}
			c, err := Dial(ctx, addr, opts)
			if err == nil {
				return c, nil
			}
			last = err
			if reattaching && errors.Is(err, zkproto.ErrSessionExpired) {
				return nil, err
			}
			if errors.Is(err, ErrSASLRefused) {
				// The Java client's AUTH_FAILED is final: the same
				// credentials will not do better on another try.
				return nil, err
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w (last: %w)", context.Cause(ctx), last)
			}
			s.opts.Logger.Debug("session dial failed", "addr", addr, "err", err)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (last: %w)", context.Cause(ctx), last)
		}
		pause = min(2*pause, s.maxPause)
	}
}
