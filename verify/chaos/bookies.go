package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"keeper/coordination/zkproto"
	"keeper/internal/testhost"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
)

// Bookie timeouts.
const (
	bookieStartTimeout = 60 * time.Second
	bookieStopTimeout  = 20 * time.Second
	// bookieHostBase is the last octet of the first bookie's listening
	// address: bookie i listens on 127.0.0.(bookieHostBase+i), on the
	// same port as its front on 127.0.0.1.
	bookieHostBase = 10
	// harnessNode is the node name of every connection the harness's own
	// process makes (ledger clients, direct bookie reads).
	harnessNode = "h"
)

// Bookie is one `keeper bookie` process of a Bookies set. Clients reach
// it only through its front, 127.0.0.1:Port, which is the address it
// registers and its bookie id; the bookie itself listens on
// 127.0.0.(10+i):Port (all of 127/8 is loopback on Linux) and advertises
// 127.0.0.1 with its own port, so that the registration names the front
// with no change to the bookie. The front tells which process dialled it
// (see Bookies.Own) and passes the connection through the Network proxy
// from that node to this bookie, so a rule can cut one writer off one
// bookie and leave the others alone.
type Bookie struct {
	Index      int
	Name       string // "b<Index+1>", its node name in the Network
	ID         string // 127.0.0.1:Port: its bookie id and registered address
	Real       string // where the process listens
	Port       int
	Dir        string
	JournalDir string
	LedgerDir  string

	set   *Bookies
	front net.Listener

	mu      sync.Mutex
	proc    *Process
	runs    int
	proxies map[string]*Proxy // by dialling node
}

// Proc returns the current (or last) run, nil before the first start.
func (b *Bookie) Proc() *Process {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.proc
}

// Running reports whether the bookie's process is alive.
func (b *Bookie) Running() bool {
	p := b.Proc()
	return p != nil && p.Running()
}

// Bookies is a set of `keeper bookie` processes whose metadata lives on
// a Cluster, every client link through the cluster's Network.
type Bookies struct {
	cl   *Cluster
	bin  string
	dir  string
	List []*Bookie

	mu     sync.Mutex
	owners map[int]string // pid -> node name of processes whose bookie links are told apart
	closed bool
	wg     sync.WaitGroup
	// What the fronts saw clients ask, by ledger (see RecoveryAdds).
	recoveryAdds map[int64]map[int64]int
	fenceReads   map[int64]int
	drops        dropTable // requests the fronts are to swallow (DropOne)
	// Conf holds bk_server.conf lines ("key=value") every bookie starts
	// with; the command-line flags override them. Set it before the first
	// start.
	Conf []string
}

// NewBookies prepares n bookies under dir (their fronts listen at once)
// with their metadata on cl. Start them with StartAll.
func NewBookies(cl *Cluster, bin, dir string, n int) (*Bookies, error) {
	bs := &Bookies{cl: cl, bin: bin, dir: dir, owners: map[int]string{},
		recoveryAdds: map[int64]map[int64]int{}, fenceReads: map[int64]int{}}
	for i := range n {
		b, err := bs.newBookie(i)
		if err != nil {
			bs.Close()
			return nil, err
		}
		bs.List = append(bs.List, b)
	}
	return bs, nil
}

func (bs *Bookies) newBookie(i int) (*Bookie, error) {
	var lastErr error
	for range 20 {
		ports, err := testhost.Reserve(1)
		if err != nil {
			return nil, err
		}
		real := net.JoinHostPort(fmt.Sprintf("127.0.0.%d", bookieHostBase+i), strconv.Itoa(ports[0]))
		probe, err := net.Listen("tcp", real)
		if err != nil {
			lastErr = err
			continue
		}
		probe.Close()
		front, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])))
		if err != nil {
			lastErr = err
			continue
		}
		name := "b" + strconv.Itoa(i+1)
		dir := filepath.Join(bs.dir, name)
		b := &Bookie{Index: i, Name: name, ID: front.Addr().String(), Real: real, Port: ports[0], Dir: dir,
			JournalDir: filepath.Join(dir, "journal"), LedgerDir: filepath.Join(dir, "ledgers"),
			set: bs, front: front, proxies: map[string]*Proxy{}}
		bs.wg.Add(1)
		go b.serveFront()
		return b, nil
	}
	return nil, fmt.Errorf("chaos: no port for bookie %d: %v", i+1, lastErr)
}

