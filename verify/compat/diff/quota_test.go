package diff

import (
	"testing"

	"keeper/coordination/datatree"
	"keeper/coordination/zkproto"
)

// Quota scenarios run side by side on Apache ZooKeeper 3.8 and keeper,
// both with enforceQuota=true. Quota nodes are made with the requests
// zkCli's setquota sends. runScript fails on any difference; each scenario
// also names the codes ZooKeeper must answer at some steps, so that a
// scenario cannot pass by both servers ignoring quotas.

func createData(slot int, path string, data []byte) *step {
	return req(slot, zkproto.OpCreate, &zkproto.CreateRequest{Path: path, Data: data, ACL: zkproto.OpenACLUnsafe})
}

func setDataTo(slot int, path string, data []byte, version int32) *step {
	return req(slot, zkproto.OpSetData, &zkproto.SetDataRequest{Path: path, Data: data, Version: version})
}

// setQuotaSteps are setquota's creates for a quota on path whose quota
// directories above it already exist: its directory with null data, the
// limits, then the stats at zero.
func setQuotaSteps(slot int, path, limits string) []*step {
	return []*step{
		createData(slot, datatree.QuotaPath+path, nil),
		createData(slot, datatree.QuotaLimitPath(path), []byte(limits)),
		createData(slot, datatree.QuotaStatPath(path), []byte("count=0,bytes=0")),
	}
}

// zkLimits formats limits as zkCli 3.8's setquota writes them.
func zkLimits(count, bytes, countHard, byteHard int64) string {
	var st datatree.StatsTrack
	st.Set(datatree.QuotaCount, count)
	st.Set(datatree.QuotaBytes, bytes)
	st.Set(datatree.QuotaCountHardLimit, countHard)
	st.Set(datatree.QuotaByteHardLimit, byteHard)
	return st.String()
}

// quotaScript is a scenario's steps and the reply codes ZooKeeper must give
// at some of them.
type quotaScript struct {
	steps []*step
	zk    map[int]zkproto.Code
}

// add appends steps (*step or []*step).
func (q *quotaScript) add(parts ...any) {
	for _, p := range parts {
		switch p := p.(type) {
		case *step:
			q.steps = append(q.steps, p)
		case []*step:
			q.steps = append(q.steps, p...)
		}
	}
}

// want appends st, which ZooKeeper must answer with code.
func (q *quotaScript) want(code zkproto.Code, st *step) {
	if q.zk == nil {
		q.zk = map[int]zkproto.Code{}
	}
	q.zk[len(q.steps)] = code
	q.steps = append(q.steps, st)
}

func multiOps(ops ...zkproto.MultiOp) *step {
	return req(0, zkproto.OpMulti, &zkproto.MultiRequest{Ops: ops})
}

func createOp(path string) zkproto.MultiOp {
	return zkproto.MultiOp{Op: zkproto.OpCreate, Record: &zkproto.CreateRequest{Path: path, ACL: zkproto.OpenACLUnsafe}}
}

