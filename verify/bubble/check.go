package bubble

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"keeper/coordination/zkproto"
	"keeper/verify/sim/model"
)

// linearizeTimeout bounds one porcupine check; a run's histories are
// small, so hitting it is reported.
const linearizeTimeout = 30 * time.Second

// history records the register operations of a run and what the checks
// found. Safe for concurrent use.
type history struct {
	mu         sync.Mutex
	seq        int64 // orders calls and returns as they happened
	life       int   // odd while a server is up: bumped at each start and crash
	ops        []*record
	violations []string
	report     func(string) // if set, learns each violation at once
	// ensemble is set for an ensemble's runs, where reads may be stale
	// and a member may drop its clients while another crashes.
	ensemble bool
	watches  int // notifications checked
}

// record is one call and what it returned.
type record struct {
	client   int
	in       model.Input
	out      model.Output
	call     int64
	ret      int64 // math.MaxInt64 while pending or when the outcome is unknown
	callLife int
	// stale marks a read a follower may answer from behind the leader
	// (ZooKeeper's reads are sequentially consistent, not linearizable):
	// it is left out of the linearizability check.
	stale bool
}

func (h *history) violate(format string, args ...any) {
	v := fmt.Sprintf(format, args...)
	h.mu.Lock()
	h.violations = append(h.violations, v)
	report := h.report
	h.mu.Unlock()
	if report != nil {
		report(v)
	}
}

func (h *history) serverUp() {
	h.mu.Lock()
	h.life++
	h.mu.Unlock()
}

// serverDown is called before the crash cuts the network, so that every
// call the crash interrupts returns in a later life than it was made.
func (h *history) serverDown() {
	h.mu.Lock()
	h.life++
	h.mu.Unlock()
}

func (h *history) epoch() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.life
}

func (h *history) watched() {
	h.mu.Lock()
	h.watches++
	h.mu.Unlock()
}

// call records the start of a register operation.
func (h *history) call(client int, in model.Input) *record {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	o := &record{client: client, in: in, call: h.seq, ret: math.MaxInt64, callLife: h.life}
	h.ops = append(h.ops, o)
	return o
}

// ret records what o returned and reports the output recorded. A result
// code the model knows is a known outcome; anything else (a lost
// connection, a timeout, an expired session) may or may not have taken
// effect.
func (h *history) ret(o *record, err error, version int32, value string) model.Output {
	code := zkproto.CodeOf(err)
	out := model.Output{}
	switch code {
	case zkproto.CodeOK, zkproto.CodeNoNode, zkproto.CodeNodeExists, zkproto.CodeBadVersion:
		out = model.Output{Known: true, Code: code, Version: version, Value: value}
	}
	h.mu.Lock()
	h.seq++
	life := h.life
	if out.Known {
		o.out, o.ret = out, h.seq
	}
	h.mu.Unlock()
	h.checkAnswered(o.client, fmt.Sprintf("%v %s", o.in.Kind, o.in.Path), o.callLife, life, err)
	return out
}

// noteCall checks a call outside the register history.
func (h *history) noteCall(client int, what string, callLife int, err error) {
	h.checkAnswered(client, what, callLife, h.epoch(), err)
}

// checkAnswered checks that a call made and returned in the same life of
// the server, while it was up, got an answer and not an expired session:
// the server stayed up, so the client's connection never broke and its
// session could not time out. An ensemble's runs skip it: after a crash
// the other members drop their clients during an election that may end
// after the crashed member is back.
func (h *history) checkAnswered(client int, what string, callLife, retLife int, err error) {
	if err == nil || callLife != retLife || callLife%2 == 0 || h.ensemble {
		return
	}
	code := zkproto.CodeOf(err)
	switch {
	case code == zkproto.CodeSessionExpired:
		h.violate("client %d: %s failed with an expired session while the server stayed up (life %d): %v", client, what, callLife, err)
	case errors.Is(err, zkproto.ErrSessionExpired):
		h.violate("client %d: %s found its session expired while the server stayed up (life %d): %v", client, what, callLife, err)
	case code == zkproto.CodeConnectionLoss || code == zkproto.CodeOperationTimeout || errors.Is(err, context.DeadlineExceeded):
		h.violate("client %d: %s got no answer while the server stayed up (life %d): %v", client, what, callLife, err)
	}
}

// check runs the checks that need the whole history.
func (h *history) check() {
	h.mu.Lock()
	ops := make([]porcupine.Operation, 0, len(h.ops))
	for _, o := range h.ops {
		if o.in.Kind == model.Get && (!o.out.Known || o.stale) {
			continue // a read whose answer never came, or may be stale, says nothing
		}
		ops = append(ops, porcupine.Operation{ClientId: o.client, Input: o.in, Call: o.call, Output: o.out, Return: o.ret})
	}
	h.mu.Unlock()
	switch porcupine.CheckOperationsTimeout(model.Register(), ops, linearizeTimeout) {
	case porcupine.Ok:
	case porcupine.Unknown:
		h.violate("porcupine gave up after %v on %d operations", linearizeTimeout, len(ops))
	default:
		for _, path := range registers {
			var mine []porcupine.Operation
			for _, o := range ops {
				if o.Input.(model.Input).Path == path {
					mine = append(mine, o)
				}
			}
			if porcupine.CheckOperations(model.Register(), mine) {
				continue
			}
			slices.SortFunc(mine, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
			h.violate("the history of %s is not linearizable (calls and returns in the order they happened, ? for an unknown outcome):\n%s", path, describe(mine))
		}
	}
}

// describe lists ops, one a line.
func describe(ops []porcupine.Operation) string {
	m := model.Register()
	var b strings.Builder
	for _, o := range ops {
		ret := "?"
		if o.Return != math.MaxInt64 {
			ret = fmt.Sprint(o.Return)
		}
		fmt.Fprintf(&b, "  client %d [%d, %s] %s\n", o.ClientId, o.Call, ret, m.DescribeOperation(o.Input, o.Output))
	}
	return b.String()
}
