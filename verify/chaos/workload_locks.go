package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
)

// LockWorkload is Curator's lock recipe: each client creates an ephemeral
// sequential node under Prefix (its name tagged with the client and the
// attempt, as Curator's protected mode does, so that a create whose reply
// was lost can be found again), holds the lock while its node is the
// lowest, and otherwise watches its predecessor. Mutual exclusion is not
// asserted — a lease lock cannot promise it under pauses — only the
// server-side facts: an ephemeral is removed only by its owner or its
// owner's session ending.
type LockWorkload struct {
	Prefix     string // "/lock"
	Clients    int
	ClientBase int
	Hold       time.Duration
}

// Name implements Workload.
func (w *LockWorkload) Name() string { return "lock" }

// Setup creates the lock's parent.
func (w *LockWorkload) Setup(ctx context.Context, r *Run) error {
	return setupPaths(ctx, r, fmt.Sprintf("c%d", w.ClientBase), w.Prefix)
}

// Run drives the clients.
func (w *LockWorkload) Run(ctx context.Context, r *Run) {
	r.Clients(ctx, w.Clients, w.ClientBase+1, w.client)
}

func (w *LockWorkload) client(ctx context.Context, c *Client, _ *rand.Rand) {
	me, attempt := "", 0
	for connect(ctx, c, func() { me = "" }) {
		if me == "" {
			attempt++
			me = w.acquireNode(ctx, c, attempt)
			continue
		}
		children, ok := w.children(ctx, c)
		if !ok {
			continue
		}
		i := slices.Index(children, me)
		switch {
		case i < 0:
			me = "" // gone: the history says why (its owner's session closed)
		case i == 0:
			w.hold(ctx, c, me)
			op := &Op{Kind: zkproto.OpDelete, Path: me, Version: -1}
			if _, err := c.Do(ctx, op, writeReq(op)); err == nil {
				me = ""
			}
		default:
			pred := children[i-1]
			op := &Op{Kind: zkproto.OpExists, Path: pred, Watch: true}
			if _, err := c.Do(ctx, op, &zkproto.ExistsRequest{Path: pred, Watch: true}); err != nil || op.Err != zkproto.CodeOK {
				continue
			}
			select {
			case <-ctx.Done():
			case <-c.Wake():
			case <-time.After(time.Second):
			}
		}
	}
}

// acquireNode creates the client's lock node, or finds the one a lost
// reply created; "" when neither worked.
func (w *LockWorkload) acquireNode(ctx context.Context, c *Client, attempt int) string {
	tag := fmt.Sprintf("%s#%d-", c.Name, attempt)
	op := &Op{Kind: zkproto.OpCreate, Path: w.Prefix + "/" + tag, Data: c.Name, Flags: zkproto.FlagEphemeralSequential}
	if _, err := c.Do(ctx, op, createReq(op)); err == nil && op.Err == zkproto.CodeOK {
		return op.CreatedPath
	}
	if !connect(ctx, c, nil) {
		return ""
	}
	children, ok := w.children(ctx, c)
	if !ok {
		return ""
	}
	for _, ch := range children {
		if strings.HasPrefix(ch, w.Prefix+"/"+tag) {
			return ch
		}
	}
	return ""
}

// children lists the lock nodes, full paths, in sequence order.
func (w *LockWorkload) children(ctx context.Context, c *Client) ([]string, bool) {
	op := &Op{Kind: zkproto.OpGetChildren2, Path: w.Prefix}
	if _, err := c.Do(ctx, op, &zkproto.GetChildren2Request{Path: w.Prefix}); err != nil || op.Err != zkproto.CodeOK {
		return nil, false
	}
	out := make([]string, len(op.Children))
	for i, ch := range op.Children {
		out[i] = w.Prefix + "/" + ch
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(seqSuffix(a), seqSuffix(b)) })
	return out, true
}

