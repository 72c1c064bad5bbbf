// Command failoverload is the Go side of bench/failover.sh: it drives the
// same load against a keeper or an Apache ZooKeeper ensemble, so that the
// script can measure both side by side.
//
//	failoverload -mode write -client gozk|keeper -servers a,b,c -out FILE
//	    writers set their own znode back to back until SIGTERM; each
//	    acknowledged write appends "issuedNs ackedNs" (Unix ns) to FILE.
//	    gozk: go-zookeeper sessions given every address (its own
//	    reconnection and back-off); keeper: keeper's zkclient, redialling
//	    the next member at once after any error.
//	failoverload -mode hold -server ADDR -sessions N -tag T
//	    N go-zookeeper sessions attached to ADDR only, each with an
//	    ephemeral /expiry/T-i; prints "ready", then keeps every session
//	    busy (an exists every 50 ms) until it is SIGKILLed.
//	failoverload -mode watch -servers a,b,c -out FILE
//	    polls /expiry every 2 ms and appends "goneNs name" to FILE for each
//	    ephemeral that disappears, until SIGTERM.
//
// It measures nothing itself: bench/failover.sh kills servers and clients
// and reads the files.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/zkclient"
)

func main() {
	mode := flag.String("mode", "write", "write, hold or watch")
	client := flag.String("client", "gozk", "write mode: gozk or keeper")
	servers := flag.String("servers", "", "comma-separated client addresses")
	server := flag.String("server", "", "hold mode: the one address")
	out := flag.String("out", "", "write and watch modes: the output file")
	writers := flag.Int("writers", 4, "write mode: concurrent writers")
	sessions := flag.Int("sessions", 10, "hold mode: sessions")
	tag := flag.String("tag", "s", "hold mode: ephemeral name prefix")
	timeout := flag.Duration("timeout", 10*time.Second, "session timeout")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var err error
	switch *mode {
	case "write":
		err = write(ctx, *client, strings.Split(*servers, ","), *out, *writers, *timeout)
	case "hold":
		err = hold(ctx, *server, *sessions, *tag, *timeout)
	case "watch":
		err = watch(ctx, strings.Split(*servers, ","), *out, *timeout)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// acks appends lines to a file, flushing every 50 ms so the script sees
// progress.
type acks struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func newAcks(ctx context.Context, path string) (*acks, func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	a := &acks{w: bufio.NewWriter(f)}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				a.mu.Lock()
				a.w.Flush()
				a.mu.Unlock()
			case <-done:
				return
			}
		}
	}()
	return a, func() {
		close(done)
		a.mu.Lock()
		a.w.Flush()
		a.mu.Unlock()
		f.Close()
	}, nil
}

func (a *acks) line(format string, args ...any) {
	a.mu.Lock()
	fmt.Fprintf(a.w, format+"\n", args...)
	a.mu.Unlock()
}

// quietLogger silences go-zookeeper's connection log.
var quietLogger = log.New(io.Discard, "", 0)

func write(ctx context.Context, client string, addrs []string, out string, writers int, timeout time.Duration) error {
	a, closeAcks, err := newAcks(ctx, out)
	if err != nil {
		return err
	}
	defer closeAcks()
	setup, _, err := zk.Connect(addrs, timeout, zk.WithLogger(quietLogger))
	if err != nil {
		return err
	}
	for i := range writers {
		for _, p := range []string{"/failover", fmt.Sprintf("/failover/w%d", i)} {
			if _, err := setup.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
				return err
			}
		}
	}
	setup.Close()
	var wg sync.WaitGroup
	for i := range writers {
		path := fmt.Sprintf("/failover/w%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if client == "keeper" {
				writeKeeper(ctx, addrs, i, path, a, timeout)
			} else {
				writeGoZK(ctx, addrs, path, a, timeout)
			}
		}()
	}
	wg.Wait()
	return nil
}

func writeGoZK(ctx context.Context, addrs []string, path string, a *acks, timeout time.Duration) {
	c, _, err := zk.Connect(addrs, timeout, zk.WithLogger(quietLogger))
	if err != nil {
		log.Print(err)
		return
	}
	defer c.Close()
	for ctx.Err() == nil {
		issued := time.Now()
		if _, err := c.Set(path, []byte(issued.String()), -1); err == nil {
			a.line("%d %d", issued.UnixNano(), time.Now().UnixNano())
		}
	}
}

func writeKeeper(ctx context.Context, addrs []string, first int, path string, a *acks, timeout time.Duration) {
	var c *zkclient.Conn
	next := first
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for ctx.Err() == nil {
		if c == nil {
			dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			var err error
			c, err = zkclient.Dial(dctx, addrs[next%len(addrs)], zkclient.Options{SessionTimeout: timeout})
			cancel()
			next++
			if err != nil {
				c = nil
				continue
			}
		}
		issued := time.Now()
		octx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.Set(octx, path, []byte(issued.String()), -1)
		cancel()
		if err != nil {
			c.Close()
			c = nil
			continue
		}
		a.line("%d %d", issued.UnixNano(), time.Now().UnixNano())
	}
}

func hold(ctx context.Context, addr string, n int, tag string, timeout time.Duration) error {
	var conns []*zk.Conn
	for i := range n {
		c, _, err := zk.Connect([]string{addr}, timeout, zk.WithLogger(quietLogger))
		if err != nil {
			return err
		}
		conns = append(conns, c)
		if _, err := c.Create("/expiry", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			return err
		}
		if _, err := c.Create(fmt.Sprintf("/expiry/%s-%d", tag, i), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			return err
		}
	}
	fmt.Println("ready")
	// Keep every session busy until the process is killed, so that each
	// one's last request is within 50 ms of its death.
	for ctx.Err() == nil {
		for _, c := range conns {
			c.Exists("/expiry")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func watch(ctx context.Context, addrs []string, out string, timeout time.Duration) error {
	a, closeAcks, err := newAcks(ctx, out)
	if err != nil {
		return err
	}
	defer closeAcks()
	c, _, err := zk.Connect(addrs, timeout, zk.WithLogger(quietLogger))
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Create("/expiry", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		return err
	}
	seen := map[string]bool{}
	for ctx.Err() == nil {
		kids, _, err := c.Children("/expiry")
		if err == nil {
			now := time.Now().UnixNano()
			present := map[string]bool{}
			for _, k := range kids {
				present[k] = true
				seen[k] = true
			}
			for k := range seen {
				if !present[k] {
					a.line("%d %s", now, k)
					delete(seen, k)
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}
