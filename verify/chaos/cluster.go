package chaos

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"keeper/internal/testhost"
)

// Config shapes a Cluster. Zero fields take the defaults below.
type Config struct {
	// Bin is the keeper binary (see BuildKeeper).
	Bin string
	// Dir holds every server's zoo.cfg, data directory and logs.
	Dir string
	// Servers is the ensemble size (voters only); 3 by default.
	Servers int
	// TickMs is tickTime; InitLimit and SyncLimit are in ticks.
	TickMs, InitLimit, SyncLimit int
	// SnapCount is zoo.cfg's snapCount (0: keeper's default).
	SnapCount int
	// PreAllocSizeKB is zoo.cfg's preAllocSize; 4 MiB by default, not
	// ZooKeeper's 64 MiB, because reading a log to its end checks every
	// preallocated byte, and the checkers read every server's logs.
	PreAllocSizeKB int
	// MaxSessionTimeoutMs is zoo.cfg's maxSessionTimeout.
	MaxSessionTimeoutMs int
	// Extra lines are appended to every zoo.cfg.
	Extra []string
	// LogLevel is the servers' --log-level ("info" by default).
	LogLevel string
	// Seed drives the network's jitter and loss.
	Seed uint64
	// DropUnsynced makes a kill of a server, or of a bookie on this
	// cluster, lose the bytes it had written but not synced, as a power
	// loss would (KEEPER_DROP_UNSYNCED, internal/vfs/lazyfs; see lazy.go).
	DropUnsynced bool
	// Reconfig runs the ensemble with dynamic reconfiguration
	// (reconfigEnabled, standaloneEnabled=false, the super user of
	// SuperAuth). Its members share one configuration text, as a
	// reconfiguration writes it for all, so their lines name one front per
	// port that passes each connection through the proxy from its
	// dialler (peerfront.go); the servers listen behind the fronts.
	Reconfig bool
	// Voters is how many servers (the first ones) form the ensemble at
	// the start of a Reconfig cluster; each of the others starts knowing
	// that ensemble and itself, as a server about to be added is
	// configured, and follows without a vote until a reconfig adds it.
	// 0 means every server.
	Voters int
}

// SuperAuth is the digest credential ("user:password") of a Reconfig
// cluster's super user, whom ZooKeeper lets reconfigure.
const SuperAuth = "super:chaos"

// Defaults. A 100 ms tick keeps failovers short; syncLimit 10 (1 s)
// tolerates a busy 2-core machine without false leader losses; initLimit
// 50 (5 s) leaves room for a SNAP of a large tree.
const (
	defaultTickMs        = 100
	defaultInitLimit     = 50
	defaultSyncLimit     = 10
	defaultMaxSessionMs  = 60000
	serverStartTimeout   = 60 * time.Second
	serverStopTimeout    = 20 * time.Second
	pollInterval         = 20 * time.Millisecond
	fourLetterTimeout    = 3 * time.Second
	defaultServerLogTail = 40
)

