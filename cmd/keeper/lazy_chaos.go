//go:build chaos

package main

import "keeper/vfs"

// baseFS is the filesystem under the fault injector. (Placeholder until
// the crash-aware filesystem lands.)
func baseFS() vfs.FS { return vfs.Default }