// TestQuota runs the scenarios. The first is the reported case: with a
// count hard limit of 5 on /x (which counts itself), the 6th node is
// refused with QuotaExceeded.
func TestQuota(t *testing.T) {
	const (
		ok       = zkproto.CodeOK
		exceeded = zkproto.CodeQuotaExceeded
	)
	statsX := datatree.QuotaStatPath("/x")
	tests := []struct {
		name  string
		build func(q *quotaScript)
	}{
		{"count hard limit 5: the 6th create is refused", func(q *quotaScript) {
			q.add(create(0, "/x", 0), setQuotaSteps(0, "/x", zkLimits(-1, -1, 5, -1)), getData(0, statsX, false))
			q.add(create(0, "/x/1", 0), create(0, "/x/2", 0), create(0, "/x/3", 0), create(0, "/x/4", 0))
			q.want(exceeded, create(0, "/x/5", 0))
			q.add(getData(0, statsX, false))
			q.want(exceeded, create(1, "/x/4/deeper", 0))
			q.add(del(0, "/x/4"))
			q.want(ok, create(0, "/x/5", 0))
			q.add(getData(0, statsX, false))
		}},
		{"byte hard limit: setData and create, checked before the version", func(q *quotaScript) {
			q.add(createData(0, "/x", []byte("12345")), setQuotaSteps(0, "/x", zkLimits(-1, -1, -1, 10)))
			q.want(exceeded, setDataTo(0, "/x", []byte("12345678901"), -1))
			q.want(ok, setDataTo(0, "/x", []byte("1234567890"), -1))
			q.want(exceeded, setDataTo(0, "/x", []byte("12345678901"), 7))
			q.want(zkproto.CodeBadVersion, setDataTo(0, "/x", []byte("1234567890"), 7))
			q.want(ok, createData(0, "/x/empty", nil))
			q.want(exceeded, createData(0, "/x/one", []byte("1")))
			q.add(getData(0, statsX, false))
		}},
		{"over the byte limit, a setData that shrinks but stays over is refused", func(q *quotaScript) {
			q.add(createData(0, "/x", []byte("12345678901234567890")), setQuotaSteps(0, "/x", zkLimits(-1, -1, -1, 10)))
			q.want(exceeded, setDataTo(0, "/x", []byte("1234567890123456789"), -1))
			q.want(ok, setDataTo(0, "/x", []byte("123456789"), -1))
			q.add(getData(0, statsX, false))
		}},
		{"a limit of 0 is a limit", func(q *quotaScript) {
			q.add(create(0, "/x", 0), setQuotaSteps(0, "/x", zkLimits(-1, -1, 0, -1)))
			q.want(exceeded, create(0, "/x/a", 0))
			q.want(ok, setData(0, "/x"))
		}},
		{"soft limits and the 3.4 form only log", func(q *quotaScript) {
			q.add(create(0, "/x", 0), setQuotaSteps(0, "/x", "count=1,bytes=1"))
			q.want(ok, createData(0, "/x/a", []byte("abc")))
			q.want(ok, setDataTo(0, "/x/a", []byte("abcdefgh"), -1))
			q.add(getData(0, statsX, false))
		}},
		{"a multi is checked against the applied stats", func(q *quotaScript) {
			q.add(create(0, "/x", 0), setQuotaSteps(0, "/x", zkLimits(-1, -1, 3, -1)))
			q.want(ok, multiOps(createOp("/x/1"), createOp("/x/2"), createOp("/x/3"))) // passes the limit, as on ZooKeeper
			q.want(ok, multiOps(createOp("/y"), createOp("/x/4")))                     // refused at its second op
			q.add(getData(0, statsX, false), exists(0, "/y", false))
		}},
		{"nested quotas: the deepest one counts and is checked", func(q *quotaScript) {
			q.add(create(0, "/x", 0), create(0, "/x/in", 0))
			q.add(setQuotaSteps(0, "/x", zkLimits(-1, -1, 3, -1)), setQuotaSteps(0, "/x/in", zkLimits(-1, -1, 10, -1)))
			q.add(create(0, "/x/in/a", 0), create(0, "/x/in/b", 0))
			q.want(ok, create(0, "/x/in/c", 0))
			q.want(ok, create(0, "/x/b", 0))
			q.want(exceeded, create(0, "/x/c", 0))
			q.add(getData(0, statsX, false), getData(0, datatree.QuotaStatPath("/x/in"), false))
		}},
		{"unreadable limits: MarshallingError, for a multi as a whole", func(q *quotaScript) {
			q.add(create(0, "/x", 0), setQuotaSteps(0, "/x", "count=x"))
			q.want(zkproto.CodeMarshallingError, create(0, "/x/a", 0))
			q.want(zkproto.CodeMarshallingError, multiOps(createOp("/y"), createOp("/x/a")))
			q.add(exists(0, "/y", false))
		}},
		{"stats updates fire no watch and keep the stat", func(q *quotaScript) {
			q.add(create(0, "/x", 0), setQuotaSteps(0, "/x", zkLimits(-1, -1, -1, -1)))
			q.add(getData(1, statsX, true), exists(2, statsX, true), addWatch(2, "/zookeeper", zkproto.AddWatchPersistentRecursive))
			q.add(create(0, "/x/a", 0), setData(0, "/x/a"), del(0, "/x/a"))
			q.add(getData(0, statsX, false))
		}},
		{"deleting the limits ends the quota; recreating it counts on", func(q *quotaScript) {
			q.add(create(0, "/x", 0), setQuotaSteps(0, "/x", zkLimits(-1, -1, 2, -1)), create(0, "/x/a", 0))
			q.want(exceeded, create(0, "/x/b", 0))
			q.add(del(0, datatree.QuotaLimitPath("/x")))
			q.want(ok, create(0, "/x/b", 0))
			q.add(createData(0, datatree.QuotaLimitPath("/x"), []byte(zkLimits(-1, -1, 5, -1))))
			q.want(ok, create(0, "/x/c", 0))
			q.add(getData(0, statsX, false))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var q quotaScript
			tc.build(&q)
			r := runScript(t, 3, serverOptions{extendedTypes: true, enforceQuota: true}, q.steps)
			for i, want := range q.zk {
				if got := r.z[i].reply.hdr.Err; !r.z[i].hasReply || got != want {
					t.Errorf("step %d (%s): ZooKeeper answered %v, the scenario expects %v", i, q.steps[i], got, want)
				}
			}
		})
	}
}
