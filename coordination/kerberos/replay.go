package kerberos

import (
	"errors"
	"time"
)

// ErrReplay is an authenticator seen before within the clock skew.
var ErrReplay = errors.New("kerberos: replayed authenticator")

// replayKey identifies an authenticator: its client and time to the
// microsecond, as Kerberos replay caches do.
type replayKey struct {
	client string
	ctime  int64 // microseconds since the epoch
}

// replayCache remembers authenticators until their time is out of the
// clock skew, when they would be refused anyway.
type replayCache struct {
	max  int
	seen map[replayKey]time.Time // when each may be forgotten
}

// add records k, forgettable after until; it fails for a key already
// recorded, and when the cache holds max live entries.
func (r *replayCache) add(k replayKey, until, now time.Time) error {
	if _, dup := r.seen[k]; dup {
		return ErrReplay
	}
	if len(r.seen) >= r.max {
		for old, t := range r.seen {
			if now.After(t) {
				delete(r.seen, old)
			}
		}
		if len(r.seen) >= r.max {
			return errors.New("kerberos: replay cache full; refusing the login rather than forget an authenticator")
		}
	}
	r.seen[k] = until
	return nil
}
