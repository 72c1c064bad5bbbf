// Package zkreal runs a real Apache ZooKeeper 3.8 server as a child
// process, so tests can run the same workload against ZooKeeper and keeper
// and compare the results.
//
// It uses the Debian packages: the zookeeper jars under /usr/share/java and
// a java binary on PATH (or /usr/bin/java). The server runs standalone
// (ZooKeeperServerMain) on a free loopback port with a data directory under
// the test's temp directory, the admin HTTP server off, and its log in the
// temp directory; the log's tail is printed when the test fails.
//
// When Java or the jars are missing, Start skips the test, unless the
// environment variable KEEPER_REQUIRE_ZK is set to anything but "" or "0"
// (CI sets it through make test), in which case the test fails.
package zkreal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"keeper/internal/testhost"
)

// Where the Debian packages put things.
const (
	// ZooKeeperJar is the server jar. Its manifest's Class-Path names the
	// jars it depends on, so it is the whole classpath but for logging.
	ZooKeeperJar = "/usr/share/java/zookeeper.jar"
	// loggingJar binds SLF4J to a simple logger that writes to stderr. The
	// jar is optional: without it the server runs silently.
	loggingJar = "/usr/share/java/slf4j-simple.jar"
	// fallbackJava is used when java is not on PATH.
	fallbackJava = "/usr/bin/java"
	mainClass    = "org.apache.zookeeper.server.ZooKeeperServerMain"
	// quorumMainClass is the entry point of an ensemble member.
	quorumMainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
)

// RequireEnv names the environment variable that turns a missing ZooKeeper
// from a skip into a failure.
const RequireEnv = "KEEPER_REQUIRE_ZK"

// Options configures the server. The zero value is a plain server.
type Options struct {
	// ExtendedTypes enables TTL nodes (-Dzookeeper.extendedTypesEnabled).
	ExtendedTypes bool
	// SuperDigest, when set, is "user:base64(sha1(user:password))"; that
	// user bypasses ACLs.
	SuperDigest string
	// FourLetterWhitelist is the four-letter-word whitelist; empty means
	// "*" (all of them).
	FourLetterWhitelist string
	// TickTime is the server's tick; 0 means 2s, the sample zoo.cfg's value.
	// Session timeouts are bounded to [2, 20] ticks.
	TickTime time.Duration
	// ExtraConfig holds more zoo.cfg lines, written in key order.
	ExtraConfig map[string]string
	// StartTimeout bounds the wait for the server to serve a read; 0 means
	// 60s.
	StartTimeout time.Duration
	// AdminServer turns on ZooKeeper's admin HTTP server (Jetty) on a free
	// loopback port; Server.AdminAddr returns it. It needs the servlet API
	// jar (Debian's libservlet-api-java), which the zookeeper package does
	// not pull in.
	AdminServer bool
	// JVMFlags are more java flags, such as
	// -Djava.security.auth.login.config=<file> for SASL.
	JVMFlags []string
	// AuthRequired says the server refuses unauthenticated reads
	// (sessionRequireClientSASLAuth, enforce.auth.enabled): Start then
	// waits until the four-letter word srvr reports a mode instead of
	// until a read is served.
	AuthRequired bool
	// QuorumPeer runs ZooKeeper's ensemble entry point (QuorumPeerMain)
	// with myid 1 instead of the standalone one; ExtraConfig then holds
	// the server.N lines, initLimit and syncLimit (and standaloneEnabled=false
	// for an ensemble of one).
	QuorumPeer bool
}

// Server is a running ZooKeeper. Stop is safe to call more than once and
// from any goroutine; the other methods are safe for concurrent use.
type Server struct {
	addr     string
	dataDir  string
	cfgPath  string
	logPath  string
	cmd      *exec.Cmd
	log      *os.File
	exited   chan struct{} // closed when the process has been reaped
	waitErr  error         // valid once exited is closed
	startup  time.Duration
	stopOnce sync.Once
	admin    string // "host:port" of the admin server, "" when off
}

// AdminAddr returns the admin HTTP server's address, "127.0.0.1:port", or
// "" when Options.AdminServer was not set.
func (s *Server) AdminAddr() string { return s.admin }

// Addr returns the client address, "127.0.0.1:port".
func (s *Server) Addr() string { return s.addr }

// DataDir returns the server's data directory (snapshots and logs).
func (s *Server) DataDir() string { return s.dataDir }

// ConfigPath returns the server's zoo.cfg.
func (s *Server) ConfigPath() string { return s.cfgPath }

// LogPath returns the file the server's output goes to.
func (s *Server) LogPath() string { return s.logPath }

// Pid is the JVM's process id (its /proc entry gives its memory).
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// StartupDuration is how long the server took from exec to serving a read.
func (s *Server) StartupDuration() time.Duration { return s.startup }

