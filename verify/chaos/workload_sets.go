package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
)

// SetWorkload creates unique children under Prefix and never deletes
// them: every acknowledged create must exist at the end, on every server.
type SetWorkload struct {
	Prefix     string // "/set"
	Clients    int
	ClientBase int
	// Think is the pause between a client's creates.
	Think time.Duration

	acked int
}

// Name implements Workload.
func (w *SetWorkload) Name() string { return "set" }

// Setup creates the prefix.
func (w *SetWorkload) Setup(ctx context.Context, r *Run) error {
	return setupPaths(ctx, r, fmt.Sprintf("c%d", w.ClientBase), w.Prefix)
}

// Run drives the clients, each pinned to a home server.
func (w *SetWorkload) Run(ctx context.Context, r *Run) {
	r.Clients(ctx, w.Clients, w.ClientBase+1, func(ctx context.Context, c *Client, _ *rand.Rand) {
		n := 0
		for connect(ctx, c, nil) {
			n++
			op := &Op{Kind: zkproto.OpCreate, Path: fmt.Sprintf("%s/%s-%d", w.Prefix, c.Name, n), Data: c.Name}
			_, _ = c.Do(ctx, op, createReq(op))
			if w.Think > 0 {
				sleepCtx(ctx, w.Think)
			}
		}
	})
}

// Check checks that every acknowledged create is in the final tree.
func (w *SetWorkload) Check(r *Run, c *Committed) {
	w.acked = CheckAckedCreates(r.History, c, w.Prefix+"/", r.Report)
	r.Report.Figure("set-acked", "%d", w.acked)
}

// setupPaths creates each path (parents first) with a client of its own.
func setupPaths(ctx context.Context, r *Run, name string, paths ...string) error {
	c := r.NewClient(name, r.Cluster.Servers[0])
	defer func() { _ = c.Close(ctx) }()
	if !connect(ctx, c, nil) {
		return ctx.Err()
	}
	for _, p := range paths {
		if err := createPath(ctx, c, p); err != nil {
			return err
		}
	}
	return nil
}

// ChurnWorkload creates and deletes children of one parent — persistent
// and ephemeral, sequential — while a watcher keeps a child watch on it.
// With faults that force a lagging follower to sync by snapshot it is
// ZOOKEEPER-3125/3249's territory: the parent's pzxid, cversion and
// numChildren must agree everywhere, and sequence numbers must never be
// reused.
type ChurnWorkload struct {
	Prefix     string // "/churn"
	Clients    int
	ClientBase int
}

// Name implements Workload.
func (w *ChurnWorkload) Name() string { return "churn" }

// Setup creates the parent.
func (w *ChurnWorkload) Setup(ctx context.Context, r *Run) error {
	return setupPaths(ctx, r, fmt.Sprintf("c%d", w.ClientBase), w.Prefix)
}

// Run drives the writers and the watcher (the first client).
func (w *ChurnWorkload) Run(ctx context.Context, r *Run) {
	r.Clients(ctx, w.Clients, w.ClientBase+1, func(ctx context.Context, c *Client, rng *rand.Rand) {
		if c.Name == fmt.Sprintf("c%d", w.ClientBase+1) {
			w.watcher(ctx, c)
			return
		}
		w.writer(ctx, c, rng)
	})
}

// watcher keeps a child watch on the parent, re-arming it after each
// event.
func (w *ChurnWorkload) watcher(ctx context.Context, c *Client) {
	for connect(ctx, c, nil) {
		op := &Op{Kind: zkproto.OpGetChildren2, Path: w.Prefix, Watch: true}
		if _, err := c.Do(ctx, op, &zkproto.GetChildren2Request{Path: w.Prefix, Watch: true}); err != nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-c.Wake():
		case <-time.After(time.Second): // a lost connection takes its watch along
		}
	}
}

// writer creates sequential children and deletes random ones.
func (w *ChurnWorkload) writer(ctx context.Context, c *Client, rng *rand.Rand) {
	var mine []string
	for connect(ctx, c, func() { mine = nil }) {
		if len(mine) > 0 && rng.IntN(2) == 0 {
			i := rng.IntN(len(mine))
			op := &Op{Kind: zkproto.OpDelete, Path: mine[i], Version: -1}
			if _, err := c.Do(ctx, op, writeReq(op)); err == nil {
				mine = append(mine[:i], mine[i+1:]...)
			}
			continue
		}
		flags := zkproto.FlagPersistentSequential
		if rng.IntN(3) == 0 {
			flags = zkproto.FlagEphemeralSequential
		}
		op := &Op{Kind: zkproto.OpCreate, Path: w.Prefix + "/n-", Data: c.Name, Flags: flags}
		if _, err := c.Do(ctx, op, createReq(op)); err == nil && op.Err == zkproto.CodeOK {
			mine = append(mine, op.CreatedPath)
		}
	}
}

// Check checks that no sequence number under the parent was used twice.
func (w *ChurnWorkload) Check(r *Run, c *Committed) {
	seen := map[string]string{}
	creates := 0
	for _, t := range c.Txns {
		cr, ok := t.Record.(*txn.Create)
		if !ok || !strings.HasPrefix(cr.Path, w.Prefix+"/n-") {
			continue
		}
		creates++
		if prev, dup := seen[cr.Path]; dup {
			r.Report.Violate("sequence", "%s created twice: %s and %v", cr.Path, prev, t.Header.Zxid)
		}
		seen[cr.Path] = t.Header.Zxid.String()
	}
	r.Report.Figure("churn-creates", "%d", creates)
}
