//go:build linux

package admin

import (
	"os"
	"syscall"
)

// fileDescriptors returns the process's open file descriptors and its
// limit on them, as mntr's zk_open_file_descriptor_count and
// zk_max_file_descriptor_count report them.
func fileDescriptors() (open, limit int64, ok bool) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, 0, false
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, false
	}
	// Reading the directory took a descriptor of its own; do not count it.
	return int64(len(entries)) - 1, int64(rl.Cur), true
}
