package entrystore

import (
	"fmt"
	"syscall"
)

// statfsUsage reports dir's filesystem usage with statfs(2). Used counts
// the blocks reserved for root as used, as df does.
func statfsUsage(dir string) (DirUsage, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return DirUsage{}, fmt.Errorf("entrystore: statfs %s: %w", dir, err)
	}
	bsize := uint64(st.Bsize)
	total := st.Blocks * bsize
	avail := st.Bavail * bsize
	return DirUsage{Dir: dir, UsedBytes: total - min(avail, total), TotalBytes: total}, nil
}