func (c Config) withDefaults() Config {
	if c.Servers == 0 {
		c.Servers = 3
	}
	if c.TickMs == 0 {
		c.TickMs = defaultTickMs
	}
	if c.InitLimit == 0 {
		c.InitLimit = defaultInitLimit
	}
	if c.SyncLimit == 0 {
		c.SyncLimit = defaultSyncLimit
	}
	if c.MaxSessionTimeoutMs == 0 {
		c.MaxSessionTimeoutMs = defaultMaxSessionMs
	}
	if c.PreAllocSizeKB == 0 {
		c.PreAllocSizeKB = 4096
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	return c
}

// Validate reports the first problem in c.
func (c Config) Validate() error {
	switch {
	case c.Bin == "":
		return errors.New("chaos: Config.Bin (the keeper binary) is required")
	case c.Dir == "":
		return errors.New("chaos: Config.Dir is required")
	case c.Servers < 0 || c.Servers > 9:
		return fmt.Errorf("chaos: %d servers; 1 to 9 are supported", c.Servers)
	case c.Voters < 0 || c.Voters > c.Servers || (c.Voters != 0 && !c.Reconfig):
		return fmt.Errorf("chaos: %d voters of %d servers (only with Reconfig)", c.Voters, c.Servers)
	}
	return nil
}

// Server is one member of the ensemble. Its ports and data survive
// restarts. Other servers reach its quorum and election ports only
// through proxies, one per direction.
type Server struct {
	ID                   int
	Name                 string // "s<ID>", its node name in the Network
	ClientPort           int
	QuorumPort, ElecPort int
	// FrontQuorum and FrontElection are, in a Reconfig cluster, the ports
	// its configuration line names: fronts before the real ones
	// (peerfront.go).
	FrontQuorum, FrontElection int
	Addr                       string // the real client address (4lw, checks)
	Dir, DataDir               string

	mu   sync.Mutex
	proc *Process
	runs int
}

// Proc returns the current (or last) run, nil before the first start.
func (s *Server) Proc() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Running reports whether the server's process is alive.
func (s *Server) Running() bool {
	p := s.Proc()
	return p != nil && p.Running()
}

// LogPath is the log of the current (or last) run.
func (s *Server) LogPath() string {
	if p := s.Proc(); p != nil {
		return p.LogPath
	}
	return ""
}

// Cluster is a keeper ensemble of real processes on loopback whose every
// peer link and client link runs through the Network's proxies.
type Cluster struct {
	cfg     Config
	Net     *Network
	Servers []*Server

	mu      sync.Mutex
	clients map[pair]*Proxy // client proxies, made on demand

	fronts  []*peerFront // a Reconfig cluster's quorum and election fronts
	frontWG sync.WaitGroup
}

// NewCluster allocates ports, starts the peer proxies and writes every
// server's zoo.cfg. Start the servers with StartAll.
func NewCluster(cfg Config) (*Cluster, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, Net: NewNetwork(cfg.Seed), clients: map[pair]*Proxy{}}
	// Real server ports come from outside the ephemeral range (testhost),
	// so that outgoing connections cannot occupy a killed server's ports
	// before it restarts. Proxies keep their ports for the cluster's life,
	// so they may take ephemeral ones.
	per := 3
	if cfg.Reconfig {
		per = 5 // and the quorum and election fronts
	}
	ports, err := testhost.Reserve(per * cfg.Servers)
	if err != nil {
		return nil, err
	}
	for i := range cfg.Servers {
		s := &Server{ID: i + 1, Name: serverName(i + 1),
			ClientPort: ports[per*i], QuorumPort: ports[per*i+1], ElecPort: ports[per*i+2]}
		if cfg.Reconfig {
			s.FrontQuorum, s.FrontElection = ports[per*i+3], ports[per*i+4]
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.ClientPort))
		s.Dir = filepath.Join(cfg.Dir, s.Name)
		s.DataDir = filepath.Join(s.Dir, "data")
		c.Servers = append(c.Servers, s)
	}
	// The fronts read c.Servers: start them once it is complete.
	for _, s := range c.Servers {
		if !cfg.Reconfig {
			break
		}
		if err := c.startFronts(s); err != nil {
			c.Close()
			return nil, err
		}
	}
	for _, s := range c.Servers {
		if err := c.writeConfig(s); err != nil {
			c.Net.Close()
			return nil, err
		}
	}
	return c, nil
}

func serverName(id int) string { return "s" + strconv.Itoa(id) }

// writeConfig writes s's zoo.cfg and myid. Its own server line names its
// real ports (where it listens); every other server's line names the
// proxy that carries s's connections to it.
func (c *Cluster) writeConfig(s *Server) error {
	if err := os.MkdirAll(s.DataDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.DataDir, "myid"), []byte(strconv.Itoa(s.ID)+"\n"), 0o644); err != nil {
		return err
	}
	o := c.cfg
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\n", o.TickMs, o.InitLimit, o.SyncLimit)
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n", s.DataDir, s.ClientPort)
	fmt.Fprintf(&b, "maxClientCnxns=0\nmaxSessionTimeout=%d\n", o.MaxSessionTimeoutMs)
	b.WriteString("4lw.commands.whitelist=*\nadmin.enableServer=false\n")
	fmt.Fprintf(&b, "preAllocSize=%d\n", o.PreAllocSizeKB)
	if o.SnapCount > 0 {
		fmt.Fprintf(&b, "snapCount=%d\n", o.SnapCount)
	}
	if o.Reconfig {
		b.WriteString(c.reconfigLines(s))
	}
	for _, p := range c.Servers {
		if o.Reconfig {
			break
		}
		q, e := p.QuorumPort, p.ElecPort
		if p != s {
			qp, err := c.Net.Proxy(s.Name, p.Name, net.JoinHostPort("127.0.0.1", strconv.Itoa(p.QuorumPort)))
			if err != nil {
				return err
			}
			ep, err := c.Net.Proxy(s.Name, p.Name, net.JoinHostPort("127.0.0.1", strconv.Itoa(p.ElecPort)))
			if err != nil {
				return err
			}
			q, e = portOf(qp.Addr()), portOf(ep.Addr())
		}
		fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", p.ID, q, e)
	}
	for _, l := range o.Extra {
		b.WriteString(l + "\n")
	}
	return os.WriteFile(s.cfgPath(), []byte(b.String()), 0o644)
}

