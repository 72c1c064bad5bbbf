package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// Workload is client traffic whose history the checkers judge.
type Workload interface {
	// Name names the workload in logs.
	Name() string
	// Setup creates what the workload needs before the faults start.
	Setup(ctx context.Context, r *Run) error
	// Run drives the workload's clients until ctx ends.
	Run(ctx context.Context, r *Run)
	// Check runs the workload's own checks against the committed history.
	Check(r *Run, c *Committed)
}

// backoff is the pause after a failed connect, so a client without a
// server does not spin.
const backoff = 100 * time.Millisecond

// sleepCtx waits d or until ctx ends; false if ctx ended. It paces client
// loops; it never waits for a condition.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// connect makes sure c is connected, waiting out a pause; false when ctx
// ended. A session that expired is replaced by a new one (Connect's next
// call opens it) and reported through expired.
func connect(ctx context.Context, c *Client, expired func()) bool {
	for ctx.Err() == nil {
		if c.Paused() {
			sleepCtx(ctx, 20*time.Millisecond)
			continue
		}
		err := c.Connect(ctx)
		if err == nil {
			return true
		}
		if errors.Is(err, zkproto.ErrSessionExpired) && expired != nil {
			expired()
		}
		sleepCtx(ctx, backoff)
	}
	return false
}

// unique makes write values unique across the run.
type unique struct{ n atomic.Int64 }

func (u *unique) next(client string) string {
	return fmt.Sprintf("%s-%d", client, u.n.Add(1))
}

// ---------------------------------------------------------------------------
// CAS registers.

// pacedThink is the pause between a client's requests in the scenarios
// whose checks need requests in flight across every fault, not volume
// (partitions, kill -9, adversarial clients, membership changes): at most
// 50 requests a second a client, a few hundred in all. A 1 ms pause made
// each client a closed loop as fast as the machine allowed, burning
// whatever CPU there was, and the history to check grew with it. The
// scenarios that need volume (a SNAP forced by thousands of txns, a
// snapshot every few hundred, slow consumers' backlogs) keep their
// pauses.
const pacedThink = 20 * time.Millisecond

// RegisterWorkload is etcd's and Jepsen's register workload in ZooKeeper
// terms: a few keys, each a versioned register; clients read, compare-and-
// set (setData with the version they last saw), blind-set, sync-then-read,
// delete and create, every write with a unique value. Each client is
// pinned to a home server. With Watch the reads leave watches; with Move a
// client moves its session to the next server that often.
type RegisterWorkload struct {
	Prefix  string // "/reg"
	Keys    int
	Clients int
	// ClientBase numbers the clients: "c<ClientBase+i>".
	ClientBase int
	Watch      bool
	Move       time.Duration
	// Think is the pause between a client's requests.
	Think time.Duration

	vals unique
}

// Name implements Workload.
func (w *RegisterWorkload) Name() string { return "register" }

func (w *RegisterWorkload) key(i int) string { return fmt.Sprintf("%s/k%d", w.Prefix, i) }

// Setup creates the prefix and the keys.
func (w *RegisterWorkload) Setup(ctx context.Context, r *Run) error {
	c := r.NewClient(fmt.Sprintf("c%d", w.ClientBase), r.Cluster.Servers[0])
	defer func() { _ = c.Close(ctx) }()
	if !connect(ctx, c, nil) {
		return ctx.Err()
	}
	if err := createPath(ctx, c, w.Prefix); err != nil {
		return err
	}
	for i := range w.Keys {
		op := &Op{Kind: zkproto.OpCreate, Path: w.key(i), Data: w.vals.next(c.Name)}
		if _, err := c.Do(ctx, op, createReq(op)); err != nil || (op.Err != zkproto.CodeOK && op.Err != zkproto.CodeNodeExists) {
			return fmt.Errorf("chaos: create %s: %v %v", op.Path, op.Err, err)
		}
	}
	return nil
}

// Run drives the clients.
func (w *RegisterWorkload) Run(ctx context.Context, r *Run) {
	done := make(chan struct{})
	for i := range w.Clients {
		home := r.Cluster.Servers[i%len(r.Cluster.Servers)]
		c := r.NewClient(fmt.Sprintf("c%d", w.ClientBase+1+i), home)
		rng := r.ClientRand(w.ClientBase + 1 + i)
		go func() {
			defer func() { done <- struct{}{} }()
			w.client(ctx, r, c, rng)
		}()
	}
	for range w.Clients {
		<-done
	}
}

// client is one register client's loop.
func (w *RegisterWorkload) client(ctx context.Context, r *Run, c *Client, rng *rand.Rand) {
	versions := map[string]int32{}
	next := 0
	moved := time.Now()
	for connect(ctx, c, nil) {
		if w.Move > 0 && time.Since(moved) > w.Move {
			moved = time.Now()
			next++
			s := r.Cluster.Servers[(c.order[0].ID-1+next)%len(r.Cluster.Servers)]
			if err := c.ConnectTo(ctx, s); err != nil && !errors.Is(err, zkproto.ErrSessionExpired) {
				continue // refused (behind us) or down: Connect finds another
			}
		}
		key := w.key(rng.IntN(w.Keys))
		w.step(ctx, c, rng, key, versions)
		if w.Think > 0 && !sleepCtx(ctx, w.Think) {
			return
		}
	}
}