// Own names the process pid as node name: its connections to bookies go
// through proxies from that node. Connections of unnamed processes, the
// harness's own included, come from node "h".
func (bs *Bookies) Own(pid int, name string) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.owners[pid] = name
}

// Disown forgets pid.
func (bs *Bookies) Disown(pid int) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	delete(bs.owners, pid)
}

// ownerOf returns the node that dialled c, a connection accepted by a
// front.
func (bs *Bookies) ownerOf(c net.Conn) string {
	bs.mu.Lock()
	owners := make(map[int]string, len(bs.owners))
	for pid, name := range bs.owners {
		owners[pid] = name
	}
	bs.mu.Unlock()
	if len(owners) == 0 {
		return harnessNode
	}
	if name, ok := socketOwner(c, owners); ok {
		return name
	}
	return harnessNode
}

// Bookie returns the bookie with the id, nil if none.
func (bs *Bookies) Bookie(id string) *Bookie {
	for _, b := range bs.List {
		if b.ID == id {
			return b
		}
	}
	return nil
}

// StartAll starts every bookie and waits until each has registered.
func (bs *Bookies) StartAll() error {
	for _, b := range bs.List {
		if _, err := bs.Launch(b); err != nil {
			return err
		}
	}
	for _, b := range bs.List {
		if err := bs.WaitServing(b, bookieStartTimeout); err != nil {
			return err
		}
	}
	return nil
}

// Start starts b and waits until it serves and is registered.
func (bs *Bookies) Start(b *Bookie) error {
	if _, err := bs.Launch(b); err != nil {
		return err
	}
	return bs.WaitServing(b, bookieStartTimeout)
}

// Launch starts b's process, which must not be running, and returns at
// once. Its metadata links run through proxies from b to every server.
func (bs *Bookies) Launch(b *Bookie) (*Process, error) {
	var zk []string
	for _, s := range bs.cl.Servers {
		addr, err := bs.cl.ClientAddr(b.Name, s)
		if err != nil {
			return nil, err
		}
		zk = append(zk, addr)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.proc != nil && b.proc.Running() {
		return nil, fmt.Errorf("chaos: %s is already running", b.Name)
	}
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		return nil, err
	}
	b.runs++
	host, _, _ := net.SplitHostPort(b.Real)
	args := []string{"bookie"}
	if len(bs.Conf) > 0 {
		conf := filepath.Join(b.Dir, "bk_server.conf")
		if err := os.WriteFile(conf, []byte(strings.Join(bs.Conf, "\n")+"\n"), 0o644); err != nil {
			return nil, err
		}
		args = append(args, conf)
	}
	args = append(args, "--port", strconv.Itoa(b.Port), "--listen-host", host,
		"--advertised-address", "127.0.0.1", "--zk-servers", strings.Join(zk, ","),
		"--journal-dirs", b.JournalDir, "--ledger-dirs", b.LedgerDir, "--log-level", bs.cl.cfg.LogLevel)
	p, err := StartProcess(bs.bin, args, filepath.Join(b.Dir, fmt.Sprintf("bookie-run%02d.log", b.runs)),
		append([]string{"KEEPER_FAULTS_FILE=" + b.FaultsPath()}, bs.cl.cfg.dropUnsyncedEnv(b.Dir)...)...)
	if err != nil {
		return nil, err
	}
	b.proc = p
	return p, nil
}

// FaultsPath is b's fault file, as Server.FaultsPath is a server's: a
// chaos build of keeper loads it at start and on SIGUSR1.
func (b *Bookie) FaultsPath() string { return filepath.Join(b.Dir, "faults") }