// reconfigLines are the settings and server lines of s's zoo.cfg in a
// Reconfig cluster: the first Voters servers, and s itself when it is not
// one of them, with their real ports and client addresses.
func (c *Cluster) reconfigLines(s *Server) string {
	sum := sha1.Sum([]byte(SuperAuth))
	user, _, _ := strings.Cut(SuperAuth, ":")
	var b strings.Builder
	b.WriteString("reconfigEnabled=true\nstandaloneEnabled=false\n")
	fmt.Fprintf(&b, "DigestAuthenticationProvider.superDigest=%s:%s\n", user, base64.StdEncoding.EncodeToString(sum[:]))
	voters := c.cfg.Voters
	if voters == 0 {
		voters = len(c.Servers)
	}
	for i, p := range c.Servers {
		if i < voters || p == s {
			b.WriteString(p.ConfigLine("participant") + "\n")
		}
	}
	return b.String()
}

// rejoinIfRemoved gives s, a member of a Reconfig cluster that a
// reconfiguration removed, a configuration to start from, as an operator
// brings such a server back: its configuration files no longer name it,
// so it cannot know its own ports, and keeper refuses to start it. Like a
// server about to be added (docs/configuration.md), it gets the servers
// of the last configuration it knew plus itself as a participant, in a
// static file without dynamicConfigFile; it follows without a vote until
// a reconfig adds it again.
func rejoinIfRemoved(s *Server) error {
	static, err := os.ReadFile(s.cfgPath())
	if err != nil {
		return err
	}
	var keep []string
	dynamic := ""
	for l := range strings.Lines(string(static)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "dynamicConfigFile="); ok {
			dynamic = v
			continue
		}
		keep = append(keep, strings.TrimRight(l, "\n"))
	}
	if dynamic == "" {
		return nil
	}
	text, err := os.ReadFile(dynamic)
	if err != nil {
		return err
	}
	own := fmt.Sprintf("server.%d=", s.ID)
	var servers []string
	for l := range strings.Lines(string(text)) {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, own) {
			return nil // still a member
		}
		if strings.HasPrefix(l, "server.") {
			servers = append(servers, l)
		}
	}
	keep = append(keep, servers...)
	keep = append(keep, s.ConfigLine("participant"))
	return os.WriteFile(s.cfgPath(), []byte(strings.Join(keep, "\n")+"\n"), 0o644)
}

// ConfigLine is s's server line in a Reconfig cluster's configuration,
// with the role given ("participant" or "observer").
func (s *Server) ConfigLine(role string) string {
	return fmt.Sprintf("server.%d=127.0.0.1:%d:%d:%s;127.0.0.1:%d", s.ID, s.FrontQuorum, s.FrontElection, role, s.ClientPort)
}

func (s *Server) cfgPath() string { return filepath.Join(s.Dir, "zoo.cfg") }

func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// Server returns the server with id.
func (c *Cluster) Server(id int) *Server { return c.Servers[id-1] }

// Names returns every server's node name.
func (c *Cluster) Names() []string {
	var out []string
	for _, s := range c.Servers {
		out = append(out, s.Name)
	}
	return out
}

// ClientAddr returns the address client (a node name such as "c3") dials
// to reach s: a proxy from client to s, made on first use.
func (c *Cluster) ClientAddr(client string, s *Server) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.clients[pair{client, s.Name}]; ok {
		return p.Addr(), nil
	}
	p, err := c.Net.Proxy(client, s.Name, s.Addr)
	if err != nil {
		return "", err
	}
	c.clients[pair{client, s.Name}] = p
	return p.Addr(), nil
}

