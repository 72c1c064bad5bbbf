package zkclient

import (
	"context"
	"fmt"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// This file holds the typed convenience methods. Each is one Do call; an
// error from the server is a *zkproto.Error with the code and the path.

// CreateOptions are the optional parts of a create.
type CreateOptions struct {
	// Flags is the create mode: a zkproto.Flag* value; 0 is persistent.
	Flags int32
	// ACL is the new node's ACL; nil means zkproto.OpenACLUnsafe. An empty
	// non-nil slice is sent as is (the server answers InvalidACL).
	ACL []zkproto.ACL
	// TTL is the time to live of a TTL node, sent in milliseconds. It is
	// required with the TTL flags and rejected (BadArguments, without a
	// round trip) with the others.
	TTL time.Duration
	// Stat asks for the new node's Stat (create2). Containers and TTL
	// nodes always get one, since their ops reply with it.
	Stat bool
}

// Create creates a node and returns its actual path (with the sequence
// suffix for sequential nodes) and, if the op replies with one, its Stat
// (see CreateOptions.Stat; otherwise the Stat is zero). The op is
// createContainer for containers, createTTL for TTL nodes, create2 when a
// Stat is asked for and create otherwise, as the Java client chooses.
func (c *Conn) Create(ctx context.Context, path string, data []byte, opts CreateOptions) (string, zkproto.Stat, error) {
	acl := opts.ACL
	if acl == nil {
		acl = zkproto.OpenACLUnsafe
	}
	isTTL := opts.Flags == zkproto.FlagPersistentWithTTL || opts.Flags == zkproto.FlagPersistentSequentialWithTTL
	if isTTL != (opts.TTL != 0) {
		return "", zkproto.Stat{}, zkproto.Errorf(zkproto.CodeBadArguments, path)
	}
	var op zkproto.Op
	var req jute.Record = &zkproto.CreateRequest{Path: path, Data: data, ACL: acl, Flags: opts.Flags}
	switch {
	case isTTL:
		op = zkproto.OpCreateTTL
		req = &zkproto.CreateTTLRequest{Path: path, Data: data, ACL: acl, Flags: opts.Flags, TTLMs: opts.TTL.Milliseconds()}
	case opts.Flags == zkproto.FlagContainer:
		op = zkproto.OpCreateContainer
	case opts.Stat:
		op = zkproto.OpCreate2
	default:
		op = zkproto.OpCreate
	}
	_, rec, err := c.Do(ctx, op, req)
	if err != nil {
		return "", zkproto.Stat{}, err
	}
	switch r := rec.(type) {
	case *zkproto.CreateResponse:
		return r.Path, zkproto.Stat{}, nil
	case *zkproto.Create2Response:
		return r.Path, r.Stat, nil
	}
	return "", zkproto.Stat{}, unexpected(op, rec)
}

// Delete deletes a node if its version matches; version -1 matches any.
func (c *Conn) Delete(ctx context.Context, path string, version int32) error {
	_, _, err := c.Do(ctx, zkproto.OpDelete, &zkproto.DeleteRequest{Path: path, Version: version})
	return err
}

// Exists returns a node's Stat and true, or false if it does not exist.
// With watch set it leaves a data watch, which fires on creation if the
// node does not exist yet.
func (c *Conn) Exists(ctx context.Context, path string, watch bool) (zkproto.Stat, bool, error) {
	r, err := doTyped[zkproto.ExistsResponse](ctx, c, zkproto.OpExists, &zkproto.ExistsRequest{Path: path, Watch: watch})
	switch {
	case zkproto.CodeOf(err) == zkproto.CodeNoNode:
		return zkproto.Stat{}, false, nil
	case err != nil:
		return zkproto.Stat{}, false, err
	}
	return r.Stat, true, nil
}

// Get returns a node's data and Stat; the data is nil for a node created
// with null data. With watch set it leaves a data watch.
func (c *Conn) Get(ctx context.Context, path string, watch bool) ([]byte, zkproto.Stat, error) {
	r, err := doTyped[zkproto.GetDataResponse](ctx, c, zkproto.OpGetData, &zkproto.GetDataRequest{Path: path, Watch: watch})
	if err != nil {
		return nil, zkproto.Stat{}, err
	}
	return r.Data, r.Stat, nil
}

// Set replaces a node's data if its version matches (-1 matches any) and
// returns the new Stat.
func (c *Conn) Set(ctx context.Context, path string, data []byte, version int32) (zkproto.Stat, error) {
	r, err := doTyped[zkproto.SetDataResponse](ctx, c, zkproto.OpSetData,
		&zkproto.SetDataRequest{Path: path, Data: data, Version: version})
	if err != nil {
		return zkproto.Stat{}, err
	}
	return r.Stat, nil
}

// GetACL returns a node's ACL and Stat.
func (c *Conn) GetACL(ctx context.Context, path string) ([]zkproto.ACL, zkproto.Stat, error) {
	r, err := doTyped[zkproto.GetACLResponse](ctx, c, zkproto.OpGetACL, &zkproto.GetACLRequest{Path: path})
	if err != nil {
		return nil, zkproto.Stat{}, err
	}
	return r.ACL, r.Stat, nil
}

// SetACL replaces a node's ACL if its ACL version matches (-1 matches any)
// and returns the new Stat.
func (c *Conn) SetACL(ctx context.Context, path string, acl []zkproto.ACL, version int32) (zkproto.Stat, error) {
	r, err := doTyped[zkproto.SetACLResponse](ctx, c, zkproto.OpSetACL,
		&zkproto.SetACLRequest{Path: path, ACL: acl, Version: version})
	if err != nil {
		return zkproto.Stat{}, err
	}
	return r.Stat, nil
}

// Children returns the names of a node's children, in the server's order,
// and the node's Stat (getChildren2). With watch set it leaves a child
// watch.
func (c *Conn) Children(ctx context.Context, path string, watch bool) ([]string, zkproto.Stat, error) {
	r, err := doTyped[zkproto.GetChildren2Response](ctx, c, zkproto.OpGetChildren2,
		&zkproto.GetChildren2Request{Path: path, Watch: watch})
	if err != nil {
		return nil, zkproto.Stat{}, err
	}
	return r.Children, r.Stat, nil
}

// Sync waits until the server is as up to date as the leader, and returns
// the path the server echoes.
func (c *Conn) Sync(ctx context.Context, path string) (string, error) {
	r, err := doTyped[zkproto.SyncResponse](ctx, c, zkproto.OpSync, &zkproto.SyncRequest{Path: path})
	if err != nil {
		return "", err
	}
	return r.Path, nil
}

// AddAuth sends an auth packet (xid -4), such as scheme "digest" with
// auth "user:password", and waits for the reply. The identity holds for
// the rest of the connection. If the server rejects it, the error wraps
// zkproto.ErrAuthFailed and the connection ends: every later call fails
// with an error wrapping zkproto.ErrAuthFailed too.
func (c *Conn) AddAuth(ctx context.Context, scheme string, auth []byte) error {
	_, _, err := c.Do(ctx, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: scheme, Auth: auth})
	return err
}

