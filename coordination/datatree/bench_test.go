package datatree

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"runtime"
	"syscall"
	"testing"
	"time"

	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// benchTree builds a tree of n nodes, 100 parents with n/100 children each.
func benchTree(b *testing.B, n int) (*Tree, []*txn.Txn) {
	tree := New()
	txns := make([]*txn.Txn, 0, n)
	for i := range n {
		var path string
		pcv := int32(i/100 + 1)
		if i < 100 {
			path, pcv = fmt.Sprintf("/p%02d", i), int32(i+1)
		} else {
			path = fmt.Sprintf("/p%02d/c%08d", i%100, i)
		}
		txns = append(txns, &txn.Txn{
			Header: txn.Header{ClientID: sess1, Zxid: zxid.Make(1, uint32(i+1)), Time: baseTime, Type: zkproto.OpCreate},
			Record: &txn.Create{Path: path, Data: make([]byte, 32), ACL: worldAll, ParentCversion: pcv},
		})
	}
	return tree, txns
}

func BenchmarkApplyCreate(b *testing.B) {
	tree, txns := benchTree(b, 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(txns) == 0 && i > 0 {
			b.StopTimer()
			tree = New()
			b.StartTimer()
		}
		tree.Apply(txns[i%len(txns)])
	}
}

func BenchmarkWriteBody(b *testing.B) {
	tree, txns := benchTree(b, 100_000)
	for _, tx := range txns {
		tree.Apply(tx)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := tree.WriteBody(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadBody(b *testing.B) {
	tree, txns := benchTree(b, 100_000)
	for _, tx := range txns {
		tree.Apply(tx)
	}
	var buf bytes.Buffer
	if err := tree.WriteBody(&buf); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := ReadBody(bytes.NewReader(buf.Bytes()), 0); err != nil {
			b.Fatal(err)
		}
	}
}

// bigTree returns a tree of n nodes (100 parents with n/100 children each)
// holding dataBytes of data apiece, built once per benchmark binary and
// size.
func bigTree(b *testing.B, n, dataBytes int) *Tree {
	key := [2]int{n, dataBytes}
	if t, ok := bigTrees[key]; ok {
		return t
	}
	tree, txns := benchTree(b, n)
	for _, tx := range txns {
		tx.Record.(*txn.Create).Data = make([]byte, dataBytes)
		tree.Apply(tx)
	}
	bigTrees[key] = tree
	return tree
}

var bigTrees = map[[2]int]*Tree{}

// BenchmarkFuzzySnapshot walks a 1,000,000-node tree as the server does,
// 1,000 nodes per step, and reports the cost per node.
func BenchmarkFuzzySnapshot(b *testing.B) {
	const n = 1_000_000
	tree := bigTree(b, n, 100)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for range b.N {
		f := tree.StartFuzzyBody()
		for !f.Step(tree, 1000) {
			f.Reuse(f.Take()) // as the server's writer hands chunks back
		}
		f.Take()
		if f.Nodes() != tree.NodeCount()-1 {
			b.Fatalf("walked %d nodes, want %d", f.Nodes(), tree.NodeCount()-1)
		}
	}
	reportPerNode(b, n, cpu)
}

// BenchmarkLoadSnapshot reads the body of a 1,000,000-node tree with 100
// bytes of data per node, as a restart does.
func BenchmarkLoadSnapshot(b *testing.B) {
	const n = 1_000_000
	var buf bytes.Buffer
	if err := bigTree(b, n, 100).WriteBody(&buf); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	var tree *Tree
	for range b.N {
		tree = nil
		var err error
		// Sized as the server does from the snapshot file's size.
		if tree, err = ReadBodySized(bufio.NewReaderSize(bytes.NewReader(buf.Bytes()), 64<<10), 0, int64(buf.Len())); err != nil {
			b.Fatal(err)
		}
	}
	reportPerNode(b, n, cpu)
	b.StopTimer()
	with := liveHeap()
	runtime.KeepAlive(tree)
	tree = nil
	b.ReportMetric(float64(with-liveHeap())/n, "live-B/node")
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// cpuTime returns the CPU time the process has used, user and system. On a
// shared machine it is a steadier measure than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportPerNode reports wall-clock and CPU (all threads, GC included)
// nanoseconds per node since start, the CPU time at the timer's start.
func reportPerNode(b *testing.B, nodes int, start time.Duration) {
	total := float64(b.N * nodes)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/node")
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/total, "cpu-ns/node")
}
