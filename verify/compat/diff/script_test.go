package diff

import (
	"strings"
	"testing"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// Scripted steps: the same harness as the randomized test, driven by a fixed
// list of steps. Scenario tests use them to pin down semantics side by side.

func req(slot int, op zkproto.Op, rec jute.Record) *step {
	return &step{kind: kindRequest, slot: slot, name: "script", op: op, req: rec}
}

func create(slot int, path string, flags int32) *step {
	return req(slot, zkproto.OpCreate, &zkproto.CreateRequest{Path: path, Data: []byte("x"), ACL: zkproto.OpenACLUnsafe, Flags: flags})
}

func del(slot int, path string) *step {
	return req(slot, zkproto.OpDelete, &zkproto.DeleteRequest{Path: path, Version: -1})
}

func setData(slot int, path string) *step {
	return req(slot, zkproto.OpSetData, &zkproto.SetDataRequest{Path: path, Data: []byte("y"), Version: -1})
}

func getChildren(slot int, path string, watch bool) *step {
	return req(slot, zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: path, Watch: watch})
}

func getData(slot int, path string, watch bool) *step {
	return req(slot, zkproto.OpGetData, &zkproto.GetDataRequest{Path: path, Watch: watch})
}

func exists(slot int, path string, watch bool) *step {
	return req(slot, zkproto.OpExists, &zkproto.ExistsRequest{Path: path, Watch: watch})
}

func addWatch(slot int, path string, mode int32) *step {
	return req(slot, zkproto.OpAddWatch, &zkproto.AddWatchRequest{Path: path, Mode: mode})
}

func closeSession(slot int) *step {
	return &step{kind: kindClose, slot: slot, name: "script", op: zkproto.OpCloseSession, timeoutMs: defaultTimeoutMs}
}

// scriptRun is a script's outcomes on both sides, after normalization.
type scriptRun struct {
	p          *pair
	k, z       []*outcome
	kl, zl     [][]string // rendered
	normalized normalizer
}

// runScript runs steps on a fresh pair of servers and fails the test at the
// first difference, showing every step so far.
func runScript(t *testing.T, slotCount int, o serverOptions, steps []*step) *scriptRun {
	t.Helper()
	p := startPair(t, slotCount, o)
	r := &scriptRun{p: p, normalized: normalizer{counts: map[string]int{}}}
	var log []string
	for i, st := range steps {
		if err := p.probeExists(st); err != nil {
			t.Fatal(err)
		}
		k, z, err := p.run(st)
		if err != nil {
			t.Fatalf("step %d: %s: %v", i, st, err)
		}
		r.normalized.apply(st, k, z)
		kl, zl := p.keeper.render(k), p.zk.render(z)
		if d := firstDifference(kl, zl); d >= 0 {
			t.Fatalf("step %d: keeper and ZooKeeper differ\nstep: %s\n%s\nkeeper:\n  %s\nzookeeper:\n  %s\nsteps before:\n%s",
				i, st, differingLine(kl, zl, d), strings.Join(kl, "\n  "), strings.Join(zl, "\n  "), strings.Join(log, "\n"))
		}
		log = append(log, "  "+st.String()+" => "+summary(zl))
		r.k, r.z, r.kl, r.zl = append(r.k, k), append(r.z, z), append(r.kl, kl), append(r.zl, zl)
	}
	return r
}
