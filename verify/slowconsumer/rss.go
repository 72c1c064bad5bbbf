package slowconsumer

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PeakRSSKB reads a process's peak resident set (VmHWM in
// /proc/<pid>/status, Linux only) in KiB.
func PeakRSSKB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("slowconsumer: no VmHWM in /proc/%d/status", pid)
}