// WhoAmI returns the connection's identities, in the order they were added.
func (c *Conn) WhoAmI(ctx context.Context) ([]zkproto.ClientInfo, error) {
	r, err := doTyped[zkproto.WhoAmIResponse](ctx, c, zkproto.OpWhoAmI, nil)
	if err != nil {
		return nil, err
	}
	return r.ClientInfo, nil
}

// Multi runs write ops atomically (multi). It returns one result per op.
// If the multi failed, it also returns a *zkproto.Error with the code and
// path of the op that failed; the other results then say whether each op
// came before (OK) or after (RuntimeInconsistency) the failure.
func (c *Conn) Multi(ctx context.Context, ops ...zkproto.MultiOp) ([]zkproto.MultiResult, error) {
	r, err := doTyped[zkproto.MultiResponse](ctx, c, zkproto.OpMulti, &zkproto.MultiRequest{Ops: ops})
	if err != nil {
		return nil, err
	}
	for i, res := range r.Results {
		if res.Op == zkproto.OpError && res.Err != zkproto.CodeOK {
			path := ""
			if i < len(ops) {
				path = requestPath(ops[i].Record)
			}
			return r.Results, &zkproto.Error{Code: res.Err, Path: path}
		}
	}
	return r.Results, nil
}

// AddWatch sets a persistent watch on path: mode is
// zkproto.AddWatchPersistent or zkproto.AddWatchPersistentRecursive. The
// node need not exist.
func (c *Conn) AddWatch(ctx context.Context, path string, mode int32) error {
	_, _, err := c.Do(ctx, zkproto.OpAddWatch, &zkproto.AddWatchRequest{Path: path, Mode: mode})
	return err
}

