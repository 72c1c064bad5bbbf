package diff

import (
	"fmt"
	"strings"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// stepKind says how a step is carried out.
type stepKind int

const (
	// kindRequest sends one request on the slot's connection.
	kindRequest stepKind = iota
	// kindClose sends closeSession, then opens a new session in the slot.
	kindClose
	// kindReconnect drops the slot's connection, reattaches the session on
	// a new one and optionally restores watches with setWatches(2).
	kindReconnect
	// kindExpire drops the slot's connection without closing its session,
	// waits until the watcher slot gets a notification (the session's
	// ephemerals are deleted when it expires), then opens a new session in
	// the slot.
	kindExpire
	// kindBadReattach presents the slot's session id with a wrong password
	// (or, if stale, the slot's last closed session) on a new connection.
	kindBadReattach
)

// step is one operation, sent to the same slot on both servers. Its records
// are only read once built, so both sides may encode them at once.
type step struct {
	kind stepKind
	slot int
	name string // the generator's name for the operation, for knownBugs and logs
	op   zkproto.Op
	req  jute.Record

	timeoutMs int32                // kindClose, kindExpire: requested timeout of the new session
	watcher   int                  // kindExpire: the slot that waits for a notification
	stale     bool                 // kindBadReattach: use the slot's last closed session
	watches   *zkproto.SetWatches2 // kindReconnect: watches to restore (op says which record); RelativeZxid rebased per side

	noRead      bool // an exists that keeper refuses for lack of READ (set by probeExists)
	expectClose bool // the server must close the connection after its reply
}

func (st *step) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "slot %d ", st.slot)
	switch st.kind {
	case kindClose:
		fmt.Fprintf(&b, "closeSession, then a new session (timeout %d ms)", st.timeoutMs)
	case kindExpire:
		fmt.Fprintf(&b, "drop the connection, wait for the session to expire (slot %d watches), then a new session", st.watcher)
	case kindBadReattach:
		if st.stale {
			b.WriteString("reattach to the slot's last closed session on a new connection")
		} else {
			b.WriteString("reattach to the slot's session with a wrong password on a new connection")
		}
	case kindReconnect:
		b.WriteString("drop the connection and reattach the session")
		if st.watches != nil {
			fmt.Fprintf(&b, ", then %v %s", st.op, describe(st.watches))
		}
	default:
		fmt.Fprintf(&b, "%v(%d) %s", st.op, int32(st.op), describe(st.req))
		if st.noRead {
			b.WriteString(" [no READ: sent without watch]")
		}
	}
	return b.String()
}

// describe renders a request record readably: data as quoted strings, null
// buffers and vectors as null.
func describe(rec jute.Record) string {
	switch r := rec.(type) {
	case nil:
		return "{}"
	case *zkproto.CreateRequest:
		return fmt.Sprintf("{path=%q data=%s acl=%s flags=%d}", r.Path, data(r.Data), acls(r.ACL), r.Flags)
	case *zkproto.CreateTTLRequest:
		return fmt.Sprintf("{path=%q data=%s acl=%s flags=%d ttl=%d}", r.Path, data(r.Data), acls(r.ACL), r.Flags, r.TTLMs)
	case *zkproto.SetDataRequest:
		return fmt.Sprintf("{path=%q data=%s version=%d}", r.Path, data(r.Data), r.Version)
	case *zkproto.SetACLRequest:
		return fmt.Sprintf("{path=%q acl=%s version=%d}", r.Path, acls(r.ACL), r.Version)
	case *zkproto.AuthPacket:
		return fmt.Sprintf("{type=%d scheme=%q auth=%s}", r.Type, r.Scheme, data(r.Auth))
	case *zkproto.MultiRequest:
		parts := make([]string, len(r.Ops))
		for i, op := range r.Ops {
			parts[i] = fmt.Sprintf("%v%s", op.Op, describe(op.Record))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprintf("%+v", rec)
}

func data(b []byte) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprintf("%q", b)
}

func acls(list []zkproto.ACL) string {
	if list == nil {
		return "null"
	}
	parts := make([]string, len(list))
	for i, a := range list {
		parts[i] = fmt.Sprintf("%d:%s:%s", a.Perms, a.ID.Scheme, a.ID.ID)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// requestPath returns the path a single-path request names.
func requestPath(rec jute.Record) (string, bool) {
	switch r := rec.(type) {
	case *zkproto.CreateRequest:
		return r.Path, true
	case *zkproto.CreateTTLRequest:
		return r.Path, true
	case *zkproto.DeleteRequest:
		return r.Path, true
	case *zkproto.ExistsRequest:
		return r.Path, true
	case *zkproto.GetDataRequest:
		return r.Path, true
	case *zkproto.SetDataRequest:
		return r.Path, true
	case *zkproto.GetACLRequest:
		return r.Path, true
	case *zkproto.SetACLRequest:
		return r.Path, true
	case *zkproto.GetChildrenRequest:
		return r.Path, true
	case *zkproto.GetChildren2Request:
		return r.Path, true
	case *zkproto.CheckVersionRequest:
		return r.Path, true
	}
	return "", false
}