// seqSuffix is the 10-digit sequence number a sequential create appends.
func seqSuffix(path string) string {
	if len(path) < 10 {
		return path
	}
	return path[len(path)-10:]
}

// hold checks the lock node now and then for the hold time.
func (w *LockWorkload) hold(ctx context.Context, c *Client, me string) {
	until := time.Now().Add(w.Hold)
	for time.Now().Before(until) && ctx.Err() == nil {
		op := &Op{Kind: zkproto.OpExists, Path: me}
		if _, err := c.Do(ctx, op, &zkproto.ExistsRequest{Path: me}); err != nil || op.Err != zkproto.CodeOK {
			return
		}
		sleepCtx(ctx, w.Hold/4)
	}
}

// Check checks that only owners removed lock nodes.
func (w *LockWorkload) Check(r *Run, c *Committed) {
	checkEphemeralOwners(c, w.Prefix+"/", r.Report)
}

// HolderWorkload keeps long-lived ephemerals, one per session, as a
// leader-election participant or a service registration would, and
// checks its node now and then. It is what a paused client or server, or
// a cut link, puts to the test: the ephemeral must live exactly as long
// as its session.
type HolderWorkload struct {
	Prefix     string // "/eph"
	Clients    int
	ClientBase int
	// Every is the pause between a client's checks of its node.
	Every time.Duration
}

// Name implements Workload.
func (w *HolderWorkload) Name() string { return "holder" }

// Setup creates the parent.
func (w *HolderWorkload) Setup(ctx context.Context, r *Run) error {
	return setupPaths(ctx, r, fmt.Sprintf("c%d", w.ClientBase), w.Prefix)
}

// Run drives the clients.
func (w *HolderWorkload) Run(ctx context.Context, r *Run) {
	r.Clients(ctx, w.Clients, w.ClientBase+1, func(ctx context.Context, c *Client, _ *rand.Rand) {
		node, n := "", 0
		for connect(ctx, c, func() { node = "" }) {
			if node == "" {
				n++
				op := &Op{Kind: zkproto.OpCreate, Path: fmt.Sprintf("%s/%s-%d", w.Prefix, c.Name, n), Data: c.Name,
					Flags: zkproto.FlagEphemeral}
				if _, err := c.Do(ctx, op, createReq(op)); err == nil && (op.Err == zkproto.CodeOK || op.Err == zkproto.CodeNodeExists) {
					node = op.Path
				}
				continue
			}
			op := &Op{Kind: zkproto.OpExists, Path: node}
			if _, err := c.Do(ctx, op, &zkproto.ExistsRequest{Path: node}); err == nil && op.Err == zkproto.CodeNoNode {
				node = "" // the history says why
			}
			sleepCtx(ctx, w.Every)
		}
	})
}

// Check checks that only owners removed the nodes.
func (w *HolderWorkload) Check(r *Run, c *Committed) { checkEphemeralOwners(c, w.Prefix+"/", r.Report) }

// checkEphemeralOwners checks that every ephemeral under prefix was
// removed by its owner or by its owner's session ending: the workloads
// never delete another session's node.
func checkEphemeralOwners(c *Committed, prefix string, r *Report) {
	owner := map[string]int64{}
	for _, t := range c.Txns {
		switch rec := t.Record.(type) {
		case *txn.Create:
			if rec.Ephemeral && strings.HasPrefix(rec.Path, prefix) {
				owner[rec.Path] = t.Header.ClientID
			}
		case *txn.Delete:
			if o, ok := owner[rec.Path]; ok && o != t.Header.ClientID {
				r.Violate("ephemerals", "%s, owned by session %#x, deleted by session %#x at %v", rec.Path, o, t.Header.ClientID, t.Header.Zxid)
			}
			delete(owner, rec.Path)
		case *txn.CloseSession:
			for p, o := range owner {
				if o == t.Header.ClientID {
					delete(owner, p)
				}
			}
		}
	}
}
