package session

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// Config configures a Table.
type Config struct {
	// TickMs is the width of an expiry bucket in ms: ZooKeeper's tickTime.
	// Must be positive.
	TickMs int64
	// ServerID goes into the top byte of every session id this table
	// creates: myid in a quorum, 1 standalone. 0..255.
	ServerID int64
	// StartMs is the monotonic clock reading when the table is made. It
	// seeds the id generator (InitialID), so that a restarted server does
	// not hand out the ids of its previous run.
	StartMs int64
}

// Validate reports whether c is usable.
func (c Config) Validate() error {
	if c.TickMs <= 0 {
		return fmt.Errorf("session: tick %d ms must be positive", c.TickMs)
	}
	if c.ServerID < 0 || c.ServerID > 255 {
		return fmt.Errorf("session: server id %d does not fit in the top byte of a session id", c.ServerID)
	}
	return nil
}

// Session is a snapshot of one session's entry in the table.
type Session struct {
	ID int64
	// TimeoutMs is the negotiated timeout that touches use. A reconnect
	// may change it (SetTimeout).
	TimeoutMs int32
	// CreateTimeoutMs is the timeout of the createSession txn (or the
	// snapshot) that made the session. Snapshots persist this value, not
	// TimeoutMs, so that every replica writes the same session list.
	CreateTimeoutMs int32
	// ExpiresAtMs is the expiry bucket the session was last put in: it
	// expires when the clock reaches this value unless touched first.
	ExpiresAtMs int64
	// Closing is set once the session is expiring or being closed. A
	// closing session cannot be touched; new requests on it get
	// SessionExpired until the closeSession txn removes it.
	Closing bool
}

// Bucket is one expiry bucket, as the dump four-letter word lists them.
type Bucket struct {
	ExpiresAtMs int64
	IDs         []int64 // ascending
}

// Table is the session table and its expiry buckets. It is not safe for
// concurrent use: one goroutine (the server's apply loop) owns it.
type Table struct {
	tickMs int64
	nextID int64

	sessions map[int64]*entry
	// buckets maps an expiry time to the ids due then. A session is in at
	// most one bucket (none once Expire has taken it); empty buckets are
	// deleted at once, so every key here is a real deadline.
	buckets map[int64]map[int64]struct{}
}

type entry struct {
	Session
	inBucket bool // false once Expire took the session out of its bucket
}

// NewTable returns an empty table, or an error if cfg is invalid.
func NewTable(cfg Config) (*Table, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Table{
		tickMs:   cfg.TickMs,
		nextID:   InitialID(cfg.ServerID, cfg.StartMs),
		sessions: make(map[int64]*entry),
		buckets:  make(map[int64]map[int64]struct{}),
	}, nil
}

// expiryFor returns the bucket for a session touched at nowMs: the next
// multiple of the tick strictly after nowMs+timeoutMs.
func (t *Table) expiryFor(nowMs int64, timeoutMs int32) int64 {
	return ((nowMs+int64(timeoutMs))/t.tickMs + 1) * t.tickMs
}

// newID returns the next session id. Like ZooKeeper it counts up from
// InitialID; it also skips 0 (which means "no session" in a
// ConnectRequest), the container marker, and any id still in the table.
func (t *Table) newID() int64 {
	for {
		id := t.nextID
		t.nextID++
		if id == 0 || id == containerMarker {
			continue
		}
		if _, used := t.sessions[id]; used {
			continue
		}
		return id
	}
}

// Create registers a new session with a fresh id, due to expire timeoutMs
// (rounded up to the tick) after nowMs, and returns its id. The caller
// then runs the createSession txn, whose apply calls Add.
func (t *Table) Create(timeoutMs int32, nowMs int64) int64 {
	id := t.newID()
	t.Add(id, timeoutMs, nowMs)
	return id
}

// Add registers session id with timeoutMs, touched at nowMs: for a
// createSession txn, a snapshot being loaded, or a session learned from
// the leader. If the session is already present, Add updates both its
// timeouts and its bucket and leaves Closing alone, as ZooKeeper's
// trackSession and commitSession do. It reports whether the session is new.
func (t *Table) Add(id int64, timeoutMs int32, nowMs int64) bool {
	e, ok := t.sessions[id]
	if !ok {
		e = &entry{Session: Session{ID: id}}
		t.sessions[id] = e
	}
	e.TimeoutMs = timeoutMs
	e.CreateTimeoutMs = timeoutMs
	t.rebucket(e, nowMs)
	return !ok
}

// Touch records activity on session id at nowMs and moves it to its new
// bucket. It reports false, changing nothing, if the session is unknown or
// closing: the caller answers such requests with SessionExpired.
func (t *Table) Touch(id int64, nowMs int64) bool {
	e, ok := t.sessions[id]
	if !ok || e.Closing {
		return false
	}
	t.rebucket(e, nowMs)
	return true
}