// StartAll starts every server and waits until they serve under one
// leader, which it returns.
func (c *Cluster) StartAll(timeout time.Duration) (*Server, error) {
	for _, s := range c.Servers {
		if err := c.Start(s); err != nil {
			return nil, err
		}
	}
	return c.WaitServing(timeout)
}

// Start starts s, which must not be running, and waits until it answers
// ruok (keeper listens for clients once it has recovered its data). A
// server that exits during start-up is an error that carries its log's
// tail.
func (c *Cluster) Start(s *Server) error {
	p, err := c.Launch(s)
	if err != nil {
		return err
	}
	return poll(serverStartTimeout, s.Name+" answers ruok", func() (bool, string, error) {
		if !p.Running() {
			return false, "", fmt.Errorf("chaos: %s exited during start-up (%v):\n%s", s.Name, p.ExitErr(), LogTail(p.LogPath, 30))
		}
		reply, err := FourLetter(s.Addr, "ruok")
		return err == nil && reply == "imok", fmt.Sprintf("ruok: %q %v", reply, err), nil
	})
}

// FaultsPath is s's fault file: errorfs rules (errorfs.ParseLine) its
// process loads at start and on SIGUSR1 (a chaos build of keeper).
func (s *Server) FaultsPath() string { return filepath.Join(s.Dir, "faults") }

// Launch starts s's process, which must not be running, and returns at
// once: a nemesis that kills a server during its recovery uses it.
func (c *Cluster) Launch(s *Server) (*Process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && s.proc.Running() {
		return nil, fmt.Errorf("chaos: %s is already running", s.Name)
	}
	if c.cfg.Reconfig {
		if err := rejoinIfRemoved(s); err != nil {
			return nil, err
		}
	}
	s.runs++
	logPath := filepath.Join(s.Dir, fmt.Sprintf("keeper-run%02d.log", s.runs))
	env := append([]string{"KEEPER_FAULTS_FILE=" + s.FaultsPath()}, c.cfg.dropUnsyncedEnv(s.Dir)...)
	if c.cfg.Reconfig {
		env = append(env, fmt.Sprintf("KEEPER_PEER_LISTEN=127.0.0.1:%d,127.0.0.1:%d", s.QuorumPort, s.ElecPort))
	}
	p, err := StartProcess(c.cfg.Bin, []string{"server", s.cfgPath(), "--log-level", c.cfg.LogLevel}, logPath, env...)
	if err != nil {
		return nil, err
	}
	s.proc = p
	return p, nil
}

// Kill sends SIGKILL to s and waits until it is reaped.
func (c *Cluster) Kill(s *Server) {
	if p := s.Proc(); p != nil {
		p.Kill()
	}
}

// Stop sends SIGTERM to s and waits for it to exit.
func (c *Cluster) Stop(s *Server) error {
	if p := s.Proc(); p != nil {
		return p.Stop(serverStopTimeout)
	}
	return nil
}

// Pause stops s with SIGSTOP; Resume continues it.
func (c *Cluster) Pause(s *Server) {
	if p := s.Proc(); p != nil {
		p.Pause()
	}
}

// Resume continues s after Pause.
func (c *Cluster) Resume(s *Server) {
	if p := s.Proc(); p != nil {
		p.Resume()
	}
}

// Close kills every server and closes the network.
func (c *Cluster) Close() {
	for _, s := range c.Servers {
		c.Kill(s)
	}
	c.closeFronts()
	c.Net.Close()
}

// Running returns the servers whose processes are alive.
func (c *Cluster) Running() []*Server {
	var out []*Server
	for _, s := range c.Servers {
		if s.Running() {
			out = append(out, s)
		}
	}
	return out
}

// Others returns every server but s.
func (c *Cluster) Others(s *Server) []*Server {
	var out []*Server
	for _, o := range c.Servers {
		if o != s {
			out = append(out, o)
		}
	}
	return out
}

// poll calls cond every pollInterval until it holds, returns an error, or
// timeout passes; the timeout error names what was awaited and cond's
// last description of the state.
func poll(timeout time.Duration, what string, cond func() (ok bool, state string, err error)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		ok, state, err := cond()
		switch {
		case err != nil:
			return err
		case ok:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("chaos: waiting for %s: not within %v; last: %s", what, timeout, state)
		}
		<-tick.C
	}
}
