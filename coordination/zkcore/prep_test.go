package zkcore

import (
	"fmt"
	"testing"

	"keeper/coordination/zkproto"
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
