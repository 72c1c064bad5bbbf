package zkbench

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
	name := "/proc/self/stat"
	if pid != 0 {
		name = "/proc/" + strconv.Itoa(pid) + "/stat"
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, fmt.Errorf("zkbench: cpu time: %w", err)
	}
	return parseProcStat(b)
}

// parseProcStat extracts utime + stime from the contents of
// /proc/<pid>/stat. The second field, the command name in parentheses, may
// itself contain spaces and parentheses, so fields are counted from the
// last ')'; utime and stime are fields 14 and 15 of the line.
func parseProcStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("zkbench: cpu time: malformed stat %q", b)
	}
	fields := bytes.Fields(b[i+1:]) // fields[0] is field 3, the state
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("zkbench: cpu time: stat has %d fields after the name", len(fields))
	}
	var ticks int64
	for _, f := range [][]byte{fields[utime], fields[stime]} {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil || n < 0 || n > maxTicks {
			return 0, fmt.Errorf("zkbench: cpu time: bad tick count %q", f)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// cpuSpan is a process's CPU time sampled at the start and the end of the
// measured interval.
type cpuSpan struct {
	pid        int
	start, end time.Duration
	err        error
	sampled    int // samples taken without error: 2 when complete
}

// sample records the next reading: the start, then the end.
func (s *cpuSpan) sample() {
	if s.err != nil {
		return
	}
	t, err := procCPUTime(s.pid)
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
