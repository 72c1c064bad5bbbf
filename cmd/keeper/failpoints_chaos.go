//go:build chaos

package main

import (
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"keeper/internal/failpoint"
)

// installFailpointActions makes a fired "kill" failpoint a crash: the
// process sends itself SIGKILL (no deferred function, no flush, no
// clean-up runs), after one log line that says which point fired.
var installFailpointActions = sync.OnceFunc(func() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	failpoint.SetActions(failpoint.Actions{
		Kill: func(name string) {
			logger.Warn("failpoint fired", "name", name, "action", "kill")
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way; this goroutine goes no further
		},
		Sleep: func(name string, d time.Duration) {
			logger.Warn("failpoint fired", "name", name, "action", "sleep", "for", d)
			time.Sleep(d)
		},
	})
})

// loadFailpoints arms exactly the fault file's "failpoint …" lines
// (failpoint.Parse); none disarms every failpoint.
func loadFailpoints(lines []string) error {
	installFailpointActions()
	return failpoint.Load(lines)
}
