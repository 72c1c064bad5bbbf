package server

import (
	"keeper/coordination/zab"
	"keeper/internal/metric"
)

// phaseTimes are ZooKeeper's quorum timings that a member's changes of
// role and Zab phase mark, in ms (docs/observability.md). The loop shows
// it the node's role and phase after every step and tick (observe), so a
// change is seen within the step that made it.
type phaseTimes struct {
	// election: from the start of looking to following or leading
	// (election_time; an observer's search for a leader is not counted, as
	// in ZooKeeper).
	election *metric.Summary
	// unavailable: from the member's start, or its leaving broadcast, to
	// broadcast again (unavailable_time), and the same when it comes back
	// as leader (leader_unavailable_time).
	unavailable, leaderUnavailable *metric.Summary
	// followerSync, observerSync: a learner's synchronization phase, from
	// the leader's LEADERINFO to UPTODATE (follower_sync_time,
	// observer_sync_time).
	followerSync, observerSync *metric.Summary

	role  zab.Role
	phase zab.Phase
	// The starts of the spans under way (MonoMs), or -1: looking, out of
	// broadcast, in synchronization.
	lookingSinceMs, unavailableSinceMs, syncSinceMs int64
}

func newPhaseTimes(r *metric.Registry) phaseTimes {
	return phaseTimes{
		election:          r.Summary("election_time", false),
		unavailable:       r.Summary("unavailable_time", false),
		leaderUnavailable: r.Summary("leader_unavailable_time", false),
		followerSync:      r.Summary("follower_sync_time", false),
		observerSync:      r.Summary("observer_sync_time", false),
		// A standalone server never starts: nothing is under way.
		lookingSinceMs: -1, unavailableSinceMs: -1, syncSinceMs: -1,
	}
}

// start marks the member's start, looking and not serving.
func (t *phaseTimes) start(nowMs int64) {
	t.role, t.phase = zab.Looking, zab.PhaseElection
	t.lookingSinceMs, t.unavailableSinceMs, t.syncSinceMs = nowMs, nowMs, -1
}

// observe records the spans that the node's role and phase now end, and
// marks those they begin.
func (t *phaseTimes) observe(role zab.Role, phase zab.Phase, nowMs int64) {
	if role == t.role && phase == t.phase {
		return
	}
	learner := role == zab.Following || role == zab.Observing
	switch {
	case role == zab.Looking && t.role != zab.Looking:
		t.lookingSinceMs = nowMs
	case role != zab.Looking && t.lookingSinceMs >= 0:
		if role != zab.Observing {
			t.election.Add(nowMs - t.lookingSinceMs)
		}
		t.lookingSinceMs = -1
	}
	switch {
	case phase != zab.PhaseBroadcast && t.unavailableSinceMs < 0:
		t.unavailableSinceMs = nowMs
	case phase == zab.PhaseBroadcast && t.unavailableSinceMs >= 0:
		d := nowMs - t.unavailableSinceMs
		t.unavailable.Add(d)
		if role == zab.Leading {
			t.leaderUnavailable.Add(d)
		}
		t.unavailableSinceMs = -1
	}
	switch {
	case !learner || role != t.role && t.role != zab.Looking:
		t.syncSinceMs = -1
	case phase == zab.PhaseSynchronization && t.syncSinceMs < 0:
		t.syncSinceMs = nowMs
	case phase == zab.PhaseBroadcast && t.syncSinceMs >= 0:
		s := t.followerSync
		if role == zab.Observing {
			s = t.observerSync
		}
		s.Add(nowMs - t.syncSinceMs)
		t.syncSinceMs = -1
	case phase != zab.PhaseSynchronization:
		t.syncSinceMs = -1
	}
	t.role, t.phase = role, phase
}