// SetTimeout gives session id a new negotiated timeout, as a reconnect
// does, and touches it at nowMs. CreateTimeoutMs is unchanged. It reports
// false, changing nothing, if the session is unknown or closing.
func (t *Table) SetTimeout(id int64, timeoutMs int32, nowMs int64) bool {
	e, ok := t.sessions[id]
	if !ok || e.Closing {
		return false
	}
	e.TimeoutMs = timeoutMs
	t.rebucket(e, nowMs)
	return true
}

// Renew gives every session a full timeout from nowMs and clears Closing
// marks: what a server does when it becomes the one that expires sessions
// (a new leader). A close it had started and not finished was voided with
// the leadership it belonged to; until the session's client goes silent
// again nothing says it is dead, and it was only ever touched on the
// servers its client talked to.
func (t *Table) Renew(nowMs int64) {
	for _, id := range slices.Sorted(maps.Keys(t.sessions)) {
		e := t.sessions[id]
		e.Closing = false
		t.unbucket(e) // a session Expire took out of its bucket goes back in
		t.rebucket(e, nowMs)
	}
}

// rebucket moves e to the bucket for a touch at nowMs with its timeout.
func (t *Table) rebucket(e *entry, nowMs int64) {
	exp := t.expiryFor(nowMs, e.TimeoutMs)
	if e.inBucket && e.ExpiresAtMs == exp {
		return
	}
	t.unbucket(e)
	b := t.buckets[exp]
	if b == nil {
		b = make(map[int64]struct{})
		t.buckets[exp] = b
	}
	b[e.ID] = struct{}{}
	e.ExpiresAtMs = exp
	e.inBucket = true
}

// unbucket takes e out of its bucket, deleting the bucket if it empties.
func (t *Table) unbucket(e *entry) {
	if !e.inBucket {
		return
	}
	b := t.buckets[e.ExpiresAtMs]
	delete(b, e.ID)
	if len(b) == 0 {
		delete(t.buckets, e.ExpiresAtMs)
	}
	e.inBucket = false
}

// Get returns session id's entry.
func (t *Table) Get(id int64) (Session, bool) {
	e, ok := t.sessions[id]
	if !ok {
		return Session{}, false
	}
	return e.Session, true
}

// SetClosing marks session id closing, when its closeSession request is
// accepted. It stays in the table, untouchable, until Remove. It reports
// whether the session exists.
func (t *Table) SetClosing(id int64) bool {
	e, ok := t.sessions[id]
	if ok {
		e.Closing = true
	}
	return ok
}

// Remove deletes session id, when its closeSession txn is applied. It
// reports whether the session existed.
func (t *Table) Remove(id int64) bool {
	e, ok := t.sessions[id]
	if !ok {
		return false
	}
	t.unbucket(e)
	delete(t.sessions, id)
	return true
}

// Expire takes every bucket due at nowMs (expiry time <= nowMs) out of
// the table and returns the ids in them, ascending, each now marked
// Closing. The caller runs a closeSession txn for each. Sessions that were
// already closing leave their bucket too but are not returned: their
// closeSession is already under way. Expired sessions stay in the table
// until Remove.
//
// The cost is proportional to the number of buckets, which is bounded by
// the longest timeout over the tick, plus the sessions returned.
func (t *Table) Expire(nowMs int64) []int64 {
	var out []int64
	for exp, b := range t.buckets {
		if exp > nowMs {
			continue
		}
		for id := range b {
			e := t.sessions[id]
			e.inBucket = false
			if !e.Closing {
				e.Closing = true
				out = append(out, id)
			}
		}
		delete(t.buckets, exp)
	}
	slices.Sort(out)
	return out
}

// NextExpiryMs returns the earliest time at which Expire will return
// something, or false if no session is waiting to expire. The driver
// sleeps until then (or until the next touch makes it later, which it may
// ignore: an early Expire just returns nothing).
func (t *Table) NextExpiryMs() (int64, bool) {
	if len(t.buckets) == 0 {
		return 0, false
	}
	first := true
	var next int64
	for exp := range t.buckets {
		if first || exp < next {
			next, first = exp, false
		}
	}
	return next, true
}

// Len returns the number of sessions in the table, closing ones included.
func (t *Table) Len() int { return len(t.sessions) }

// All returns every session, ordered by id.
func (t *Table) All() []Session {
	out := make([]Session, 0, len(t.sessions))
	for _, e := range t.sessions {
		out = append(out, e.Session)
	}
	slices.SortFunc(out, func(a, b Session) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Buckets returns the expiry buckets, earliest first, for the dump
// four-letter word. Sessions that Expire already took are in none.
func (t *Table) Buckets() []Bucket {
	out := make([]Bucket, 0, len(t.buckets))
	for _, exp := range slices.Sorted(maps.Keys(t.buckets)) {
		ids := slices.Sorted(maps.Keys(t.buckets[exp]))
		out = append(out, Bucket{ExpiresAtMs: exp, IDs: ids})
	}
	return out
}
