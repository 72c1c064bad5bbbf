package failpoint

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		line string
		want Rule
		err  string // a fragment of the error; "" for none
	}{
		{line: "failpoint name=learner-truncated action=kill",
			want: Rule{Name: LearnerTruncated, Action: Kill}},
		{line: "  failpoint   action=kill name=current-epoch-written after=3  ",
			want: Rule{Name: CurrentEpochWritten, Action: Kill, After: 3}},
		{line: "failpoint name=snap-before-rename action=sleep=250ms count=1",
			want: Rule{Name: SnapBeforeRename, Action: Sleep, Sleep: 250 * time.Millisecond, Count: 1}},
		{line: "failpoint name=leader-snap-sent action=panic after=0 count=2",
			want: Rule{Name: LeaderSnapSent, Action: Panic, Count: 2}},
		{line: "", err: "does not start"},
		{line: "ops=anysync err=EIO", err: "does not start"},
		{line: "failpointname=x", err: "does not start"},
		{line: "failpoint", err: "names no failpoint"},
		{line: "failpoint action=kill", err: "names no failpoint"},
		{line: "failpoint name=learner-truncated", err: "no action"},
		{line: "failpoint name=no-such-point action=kill", err: "unknown failpoint"},
		{line: "failpoint name=learner-truncated action=explode", err: "unknown action"},
		{line: "failpoint name=learner-truncated action=kill=now", err: "unknown action"},
		{line: "failpoint name=learner-truncated action=sleep", err: "unknown action"},
		{line: "failpoint name=learner-truncated action=sleep=soon", err: "not a positive duration"},
		{line: "failpoint name=learner-truncated action=sleep=-1s", err: "not a positive duration"},
		{line: "failpoint name=learner-truncated action=kill after=-1", err: "not a count"},
		{line: "failpoint name=learner-truncated action=kill count=x", err: "not a count"},
		{line: "failpoint name=learner-truncated action=kill when=now", err: "unknown key"},
		{line: "failpoint name=learner-truncated action=kill action=panic", err: "not a new key=value"},
		{line: "failpoint name=learner-truncated action=kill after", err: "not a new key=value"},
		{line: "failpoint name= action=kill", err: "not a new key=value"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.line)
		switch {
		case tt.err != "":
			if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Parse(%q) = %+v, %v; want an ErrSyntax containing %q", tt.line, got, err, tt.err)
			}
		case err != nil:
			t.Errorf("Parse(%q): %v", tt.line, err)
		case got != tt.want:
			t.Errorf("Parse(%q) = %+v, want %+v", tt.line, got, tt.want)
		default:
			again, err := Parse(got.String())
			if err != nil || again != got {
				t.Errorf("Parse(%q) = %+v, %v; want %+v back", got.String(), again, err, got)
			}
		}
	}
}

func TestParseLines(t *testing.T) {
	rules, err := ParseLines([]string{"", "  # a comment", "failpoint name=learner-truncated action=kill",
		"failpoint name=snap-renamed-before-dir-sync action=panic"})
	if err != nil || len(rules) != 2 || rules[1].Name != SnapRenamedBeforeDirSync {
		t.Fatalf("ParseLines = %+v, %v", rules, err)
	}
	if _, err := ParseLines([]string{"failpoint name=learner-truncated action=kill", "failpoint x"}); err == nil {
		t.Fatal("ParseLines accepted a bad line")
	}
}

// TestNames keeps the list of names and the constants in step: distinct,
// and each one a word list a fault-file line can carry.
func TestNames(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range Names {
		if seen[n] || n == "" || strings.ContainsAny(n, " =\t") {
			t.Errorf("bad or repeated failpoint name %q", n)
		}
		seen[n] = true
	}
	if !slices.Contains(Names, CurrentEpochWritten) || len(Names) != 12 {
		t.Errorf("Names = %v", Names)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("failpoint name=learner-truncated action=kill")
	f.Add("failpoint name=snap-before-rename action=sleep=1ms after=2 count=3")
	f.Add("failpoint name=leader-snap-sent action=panic")
	f.Fuzz(func(t *testing.T, line string) {
		r, err := Parse(line)
		if err != nil {
			return
		}
		again, err := Parse(r.String())
		if err != nil || again != r {
			t.Fatalf("Parse(%q) = %+v; its String %q parses to %+v, %v", line, r, r.String(), again, err)
		}
	})
}
