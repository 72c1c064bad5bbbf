package bubble

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/verify/sim/model"
)

// registers are the znodes the workload reads and writes: few, so that
// clients collide on them.
var registers = []string{"/r0", "/r1", "/r2", "/r3"}

const (
	// opTimeout bounds one call: longer than any downtime a run draws
	// plus a reconnect, so that a call times out only when the server
	// stays up and does not answer.
	opTimeout = 90 * time.Second
	// maxPause is the longest a client idles between calls.
	maxPause = 400 * time.Millisecond
	// maxArmed bounds the watches a client keeps armed at once.
	maxArmed = 3
)

// client is one workload client: a zkclient Session that reconnects and
// reattaches across the server's crashes.
type client struct {
	id   int
	r    *run
	rng  *rand.Rand
	sess *zkclient.Session
	// versions is the data version this client last saw per register,
	// for its compare-and-set writes.
	versions map[string]int32
	writes   int // writes issued, for unique values
	armed    []armed
}

// armed is a one-shot watch the client set and has not seen fire.
type armed struct {
	path  string // the watched node; "/" for the child watch
	child bool
	zxid  int64 // the node's mzxid (data watch) or pzxid (child watch) when it was set
	ch    <-chan zkproto.WatcherEvent
}

func newClient(r *run, id int) (*client, error) {
	opts := zkclient.SessionOptions{
		Options: zkclient.Options{
			SessionTimeout: r.set.SessionTimeouts[id],
			DialContext:    r.net.Dial,
			Logger:         r.log,
		},
		FirstBackoff: 50 * time.Millisecond,
		MaxBackoff:   time.Second,
		Seed:         r.set.Seed + uint64(id) + 1,
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	sess, err := zkclient.OpenSession(ctx, r.clientAddrs(), opts)
	if err != nil {
		return nil, err
	}
	return &client{id: id, r: r, sess: sess, versions: map[string]int32{},
		rng: rand.New(rand.NewPCG(r.set.Seed, uint64(id)))}, nil
}

// run issues calls until ctx ends.
func (c *client) run(ctx context.Context) {
	for ctx.Err() == nil {
		c.checkWatches()
		c.step()
		time.Sleep(time.Duration(c.rng.Int64N(int64(maxPause))))
	}
}

// step issues one call drawn at random.
func (c *client) step() {
	path := registers[c.rng.IntN(len(registers))]
	switch n := c.rng.IntN(100); {
	case n < 15:
		c.write(model.Input{Path: path, Kind: model.Create, Value: c.value()})
	case n < 40:
		c.write(model.Input{Path: path, Kind: model.Set, Value: c.value(), Version: c.version(path)})
	case n < 50:
		c.write(model.Input{Path: path, Kind: model.Delete, Version: c.version(path)})
	case n < 60:
		c.multi(path)
	case n < 80:
		c.get(path)
	case n < 90:
		c.watchData(path)
	default:
		c.watchChildren()
	}
}

func (c *client) value() string {
	c.writes++
	return fmt.Sprintf("c%d-%d", c.id, c.writes)
}

// version is the expected version of a compare-and-set: any (-1), the
// last one this client saw, or a small one.
func (c *client) version(path string) int32 {
	switch c.rng.IntN(3) {
	case 0:
		return -1
	case 1:
		if v, ok := c.versions[path]; ok {
			return v
		}
	}
	return c.rng.Int32N(3)
}

// write issues a create, set or delete and records it.
func (c *client) write(in model.Input) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	o := c.r.hist.call(c.id, in)
	var (
		stat zkproto.Stat
		err  error
	)
	switch in.Kind {
	case model.Create:
		_, stat, err = c.sess.Create(ctx, in.Path, []byte(in.Value), zkclient.CreateOptions{})
	case model.Set:
		stat, err = c.sess.Set(ctx, in.Path, []byte(in.Value), in.Version)
	case model.Delete:
		err = c.sess.Delete(ctx, in.Path, in.Version)
	}
	out := c.r.hist.ret(o, err, stat.Version, "")
	if out.Known && out.Code == zkproto.CodeOK {
		switch in.Kind {
		case model.Create:
			c.versions[in.Path] = 0
		case model.Set:
			c.versions[in.Path] = stat.Version
		case model.Delete:
			delete(c.versions, in.Path)
		}
	}
}

