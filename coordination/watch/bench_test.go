package watch

import (
	"strconv"
	"testing"

	"keeper/coordination/zkproto"
)

const benchConns = 10_000

// BenchmarkTriggerFanout: 10,000 connections each hold a standard data
// watch on the same node, which then changes. Each iteration re-registers
// the watches (they are one-shot) and triggers once.
func BenchmarkTriggerFanout(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for c := range ConnID(benchConns) {
			m.AddData("/hot", c)
		}
		b.StartTimer()
		if got := m.Trigger(zkproto.EventNodeDataChanged, "/hot"); len(got) != benchConns {
			b.Fatalf("notified %d", len(got))
		}
	}
}

// BenchmarkTriggerFanoutPersistent: as above with persistent watches, so
// no re-registration: the cost of one event to 10,000 connections.
func BenchmarkTriggerFanoutPersistent(b *testing.B) {
	m := New()
	for c := range ConnID(benchConns) {
		m.AddPersistent("/hot", c)
	}
	b.ReportAllocs()
	for b.Loop() {
		if got := m.Trigger(zkproto.EventNodeDeleted, "/hot"); len(got) != benchConns {
			b.Fatalf("notified %d", len(got))
		}
	}
}

// BenchmarkTriggerSpread: 10,000 connections each watch their own node
// (persistent, under /app/n<i>) and one recursive watch elsewhere forces
// the ancestor walk; each event notifies one connection.
func BenchmarkTriggerSpread(b *testing.B) {
	m := New()
	paths := make([]string, benchConns)
	for c := range ConnID(benchConns) {
		paths[c] = "/app/group/n" + strconv.Itoa(int(c))
		m.AddPersistent(paths[c], c)
	}
	m.AddPersistentRecursive("/other", benchConns)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if got := m.Trigger(zkproto.EventNodeDataChanged, paths[i%benchConns]); len(got) != 1 {
			b.Fatalf("notified %d", len(got))
		}
		i++
	}
}
