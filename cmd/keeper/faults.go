//go:build !chaos

package main

import (
	"log/slog"

	"keeper/coordination/server"
	"keeper/internal/vfs"
)

// storageFS returns the filesystem for the server's and the bookie's data:
// nil, the OS's. A binary built with -tags chaos can inject disk faults
// here instead (faults_chaos.go).
func storageFS(*slog.Logger) vfs.FS { return nil }

// serverClock returns the server's clock: nil, the system's. A binary
// built with -tags chaos can skew it instead (clock_chaos.go).
func serverClock() server.Clock { return nil }

// overridePeerListen leaves the quorum and election listeners where the
// configuration puts them. A binary built with -tags chaos can move them
// for a test harness instead (peerlisten_chaos.go).
func overridePeerListen(*server.QuorumConfig) error { return nil }