// step runs one random request on key.
func (w *RegisterWorkload) step(ctx context.Context, c *Client, rng *rand.Rand, key string, versions map[string]int32) {
	p := rng.Float64()
	switch {
	case p < 0.30:
		w.read(ctx, c, key, versions, rng.IntN(3))
	case p < 0.75:
		v, ok := versions[key]
		if !ok {
			w.read(ctx, c, key, versions, 0)
			return
		}
		op := &Op{Kind: zkproto.OpSetData, Path: key, Data: w.vals.next(c.Name), Version: v}
		w.write(ctx, c, op, versions)
	case p < 0.82:
		op := &Op{Kind: zkproto.OpSetData, Path: key, Data: w.vals.next(c.Name), Version: -1}
		w.write(ctx, c, op, versions)
	case p < 0.88:
		op := &Op{Kind: zkproto.OpSync, Path: key}
		if _, err := c.Do(ctx, op, &zkproto.SyncRequest{Path: key}); err == nil {
			w.read(ctx, c, key, versions, 0)
		}
	case p < 0.94:
		v, ok := versions[key]
		if !ok {
			v = -1
		}
		w.write(ctx, c, &Op{Kind: zkproto.OpDelete, Path: key, Version: v}, versions)
	default:
		w.write(ctx, c, &Op{Kind: zkproto.OpCreate2, Path: key, Data: w.vals.next(c.Name)}, versions)
	}
}

// read reads key with getData, exists or getChildren2 (kind 0, 1, 2).
func (w *RegisterWorkload) read(ctx context.Context, c *Client, key string, versions map[string]int32, kind int) {
	op := &Op{Path: key, Watch: w.Watch}
	var err error
	switch kind {
	case 0:
		op.Kind = zkproto.OpGetData
		_, err = c.Do(ctx, op, &zkproto.GetDataRequest{Path: key, Watch: w.Watch})
	case 1:
		op.Kind = zkproto.OpExists
		_, err = c.Do(ctx, op, &zkproto.ExistsRequest{Path: key, Watch: w.Watch})
	default:
		op.Kind = zkproto.OpGetChildren2
		_, err = c.Do(ctx, op, &zkproto.GetChildren2Request{Path: key, Watch: w.Watch})
	}
	switch {
	case err != nil:
	case op.Err == zkproto.CodeOK:
		versions[key] = op.Stat.Version
	case op.Err == zkproto.CodeNoNode:
		delete(versions, key)
	}
}

// write sends a write and updates what the client knows of the key.
func (w *RegisterWorkload) write(ctx context.Context, c *Client, op *Op, versions map[string]int32) {
	var req = writeReq(op)
	if _, err := c.Do(ctx, op, req); err != nil {
		delete(versions, op.Path)
		return
	}
	switch {
	case op.Err == zkproto.CodeOK && op.Kind == zkproto.OpSetData:
		versions[op.Path] = op.Stat.Version
	case op.Err == zkproto.CodeOK && op.Kind == zkproto.OpCreate2:
		versions[op.Path] = 0
	case op.Err == zkproto.CodeOK && op.Kind == zkproto.OpDelete, op.Err == zkproto.CodeNoNode:
		delete(versions, op.Path)
	case op.Err == zkproto.CodeBadVersion:
		delete(versions, op.Path)
	}
}

// Check is done by the run's common checks (linearizability of Prefix).
func (w *RegisterWorkload) Check(*Run, *Committed) {}

// writeReq builds the request record of a write op.
func writeReq(op *Op) jute.Record {
	switch op.Kind {
	case zkproto.OpSetData:
		return &zkproto.SetDataRequest{Path: op.Path, Data: []byte(op.Data), Version: op.Version}
	case zkproto.OpDelete:
		return &zkproto.DeleteRequest{Path: op.Path, Version: op.Version}
	}
	return createReq(op)
}

// createReq builds a create request from op.
func createReq(op *Op) *zkproto.CreateRequest {
	return &zkproto.CreateRequest{Path: op.Path, Data: []byte(op.Data), ACL: zkproto.OpenACLUnsafe, Flags: op.Flags}
}

// createPath creates path (persistent, empty) if it is missing; its
// parent must exist.
func createPath(ctx context.Context, c *Client, path string) error {
	op := &Op{Kind: zkproto.OpCreate, Path: path}
	if _, err := c.Do(ctx, op, createReq(op)); err != nil {
		return err
	}
	if op.Err != zkproto.CodeOK && op.Err != zkproto.CodeNodeExists {
		return fmt.Errorf("chaos: create %s: %v", path, op.Err)
	}
	return nil
}
