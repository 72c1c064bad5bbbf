package sim

import (
	"fmt"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// The workload: a few registers (persistent znodes written with create,
// setData — often as compare-and-set on the last version seen — and
// delete), a few ephemeral znodes the clients compete for, reads with and
// without watches, syncs, and sessions that end by closeSession or by being
// abandoned. Every create and setData writes a unique payload, so a read
// names the write it saw.
var (
	registerPaths  = []string{"/r0", "/r1", "/r2", "/r3"}
	ephemeralPaths = []string{"/e0", "/e1", "/e2"}
)

// isRegister reports whether path is one of the register znodes.
func isRegister(path string) bool {
	for _, p := range registerPaths {
		if p == path {
			return true
		}
	}
	return false
}

// nextOp draws the client's next request.
func (c *Cluster) nextOp(cl *client) *op {
	if cl.operator && c.rng.IntN(4) == 0 {
		return c.reconfigOp(cl)
	}
	r := c.rng.IntN(100)
	reg := registerPaths[c.rng.IntN(len(registerPaths))]
	eph := ephemeralPaths[c.rng.IntN(len(ephemeralPaths))]
	switch {
	case r < 22:
		return &op{kind: zkproto.OpSetData, path: reg, value: c.payload(cl), version: c.expectVersion(cl, reg)}
	case r < 32:
		return &op{kind: zkproto.OpCreate, path: reg, value: c.payload(cl)}
	case r < 38:
		return &op{kind: zkproto.OpDelete, path: reg, version: c.expectVersion(cl, reg)}
	case r < 54:
		return &op{kind: zkproto.OpGetData, path: reg, watch: c.rng.IntN(3) == 0}
	case r < 62:
		return &op{kind: zkproto.OpExists, path: reg, watch: c.rng.IntN(2) == 0}
	case r < 72:
		return &op{kind: zkproto.OpCreate, path: eph, value: c.payload(cl), flags: zkproto.FlagEphemeral}
	case r < 76:
		return &op{kind: zkproto.OpDelete, path: eph, version: -1}
	case r < 84:
		return &op{kind: zkproto.OpGetData, path: eph, watch: c.rng.IntN(3) == 0}
	case r < 90:
		return &op{kind: zkproto.OpExists, path: eph, watch: c.rng.IntN(2) == 0}
	case r < 96:
		return &op{kind: zkproto.OpSync, path: "/"}
	case r < 98 && c.rng.IntN(4) == 0:
		return &op{kind: zkproto.OpCloseSession}
	}
	return &op{kind: zkproto.OpGetData, path: reg}
}

// payload returns a value no other write in the run carries.
func (c *Cluster) payload(cl *client) []byte {
	cl.values++
	return fmt.Appendf(nil, "c%d-%d", cl.id, cl.values)
}

// expectVersion picks the version a setData or delete expects: any (-1),
// the last one the client saw (compare-and-set), or a stale guess.
func (c *Cluster) expectVersion(cl *client, path string) int32 {
	switch r := c.rng.IntN(10); {
	case r < 3:
		return -1
	case r < 9:
		return cl.versions[path]
	default:
		return int32(c.rng.IntN(4))
	}
}

// requestBody builds the request record of o.
func requestBody(o *op) jute.Record {
	switch o.kind {
	case zkproto.OpCreate:
		return &zkproto.CreateRequest{Path: o.path, Data: o.value, ACL: zkproto.OpenACLUnsafe, Flags: o.flags}
	case zkproto.OpSetData:
		return &zkproto.SetDataRequest{Path: o.path, Data: o.value, Version: o.version}
	case zkproto.OpDelete:
		return &zkproto.DeleteRequest{Path: o.path, Version: o.version}
	case zkproto.OpGetData:
		return &zkproto.GetDataRequest{Path: o.path, Watch: o.watch}
	case zkproto.OpExists:
		return &zkproto.ExistsRequest{Path: o.path, Watch: o.watch}
	case zkproto.OpSync:
		return &zkproto.SyncRequest{Path: o.path}
	case zkproto.OpReconfig:
		return o.reconfig
	case zkproto.OpAuth:
		return &zkproto.AuthPacket{Scheme: "digest", Auth: []byte(superAuth)}
	}
	return nil // ping, closeSession
}
