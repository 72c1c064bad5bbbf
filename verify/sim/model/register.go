// Package model holds the sequential specifications the simulator checks
// client histories against with porcupine.
//
// Register treats each znode of the register workload as a versioned
// register: create, setData (with an expected version: compare-and-set),
// delete and getData, each answered with ZooKeeper's result codes. A history is split by
// path (P-compositionality), so each check sees one znode.
package model

import (
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"

	"keeper/coordination/zkproto"
)

// Kind is a register operation.
type Kind uint8

// Register operations.
const (
	Create Kind = iota
	Set
	Delete
	// Get reads the node: its data and data version, or NoNode.
	Get
)

func (k Kind) String() string {
	switch k {
	case Create:
		return "create"
	case Set:
		return "set"
	case Delete:
		return "delete"
	case Get:
		return "get"
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Input is one call on a register.
type Input struct {
	Path string
	Kind Kind
	// Value is the data a create or set writes; every write in a history
	// carries a unique value.
	Value string
	// Version is the expected version of a set or delete; -1 matches any.
	Version int32
}

// Output is what the call returned. Known is false for a call whose outcome
// the client never learned (timeout, connection loss): it may or may not
// have taken effect.
type Output struct {
	Known bool
	Code  zkproto.Code
	// Version is the node's new data version after a successful set, or
	// the version a successful get read.
	Version int32
	// Value is the data a successful get read.
	Value string
}

// State is one znode: whether it exists, its data and its data version.
type State struct {
	Exists  bool
	Value   string
	Version int32
}

// Register returns the model of the register workload.
func Register() porcupine.Model {
	return porcupine.Model{
		Partition: partitionByPath,
		Init:      func() any { return State{} },
		Step: func(state, input, output any) (bool, any) {
			return Step(state.(State), input.(Input), output.(Output))
		},
		Equal: func(a, b any) bool { return a.(State) == b.(State) },
		DescribeOperation: func(input, output any) string {
			in, out := input.(Input), output.(Output)
			res := "?"
			if out.Known {
				res = fmt.Sprintf("%d v%d", out.Code, out.Version)
				if in.Kind == Get && out.Code == zkproto.CodeOK {
					res += fmt.Sprintf(" %q", out.Value)
				}
			}
			return fmt.Sprintf("%s(%s, %q, v%d) -> %s", in.Kind, in.Path, in.Value, in.Version, res)
		},
		DescribeState: func(state any) string {
			s := state.(State)
			if !s.Exists {
				return "absent"
			}
			return fmt.Sprintf("%q v%d", s.Value, s.Version)
		},
	}
}

// Step applies in to s and reports whether out is a result ZooKeeper may
// give. An unknown output accepts whatever the call would do. A code other
// than OK, NoNode, NodeExists and BadVersion (say SessionExpired) means the
// call failed without effect.
func Step(s State, in Input, out Output) (bool, State) {
	code, next, version := apply(s, in)
	if !out.Known {
		return true, next
	}
	switch out.Code {
	case zkproto.CodeOK, zkproto.CodeNoNode, zkproto.CodeNodeExists, zkproto.CodeBadVersion:
	default:
		return true, s
	}
	if out.Code != code {
		return false, s
	}
	if in.Kind == Set && code == zkproto.CodeOK && out.Version != version {
		return false, s
	}
	if in.Kind == Get && code == zkproto.CodeOK && (out.Value != s.Value || out.Version != s.Version) {
		return false, s
	}
	return true, next
}

// apply is the sequential specification: the code, the next state and, for
// a set, the new version.
func apply(s State, in Input) (zkproto.Code, State, int32) {
	switch in.Kind {
	case Create:
		if s.Exists {
			return zkproto.CodeNodeExists, s, 0
		}
		return zkproto.CodeOK, State{Exists: true, Value: in.Value}, 0
	case Set:
		switch {
		case !s.Exists:
			return zkproto.CodeNoNode, s, 0
		case in.Version != -1 && in.Version != s.Version:
			return zkproto.CodeBadVersion, s, 0
		}
		return zkproto.CodeOK, State{Exists: true, Value: in.Value, Version: s.Version + 1}, s.Version + 1
	case Delete:
		switch {
		case !s.Exists:
			return zkproto.CodeNoNode, s, 0
		case in.Version != -1 && in.Version != s.Version:
			return zkproto.CodeBadVersion, s, 0
		}
		return zkproto.CodeOK, State{}, 0
	case Get:
		if !s.Exists {
			return zkproto.CodeNoNode, s, 0
		}
		return zkproto.CodeOK, s, s.Version
	}
	panic(fmt.Sprintf("model: unknown register op %d", in.Kind))
}

// partitionByPath splits a history into one sub-history per znode, in path
// order.
func partitionByPath(history []porcupine.Operation) [][]porcupine.Operation {
	byPath := map[string][]porcupine.Operation{}
	for _, op := range history {
		p := op.Input.(Input).Path
		byPath[p] = append(byPath[p], op)
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	out := make([][]porcupine.Operation, 0, len(paths))
	for _, p := range paths {
		out = append(out, byPath[p])
	}
	return out
}
