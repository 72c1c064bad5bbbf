package model

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"

	"keeper/coordination/zkproto"
)

func TestStep(t *testing.T) {
	absent := State{}
	a0 := State{Exists: true, Value: "a"}
	a1 := State{Exists: true, Value: "b", Version: 1}
	ok := func(v int32) Output { return Output{Known: true, Code: zkproto.CodeOK, Version: v} }
	code := func(c zkproto.Code) Output { return Output{Known: true, Code: c} }
	tests := []struct {
		name  string
		s     State
		in    Input
		out   Output
		legal bool
		next  State
	}{
		{"create absent", absent, Input{Kind: Create, Value: "a"}, ok(0), true, a0},
		{"create exists", a0, Input{Kind: Create, Value: "x"}, code(zkproto.CodeNodeExists), true, a0},
		{"create exists claims ok", a0, Input{Kind: Create, Value: "x"}, ok(0), false, a0},
		{"set any", a0, Input{Kind: Set, Value: "b", Version: -1}, ok(1), true, a1},
		{"set cas match", a0, Input{Kind: Set, Value: "b", Version: 0}, ok(1), true, a1},
		{"set cas wrong version reported", a0, Input{Kind: Set, Value: "b", Version: 0}, ok(2), false, a0},
		{"set cas mismatch", a1, Input{Kind: Set, Value: "c", Version: 0}, code(zkproto.CodeBadVersion), true, a1},
		{"set cas mismatch claims ok", a1, Input{Kind: Set, Value: "c", Version: 0}, ok(1), false, a1},
		{"set absent", absent, Input{Kind: Set, Value: "c", Version: -1}, code(zkproto.CodeNoNode), true, absent},
		{"delete", a1, Input{Kind: Delete, Version: 1}, ok(0), true, absent},
		{"delete mismatch", a1, Input{Kind: Delete, Version: 0}, code(zkproto.CodeBadVersion), true, a1},
		{"delete absent", absent, Input{Kind: Delete, Version: -1}, code(zkproto.CodeNoNode), true, absent},
		{"unknown applies", a0, Input{Kind: Set, Value: "b", Version: -1}, Output{}, true, a1},
		{"unknown failing", a1, Input{Kind: Set, Value: "z", Version: 7}, Output{}, true, a1},
		{"session expired", a0, Input{Kind: Set, Value: "b", Version: -1}, code(zkproto.CodeSessionExpired), true, a0},
		{"get", a1, Input{Kind: Get}, Output{Known: true, Code: zkproto.CodeOK, Value: "b", Version: 1}, true, a1},
		{"get stale value", a1, Input{Kind: Get}, Output{Known: true, Code: zkproto.CodeOK, Value: "a", Version: 1}, false, a1},
		{"get stale version", a1, Input{Kind: Get}, Output{Known: true, Code: zkproto.CodeOK, Value: "b", Version: 0}, false, a1},
		{"get absent", absent, Input{Kind: Get}, code(zkproto.CodeNoNode), true, absent},
		{"get absent claims a node", absent, Input{Kind: Get}, Output{Known: true, Code: zkproto.CodeOK, Value: ""}, false, absent},
		{"get present claims none", a0, Input{Kind: Get}, code(zkproto.CodeNoNode), false, a0},
		{"get unknown", a0, Input{Kind: Get}, Output{}, true, a0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			legal, next := Step(tt.s, tt.in, tt.out)
			if legal != tt.legal || (legal && next != tt.next) {
				t.Fatalf("Step(%+v, %+v, %+v) = %v, %+v; want %v, %+v", tt.s, tt.in, tt.out, legal, next, tt.legal, tt.next)
			}
		})
	}
}

// A write whose outcome is unknown (it never returns) may take effect after
// operations that started later; a known lost update may not.
func TestRegisterHistories(t *testing.T) {
	op := func(client int, in Input, call, ret int64, out Output) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	ok := func(v int32) Output { return Output{Known: true, Code: zkproto.CodeOK, Version: v} }
	create := Input{Path: "/k", Kind: Create, Value: "a"}
	legal := []porcupine.Operation{
		op(0, create, 0, 1, ok(0)),
		op(1, Input{Path: "/k", Kind: Set, Value: "b", Version: 0}, 2, math.MaxInt64, Output{}),
		op(2, Input{Path: "/k", Kind: Set, Value: "c", Version: 0}, 3, 4, Output{Known: true, Code: zkproto.CodeBadVersion}),
		op(2, Input{Path: "/x", Kind: Create, Value: "d"}, 5, 6, ok(0)),
	}
	if !porcupine.CheckOperations(Register(), legal) {
		t.Fatal("legal history rejected")
	}
	lostUpdate := []porcupine.Operation{
		op(0, create, 0, 1, ok(0)),
		op(1, Input{Path: "/k", Kind: Set, Value: "b", Version: 0}, 2, 3, ok(1)),
		op(2, Input{Path: "/k", Kind: Set, Value: "c", Version: 0}, 4, 5, ok(1)),
	}
	if porcupine.CheckOperations(Register(), lostUpdate) {
		t.Fatal("two successful CAS from the same version accepted")
	}
}