// Stop kills the server (SIGKILL: nothing is flushed beyond what ZooKeeper
// already synced) and waits for it to exit.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Kill() // it may exit between the check and the kill
			<-s.exited
		}
		_ = s.log.Close()
	})
}

// FourLetter sends a four-letter word (srvr, stat, mntr, ...) and returns
// the reply.
func (s *Server) FourLetter(word string) (string, error) {
	return fourLetter(s.addr, word, 5*time.Second)
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string { return tail(s.logPath, n) }

// Available reports why a real ZooKeeper cannot be started here, or nil.
func Available() error {
	_, _, err := locate()
	return err
}

// Start starts a ZooKeeper server, waits until it serves a read, and
// registers its Stop with t.Cleanup. It skips or fails the test (see the
// package doc) when ZooKeeper is not installed, and fails it when the server
// does not come up.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	java, classpath, err := locate()
	if err != nil {
		unavailable(t, err)
		return nil
	}
	dir := t.TempDir() // created before Cleanup(Stop), so removed after it
	s, err := start(dir, java, classpath, opts)
	if err != nil {
		t.Fatalf("zkreal: %v", err)
		return nil // a recording TB's Fatalf returns (coordination/snap's startRecorder)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("zkreal: tail of %s:\n%s", s.logPath, s.LogTail(60))
		}
		s.Stop()
	})
	t.Logf("zkreal: ZooKeeper serving on %s after %v", s.addr, s.startup.Round(time.Millisecond))
	return s
}

// unavailable skips the test, or fails it when RequireEnv is set.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if v := os.Getenv(RequireEnv); v != "" && v != "0" {
		t.Fatalf("zkreal: %v (%s=%s; install it with make deps)", err, RequireEnv, v)
		return
	}
	t.Skipf("zkreal: %v (set %s=1 to fail instead)", err, RequireEnv)
}

// locate finds java and builds the classpath.
func locate() (java, classpath string, err error) {
	java, err = exec.LookPath("java")
	if err != nil {
		java = fallbackJava
		if _, statErr := os.Stat(java); statErr != nil {
			return "", "", errors.New("java not found on PATH or at " + fallbackJava)
		}
	}
	if _, err := os.Stat(ZooKeeperJar); err != nil {
		return "", "", fmt.Errorf("ZooKeeper is not installed (%s: %w)", ZooKeeperJar, err)
	}
	classpath = ZooKeeperJar
	for _, jar := range append([]string{loggingJar, servletJar}, nettyJars...) {
		if _, err := os.Stat(jar); err == nil {
			classpath += string(os.PathListSeparator) + jar
		}
	}
	return java, classpath, nil
}

// servletJar is the servlet API the admin server (Jetty) needs; the
// zookeeper jar's manifest leaves it out.
const servletJar = "/usr/share/java/servlet-api.jar"

// nettyJars are the Netty modules the jar's manifest leaves out and
// NettyServerCnxnFactory, which ZooKeeper needs for TLS, loads.
var nettyJars = []string{
	"/usr/share/java/netty-codec.jar",
	"/usr/share/java/netty-resolver.jar",
	"/usr/share/java/netty-transport-native-unix-common.jar",
}

// start runs one server in dir, on a port of its own (testhost: outside
// the ephemeral range, so no outgoing connection takes it before the JVM
// binds), and waits for it to serve a read. On error the process is gone
// and the error carries the log's tail.
func start(dir, java, classpath string, opts Options) (*Server, error) {
	ports, err := testhost.Reserve(1)
	if err != nil {
		return nil, fmt.Errorf("zkreal: %w", err)
	}
	port := ports[0]
	s := &Server{
		addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dataDir: filepath.Join(dir, "data"),
		logPath: filepath.Join(dir, "zookeeper.log"),
		exited:  make(chan struct{}),
	}
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("zkreal: %w", err)
	}
	if opts.AdminServer {
		if _, err := os.Stat(servletJar); err != nil {
			return nil, fmt.Errorf("zkreal: the admin server needs %s (libservlet-api-java): %w", servletJar, err)
		}
		adminPorts, err := testhost.Reserve(1)
		if err != nil {
			return nil, fmt.Errorf("zkreal: %w", err)
		}
		s.admin = net.JoinHostPort("127.0.0.1", strconv.Itoa(adminPorts[0]))
	}
	cfgPath := filepath.Join(dir, "zoo.cfg")
	s.cfgPath = cfgPath
	if err := os.WriteFile(cfgPath, zooCfg(s.dataDir, port, opts), 0o644); err != nil {
		return nil, fmt.Errorf("zkreal: %w", err)
	}
	if opts.QuorumPeer {
		if err := os.WriteFile(filepath.Join(s.dataDir, "myid"), []byte("1\n"), 0o644); err != nil {
			return nil, fmt.Errorf("zkreal: %w", err)
		}
	}
	if s.log, err = os.Create(s.logPath); err != nil {
		return nil, fmt.Errorf("zkreal: %w", err)
	}
	s.cmd = exec.Command(java, javaArgs(classpath, mainClass, cfgPath, s.admin, opts)...)
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = sysProcAttr()
	began := time.Now()
	if err := s.cmd.Start(); err != nil {
		_ = s.log.Close()
		return nil, fmt.Errorf("zkreal: start %s: %w", java, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	if err := s.waitServing(timeout, opts.AuthRequired); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%w\n--- tail of %s ---\n%s", err, s.logPath, s.LogTail(40))
	}
	s.startup = time.Since(began)
	return s, nil
}

