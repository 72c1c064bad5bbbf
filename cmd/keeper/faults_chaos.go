//go:build chaos

package main

import (
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"keeper/internal/vfs"
	"keeper/internal/vfs/errorfs"
)

// faultsEnv names the fault file of a binary built with -tags chaos: the
// fault-injection harness writes rules there and sends SIGUSR1 to load
// them. Release builds have no such hook. A line starting with "clock "
// sets the server's clock (clock_chaos.go), one starting with
// "failpoint " arms a failpoint (failpoints_chaos.go), and any other line
// is an errorfs rule (errorfs.ParseLine).
const faultsEnv = "KEEPER_FAULTS_FILE"

// storageFS returns the filesystem for the server's and the bookie's data:
// with KEEPER_FAULTS_FILE set, baseFS behind an errorfs that loads the
// file now and again on every SIGUSR1. A process calls it once.
func storageFS(logger *slog.Logger) vfs.FS {
	path := os.Getenv(faultsEnv)
	if path == "" {
		return nil
	}
	fs := errorfs.Wrap(baseFS())
	load := func() {
		text, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			logger.Error("fault file not read", "file", path, "err", err)
			return
		}
		var clock, failpoints, rules []string
		for _, line := range strings.Split(string(text), "\n") {
			switch word, _, _ := strings.Cut(strings.TrimSpace(line), " "); word {
			case "clock":
				clock = append(clock, line)
			case "failpoint":
				failpoints = append(failpoints, line)
			default:
				rules = append(rules, line)
			}
		}
		for what, err := range map[string]error{
			"disk rules": fs.Load(strings.Join(rules, "\n")),
			"clock":      loadClock(clock),
			"failpoints": loadFailpoints(failpoints),
		} {
			if err != nil {
				logger.Error("fault file not loaded", "file", path, "part", what, "err", err)
			}
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
