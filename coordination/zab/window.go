package zab

import (
	"sort"

	"keeper/coordination/zxid"
)

// window is the tail of the log the node keeps in memory: enough to bring a
// learner that is a little behind up to date with a DIFF.
type window struct {
	entries []Entry // ascending zxids
	// base is the oldest zxid of the history the window knows: every zxid
	// of the log from base on is entries' or base itself. It is
	// entries[0].Zxid, or last when the window is empty (or the zxid of the
	// snapshot the log was reset to).
	base zxid.ID
	last zxid.ID
	max  int
}

func (w *window) init(recent []Entry, last zxid.ID, maxEntries int) {
	w.max = maxEntries
	w.last = last
	w.base = last
	if len(recent) > 0 {
		w.entries = append([]Entry(nil), recent...)
		w.base = recent[0].Zxid
	}
	w.trim(last)
}

// append adds an entry at the end.
func (w *window) append(e Entry) {
	w.entries = append(w.entries, e)
	w.last = e.Zxid
}

// trim drops the oldest entries beyond max, but never one above applied:
// entries not yet handed out as committed must stay until they are. It
// trims in steps of an eighth of the window, so that the copy it makes is
// paid once per max/8 appends, not on every one (which cost a leader a
// fifth of its CPU).
func (w *window) trim(applied zxid.ID) {
	over := len(w.entries) - w.max
	if over <= 0 || (over < w.max/8 && len(w.entries) < 2*w.max) {
		return
	}
	k := sort.Search(len(w.entries), func(i int) bool { return w.entries[i].Zxid > applied })
	over = min(over, k)
	if over > 0 {
		w.entries = append(w.entries[:0:0], w.entries[over:]...)
		w.base = w.entries[0].Zxid
	}
}

// truncate drops every entry after z.
func (w *window) truncate(z zxid.ID) {
	i := sort.Search(len(w.entries), func(i int) bool { return w.entries[i].Zxid > z })
	w.entries = w.entries[:i]
	w.last = z
	if z < w.base {
		w.base = z
	}
}

// reset forgets everything and starts at z (after a snapshot install).
func (w *window) reset(z zxid.ID) {
	w.entries, w.base, w.last = nil, z, z
}

// has reports whether z is a zxid the window can start a DIFF after: an
// entry in it, or its base.
func (w *window) has(z zxid.ID) bool {
	if z == w.base {
		return true
	}
	i := sort.Search(len(w.entries), func(i int) bool { return w.entries[i].Zxid >= z })
	return i < len(w.entries) && w.entries[i].Zxid == z
}

// covers reports whether every entry after z is in the window.
func (w *window) covers(z zxid.ID) bool { return z >= w.base }

// between returns the entries in (from, to], in order.
func (w *window) between(from, to zxid.ID) []Entry {
	lo := sort.Search(len(w.entries), func(i int) bool { return w.entries[i].Zxid > from })
	hi := sort.Search(len(w.entries), func(i int) bool { return w.entries[i].Zxid > to })
	return w.entries[lo:hi:hi]
}

// prevBefore returns the highest zxid in the window below z, or the base.
func (w *window) prevBefore(z zxid.ID) zxid.ID {
	i := sort.Search(len(w.entries), func(i int) bool { return w.entries[i].Zxid >= z })
	if i == 0 {
		return w.base
	}
	return w.entries[i-1].Zxid
}
