package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
)

// This file prepares and tears down a run: sessions, the root znode and
// the key space. None of it is timed.

const (
	// setupWindow is the number of setup and cleanup requests in flight:
	// enough to hide the round trip, few enough not to queue up behind a
	// slow disk for long.
	setupWindow = 256
	// dialParallelism bounds concurrent handshakes: Apache ZooKeeper
	// commits every new session to its log, and a thousand at once only
	// queue up in its request processors.
	dialParallelism = 32
	// cleanupTimeout bounds the best-effort deletion after a run.
	cleanupTimeout = 2 * time.Minute
)

// fixture is what a run works on: its sessions and znodes.
type fixture struct {
	cfg     Config
	conns   []*zkclient.Conn
	root    string   // "/bench-<random>"
	keys    []string // the key space, under root
	payload []byte   // SizeBytes of data
	window  int      // creates of the key space in flight
}

// newFixture opens n sessions, spread round-robin over cfg.Servers, and
// creates the run's root znode. On error, whatever was opened is closed.
func newFixture(ctx context.Context, cfg Config, n int) (*fixture, error) {
	f := &fixture{
		cfg:     cfg,
		root:    fmt.Sprintf("/bench-%016x", rand.Uint64()),
		payload: make([]byte, cfg.SizeBytes),
		window:  setupWindow,
	}
	for i := range f.payload {
		f.payload[i] = 'a' + byte(i%26)
	}
	conns, err := dialAll(ctx, cfg, n)
	if err != nil {
		return nil, err
	}
	f.conns = conns
	if _, _, err := conns[0].Create(ctx, f.root, nil, zkclient.CreateOptions{}); err != nil {
		f.closeConns()
		return nil, fmt.Errorf("bench: create %s: %w", f.root, err)
	}
	return f, nil
}

// dialAll opens n sessions; session i goes to cfg.Servers[i % len].
func dialAll(ctx context.Context, cfg Config, n int) ([]*zkclient.Conn, error) {
	conns := make([]*zkclient.Conn, n)
	errs := make([]error, n)
	sem := make(chan struct{}, dialParallelism)
	var wg sync.WaitGroup
	for i := range conns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			addr := cfg.Servers[i%len(cfg.Servers)]
			conns[i], errs[i] = zkclient.Dial(ctx, addr, cfg.dialOptions())
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, fmt.Errorf("bench: connect: %w", err)
	}
	return conns, nil
}

// createKeys creates the key space: KeySpace znodes of SizeBytes under root.
func (f *fixture) createKeys(ctx context.Context) error {
	f.keys = make([]string, f.cfg.KeySpace)
	for i := range f.keys {
		f.keys[i] = f.root + "/k-" + strconv.Itoa(i)
	}
	var issued atomic.Int64
	if f.cfg.Progress != nil {
		stop := countProgress(f.cfg.Progress, "creating the key space", int64(len(f.keys)), &issued, time.Second)
		defer stop()
	}
	return pipeline(ctx, f.window, len(f.keys), func(i int) (*zkclient.Conn, zkproto.Op, jute.Record) {
		issued.Store(int64(i + 1))
		return f.conn(i), zkproto.OpCreate, &zkproto.CreateRequest{Path: f.keys[i], Data: f.payload, ACL: zkproto.OpenACLUnsafe}
	})
}

// countProgress writes "bench: <what>: <n> of <total>" to out every
// interval until the returned function is called.
func countProgress(out io.Writer, what string, total int64, n *atomic.Int64, interval time.Duration) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(out, "bench: %s: %d of %d\n", what, n.Load(), total)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// syncAll makes every session's server catch up with the setup writes
// (sync), so that in an ensemble no follower answers NoNode for a key that
// was created through another server.
func (f *fixture) syncAll(ctx context.Context) error {
	return pipeline(ctx, setupWindow, len(f.conns), func(i int) (*zkclient.Conn, zkproto.Op, jute.Record) {
		return f.conn(i), zkproto.OpSync, &zkproto.SyncRequest{Path: f.root}
	})
}

// cleanup deletes the znodes of the run, best effort: created lists, per
// client, how many paths of createdPath it issued; each client deletes its
// own. It returns the first error other than NoNode.
func (f *fixture) cleanup(ctx context.Context, created []int64) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	type victim struct {
		path   string
		client int
	}
	var victims []victim
	for client, n := range created {
		for seq := range n {
			victims = append(victims, victim{createdPath(f.root, client, seq), client})
		}
	}
	for i, k := range f.keys {
		victims = append(victims, victim{k, i % len(f.conns)})
	}
	err := pipeline(ctx, setupWindow, len(victims), func(i int) (*zkclient.Conn, zkproto.Op, jute.Record) {
		v := victims[i]
		return f.conns[v.client], zkproto.OpDelete, &zkproto.DeleteRequest{Path: v.path, Version: -1}
	}, zkproto.CodeNoNode)
	if err != nil {
		return err
	}
	return f.conns[0].Delete(ctx, f.root, -1)
}

// closeConns closes every session, in parallel: a session whose server
// stopped answering takes its read timeout to give up.
func (f *fixture) closeConns() {
	var wg sync.WaitGroup
	for _, c := range f.conns {
		wg.Go(func() { c.Close() })
	}
	wg.Wait()
}

// createdPath is the path of the seq'th znode client creates in OpCreate.
func createdPath(root string, client int, seq int64) string {
	return string(appendCreatedPath(nil, root, client, seq))
}

// appendCreatedPath appends createdPath's result to b.
func appendCreatedPath(b []byte, root string, client int, seq int64) []byte {
	b = append(b, root...)
	b = append(b, "/c-"...)
	b = strconv.AppendInt(b, int64(client), 10)
	b = append(b, '-')
	return strconv.AppendInt(b, seq, 10)
}

// conn returns session i modulo their number.
func (f *fixture) conn(i int) *zkclient.Conn { return f.conns[i%len(f.conns)] }

// pipeline sends the n requests req describes, each on the session req
// names, with at most window in flight, and waits for every reply. It
// returns the first error whose code is not in ignore.
func pipeline(ctx context.Context, window, n int, req func(i int) (*zkclient.Conn, zkproto.Op, jute.Record), ignore ...zkproto.Code) error {
	sem := make(chan struct{}, window)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error // mu guards firstErr
	)
	done := func(r zkclient.Result) {
		defer wg.Done()
		<-sem
		if r.Err == nil || slices.Contains(ignore, zkproto.CodeOf(r.Err)) {
			return
		}
		mu.Lock()
		if firstErr == nil {
			firstErr = r.Err
		}
		mu.Unlock()
	}
	var err error
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
		if err != nil {
			break
		}
		conn, op, rec := req(i)
		wg.Add(1)
		conn.Go(op, rec, done)
	}
	wg.Wait() // every call completes: with a reply, or when its connection fails
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return fmt.Errorf("bench: %w", firstErr)
	}
	return err
}