// waitServing polls until the server answers a read (or, when
// authRequired, reports a mode in srvr), the process exits, or the
// timeout passes.
func (s *Server) waitServing(timeout time.Duration, authRequired bool) error {
	deadline := time.Now().Add(timeout)
	const pollInterval = 50 * time.Millisecond
	for {
		err := probeRead(s.addr, 2*time.Second)
		if authRequired {
			err = probeMode(s.addr, 2*time.Second)
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zkreal: no read served on %s within %v: %v", s.addr, timeout, err)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("zkreal: ZooKeeper exited before serving: %v", s.waitErr)
		case <-time.After(pollInterval):
		}
	}
}

func zooCfg(dataDir string, port int, opts Options) []byte {
	tick := opts.TickTime
	if tick == 0 {
		tick = 2 * time.Second
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# written by keeper's verify/compat/zkreal\n")
	fmt.Fprintf(&b, "tickTime=%d\n", tick.Milliseconds())
	fmt.Fprintf(&b, "dataDir=%s\n", dataDir)
	fmt.Fprintf(&b, "clientPort=%d\n", port)
	fmt.Fprintf(&b, "clientPortAddress=127.0.0.1\n")
	fmt.Fprintf(&b, "maxClientCnxns=0\n")
	keys := make([]string, 0, len(opts.ExtraConfig))
	for k := range opts.ExtraConfig {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, opts.ExtraConfig[k])
	}
	return b.Bytes()
}

func javaArgs(classpath, main, cfgPath, adminAddr string, opts Options) []string {
	whitelist := opts.FourLetterWhitelist
	if whitelist == "" {
		whitelist = "*"
	}
	args := []string{
		// A small heap and the client compiler: the server starts in about
		// half a second and a test's load needs no more.
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-XX:-UsePerfData",
		"-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dzookeeper.4lw.commands.whitelist=" + whitelist,
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
	}
	if host, port, err := net.SplitHostPort(adminAddr); err == nil {
		args = append(args, "-Dzookeeper.admin.enableServer=true", "-Dzookeeper.admin.serverAddress="+host,
			"-Dzookeeper.admin.serverPort="+port)
	} else {
		args = append(args, "-Dzookeeper.admin.enableServer=false")
	}
	if opts.ExtendedTypes {
		args = append(args, "-Dzookeeper.extendedTypesEnabled=true")
	}
	if opts.SuperDigest != "" {
		args = append(args, "-Dzookeeper.DigestAuthenticationProvider.superDigest="+opts.SuperDigest)
	}
	args = append(args, opts.JVMFlags...)
	if opts.QuorumPeer {
		main = quorumMainClass
	}
	return append(args, "-cp", classpath, main, cfgPath)
}

// QuorumPeerCommand returns a command that runs one member of a ZooKeeper
// ensemble (QuorumPeerMain) from the zoo.cfg at cfgPath, whose dataDir must
// hold the member's myid file, with the JVM flags Start uses (opts'
// ExtendedTypes, SuperDigest, FourLetterWhitelist and JVMFlags apply; the
// rest belongs in the zoo.cfg). The caller starts, waits for and kills the
// process. When ZooKeeper is not installed it skips or fails t as Start
// does.
func QuorumPeerCommand(t testing.TB, cfgPath string, opts Options) *exec.Cmd {
	t.Helper()
	java, classpath, err := locate()
	if err != nil {
		unavailable(t, err)
		return nil
	}
	cmd := exec.Command(java, javaArgs(classpath, quorumMainClass, cfgPath, "", opts)...)
	cmd.SysProcAttr = sysProcAttr()
	return cmd
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// fourLetter sends a four-letter word and reads the reply to EOF.
func fourLetter(addr, word string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(conn, word); err != nil {
		return "", err
	}
	reply, err := io.ReadAll(io.LimitReader(conn, 1<<20))
	return string(reply), err
}
