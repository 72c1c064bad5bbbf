package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"keeper/coordination/zkproto"
)

// Result is the outcome of a run, marshalled as one JSON line. Latencies
// are in microseconds, rounded to 0.1 µs.
//
// For OpWatch, Ops counts the measured rounds and the latency fields
// describe the fan-out time of a round: from the moment the writer sent its
// setData to the moment the last watcher received its notification.
// SetP50Us and SetP99Us give the writer's own setData latency.
//
// For OpFill, Ops counts the znodes created, DurationSec is the time they
// took, the latency fields are zero and Root names their parent. For
// OpReady, ReadySec and Attempts say when the first read was served.
type Result struct {
	Op          Op       `json:"op"`
	Servers     []string `json:"servers"`
	Clients     int      `json:"clients"`
	Inflight    int      `json:"inflight"`
	SizeBytes   int      `json:"size_bytes"`
	DurationSec float64  `json:"duration_sec"` // the measured interval (shorter when Interrupted)
	// Interrupted says the run was stopped before its end (Ctrl-C): the
	// figures cover what was measured until then.
	Interrupted bool    `json:"interrupted,omitempty"`
	Ops         int64   `json:"ops"` // successful requests completed in the measured interval
	OpsPerSec   float64 `json:"ops_per_sec"`
	P50Us       float64 `json:"p50_us"`
	P99Us       float64 `json:"p99_us"`
	P999Us      float64 `json:"p999_us"`
	MaxUs       float64 `json:"max_us"`
	// Errors counts failed requests over the whole load, warmup included;
	// ErrorsByCode splits them by result code name (zkproto.Code.String).
	Errors       int64            `json:"errors"`
	ErrorsByCode map[string]int64 `json:"errors_by_code,omitempty"`

	// Watchers is OpWatch's number of watching sessions.
	Watchers int     `json:"watchers,omitempty"`
	SetP50Us float64 `json:"set_p50_us,omitempty"`
	SetP99Us float64 `json:"set_p99_us,omitempty"`

	// Root is OpFill's parent znode, which it leaves in place.
	Root string `json:"root,omitempty"`
	// ReadySec is OpReady's time from the start of the first CPUPIDs
	// process (10 ms resolution), or else from the start of the run, to
	// the reply of the first read served; Attempts counts the connections
	// tried.
	ReadySec float64 `json:"ready_sec,omitempty"`
	Attempts int     `json:"attempts,omitempty"`

	// ClientCPUSeconds is this process's CPU time (user + system) over the
	// measured interval; nil where /proc is not available.
	ClientCPUSeconds *float64 `json:"client_cpu_seconds,omitempty"`
	// ServerCPUSeconds is the CPU time of the Config.CPUPIDs processes,
	// summed, over the measured interval, and ServerCPUUsPerOp that time
	// divided by Ops (for OpWatch, per round, re-arming included); nil
	// without CPUPIDs. For OpReady, ServerCPUSeconds is the first
	// process's CPU time from its start until it was ready.
	ServerCPUSeconds *float64 `json:"server_cpu_seconds,omitempty"`
	ServerCPUUsPerOp *float64 `json:"server_cpu_us_per_op,omitempty"`

	// CleanupError says why the run's znodes could not all be deleted.
	CleanupError string `json:"cleanup_error,omitempty"`
}

// MarshalLine returns r as one line of JSON, newline included.
func (r Result) MarshalLine() ([]byte, error) { return marshalLine(r) }

// marshalLine marshals v as JSON followed by a newline.
func marshalLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return append(b, '\n'), nil
}

// micros converts d to microseconds rounded to 0.1.
func micros(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)*10) / 10
}

// round3 rounds v to three decimals, which is all a rate or a CPU time
// measured here is worth.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// setLatencies fills the latency fields from h.
func (r *Result) setLatencies(h *Histogram) {
	r.P50Us = micros(h.Quantile(0.50))
	r.P99Us = micros(h.Quantile(0.99))
	r.P999Us = micros(h.Quantile(0.999))
	r.MaxUs = micros(h.Max())
}

// setErrors fills Errors and ErrorsByCode from counts per code.
func (r *Result) setErrors(counts map[zkproto.Code]int64) {
	for code, n := range counts {
		if r.ErrorsByCode == nil {
			r.ErrorsByCode = make(map[string]int64)
		}
		r.ErrorsByCode[code.String()] += n
		r.Errors += n
	}
}

// setCPU fills the CPU fields from the samples taken around the measured
// interval; a failed sample leaves its field nil.
func (r *Result) setCPU(client, server cpuSpan) {
	if client.ok() {
		v := round3(client.seconds())
		r.ClientCPUSeconds = &v
	}
	if server.ok() {
		v := round3(server.seconds())
		r.ServerCPUSeconds = &v
		if r.Ops > 0 {
			per := math.Round(server.seconds()/float64(r.Ops)*1e7) / 10
			r.ServerCPUUsPerOp = &per
		}
	}
}