// WaitServing waits until b answers a bookie-info request on its real
// address and its registration exists. A bookie that exits first is an
// error carrying its log's tail.
func (bs *Bookies) WaitServing(b *Bookie, timeout time.Duration) error {
	p := b.Proc()
	return poll(timeout, b.Name+" serves and is registered", func() (bool, string, error) {
		if p == nil || !p.Running() {
			return false, "", fmt.Errorf("chaos: %s exited during start-up (%v):\n%s", b.Name, exitErr(p), logTail(p))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := pingBookie(ctx, b.Real); err != nil {
			return false, err.Error(), nil
		}
		ok, err := bs.registered(ctx, b)
		if err != nil {
			return false, err.Error(), nil
		}
		return ok, "not registered", nil
	})
}

func exitErr(p *Process) error {
	if p == nil {
		return errors.New("not started")
	}
	return p.ExitErr()
}

func logTail(p *Process) string {
	if p == nil {
		return ""
	}
	return LogTail(p.LogPath, 30)
}

// pingBookie asks the bookie at addr for its disk info.
func pingBookie(ctx context.Context, addr string) error {
	c, err := bookierpc.Dial(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_, _, err = c.BookieInfo(ctx)
	return err
}

// registered reports whether b's writable registration exists, asking a
// running server directly.
func (bs *Bookies) registered(ctx context.Context, b *Bookie) (bool, error) {
	running := bs.cl.Running()
	if len(running) == 0 {
		return false, errors.New("no metadata server runs")
	}
	conn, err := Dial(ctx, running[0].Addr, DialOptions{Timeout: 4 * time.Second})
	if err != nil {
		return false, err
	}
	defer func() {
		_, _ = conn.Close(ctx)
	}()
	rep, err := conn.Do(ctx, zkproto.OpExists, &zkproto.ExistsRequest{Path: "/ledgers/available/" + b.ID})
	if err != nil {
		return false, err
	}
	switch rep.Header.Err {
	case zkproto.CodeOK:
		return true, nil
	case zkproto.CodeNoNode:
		return false, nil
	}
	return false, fmt.Errorf("exists: %v", rep.Header.Err)
}

// Kill sends SIGKILL to b and waits until it is reaped.
func (bs *Bookies) Kill(b *Bookie) {
	if p := b.Proc(); p != nil {
		p.Kill()
	}
}

// Stop sends SIGTERM to b and waits for it to exit.
func (bs *Bookies) Stop(b *Bookie) error {
	if p := b.Proc(); p != nil {
		return p.Stop(bookieStopTimeout)
	}
	return nil
}

// Running returns the bookies whose processes are alive.
func (bs *Bookies) Running() []*Bookie {
	var out []*Bookie
	for _, b := range bs.List {
		if b.Running() {
			out = append(out, b)
		}
	}
	return out
}

// Close kills every bookie and closes the fronts. The proxies belong to
// the cluster's Network.
func (bs *Bookies) Close() {
	bs.mu.Lock()
	bs.closed = true
	bs.mu.Unlock()
	for _, b := range bs.List {
		bs.Kill(b)
		b.front.Close()
	}
	bs.wg.Wait()
}

// serveFront accepts connections to b and passes each through the proxy
// from its dialler's node.
func (b *Bookie) serveFront() {
	defer b.set.wg.Done()
	for {
		c, err := b.front.Accept()
		if err != nil {
			return
		}
		b.set.wg.Add(1)
		go func() {
			defer b.set.wg.Done()
			b.pass(c)
		}()
	}
}

// pass joins c to a connection through the proxy from c's node to b.
func (b *Bookie) pass(c net.Conn) {
	owner := b.set.ownerOf(c)
	p, err := b.proxy(owner)
	if err != nil {
		c.Close()
		return
	}
	up, err := net.DialTimeout("tcp", p.Addr(), proxyDialTimeout)
	if err != nil {
		resetConn(c)
		return
	}
	tap := io.TeeReader(c, &requestTap{note: b.set.note})
	splice(c, up, b.set.drops.filter(owner, b.Name, tap))
}

// RecoveryAdds returns how many distinct entries of a ledger clients sent
// to bookies with RECOVERY_ADD (recovery writing entries back) and how
// many fencing reads they sent, as the fronts saw the requests go by.
func (bs *Bookies) RecoveryAdds(ledgerID int64) (entries, fenceReads int) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return len(bs.recoveryAdds[ledgerID]), bs.fenceReads[ledgerID]
}

// note records a request a client sent to a bookie.
func (bs *Bookies) note(req *bkproto.Request) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	// An unset proto2 enum reads as its first value, so the flags are
	// checked for presence.
	if a := req.GetAddRequest(); a != nil && a.Flag != nil && *a.Flag == bkproto.AddRequest_RECOVERY_ADD {
		m := bs.recoveryAdds[a.GetLedgerId()]
		if m == nil {
			m = map[int64]int{}
			bs.recoveryAdds[a.GetLedgerId()] = m
		}
		m[a.GetEntryId()]++
	}
	if rd := req.GetReadRequest(); rd != nil && rd.Flag != nil && *rd.Flag == bkproto.ReadRequest_FENCE_LEDGER {
		bs.fenceReads[rd.GetLedgerId()]++
	}
}

