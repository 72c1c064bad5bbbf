package datatree

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"keeper/txn"
	"keeper/zkproto"
	"keeper/zxid"
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
