package zab

import "time"

// Timing is how a driver ticks a Node for zoo.cfg's tickTime, initLimit
// and syncLimit: a tick of the node is a fraction of tickTime, so that
// what Apache ZooKeeper times in milliseconds rather than in ticks (the
// finalize wait of an election, pings every half tickTime) keeps its
// length, and a timeout counted in ticks (syncLimit, initLimit) ends within
// Tick of ZooKeeper's.
type Timing struct {
	// Tick is how often the driver calls Node.Tick.
	Tick time.Duration
	// The Config fields in Ticks (see Config).
	InitLimitTicks, SyncLimitTicks int
	PingTicks, FinalizeTicks       int
	ElectionRetryTicks             int
	ElectionMaxRetryTicks          int
}

// Apache ZooKeeper's election timing, in milliseconds: a vote with a
// quorum waits finalizeWait for a better one, and a member that hears
// nothing resends its vote after finalizeWait, doubling the wait each time.
// ZooKeeper lets the resend interval grow to 60 s; keeper stops at 32
// times the first, so that a member cut off for a while rejoins within
// seconds of the network healing, at the cost of one notification per
// voter every few seconds while it is cut off.
const (
	finalizeWaitMs        = 200
	electionMaxRetryTimes = 32
	// tickTargetMs is the length of a tick Timing aims for: fine enough
	// that timeouts counted in ticks end within 50 ms of their length in
	// milliseconds, coarse enough that an idle member wakes 20 times a
	// second.
	tickTargetMs = 50
)

// TimingFor returns the timing for tickTime (ms), initLimit and syncLimit:
// an even number of ticks per tickTime, each as close to 50 ms as that
// allows (two ticks per tickTime below 100 ms), so that a leader pings
// every half tickTime, as ZooKeeper does.
func TimingFor(tickTimeMs int64, initLimit, syncLimit int) Timing {
	perTickTime := max(2, tickTimeMs/tickTargetMs)
	perTickTime -= perTickTime % 2
	tick := time.Duration(tickTimeMs) * time.Millisecond / time.Duration(perTickTime)
	ticksFor := func(ms int64) int {
		d := time.Duration(ms) * time.Millisecond
		return max(1, int((d+tick-1)/tick))
	}
	retry := ticksFor(finalizeWaitMs)
	return Timing{
		Tick:                  tick,
		InitLimitTicks:        initLimit * int(perTickTime),
		SyncLimitTicks:        syncLimit * int(perTickTime),
		PingTicks:             int(perTickTime / 2),
		FinalizeTicks:         ticksFor(finalizeWaitMs),
		ElectionRetryTicks:    retry,
		ElectionMaxRetryTicks: electionMaxRetryTimes * retry,
	}
}

// Apply sets c's tick-based fields.
func (t Timing) Apply(c *Config) {
	c.InitLimitTicks, c.SyncLimitTicks = t.InitLimitTicks, t.SyncLimitTicks
	c.PingTicks, c.FinalizeTicks = t.PingTicks, t.FinalizeTicks
	c.ElectionRetryTicks, c.ElectionMaxRetryTicks = t.ElectionRetryTicks, t.ElectionMaxRetryTicks
}
