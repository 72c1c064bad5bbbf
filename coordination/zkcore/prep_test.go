package zkcore

import (
	"fmt"
	"testing"

	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// TestPrepFindsItsNewestChange checks that a txn's own changes shadow the
// view, the newest change to a path winning, both while prep scans its
// changes and after it has indexed them (more than localScanMax, a multi),
// and that reset forgets them.
func TestPrepFindsItsNewestChange(t *testing.T) {
	for _, n := range []int{1, 5, localScanMax - 1, localScanMax, 3 * localScanMax} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			p := newHarness(t).s.newPrep(0, nil, 1, 0)
			// Change i sets /p<i%3> to version i: each path is changed again
			// and again, and also /zookeeper, which the view has. With the
			// latter, n+1 changes: up to localScanMax-1 scanned, from
			// localScanMax on indexed.
			for i := range n {
				p.put(fmt.Sprintf("/p%d", i%3), record{exists: true, stat: zkproto.StatPersisted{Version: int32(i)}})
			}
			p.put("/zookeeper", record{exists: false})
			for path := range 3 {
				want := -1
				for i := range n {
					if i%3 == path {
						want = i
					}
				}
				rec, ok := p.get(fmt.Sprintf("/p%d", path))
				switch {
				case want < 0 && ok:
					t.Errorf("/p%d: found %+v, never changed", path, rec)
				case want >= 0 && (!ok || rec.stat.Version != int32(want)):
					t.Errorf("/p%d: %+v, %v; want version %d", path, rec.stat, ok, want)
				}
			}
			if _, ok := p.get("/zookeeper"); ok {
				t.Error("/zookeeper: the txn's delete did not shadow the view")
			}
			p.reset()
			if _, ok := p.get("/p0"); ok {
				t.Error("/p0 found after reset")
			}
			if _, ok := p.get("/zookeeper"); !ok {
				t.Error("/zookeeper: not found in the view after reset")
			}
		})
	}
}

// TestViewReusesOnlyAppliedChanges checks that a change is reused only
// once its txn is applied, zeroed, and that reusing it leaves the changes
// still pending as they were: a second pending write to a path keeps
// answering for it after the first one's change is reused for another.
func TestViewReusesOnlyAppliedChanges(t *testing.T) {
	s := newHarness(t).s
	v := s.view
	put := func(z int64, path string, version int32) *change {
		p := s.newPrep(0, nil, zxid.ID(z), 0)
		p.put(path, record{exists: true, stat: zkproto.StatPersisted{Version: version}})
		v.add(p.order)
		return p.order[0]
	}
	first := put(1001, "/a", 1)
	second := put(1002, "/a", 2)
	if v.newChange() == first {
		t.Fatal("a pending change was handed out for reuse")
	}
	v.applied(zxid.ID(1001))
	third := put(1003, "/b", 3)
	if third != first {
		t.Errorf("the applied change was not reused")
	}
	if rec, ok := v.get("/a"); !ok || rec.stat.Version != 2 || v.latest["/a"] != second {
		t.Errorf("/a after reuse: %+v, %v; want the second write's version 2", rec.stat, ok)
	}
	if rec, ok := v.get("/b"); !ok || rec.stat.Version != 3 {
		t.Errorf("/b: %+v, %v; want version 3", rec.stat, ok)
	}
	v.applied(zxid.ID(1003))
	if len(v.latest) != 0 || len(v.pending) != 0 {
		t.Errorf("after every txn applied: latest %d, pending %d; want none", len(v.latest), len(v.pending))
	}
	for _, ch := range v.spare {
		if ch.zxid != 0 || ch.path != "" || ch.rec.exists || ch.rec.acl != nil || ch.rec.stat != (zkproto.StatPersisted{}) {
			t.Errorf("a spare change keeps %+v", *ch)
		}
	}
}
