package datatree

import (
	"bytes"
	"encoding/binary"
	"testing"

	"keeper/coordination/txn"
)

// FuzzReadBody feeds arbitrary bytes to ReadBody. It must never panic; what
// it accepts must be a consistent tree that writes and reads back to the
// same tree and the same bytes.
func FuzzReadBody(f *testing.F) {
	var fresh bytes.Buffer
	if err := New().WriteBody(&fresh); err != nil {
		f.Fatal(err)
	}
	f.Add(fresh.Bytes())
	g := newGen(7)
	g.sequence(60)
	var random bytes.Buffer
	if err := g.tree.WriteBody(&random); err != nil {
		f.Fatal(err)
	}
	f.Add(random.Bytes())
	f.Add(random.Bytes()[:random.Len()/2])
	f.Fuzz(func(t *testing.T, body []byte) {
		tree, err := ReadBody(bytes.NewReader(body), 1<<12)
		if err != nil {
			return
		}
		if msg := checkTree(tree); msg != "" {
			t.Fatal(msg)
		}
		var b1 bytes.Buffer
		if err := tree.WriteBody(&b1); err != nil {
			t.Fatal(err)
		}
		again, err := ReadBody(bytes.NewReader(b1.Bytes()), 1<<12)
		if err != nil {
			t.Fatalf("rewritten body rejected: %v", err)
		}
		if d := diffTrees(tree, again); d != "" {
			t.Fatal(d)
		}
		var b2 bytes.Buffer
		if err := again.WriteBody(&b2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
			t.Fatal("body not stable under rewrite")
		}
	})
}

// FuzzApply decodes a stream of length-prefixed txn payloads and applies
// whatever decodes to a fresh tree. Apply must never panic and must leave
// the tree consistent (digest, data size, snapshot round trip).
func FuzzApply(f *testing.F) {
	g := newGen(3)
	var stream []byte
	for _, tx := range g.sequence(8) { // short: the fuzzer minimizes every new input
		p := txn.Marshal(tx)
		stream = binary.BigEndian.AppendUint16(stream, uint16(len(p)))
		stream = append(stream, p...)
	}
	f.Add(stream)
	f.Fuzz(func(t *testing.T, stream []byte) {
		tree := New()
		for len(stream) >= 2 {
			n := int(binary.BigEndian.Uint16(stream))
			stream = stream[2:]
			if n > len(stream) {
				break
			}
			tx, err := txn.Unmarshal(stream[:n], 1<<12)
			stream = stream[n:]
			if err != nil {
				continue
			}
			tree.Apply(tx)
		}
		if msg := checkTree(tree); msg != "" {
			t.Fatal(msg)
		}
		if d := diffTrees(tree, cloneTree(tree)); d != "" {
			t.Fatal(d)
		}
	})
}