// GetAllChildrenNumber returns the number of descendants of a node.
func (c *Conn) GetAllChildrenNumber(ctx context.Context, path string) (int32, error) {
	r, err := doTyped[zkproto.GetAllChildrenNumberResponse](ctx, c, zkproto.OpGetAllChildrenNumber,
		&zkproto.GetAllChildrenNumberRequest{Path: path})
	if err != nil {
		return 0, err
	}
	return r.TotalNumber, nil
}

// GetEphemerals returns the full paths of this session's ephemeral nodes
// whose path starts with prefix (a plain string prefix; "/" selects all).
func (c *Conn) GetEphemerals(ctx context.Context, prefix string) ([]string, error) {
	r, err := doTyped[zkproto.GetEphemeralsResponse](ctx, c, zkproto.OpGetEphemerals,
		&zkproto.GetEphemeralsRequest{PrefixPath: prefix})
	if err != nil {
		return nil, err
	}
	return r.Ephemerals, nil
}

// doTyped runs Do and checks that the body decoded as *R.
func doTyped[R any, PR interface {
	*R
	jute.Record
}](ctx context.Context, c *Conn, op zkproto.Op, req jute.Record) (PR, error) {
	_, rec, err := c.Do(ctx, op, req)
	if err != nil {
		return nil, err
	}
	r, ok := rec.(PR)
	if !ok {
		return nil, unexpected(op, rec)
	}
	return r, nil
}

// unexpected reports a reply body of the wrong type, which would mean the
// zkproto reply table and this file disagree.
func unexpected(op zkproto.Op, rec jute.Record) error {
	return fmt.Errorf("zkclient: %v reply decoded as %T", op, rec)
}

// requestPath returns the path a request names, for the *zkproto.Error of
// a failed reply; "" if it names none.
func requestPath(req jute.Record) string {
	switch r := req.(type) {
	case *zkproto.CreateRequest:
		return r.Path
	case *zkproto.CreateTTLRequest:
		return r.Path
	case *zkproto.DeleteRequest:
		return r.Path
	case *zkproto.ExistsRequest:
		return r.Path
	case *zkproto.GetDataRequest:
		return r.Path
	case *zkproto.SetDataRequest:
		return r.Path
	case *zkproto.GetACLRequest:
		return r.Path
	case *zkproto.SetACLRequest:
		return r.Path
	case *zkproto.GetChildrenRequest:
		return r.Path
	case *zkproto.GetChildren2Request:
		return r.Path
	case *zkproto.SyncRequest:
		return r.Path
	case *zkproto.CheckVersionRequest:
		return r.Path
	case *zkproto.GetAllChildrenNumberRequest:
		return r.Path
	case *zkproto.GetEphemeralsRequest:
		return r.PrefixPath
	case *zkproto.AddWatchRequest:
		return r.Path
	case *zkproto.CheckWatchesRequest:
		return r.Path
	case *zkproto.RemoveWatchesRequest:
		return r.Path
	}
	return ""
}