// multi sets path's data in a multi behind a version check: the same
// compare-and-set as a set with that version, run through the multi path.
func (c *client) multi(path string) {
	in := model.Input{Path: path, Kind: model.Set, Value: c.value(), Version: c.version(path)}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	o := c.r.hist.call(c.id, in)
	res, err := c.sess.Multi(ctx,
		zkproto.MultiOp{Op: zkproto.OpCheck, Record: &zkproto.CheckVersionRequest{Path: path, Version: in.Version}},
		zkproto.MultiOp{Op: zkproto.OpSetData, Record: &zkproto.SetDataRequest{Path: path, Data: []byte(in.Value), Version: -1}})
	var version int32
	if err == nil {
		sd, ok := res[1].Record.(*zkproto.SetDataResponse)
		if len(res) != 2 || !ok {
			c.r.hist.violate("client %d: multi on %s answered %+v", c.id, path, res)
			err = errors.New("malformed multi reply") // recorded as unknown
		} else {
			version = sd.Stat.Version
		}
	}
	if out := c.r.hist.ret(o, err, version, ""); out.Known && out.Code == zkproto.CodeOK {
		c.versions[path] = version
	}
}

// get reads path and records the read.
func (c *client) get(path string) (zkproto.Stat, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	o := c.r.hist.call(c.id, model.Input{Path: path, Kind: model.Get})
	o.stale = c.r.hist.ensemble // see history.check
	data, stat, err := c.sess.Get(ctx, path)
	out := c.r.hist.ret(o, err, stat.Version, string(data))
	if out.Known && out.Code == zkproto.CodeOK {
		c.versions[path] = stat.Version
	}
	return stat, out.Known && out.Code == zkproto.CodeOK
}

// watchData reads path with a data watch and keeps the watch.
func (c *client) watchData(path string) {
	if len(c.armed) >= maxArmed {
		c.get(path)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	o := c.r.hist.call(c.id, model.Input{Path: path, Kind: model.Get})
	o.stale = c.r.hist.ensemble // see history.check
	data, stat, ch, err := c.sess.GetW(ctx, path)
	out := c.r.hist.ret(o, err, stat.Version, string(data))
	if out.Known && out.Code == zkproto.CodeOK && ch != nil {
		c.versions[path] = stat.Version
		c.armed = append(c.armed, armed{path: path, zxid: stat.Mzxid, ch: ch})
	}
}

// watchChildren lists the root's children with a child watch.
func (c *client) watchChildren() {
	if len(c.armed) >= maxArmed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	gen := c.r.hist.epoch()
	_, stat, ch, err := c.sess.ChildrenW(ctx, "/")
	c.r.hist.noteCall(c.id, "getChildren /", gen, err)
	if err == nil && ch != nil {
		c.armed = append(c.armed, armed{path: "/", child: true, zxid: stat.Pzxid, ch: ch})
	}
}

// checkWatches reads again each node whose watch fired: the read must
// see the change (ZooKeeper's guarantee: a client sees the notification
// before the data that fired it, and its own later reads are no older).
func (c *client) checkWatches() {
	kept := c.armed[:0]
	for _, w := range c.armed {
		var ev zkproto.WatcherEvent
		select {
		case ev = <-w.ch:
		default:
			kept = append(kept, w)
			continue
		}
		if ev.Type == zkproto.EventNone {
			continue // the session ended: nothing to check
		}
		c.r.hist.watched()
		if w.child {
			c.checkChildWatch(w, ev)
			continue
		}
		stat, ok := c.get(w.path)
		if ok && stat.Mzxid <= w.zxid {
			c.r.hist.violate("client %d: the data watch on %s set at mzxid %#x fired (%v), but the read after it shows mzxid %#x",
				c.id, w.path, w.zxid, ev.Type, stat.Mzxid)
		}
	}
	c.armed = kept
}

func (c *client) checkChildWatch(w armed, ev zkproto.WatcherEvent) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	gen := c.r.hist.epoch()
	_, stat, err := c.sess.Children(ctx, "/")
	c.r.hist.noteCall(c.id, "getChildren /", gen, err)
	if err == nil && stat.Pzxid <= w.zxid {
		c.r.hist.violate("client %d: the child watch on / set at pzxid %#x fired (%v), but the listing after it shows pzxid %#x",
			c.id, w.zxid, ev.Type, stat.Pzxid)
	}
}

// close ends the client's session.
func (c *client) close() { c.sess.Close() }

// finalReads reads every register on a new session, once the writers
// have stopped. In an ensemble each read follows a sync, so that it
// reflects every write committed before it began, whichever member
// answers: these reads join the linearizability check there too.
func (r *run) finalReads() {
	c, err := newClient(r, 0)
	if err != nil {
		r.hist.violate("the final reader could not connect: %v", err)
		return
	}
	c.id = -1
	for _, p := range registers {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		o := c.r.hist.call(c.id, model.Input{Path: p, Kind: model.Get})
		conn, err := c.sess.Conn(ctx)
		var (
			data []byte
			stat zkproto.Stat
		)
		if err == nil {
			if _, err = conn.Sync(ctx, p); err == nil {
				data, stat, err = conn.Get(ctx, p, false)
			}
		}
		c.r.hist.ret(o, err, stat.Version, string(data))
		cancel()
	}
	c.close()
}
