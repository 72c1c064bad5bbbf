package slowconsumer

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sync"
	"time"
)

// Never stands for an answer that did not come, in a quantile.
const Never = time.Duration(math.MaxInt64)

// Latencies collects how long operations took; an operation that got no
// answer counts as slower than any that did. It is safe for concurrent
// use.
type Latencies struct {
	mu     sync.Mutex
	times  []time.Duration
	failed int
}

// Add notes an operation answered after d.
func (l *Latencies) Add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.times = append(l.times, d)
}

// Fail notes an operation that got no answer.
func (l *Latencies) Fail() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failed++
}

// Merge adds o's operations to l's.
func (l *Latencies) Merge(o *Latencies) {
	o.mu.Lock()
	times, failed := slices.Clone(o.times), o.failed
	o.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.times = append(l.times, times...)
	l.failed += failed
}

// Count is the number of operations noted, failed ones included.
func (l *Latencies) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.times) + l.failed
}

// Failed is the number of operations that got no answer.
func (l *Latencies) Failed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// Quantile returns the q-quantile (0 < q ≤ 1) of the operations' times,
// Never if it falls among the failed ones, 0 if there are none.
func (l *Latencies) Quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.times) + l.failed
	if n == 0 {
		return 0
	}
	i := max(0, int(math.Ceil(q*float64(n)))-1)
	if i >= len(l.times) {
		return Never
	}
	slices.Sort(l.times)
	return l.times[i]
}

// Max is the slowest operation, Never if one failed.
func (l *Latencies) Max() time.Duration { return l.Quantile(1) }

// Summary formats the median, the 99th percentile and the maximum:
// "3ms/41ms/120ms".
func (l *Latencies) Summary() string {
	return FormatDuration(l.Quantile(0.5)) + "/" + FormatDuration(l.Quantile(0.99)) + "/" + FormatDuration(l.Max())
}

// FormatDuration formats d in milliseconds, "never" for Never.
func FormatDuration(d time.Duration) string {
	if d == Never {
		return "never"
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

// Ruok asks the server at addr "ruok" on a fresh connection and returns
// how long the answer took, from the dial to the server's close; an answer
// other than "imok" is an error.
func Ruok(addr string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(start.Add(timeout))
	if _, err := io.WriteString(c, "ruok"); err != nil {
		return 0, err
	}
	b, err := io.ReadAll(io.LimitReader(c, 64))
	if err != nil {
		return 0, err
	}
	if string(b) != "imok" {
		return 0, fmt.Errorf("ruok answered %q", b)
	}
	return time.Since(start), nil
}

// maxProbeFailures bounds the failure messages a Probe keeps.
const maxProbeFailures = 10

// Probe asks one server ruok again and again and times the answers.
type Probe struct {
	Name, Addr string
	// Times holds the answers' times; a probe without the answer "imok"
	// within the timeout is a failure.
	Times Latencies

	mu       sync.Mutex
	failures []string
}

// Run probes every interval, each probe on a fresh connection with the
// timeout given, until ctx ends.
func (p *Probe) Run(ctx context.Context, every, timeout time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		d, err := Ruok(p.Addr, timeout)
		switch {
		case err == nil:
			p.Times.Add(d)
		case ctx.Err() == nil:
			p.Times.Fail()
			p.mu.Lock()
			if len(p.failures) < maxProbeFailures {
				p.failures = append(p.failures, fmt.Sprintf("%s at %s: %v", p.Name, time.Now().Format("15:04:05.000"), err))
			}
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Failures describes the first probes that failed.
func (p *Probe) Failures() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.failures)
}
