package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestCheckPackage runs the checker on small sources, so a change to the
// lint cannot silently stop it from catching what it is for.
func TestCheckPackage(t *testing.T) {
	tests := []struct {
		name string
		pkg  string
		src  string
		want []string // substrings, one per expected problem; none means clean
	}{
		{"clean pure package", "coordination/zab", `package zab
import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"time"
	"keeper/coordination/zxid"
	"keeper/coordination/zkproto"
)
type Node struct{ rng *rand.Rand; timeout time.Duration; log *slog.Logger; addr netip.Addr }
func New(seed uint64) *Node { return &Node{rng: rand.New(rand.NewPCG(seed, seed))} }
func (n *Node) Jitter() int { rand := n.rng; return rand.IntN(10) }
func (n *Node) String() string { return fmt.Sprint(zxid.ID(0), zkproto.Code(0), time.Duration(0)) }
`, nil},
		{"clock", "coordination/datatree", `package datatree
import "time"
func f() time.Time { return time.Now() }`, []string{"uses time.Now"}},
		{"aliased clock and timers", "coordination/session", `package session
import clock "time"
func f() { clock.Sleep(1); <-clock.After(1); _ = clock.NewTimer; clock.AfterFunc(1, nil) }`,
			[]string{"time.Sleep", "time.After", "time.NewTimer", "time.AfterFunc"}},
		{"goroutine", "coordination/watch", `package watch
func f() { go func() {}() }`, []string{"go statement"}},
		{"global rand", "coordination/zab", `package zab
import "math/rand/v2"
func f() int { return rand.IntN(3) }`, []string{"rand.IntN"}},
		{"dot import", "coordination/zab", `package zab
import . "time"
func f() { _ = Now() }`, []string{"dot-imports time"}},
		{"banned imports", "coordination/txn", `package txn
import (
	"os"
	"net"
	"net/http"
	"log"
	"math/rand"
	"crypto/rand"
	"syscall"
	"os/exec"
)`, []string{`imports os;`, "imports net;", "imports net/http", "imports log;", "imports math/rand;",
			"imports crypto/rand", "imports syscall", "imports os/exec"}},
		{"tier 0 is pure too", "coordination/zoocfg", `package zoocfg
import "os"`, []string{"imports os"}},
		{"tier 3 may do I/O", "coordination/server", `package server
import ("os"; "net"; "time")
func f() { go func() {}(); _ = time.Now(); _ = os.Args; _ = net.Dial }`, nil},
		{"import up a tier", "coordination/zoocfg", `package zoocfg
import "keeper/coordination/zkproto"`, []string{"imports coordination/zkproto (tier 1)"}},
		{"import a driver", "coordination/zkcore", `package zkcore
import "keeper/coordination/peer"`, []string{"imports coordination/peer (tier 3)", "edge coordination/zkcore -> coordination/peer"}},
		{"same-tier forbidden edge", "coordination/zab", `package zab
import "keeper/coordination/zkcore"`, []string{"edge coordination/zab -> coordination/zkcore"}},
		{"datatree to zab", "coordination/datatree", `package datatree
import "keeper/coordination/zab"`, []string{"edge coordination/datatree -> coordination/zab"}},
		{"ledger to metadata", "ledgerstore/ledger", `package ledger
import "keeper/ledgerstore/metadata"`, []string{"imports ledgerstore/metadata (tier 3)", "edge ledgerstore/ledger -> ledgerstore/metadata"}},
		{"unknown package", "gossip", `package gossip`, []string{"not in the tier table"}},
		{"subpackage of a tree", "verify/compat/zkreal", `package zkreal
import ("os/exec"; "github.com/go-zookeeper/zk"; "keeper/coordination/zoocfg")`, nil},
		{"third party in a pure package", "coordination/zab", `package zab
import "github.com/go-zookeeper/zk"`, []string{"imports github.com/go-zookeeper/zk"}},
		{"prometheus outside admin", "coordination/server", `package server
import "github.com/prometheus/client_golang/prometheus"`, []string{"prometheus/client_golang/prometheus"}},
		{"prometheus in admin", "coordination/admin", `package admin
import "github.com/prometheus/client_golang/prometheus"`, nil},
		{"test-only module in a scenario environment", "coordination/zab/zabtest", `package zabtest
import "github.com/cockroachdb/datadriven"`, []string{"not in the tier table"}},
		{"test-only module in a driver", "coordination/server", `package server
import "github.com/anishathalye/porcupine"`, []string{"porcupine"}},
		{"unknown module", "verify/sim", `package sim
import "github.com/example/leftpad"`, []string{"github.com/example/leftpad"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", tt.src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			got := checkPackage("keeper", tt.pkg, fset, []*ast.File{f})
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestTierOf(t *testing.T) {
	tests := []struct {
		pkg  string
		tier int
		ok   bool
	}{
		{"coordination/zxid", 0, true},
		{"coordination/zab", 1, true},
		{"internal/vfs/faultfs", 2, true},
		{"ledgerstore/bookie", 3, true},
		{"ledgerstore/bookie/journal", 2, true},
		{"ledgerstore/bookie/other", 0, false},
		{"verify/sim/model", 4, true},
		{"verify/compat/zkreal", 4, true},
		{"cmd/keeper", 4, true},
		{"coordination/zab/zabtest", 0, false},
		{"coordination/zabx", 0, false},
	}
	for _, tt := range tests {
		tier, ok := tierOf(tt.pkg)
		if tier != tt.tier || ok != tt.ok {
			t.Errorf("tierOf(%q) = %d, %v; want %d, %v", tt.pkg, tier, ok, tt.tier, tt.ok)
		}
	}
}

func TestIgnoredProgram(t *testing.T) {
	for src, want := range map[string]bool{
		"//go:build ignore\n\npackage main":              true,
		"//go:build invariants\n\npackage x":             false,
		"// Package x does things.\npackage x":           false,
		"package x\n\n//go:build ignore is not a header": false,
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if got := isIgnoredProgram(f); got != want {
			t.Errorf("isIgnoredProgram(%q) = %v, want %v", src, got, want)
		}
	}
}
