package main

import (
	"fmt"
	"io"
	"time"
)

// reportBenchProgress writes a line a second to out, until the returned
// function is called: the adds acknowledged so far over every load of the
// run, the rate over the last second, and the errors so far. bench names
// the command ("bench bookie"), what the run ("v3 size 100 ledgers 2");
// counts sums the run's loads and is called from the reporter's goroutine,
// so it must be safe alongside them. Adds before from are the warmup.
func reportBenchProgress(out io.Writer, bench, what string, start, from time.Time,
	counts func() (acked, errs int64)) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last, lastAt := int64(0), start
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				acked, errs := counts()
				phase := "measuring"
				if now.Before(from) {
					phase = "warmup"
				}
				fmt.Fprintf(out, "%s %s: %4.0fs %s: %d adds acknowledged, %.0f/s over the last %v, %d errors\n",
					bench, what, now.Sub(start).Seconds(), phase, acked, float64(acked-last)/now.Sub(lastAt).Seconds(),
					now.Sub(lastAt).Round(100*time.Millisecond), errs)
				last, lastAt = acked, now
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
