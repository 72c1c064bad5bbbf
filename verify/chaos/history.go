package chaos

import (
	"encoding/json"
	"os"
	"slices"
	"sync"
	"time"

	"keeper/coordination/zkproto"
)

// Op is one request in a history: who sent it where, when it was invoked
// and when it returned, and what came back. Times are nanoseconds since
// the history began.
type Op struct {
	ID      int
	Client  string // the client's node name, "c3"
	Session int64
	Conn    int // the client's connection number, from 1
	Server  int // the id of the server the request went to
	Kind    zkproto.Op
	Path    string
	Data    string // what a create or setData writes: unique per write
	Version int32  // the expected version of a setData or delete
	Flags   int32  // a create's mode
	Watch   bool   // the read left a watch
	Xid     int32  // the request's xid; with Session it names its txn

	Call   int64
	Return int64 // -1 while or when the outcome is unknown
	// Unknown is set when no reply came (timeout, connection lost): the
	// request may or may not have taken effect.
	Unknown bool

	Err         zkproto.Code // the reply's result code
	Zxid        int64        // the reply header's zxid
	Seq         int64        // the reply's position among its connection's frames
	Stat        zkproto.Stat // the reply's Stat, when it has one
	Value       string       // getData's data
	Children    []string     // getChildren2's children
	CreatedPath string       // a create's actual path

	// Watches and RelZxid are a setWatches request's watches ("data:",
	// "exist:" or "child:" then the path) and relative zxid.
	Watches []string `json:",omitempty"`
	RelZxid int64    `json:",omitempty"`
}

// IsWrite reports whether the op is a write the log records.
func (o *Op) IsWrite() bool {
	switch o.Kind {
	case zkproto.OpCreate, zkproto.OpCreate2, zkproto.OpSetData, zkproto.OpDelete, zkproto.OpCloseSession:
		return true
	}
	return false
}

// EventRec is a watch notification as a client received it.
type EventRec struct {
	Client  string
	Session int64
	Conn    int
	Type    zkproto.EventType
	Path    string
	Zxid    int64
	Seq     int64
	At      int64 // ns since the history began
}

// SessionRec is one session a client held.
type SessionRec struct {
	Client  string
	ID      int64
	Timeout time.Duration
	// LastHeard is when the client last received anything (a reply, a
	// ping reply, an event) in this session, ns since the history began.
	LastHeard int64
	// ClosedByClient: the client sent closeSession and got its reply.
	ClosedByClient bool
	// ExpiredSeen: a server answered a resume with "session expired".
	ExpiredSeen bool
}

// ConnectRec is one handshake attempt.
type ConnectRec struct {
	Client   string
	Server   int
	Session  int64 // 0 for a new session
	LastZxid int64
	At       int64
	Result   string // ok, refused, expired, error
}

// History is what a run's clients did. Recording is safe for concurrent
// use; the accessors are for after the clients have stopped.
type History struct {
	start time.Time

	mu       sync.Mutex
	ops      []*Op
	events   []EventRec
	sessions []*SessionRec
	connects []ConnectRec
}

// NewHistory starts a history now.
func NewHistory() *History { return &History{start: time.Now()} }

// Now returns the time since the history began, in ns.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// At converts a wall time into history time.
func (h *History) At(t time.Time) int64 { return int64(t.Sub(h.start)) }

// Start is when the history began.
func (h *History) Start() time.Time { return h.start }

// add records a new op; the caller fills in its outcome later, from the
// same goroutine.
func (h *History) add(o *Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o.ID = len(h.ops)
	h.ops = append(h.ops, o)
}

func (h *History) addEvent(e EventRec) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

func (h *History) addSession(s *SessionRec) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessions = append(h.sessions, s)
}

func (h *History) addConnect(c ConnectRec) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.connects = append(h.connects, c)
}

// Ops returns the ops in invocation order.
func (h *History) Ops() []*Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}

// Events returns the notifications in arrival order per connection.
func (h *History) Events() []EventRec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// Sessions returns every session clients held.
func (h *History) Sessions() []*SessionRec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.sessions)
}

// Connects returns every handshake attempt.
func (h *History) Connects() []ConnectRec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.connects)
}

// WriteFile saves the history as JSON, for a failed run's report.
func (h *History) WriteFile(path string) error {
	h.mu.Lock()
	doc := struct {
		Start    time.Time
		Ops      []*Op
		Events   []EventRec
		Sessions []*SessionRec
		Connects []ConnectRec
	}{h.start, h.ops, h.events, h.sessions, h.connects}
	b, err := json.MarshalIndent(doc, "", " ")
	h.mu.Unlock()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// LoadHistory reads a history WriteFile saved.
func LoadHistory(path string) (*History, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Start    time.Time
		Ops      []*Op
		Events   []EventRec
		Sessions []*SessionRec
		Connects []ConnectRec
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	return &History{start: doc.Start, ops: doc.Ops, events: doc.Events, sessions: doc.Sessions, connects: doc.Connects}, nil
}
