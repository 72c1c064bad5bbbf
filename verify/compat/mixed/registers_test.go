package mixed

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"keeper/coordination/zkproto"
	"keeper/verify/sim/model"
)

// registerClients and registerPaths size the register workload: a few
// clients racing compare-and-set writes on a few znodes.
const (
	registerClients = 3
	registerPaths   = 3
)

// registers is the register workload: each client, with a session given
// every member's address, reads a znode's version and sets it with that
// version (a compare-and-set), again and again, recording each call's
// invocation and response times for a linearizability check of the whole
// run with porcupine (verify/sim/model's register model).
type registers struct {
	stop chan struct{}
	wg   sync.WaitGroup
	t0   time.Time

	mu  sync.Mutex
	ops []porcupine.Operation
}

func registerPath(i int) string { return fmt.Sprintf("/registers/r%d", i) }

func startRegisters(t *testing.T, e *Ensemble) *registers {
	t.Helper()
	var addrs []string
	for _, m := range e.Members {
		addrs = append(addrs, m.Addr)
	}
	r := &registers{stop: make(chan struct{}), t0: time.Now()}
	for c := range registerClients {
		conn, _, err := zk.Connect(addrs, sessionTimeout, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.Close)
		if c == 0 {
			if _, err := conn.Create("/registers", nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatalf("create /registers: %v", err)
			}
			for i := range registerPaths {
				r.create(conn, c, registerPath(i), "init")
			}
		}
		r.wg.Add(1)
		go r.run(conn, c)
	}
	return r
}

// now is the time since the workload started, porcupine's clock.
func (r *registers) now() int64 { return int64(time.Since(r.t0)) }

// outcome maps a client error to the register model's output: a code
// the server answered, or unknown (connection lost, session gone, ...).
func outcome(err error, version int32) model.Output {
	switch {
	case err == nil:
		return model.Output{Known: true, Code: zkproto.CodeOK, Version: version}
	case errors.Is(err, zk.ErrBadVersion):
		return model.Output{Known: true, Code: zkproto.CodeBadVersion}
	case errors.Is(err, zk.ErrNoNode):
		return model.Output{Known: true, Code: zkproto.CodeNoNode}
	case errors.Is(err, zk.ErrNodeExists):
		return model.Output{Known: true, Code: zkproto.CodeNodeExists}
	}
	return model.Output{}
}

func (r *registers) record(client int, in model.Input, call int64, out model.Output) {
	ret := r.now()
	if !out.Known {
		ret = math.MaxInt64 // it may take effect at any later time, or never
	}
	r.mu.Lock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	r.mu.Unlock()
}

func (r *registers) create(conn *zk.Conn, client int, p, value string) {
	call := r.now()
	_, err := conn.Create(p, []byte(value), 0, openACL)
	r.record(client, model.Input{Path: p, Kind: model.Create, Value: value}, call, outcome(err, 0))
}

func (r *registers) run(conn *zk.Conn, client int) {
	defer r.wg.Done()
	tick := time.NewTicker(writePace)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		p := registerPath(n % registerPaths)
		_, st, err := conn.Get(p)
		if err != nil {
			continue // a read that failed decides nothing
		}
		value := fmt.Sprintf("c%d-%d", client, n)
		call := r.now()
		st2, err := conn.Set(p, []byte(value), st.Version)
		var version int32
		if err == nil {
			version = st2.Version
		}
		r.record(client, model.Input{Path: p, Kind: model.Set, Value: value, Version: st.Version}, call, outcome(err, version))
	}
}

// check stops the workload and checks its history.
func (r *registers) check(t *testing.T) {
	t.Helper()
	close(r.stop)
	r.wg.Wait()
	res := porcupine.CheckOperationsTimeout(model.Register(), r.ops, time.Minute)
	ok, unknown := 0, 0
	for _, o := range r.ops {
		switch out := o.Output.(model.Output); {
		case !out.Known:
			unknown++
		case out.Code == zkproto.CodeOK:
			ok++
		}
	}
	switch res {
	case porcupine.Ok:
		t.Logf("register workload: %d compare-and-sets and creates, %d applied, %d with an unknown outcome: linearizable", len(r.ops), ok, unknown)
	case porcupine.Illegal:
		t.Fatalf("register workload: the history of %d operations is not linearizable", len(r.ops))
	default:
		t.Logf("register workload: porcupine gave up on %d operations within a minute (no verdict)", len(r.ops))
	}
}
