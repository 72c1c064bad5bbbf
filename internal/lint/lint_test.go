package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// listedPackage is the part of `go list -json` output the lint needs.
type listedPackage struct {
	ImportPath     string
	Dir            string
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string // files for other build tags (invariants, other OSes) are checked too
	Error          *struct{ Err string }
}

// TestLint checks every package of the module against the house rules.
func TestLint(t *testing.T) {
	root := goCmd(t, ".", "env", "GOMOD")
	if root == "" || root == "/dev/null" {
		t.Fatal("not inside a Go module")
	}
	root = filepath.Dir(root)
	module := goCmd(t, root, "list", "-m")
	pkgs := listPackages(t, root)
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	var problems []string
	for _, p := range pkgs {
		if p.Error != nil {
			t.Logf("go list: %s: %s (compile errors are the compiler's business; linting what parses)", p.ImportPath, p.Error.Err)
		}
		rel := relPath(module, p.ImportPath)
		fset := token.NewFileSet()
		files, err := parseFiles(fset, p)
		if err != nil {
			t.Logf("%v (skipped; the compiler reports it)", err)
		}
		problems = append(problems, checkPackage(module, rel, fset, files)...)
	}
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// goCmd runs the go command in dir and returns its trimmed output.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func listPackages(t *testing.T, root string) []listedPackage {
	t.Helper()
	out := goCmd(t, root, "list", "-e", "-json", "./...")
	dec := json.NewDecoder(strings.NewReader(out))
	var pkgs []listedPackage
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
}

// relPath returns the package's path inside the module ("." for the root).
func relPath(module, importPath string) string {
	if importPath == module {
		return "."
	}
	return strings.TrimPrefix(importPath, module+"/")
}

// parseFiles parses the package's non-test files for every build
// configuration, skipping `//go:build ignore` programs (generators).
func parseFiles(fset *token.FileSet, p listedPackage) ([]*ast.File, error) {
	var names []string
	names = append(names, p.GoFiles...)
	names = append(names, p.CgoFiles...)
	names = append(names, p.IgnoredGoFiles...)
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments)
		if err != nil {
			return files, err
		}
		if isIgnoredProgram(f) {
			continue
		}
		files = append(files, f)
	}
	return files, nil
}

func isIgnoredProgram(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if strings.HasPrefix(c.Text, "//go:build") && slices.Contains(strings.Fields(c.Text), "ignore") {
				return true
			}
		}
	}
	return false
}

// checkPackage returns the rule violations in one package's non-test files.
func checkPackage(module, pkg string, fset *token.FileSet, files []*ast.File) []string {
	tier, ok := tierOf(pkg)
	if !ok {
		return []string{fmt.Sprintf("%s: package is not in the tier table; add it to tierTable in "+
			"internal/lint/tiers_test.go (and to docs/development.md's layout) with the tier it belongs to", pkg)}
	}
	var problems []string
	for _, f := range files {
		report := func(pos token.Pos, format string, args ...any) {
			p := fset.Position(pos)
			problems = append(problems, fmt.Sprintf("%s:%d: %s (tier %d): %s",
				filepath.Base(p.Filename), p.Line, pkg, tier, fmt.Sprintf(format, args...)))
		}
		checkImports(module, pkg, tier, f, report)
		if tier <= maxPureTier {
			checkPurity(f, report)
		}
	}
	return problems
}

type reportFunc func(pos token.Pos, format string, args ...any)

// checkImports enforces the tier table, the forbidden edges, the purity
// bans on imports and the third-party list.
func checkImports(module, pkg string, tier int, f *ast.File, report reportFunc) {
	for _, spec := range f.Imports {
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			continue
		}
		switch {
		case under(path, module):
			checkEdge(pkg, tier, relPath(module, path), spec.Pos(), report)
		case isStdlib(path):
			if tier <= maxPureTier && bannedImport(path) {
				report(spec.Pos(), "imports %s; a pure package gets files, sockets, logs and randomness as parameters", path)
			}
		default:
			if !thirdPartyAllowed(pkg, tier, path) {
				report(spec.Pos(), "imports %s, which docs/development.md rule 14 does not allow here; "+
					"add it to thirdParty in internal/lint/tiers_test.go with a written reason if it must be", path)
			}
		}
	}
}

func checkEdge(pkg string, tier int, target string, pos token.Pos, report reportFunc) {
	targetTier, ok := tierOf(target)
	if !ok {
		return // reported for the target package itself
	}
	if targetTier > tier {
		report(pos, "imports %s (tier %d); imports must go down the tiers", target, targetTier)
	}
	for _, e := range forbiddenEdges {
		if under(pkg, e.from) && under(target, e.to) {
			report(pos, "imports %s; the edge %s -> %s must never exist (docs/development.md)", target, e.from, e.to)
		}
	}
}

// isStdlib reports whether path is a standard library package: its first
// element has no dot.
func isStdlib(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// bannedImport reports whether a pure package may not import path.
// log/slog, net/netip and net/url are pure and allowed; math/rand/v2 is
// allowed for its *rand.Rand type only (see checkPurity).
func bannedImport(path string) bool {
	switch path {
	case "os", "net", "syscall", "log", "log/syslog", "math/rand", "crypto/rand", "io/ioutil", "plugin":
		return true
	case "net/netip", "net/url":
		return false
	}
	return strings.HasPrefix(path, "os/") || strings.HasPrefix(path, "net/")
}

func thirdPartyAllowed(pkg string, tier int, path string) bool {
	for module, users := range thirdParty {
		if !under(path, module) {
			continue
		}
		for _, u := range users {
			if u == testSupport && (tier == 4 || strings.HasSuffix(pkg, "test")) {
				return true
			}
			if under(pkg, u) {
				return true
			}
		}
	}
	return false
}

// bannedTime are the time functions that read the clock or start timers.
var bannedTime = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true,
}

// allowedRand are the math/rand/v2 names that do not touch the global
// source: a pure package builds its own seeded *rand.Rand.
var allowedRand = map[string]bool{
	"New": true, "Rand": true, "Source": true, "NewPCG": true, "PCG": true,
	"NewChaCha8": true, "ChaCha8": true, "NewZipf": true, "Zipf": true,
}

// checkPurity bans clock reads, timers, the global random source and go
// statements.
func checkPurity(f *ast.File, report reportFunc) {
	timeName, randName := "", ""
	for _, spec := range f.Imports {
		path, _ := strconv.Unquote(spec.Path.Value)
		name := filepath.Base(path)
		if path == "math/rand/v2" {
			name = "rand"
		}
		if spec.Name != nil {
			name = spec.Name.Name
		}
		if name == "." && (path == "time" || path == "math/rand/v2") {
			report(spec.Pos(), "dot-imports %s; use qualified names so the lint can see clock and rand use", path)
		}
		switch path {
		case "time":
			timeName = name
		case "math/rand/v2":
			randName = name
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n.Pos(), "contains a go statement; only tier-3 drivers start goroutines")
		case *ast.SelectorExpr:
			id, ok := n.X.(*ast.Ident)
			if !ok || id.Obj != nil { // Obj != nil: a local variable, not the package
				return true
			}
			if id.Name == timeName && bannedTime[n.Sel.Name] {
				report(n.Pos(), "uses time.%s; take `now` or ticks as input instead", n.Sel.Name)
			}
			if id.Name == randName && !allowedRand[n.Sel.Name] {
				report(n.Pos(), "uses rand.%s, the global random source; use a seeded *rand.Rand passed in", n.Sel.Name)
			}
		}
		return true
	})
}
