//go:build !linux

package admin

// fileDescriptors reports no counts where /proc is not available; mntr then
// leaves the two lines out, as ZooKeeper does on platforms without them.
func fileDescriptors() (open, limit int64, ok bool) { return 0, 0, false }
