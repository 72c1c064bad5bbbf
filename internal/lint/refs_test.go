package lint

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// outsideRef matches a reference to a document outside the repository:
// the reference notes the project started from, which a person who clones
// keeper does not have. Comments cite docs/ or state the fact instead.
// The names are written in pieces so that this file does not itself cite
// what it refuses.
var outsideRef = regexp.MustCompile(`\.\./` + `shared\b|\bspec ` + `§|\bspec Appendix|\bspec/[a-z-]+\.md|\bSTYLE` +
	`(\.md\b| rules? \d)|\breliability` + `\.md\b|\bzk-` + `protocol\.md\b|\bperf-` + `baseline\.md\b|(^|[^/\w])book` + `keeper\.md\b`)

// wrappedSpec and sectionLine match the same citation broken over two
// lines: a line ending in the notes' name, then one starting with a
// section number.
var (
	wrappedSpec = regexp.MustCompile(`\bspec` + `\s*$`)
	sectionLine = regexp.MustCompile(`^\s*(//|#)?\s*(§|Appendix\b)`)
)

// docsRef matches a citation of a document in docs/.
var docsRef = regexp.MustCompile(`\bdocs/([\w.-]+\.md)`)

// outsideRefWords holds a word each of outsideRef's alternatives needs
// and wrappedSpec needs "spec": a line with none of them cannot match, and
// most lines are skipped by a substring search, which costs a small
// fraction of the regular expressions (the whole tree is read).
var outsideRefWords = []string{"../", "spec", "STYLE", "reliability", "zk-", "perf-", "book"}

func mayCiteOutside(line string) bool {
	for _, w := range outsideRefWords {
		if strings.Contains(line, w) {
			return true
		}
	}
	return false
}

// checkedFile reports whether the lint reads path for references: source,
// scripts and documentation, not data.
func checkedFile(path string) bool {
	if strings.Contains(path, "/testdata/") || strings.HasPrefix(path, "testdata/") {
		return false
	}
	switch filepath.Ext(path) {
	case ".go", ".md", ".sh", ".py", ".proto":
		return true
	}
	base := filepath.Base(path)
	return base == "Makefile" || base == "run"
}

// refProblems returns the lines of one file that cite outside the
// repository or cite a docs/ file that does not exist.
func refProblems(name string, lines []string, docs map[string]bool) []string {
	var problems []string
	for i, line := range lines {
		if !mayCiteOutside(line) && (i == 0 || !strings.Contains(lines[i-1], "spec")) && !strings.Contains(line, "docs/") {
			continue
		}
		if loc := outsideRef.FindStringIndex(line); loc != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: cites %q, a document outside the repository; cite docs/ or state the fact",
				name, i+1, line[loc[0]:loc[1]]))
		}
		if i > 0 && wrappedSpec.MatchString(lines[i-1]) && sectionLine.MatchString(line) {
			problems = append(problems, fmt.Sprintf("%s:%d: cites the notes' sections across a line break, a document outside the repository; cite docs/ or state the fact",
				name, i))
		}
		for _, m := range docsRef.FindAllStringSubmatch(line, -1) {
			if !docs[m[1]] {
				problems = append(problems, fmt.Sprintf("%s:%d: cites docs/%s, which does not exist", name, i+1, m[1]))
			}
		}
	}
	return problems
}

// TestReferencesStayInside checks that no source, script or document cites
// a file outside the repository, and that every docs/ citation exists.
func TestReferencesStayInside(t *testing.T) {
	root := filepath.Dir(goCmd(t, ".", "env", "GOMOD"))
	files := sourceFiles(t, root)
	docs := map[string]bool{}
	for _, f := range files {
		if dir, name := filepath.Split(f); dir == "docs/" {
			docs[name] = true
		}
	}
	var problems []string
	for _, f := range files {
		if !checkedFile(f) || f == "internal/lint/refs_test.go" {
			continue
		}
		lines, err := readLines(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		problems = append(problems, refProblems(f, lines, docs)...)
	}
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

func TestRefProblems(t *testing.T) {
	docs := map[string]bool{"zookeeper-protocol.md": true}
	bk := "book" + "keeper.md" // the BookKeeper notes' file name, in pieces
	tests := []struct {
		line string
		want string // substring of the problem; "" for none
	}{
		{"// the order of spec " + "§2.4", "spec " + "§"},
		{"// see ../" + "sha" + "red/" + "spec/" + bk, "../" + "sha" + "red"},
		{"// house rules (STYLE" + ".md, rule 8)", "STYLE" + ".md"},
		{"// the disk is unknown (STYLE" + " rule 6)", "STYLE" + " rule 6"},
		{"// a STYLE of its own", ""},
		{"// scenario 3 of reliability" + ".md §E", "reliability" + ".md"},
		{"// spec/" + bk + " §7.3", "spec/" + bk},
		{"// the order of docs/zookeeper-protocol.md §2.4", ""},
		{"// see docs/nonexistent.md", "does not exist"},
		{"// docs/bookkeeper-protocol.md §7.3", "does not exist"},
		{"// a " + bk + "-free line about BookKeeper", bk},
		{"// ledger metadata as BookKeeper stores it", ""},
		{"// accepts the add (spec" + "\n// §4.1 step 6)", "across a line break"},
		{"// the flags of the spec" + "\n// below", ""},
		{"// docs/zookeeper-protocol.md\n// §2.4", ""},
	}
	for _, tt := range tests {
		got := refProblems("x.go", strings.Split(tt.line, "\n"), docs)
		switch {
		case tt.want == "" && len(got) > 0:
			t.Errorf("%q: unexpected %v", tt.line, got)
		case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
			t.Errorf("%q: got %v, want one problem containing %q", tt.line, got, tt.want)
		}
	}
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// sourceFiles lists the files under root, relative to it, leaving out
// hidden directories (.git, .ci's siblings) but not .ci itself.
func sourceFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" {
				return filepath.SkipDir
			}
			return nil
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
