package watch

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"keeper/coordination/zkproto"
)

var seedFlag = flag.Uint64("seed", 0, "replay only this seed of TestAgainstModel")

// model is a brute-force restatement of docs/zookeeper-protocol.md §3: a flat set of watches,
// searched in full on every event.
type model map[modelKey]modes

type modelKey struct {
	child bool
	path  string
	conn  ConnID
}

func isAncestor(a, p string) bool {
	return a != p && (a == "/" || strings.HasPrefix(p, a+"/"))
}

func (md model) trigger(ev zkproto.EventType, path string) []ConnID {
	hit := map[ConnID]bool{}
	fire := func(child bool) {
		for k, m := range md {
			switch {
			case k.child != child:
			case k.path == path:
				hit[k.conn] = true
				if m&modeStandard != 0 {
					md.set(k, m&^modeStandard)
				}
			case !child && m&modeRecursive != 0 && isAncestor(k.path, path):
				hit[k.conn] = true
			}
		}
	}
	switch ev {
	case zkproto.EventNodeChildrenChanged:
		fire(true)
	case zkproto.EventNodeDeleted:
		fire(false)
		fire(true)
	default:
		fire(false)
	}
	return slices.Sorted(maps.Keys(hit))
}

func (md model) set(k modelKey, m modes) {
	if m == 0 {
		delete(md, k)
	} else {
		md[k] = m
	}
}

func (md model) clear(k modelKey, m modes) bool {
	old := md[k]
	md.set(k, old&^m)
	return old&m != 0
}

// TestAgainstModel runs seeded random operations on a Manager and on the
// model and compares every answer. A failure prints the seed to replay.
func TestAgainstModel(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	if *seedFlag != 0 {
		seeds = []uint64{*seedFlag}
	}
	for _, seed := range seeds {
		if err := runModel(seed, 2000); err != nil {
			t.Fatalf("%v\nreplay: go test ./watch -run TestAgainstModel -seed=%d", err, seed)
		}
	}
}

func runModel(seed uint64, ops int) error {
	rng := rand.New(rand.NewPCG(seed, seed))
	paths := []string{"/", "/a", "/a/b", "/a/b/c", "/ab", "/b", "/b/a"}
	events := []zkproto.EventType{zkproto.EventNodeCreated, zkproto.EventNodeDeleted,
		zkproto.EventNodeDataChanged, zkproto.EventNodeChildrenChanged}
	m, md := New(), model{}
	for i := range ops {
		p := paths[rng.IntN(len(paths))]
		c := ConnID(rng.IntN(4))
		wt := zkproto.WatcherType(rng.IntN(6)) // 0 is invalid on purpose
		var got, want any
		var op string
		switch r := rng.IntN(10); {
		case r < 4:
			op = fmt.Sprintf("add kind %d %s %d", r, p, c)
			switch r {
			case 0:
				m.AddData(p, c)
				md[modelKey{false, p, c}] |= modeStandard
			case 1:
				m.AddChild(p, c)
				md[modelKey{true, p, c}] |= modeStandard
			case 2:
				m.AddPersistent(p, c)
				md[modelKey{false, p, c}] |= modePersistent
				md[modelKey{true, p, c}] |= modePersistent
			case 3:
				m.AddPersistentRecursive(p, c)
				md[modelKey{false, p, c}] |= modeRecursive
			}
		case r < 7:
			ev := events[rng.IntN(len(events))]
			op = fmt.Sprintf("trigger %d %s", ev, p)
			got, want = m.Trigger(ev, p), md.trigger(ev, p)
		case r < 8:
			op = fmt.Sprintf("check %s %d %d", p, c, wt)
			got, want = m.Check(p, c, wt), md.check(p, c, wt)
		case r < 9:
			op = fmt.Sprintf("remove %s %d %d", p, c, wt)
			got, want = m.Remove(p, c, wt), md.remove(p, c, wt)
		default:
			op = fmt.Sprintf("removeConn %d", c)
			m.RemoveConn(c)
			for k := range md {
				if k.conn == c {
					delete(md, k)
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("op %d %s: got %v, model says %v", i, op, got, want)
		}
		if g, w := m.stats(), md.stats(); g != w {
			return fmt.Errorf("op %d %s: stats %s, model says %s", i, op, g, w)
		}
	}
	return nil
}

func (md model) check(p string, c ConnID, wt zkproto.WatcherType) bool {
	d, ch := md[modelKey{false, p, c}], md[modelKey{true, p, c}]
	switch wt {
	case zkproto.WatcherChildren:
		return ch&modeStandard != 0
	case zkproto.WatcherData:
		return d&modeStandard != 0
	case zkproto.WatcherPersistent:
		return d&modePersistent != 0
	case zkproto.WatcherPersistentRecursive:
		return d&modeRecursive != 0
	case zkproto.WatcherAny:
		return d|ch != 0
	}
	return false
}

func (md model) remove(p string, c ConnID, wt zkproto.WatcherType) bool {
	dk, ck := modelKey{false, p, c}, modelKey{true, p, c}
	switch wt {
	case zkproto.WatcherChildren:
		return md.clear(ck, modeStandard)
	case zkproto.WatcherData:
		return md.clear(dk, modeStandard)
	case zkproto.WatcherPersistent:
		a, b := md.clear(ck, modePersistent), md.clear(dk, modePersistent)
		return a || b
	case zkproto.WatcherPersistentRecursive:
		return md.clear(dk, modeRecursive)
	case zkproto.WatcherAny:
		a, b := md.clear(ck, modeAll), md.clear(dk, modeAll)
		return a || b
	}
	return false
}

// stats renders every count and listing so one comparison covers them all.
func (m *Manager) stats() string {
	return fmt.Sprint(m.Count(), m.DataWatchCount(), m.ConnCount(), m.PathCount(), m.data.recursive,
		m.ByConn(), m.ByPath())
}

func (md model) stats() string {
	var count, data, recursive int
	byConn := map[ConnID][]string{}
	byPath := map[string][]ConnID{}
	for k, m := range md {
		count++
		if k.child {
			continue
		}
		data++
		if m&modeRecursive != 0 {
			recursive++
		}
		byConn[k.conn] = append(byConn[k.conn], k.path)
		byPath[k.path] = append(byPath[k.path], k.conn)
	}
	var conns []ConnWatches
	for _, c := range slices.Sorted(maps.Keys(byConn)) {
		conns = append(conns, ConnWatches{c, slices.Sorted(slices.Values(byConn[c]))})
	}
	var ps []PathWatches
	for _, p := range slices.Sorted(maps.Keys(byPath)) {
		ps = append(ps, PathWatches{p, slices.Sorted(slices.Values(byPath[p]))})
	}
	if conns == nil {
		conns = []ConnWatches{}
	}
	if ps == nil {
		ps = []PathWatches{}
	}
	return fmt.Sprint(count, data, len(byConn), len(byPath), recursive, conns, ps)
}