// requestTap parses the frames a client sends, v3 or v2, and passes each
// request to note (a v2 packet as the v3 request it stands for). It never fails the copy it taps: after a frame it cannot
// parse, it stops parsing.
type requestTap struct {
	note func(*bkproto.Request)
	buf  []byte
	off  bool
}

func (t *requestTap) Write(p []byte) (int, error) {
	if t.off {
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	for len(t.buf) >= bkproto.FrameLengthBytes {
		n, err := bkproto.ParseFrameLength([bkproto.FrameLengthBytes]byte(t.buf[:bkproto.FrameLengthBytes]),
			bkproto.DefaultMaxFrameBytes)
		if err != nil {
			t.off, t.buf = true, nil
			break
		}
		if len(t.buf) < bkproto.FrameLengthBytes+n {
			break
		}
		if req, _ := decodeRequest(t.buf[bkproto.FrameLengthBytes : bkproto.FrameLengthBytes+n]); req != nil {
			t.note(req)
		}
		t.buf = t.buf[bkproto.FrameLengthBytes+n:]
	}
	if len(t.buf) == 0 {
		t.buf = nil
	}
	return len(p), nil
}

// LinksFrom returns how many connections node has made to the bookies
// (as the fronts told them apart) and how many chunks were held by a cut.
func (bs *Bookies) LinksFrom(node string) (conns, held int64) {
	for _, b := range bs.List {
		b.mu.Lock()
		p := b.proxies[node]
		b.mu.Unlock()
		if p != nil {
			st := p.Stats()
			conns += st.Conns
			held += st.Held
		}
	}
	return conns, held
}

// proxy returns the proxy from node to b, made on first use.
func (b *Bookie) proxy(node string) (*Proxy, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.proxies[node]; ok {
		return p, nil
	}
	p, err := b.set.cl.Net.Proxy(node, b.Name, b.Real)
	if err != nil {
		return nil, err
	}
	b.proxies[node] = p
	return p, nil
}

// splice copies both ways between a and b; fromA is what of a's bytes
// goes to b (a itself, or a filter over it). A clean end is passed on as
// a half-close; an error (a reset by the proxy) resets the other side.
func splice(a, b net.Conn, fromA io.Reader) {
	var wg sync.WaitGroup
	var once sync.Once
	abort := func() {
		once.Do(func() {
			resetConn(a)
			resetConn(b)
		})
	}
	half := 0
	var mu sync.Mutex
	copyDir := func(dst net.Conn, src io.Reader) {
		defer wg.Done()
		_, err := io.Copy(dst, src)
		if err != nil {
			abort()
			return
		}
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		mu.Lock()
		half++
		both := half == 2
		mu.Unlock()
		if both {
			a.Close()
			b.Close()
		}
	}
	wg.Add(2)
	go copyDir(b, fromA)
	go copyDir(a, b)
	wg.Wait()
	a.Close()
	b.Close()
}

// resetConn closes c with an RST.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
