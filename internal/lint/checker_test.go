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
		{"clean pure package", "zab", `package zab
import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"time"
	"keeper/zxid"
	"keeper/zkproto"
)
type Node struct{ rng *rand.Rand; timeout time.Duration; log *slog.Logger; addr netip.Addr }
func New(seed uint64) *Node { return &Node{rng: rand.New(rand.NewPCG(seed, seed))} }
func (n *Node) Jitter() int { rand := n.rng; return rand.IntN(10) }
func (n *Node) String() string { return fmt.Sprint(zxid.ID(0), zkproto.Code(0), time.Duration(0)) }
`, nil},
		{"clock", "datatree", `package datatree
import "time"
func f() time.Time { return time.Now() }`, []string{"uses time.Now"}},
		{"aliased clock and timers", "session", `package session
import clock "time"
func f() { clock.Sleep(1); <-clock.After(1); _ = clock.NewTimer; clock.AfterFunc(1, nil) }`,
			[]string{"time.Sleep", "time.After", "time.NewTimer", "time.AfterFunc"}},
		{"goroutine", "watch", `package watch
func f() { go func() {}() }`, []string{"go statement"}},
		{"global rand", "zab", `package zab
import "math/rand/v2"
func f() int { return rand.IntN(3) }`, []string{"rand.IntN"}},
		{"dot import", "zab", `package zab
import . "time"
func f() { _ = Now() }`, []string{"dot-imports time"}},
		{"banned imports", "txn", `package txn
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
		{"tier 0 is pure too", "zoocfg", `package zoocfg
import "os"`, []string{"imports os"}},
		{"tier 3 may do I/O", "server", `package server
import ("os"; "net"; "time")
func f() { go func() {}(); _ = time.Now(); _ = os.Args; _ = net.Dial }`, nil},
		{"import up a tier", "zoocfg", `package zoocfg
import "keeper/zkproto"`, []string{"imports zkproto (tier 1)"}},
		{"import a driver", "zkserver", `package zkserver
import "keeper/peer"`, []string{"imports peer (tier 3)", "edge zkserver -> peer"}},
		{"same-tier forbidden edge", "zab", `package zab
import "keeper/zkserver"`, []string{"edge zab -> zkserver"}},
		{"datatree to zab", "datatree", `package datatree
import "keeper/zab"`, []string{"edge datatree -> zab"}},
		{"ledger to metadata", "ledger", `package ledger
import "keeper/metadata"`, []string{"imports metadata (tier 3)", "edge ledger -> metadata"}},
		{"unknown package", "gossip", `package gossip`, []string{"not in the tier table"}},
		{"subpackage of a tree", "compat/zkreal", `package zkreal
import ("os/exec"; "github.com/go-zookeeper/zk"; "keeper/zoocfg")`, nil},
		{"third party in a pure package", "zab", `package zab
import "github.com/go-zookeeper/zk"`, []string{"imports github.com/go-zookeeper/zk"}},
		{"prometheus outside admin", "server", `package server
import "github.com/prometheus/client_golang/prometheus"`, []string{"prometheus/client_golang/prometheus"}},
		{"prometheus in admin", "admin", `package admin
import "github.com/prometheus/client_golang/prometheus"`, nil},
		{"test-only module in a scenario environment", "zab/zabtest", `package zabtest
import "github.com/cockroachdb/datadriven"`, []string{"not in the tier table"}},
		{"test-only module in a driver", "server", `package server
import "github.com/anishathalye/porcupine"`, []string{"porcupine"}},
		{"unknown module", "sim", `package sim
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
		{"zxid", 0, true},
		{"zab", 1, true},
		{"vfs/faultfs", 2, true},
		{"bookie", 3, true},
		{"bookie/journal", 2, true},
		{"bookie/other", 0, false},
		{"sim/model", 4, true},
		{"compat/zkreal", 4, true},
		{"cmd/keeper", 4, true},
		{"zab/zabtest", 0, false},
		{"zabx", 0, false},
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
