package sim

import (
	"errors"

	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
)

// A real member persists Zab's batches on a persister goroutine while its
// loop goes on (coordination/server's driveQuorum and finishBatch): the
// loop sends the node's Early messages at once, hands one batch at a time
// to the persister, keeps stepping messages, ticks and client requests
// while it is on its way to disk, and finishes it (peer.Finish) when it
// comes back. The simulator drives the peer the same way, through the
// same calls, and makes the hand-back an event: a batch is written and
// finished persistDelayMs later, a delay drawn per batch, so that what the
// member handles while a batch is in flight is chosen from the seed. A
// crash before the event loses the batch, as a crash of the process loses
// what its persister had not written. Runs whose persistMaxMs is 0
// persist each batch at once, on the step that made it.

// maxPersistMs are the bounds a run draws for how long a batch takes to
// come back from disk: 0 (at once, as before), or up to a few ms, or up
// to about a zab tick.
var maxPersistMs = []int64{0, 3, 20, 60}

// pump carries out the peer's work after a step, as the server's loop
// does: client bytes and new writes at once, Early messages at once, and
// a batch to disk when none is on its way. It reports false when the
// server crashed.
func (c *Cluster) pump(s *server, now zkcore.Now) bool {
	for {
		s.peer.PumpCore(now)
		s.peer.SendEarly()
		n := s.peer.Node()
		if s.inflight != nil || s.peer.Err() != nil || !n.HasReady() {
			break
		}
		rd := n.Ready()
		s.batchLeader = n.Leader()
		if c.persistMaxMs == 0 {
			if !c.persist(s, rd, now) {
				return false
			}
			continue
		}
		s.inflight = &rd
		delay := c.rng.Int64N(c.persistMaxMs + 1)
		c.schedule(c.nowMs+delay, event{kind: evPersisted, server: int(s.id), inc: s.inc})
	}
	if err := s.peer.Err(); err != nil {
		s.peer.PumpCore(now) // the connections FailWrites closes
	}
	return true
}

// persist writes a batch and finishes it. It reports false when the
// server crashed (a failpoint, or a storage error, which is a violation).
func (c *Cluster) persist(s *server, rd zab.Ready, now zkcore.Now) bool {
	ps, err := s.peer.Persist(rd)
	if err == nil {
		err = s.peer.Finish(rd, ps, now)
	}
	if err == nil {
		return true
	}
	if errors.Is(err, errCrash) || s.disk.crashed() {
		c.crash(s, err.Error())
		return false
	}
	s.peer.Fail(err)
	c.violate("storage", "server %d: %v", s.id, err)
	c.crash(s, "storage error")
	return false
}

// persisted hands a batch back from disk to its server's loop.
func (c *Cluster) persisted(e *event) {
	s := c.servers[e.server]
	if !s.up || s.inc != e.inc || s.inflight == nil {
		return
	}
	if s.paused {
		s.hold(e) // a stopped process finishes nothing
		return
	}
	rd := *s.inflight
	s.inflight = nil
	c.driveFn(s, "persisted", func(now zkcore.Now) bool { return c.persist(s, rd, now) })
}
