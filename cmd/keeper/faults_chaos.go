//go:build chaos

package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"keeper/vfs"
	"keeper/vfs/errorfs"
)

// faultsEnv names the fault file of a binary built with -tags chaos: the
// fault-injection harness writes errorfs rules there (errorfs.ParseLine)
// and sends SIGUSR1 to load them. Release builds have no such hook.
const faultsEnv = "KEEPER_FAULTS_FILE"

// storageFS returns the filesystem for the server's and the bookie's data:
// with KEEPER_FAULTS_FILE set, the OS filesystem behind an errorfs that
// loads the file now and again on every SIGUSR1.
func storageFS(logger *slog.Logger) vfs.FS {
	path := os.Getenv(faultsEnv)
	if path == "" {
		return nil
	}
	fs := errorfs.Wrap(vfs.Default)
	load := func() {
		text, err := os.ReadFile(path)
		if err == nil {
			err = fs.Load(string(text))
		}
		if err != nil && !os.IsNotExist(err) {
			logger.Error("fault file not loaded", "file", path, "err", err)
			return
		}
		logger.Warn("fault rules loaded", "file", path, "rules", string(text))
	}
	load()
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			load()
		}
	}()
	return fs
}
