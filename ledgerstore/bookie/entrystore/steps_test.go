package entrystore

import (
	"testing"
	"time"
)

// stepClock is a clock that moves 1 ms each time it is read.
type stepClock struct{ t time.Time }

func (c *stepClock) now() time.Time {
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// stepFigures are the step timings of Stats: the summaries' success and
// failure counts, and the µs totals.
type stepFigures struct {
	lookupOK, lastOK, flushLogsOK, flushIndexOK int64
	failures                                    int64
	indexUs, logUs, aheadUs                     int64
}

func takeSteps(st *Stats) stepFigures {
	return stepFigures{
		lookupOK: st.LookupLocation.Outcome(true).Count(), lastOK: st.LastEntryLookup.Outcome(true).Count(),
		flushLogsOK: st.FlushEntryLogs.Outcome(true).Count(), flushIndexOK: st.FlushIndex.Outcome(true).Count(),
		failures: st.LookupLocation.Outcome(false).Count() + st.LastEntryLookup.Outcome(false).Count() +
			st.FlushEntryLogs.Outcome(false).Count() + st.FlushIndex.Outcome(false).Count(),
		indexUs: st.LocationsIndexMicros.Load(), logUs: st.EntryLogMicros.Load(), aheadUs: st.ReadAheadMicros.Load(),
	}
}

// TestStepTimes does one operation per step with a clock and checks which
// step figures moved: the lookups and the log and read-ahead times of a
// read that misses the caches, the two steps of a flush, and nothing for
// reads the caches answer or an empty flush. Without a clock nothing moves.
func TestStepTimes(t *testing.T) {
	for _, clocked := range []bool{true, false} {
		e := newEnv()
		cfg := e.config()
		if clocked {
			clk := &stepClock{t: time.Unix(0, 0)}
			cfg.Clock = clk.now
		}
		s := e.open(t, cfg)
		var want0, want1, want2, want3 []byte
		steps := []struct {
			name string
			do   func()
			// which figures move (with a clock)
			lookup, last, flush, index, log, ahead bool
		}{
			{name: "add and read from the write cache", do: func() {
				want0 = mustAdd(t, s, 1, 0, -1, 100)
				want1 = mustAdd(t, s, 1, 1, 0, 100)
				want2 = mustAdd(t, s, 1, 2, 1, 100)
				want3 = mustAdd(t, s, 1, 3, 2, 100)
				mustGet(t, s, 1, 1, want1)
			}},
			{name: "flush", do: func() { mustFlush(t, s) }, flush: true},
			{name: "empty flush", do: func() { mustFlush(t, s) }},
			{name: "read from an entry log, reading ahead", do: func() { mustGet(t, s, 1, 0, want0) },
				lookup: true, index: true, log: true, ahead: true},
			{name: "read from the read cache", do: func() { mustGet(t, s, 1, 2, want2) }},
			{name: "read the last entry", do: func() { mustGet(t, s, 1, LastEntry, want3) },
				last: true, index: true, log: true},
		}
		before := takeSteps(s.Stats())
		for _, st := range steps {
			st.do()
			after := takeSteps(s.Stats())
			moved := func(name string, got, was int64, want bool) {
				t.Helper()
				if (got != was) != (want && clocked) || got < was {
					t.Errorf("clock %v: %s: %s went from %d to %d, want moved %v", clocked, st.name, name, was, got,
						want && clocked)
				}
			}
			moved("lookup", after.lookupOK, before.lookupOK, st.lookup)
			moved("last entry lookup", after.lastOK, before.lastOK, st.last)
			moved("flush entry logs", after.flushLogsOK, before.flushLogsOK, st.flush)
			moved("flush index", after.flushIndexOK, before.flushIndexOK, st.flush)
			moved("locations index µs", after.indexUs, before.indexUs, st.index)
			moved("entry log µs", after.logUs, before.logUs, st.log)
			moved("read-ahead µs", after.aheadUs, before.aheadUs, st.ahead)
			if after.failures != 0 {
				t.Errorf("%s: %d step failures", st.name, after.failures)
			}
			before = after
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
