package bench

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkclient"
)

// Op names a workload.
type Op string

// Workloads.
const (
	// OpGet reads a random znode of the key space (getData).
	OpGet Op = "get"
	// OpExists asks for the Stat of a random znode of the key space.
	OpExists Op = "exists"
	// OpSet overwrites a random znode of the key space (setData, any
	// version).
	OpSet Op = "set"
	// OpCreate creates persistent znodes under unique paths.
	OpCreate Op = "create"
	// OpMixed is ReadRatio gets and the rest sets, each op drawn at random.
	OpMixed Op = "mixed"
	// OpWatch measures watch fan-out: Watchers sessions watch one znode and
	// a writer sets it (see the package doc).
	OpWatch Op = "watch"
	// OpFill creates KeySpace znodes of SizeBytes under a fresh root and
	// leaves them there, to build a large tree (see fill.go).
	OpFill Op = "fill"
	// OpReady waits for a server's first served read: it retries a getData
	// of ReadyPath until one succeeds (see ready.go).
	OpReady Op = "ready"
)

// Defaults for zero Config fields.
const (
	DefaultSizeBytes = 100
	DefaultDuration  = 10 * time.Second
	DefaultKeySpace  = 1000
	DefaultReadRatio = 0.9
	DefaultWatchers  = 1000
	DefaultRounds    = 20
	DefaultReadyPath = "/"
	// DefaultSessionTimeout is long enough that a session survives a
	// stalled server while a run is drained, short enough that sessions a
	// killed run leaves behind expire soon.
	DefaultSessionTimeout = 30 * time.Second
)

// Bounds on Config fields. They exist to catch typos (an extra zero on
// --clients would open 100,000 sockets), not to limit real experiments.
const (
	maxClients   = 4096 // each has a 31 KiB histogram
	maxInflight  = 65_536
	maxKeySpace  = 10_000_000
	maxWatchers  = 100_000
	maxRounds    = 1_000_000
	maxSizeBytes = jute.DefaultMaxBuffer - 1024 // room for the path and header in one frame
)

// Config describes one run. The zero value of every field but Servers and
// Op picks the default named beside it.
type Config struct {
	// Servers are the host:port addresses to load; client i connects to
	// Servers[i % len(Servers)].
	Servers []string
	// Op is the workload.
	Op Op
	// Clients is the number of sessions issuing requests (default 1).
	Clients int
	// Inflight is the number of requests each client keeps outstanding
	// (default 1): a closed loop in which every reply triggers the next
	// request on the same session.
	Inflight int
	// SizeBytes is the size of the data written by set and create and of
	// the pre-created znodes (default DefaultSizeBytes).
	SizeBytes int
	// Duration is the measured interval (default DefaultDuration); for
	// OpReady, how long to keep trying.
	Duration time.Duration
	// Warmup runs the load before the measured interval without recording
	// it (default none).
	Warmup time.Duration
	// KeySpace is how many znodes get, exists, set and mixed spread over
	// (default DefaultKeySpace); they are created before the run under a
	// fresh /bench-<random> root. OpFill creates that many and keeps them.
	KeySpace int
	// ReadRatio is the fraction of gets in mixed (default DefaultReadRatio).
	ReadRatio float64
	// Watchers is the number of watching sessions of OpWatch (default
	// DefaultWatchers).
	Watchers int
	// Rounds is the number of measured set-and-notify rounds of OpWatch
	// (default DefaultRounds).
	Rounds int
	// CPUPIDs are the process ids of the servers on this machine (none, one,
	// or every member of an ensemble): their CPU time over the measured
	// interval is read from /proc, summed and reported. For OpReady, the
	// first one's start is the origin of the time to readiness.
	CPUPIDs []int
	// ReadyPath is the znode OpReady reads (default DefaultReadyPath).
	ReadyPath string
	// SessionTimeout is the session timeout asked for (default
	// DefaultSessionTimeout).
	SessionTimeout time.Duration
	// Security is the sessions' TLS and SASL (zkclient.NewSecurity); the
	// zero value connects in plaintext without SASL.
	Security zkclient.Security
	// Progress, if not nil, receives a line a second while the load runs
	// (get, exists, set, create, mixed): the time, the requests answered
	// so far and in the last second, and the errors; and while the key
	// space is created (every op but watch and ready), how far that is.
	Progress io.Writer
}

// dialOptions are the options every session of the run dials with.
func (c Config) dialOptions() zkclient.Options {
	o := zkclient.Options{SessionTimeout: c.SessionTimeout}
	c.Security.Apply(&o)
	return o
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	if len(c.Servers) == 0 {
		return errors.New("bench: no servers")
	}
	for _, s := range c.Servers {
		if s == "" {
			return errors.New("bench: empty server address")
		}
	}
	switch c.Op {
	case OpGet, OpExists, OpSet, OpCreate, OpMixed, OpWatch, OpFill, OpReady:
	default:
		return fmt.Errorf("bench: unknown op %q (want get, exists, set, create, mixed, watch, fill or ready)", c.Op)
	}
	for _, pid := range c.CPUPIDs {
		if pid <= 0 {
			return fmt.Errorf("bench: bad pid %d", pid)
		}
	}
	if c.ReadyPath != "" && !strings.HasPrefix(c.ReadyPath, "/") {
		return fmt.Errorf("bench: ready path %q is not absolute", c.ReadyPath)
	}
	checks := []struct {
		name     string
		v, limit int
	}{
		{"clients", c.Clients, maxClients},
		{"inflight", c.Inflight, maxInflight},
		{"size", c.SizeBytes, maxSizeBytes},
		{"key space", c.KeySpace, maxKeySpace},
		{"watchers", c.Watchers, maxWatchers},
		{"rounds", c.Rounds, maxRounds},
	}
	for _, ch := range checks {
		if ch.v < 0 || ch.v > ch.limit {
			return fmt.Errorf("bench: %s %d out of range [0, %d]", ch.name, ch.v, ch.limit)
		}
	}
	switch {
	case c.Duration < 0:
		return fmt.Errorf("bench: negative duration %v", c.Duration)
	case c.Warmup < 0:
		return fmt.Errorf("bench: negative warmup %v", c.Warmup)
	case c.SessionTimeout < 0:
		return fmt.Errorf("bench: negative session timeout %v", c.SessionTimeout)
	case c.ReadRatio < 0 || c.ReadRatio > 1:
		return fmt.Errorf("bench: read ratio %v outside [0, 1]", c.ReadRatio)
	}
	return nil
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Clients, 1)
	def(&c.Inflight, 1)
	def(&c.SizeBytes, DefaultSizeBytes)
	def(&c.KeySpace, DefaultKeySpace)
	def(&c.Watchers, DefaultWatchers)
	def(&c.Rounds, DefaultRounds)
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.ReadRatio == 0 {
		c.ReadRatio = DefaultReadRatio
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.ReadyPath == "" {
		c.ReadyPath = DefaultReadyPath
	}
	return c
}
