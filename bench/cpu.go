package bench

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat. The kernel
// reports them in USER_HZ, which is 100 on every Linux architecture Go
// supports (sysconf(_SC_CLK_TCK) would need cgo to ask). So CPU times have
// a resolution of 10 ms: meaningful over seconds, noise over milliseconds.
const userHZ = 100

// maxTicks bounds a tick count so that the sum of two, in nanoseconds,
// fits an int64 (about 1,400 years of CPU time each).
const maxTicks = math.MaxInt64 / 2 / (int64(time.Second) / userHZ)

// procCPUTime returns the user plus system CPU time process pid has used,
// summed over its threads; pid 0 means this process.
func procCPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(procStatPath(pid))
	if err != nil {
		return 0, fmt.Errorf("bench: cpu time: %w", err)
	}
	return parseProcStat(b)
}

// procCPUTimes returns the CPU time of the processes pids, summed; no pids
// means this process.
func procCPUTimes(pids []int) (time.Duration, error) {
	if len(pids) == 0 {
		return procCPUTime(0)
	}
	var sum time.Duration
	for _, pid := range pids {
		t, err := procCPUTime(pid)
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// procStatPath is /proc/<pid>/stat, or /proc/self/stat for pid 0.
func procStatPath(pid int) string {
	if pid == 0 {
		return "/proc/self/stat"
	}
	return "/proc/" + strconv.Itoa(pid) + "/stat"
}

// statFields returns the fields of a /proc/<pid>/stat line from field 3
// (the state) on. The second field, the command name in parentheses, may
// itself contain spaces and parentheses, so fields are counted from the
// last ')'.
func statFields(b []byte) ([][]byte, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("malformed stat %q", b)
	}
	return bytes.Fields(b[i+1:]), nil
}

// statTicks parses field n (1-based, as in proc(5)) of a stat line, a
// count of clock ticks.
func statTicks(fields [][]byte, n int) (int64, error) {
	if len(fields) <= n-3 {
		return 0, fmt.Errorf("stat has %d fields after the name", len(fields))
	}
	f := fields[n-3]
	v, err := strconv.ParseInt(string(f), 10, 64)
	if err != nil || v < 0 || v > maxTicks {
		return 0, fmt.Errorf("bad tick count %q", f)
	}
	return v, nil
}

// parseProcStat extracts utime + stime (fields 14 and 15) from the
// contents of /proc/<pid>/stat.
func parseProcStat(b []byte) (time.Duration, error) {
	fields, err := statFields(b)
	if err != nil {
		return 0, fmt.Errorf("bench: cpu time: %w", err)
	}
	var ticks int64
	for _, n := range []int{14, 15} {
		v, err := statTicks(fields, n)
		if err != nil {
			return 0, fmt.Errorf("bench: cpu time: %w", err)
		}
		ticks += v
	}
	return ticksDuration(ticks), nil
}

// parseStartTime extracts starttime (field 22), the time the process
// started after boot, from the contents of /proc/<pid>/stat.
func parseStartTime(b []byte) (time.Duration, error) {
	fields, err := statFields(b)
	if err == nil {
		var v int64
		if v, err = statTicks(fields, 22); err == nil {
			return ticksDuration(v), nil
		}
	}
	return 0, fmt.Errorf("bench: start time: %w", err)
}

// parseUptime extracts the first field of /proc/uptime, the time since
// boot in seconds with two decimals, rounded to the millisecond.
func parseUptime(b []byte) (time.Duration, error) {
	fields := bytes.Fields(b)
	if len(fields) == 0 {
		return 0, fmt.Errorf("bench: uptime: malformed %q", b)
	}
	secs, err := strconv.ParseFloat(string(fields[0]), 64)
	if err != nil || !(secs >= 0 && secs < float64(maxTicks/userHZ)) {
		return 0, fmt.Errorf("bench: uptime: bad seconds %q", fields[0])
	}
	return time.Duration(math.Round(secs*1000)) * time.Millisecond, nil
}

// ticksDuration converts clock ticks to a duration.
func ticksDuration(ticks int64) time.Duration {
	return time.Duration(ticks) * time.Second / userHZ
}

// procAge returns how long ago process pid started, from its start time
// and the uptime (both since boot, so the wall clock does not matter), at
// the resolution of a clock tick.
func procAge(pid int) (time.Duration, error) {
	b, err := os.ReadFile(procStatPath(pid))
	if err != nil {
		return 0, fmt.Errorf("bench: start time: %w", err)
	}
	start, err := parseStartTime(b)
	if err != nil {
		return 0, err
	}
	if b, err = os.ReadFile("/proc/uptime"); err != nil {
		return 0, fmt.Errorf("bench: uptime: %w", err)
	}
	up, err := parseUptime(b)
	if err != nil {
		return 0, err
	}
	return max(up-start, 0), nil
}

// cpuSpan is the CPU time of some processes (this one if pids is empty)
// sampled at the start and the end of the measured interval.
type cpuSpan struct {
	pids       []int
	start, end time.Duration
	err        error
	sampled    int // samples taken without error: 2 when complete
}

// sample records the next reading: the start, then the end.
func (s *cpuSpan) sample() {
	if s.err != nil {
		return
	}
	t, err := procCPUTimes(s.pids)
	switch {
	case err != nil:
		s.err = err
	case s.sampled == 0:
		s.start = t
		s.sampled++
	default:
		s.end = t
		s.sampled = 2
	}
}

// ok reports whether both samples were taken.
func (s *cpuSpan) ok() bool { return s.err == nil && s.sampled == 2 }

// seconds returns the CPU time used between the samples.
func (s *cpuSpan) seconds() float64 { return (s.end - s.start).Seconds() }

// CPUTime returns the user plus system CPU time the processes pids have
// used, summed over them and their threads, from /proc (at a resolution of
// 10 ms); no pids means this process. Load tools outside this package
// sample it around their measured intervals.
func CPUTime(pids ...int) (time.Duration, error) { return procCPUTimes(pids) }
