package admin

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// TestReadBuildLinked: the commit the toolchain recorded wins; without
// one, the commit passed with -ldflags -X (cmd/keeper/ldflags.sh) is
// taken, revision, time and modified together; without either the build
// has no revision.
func TestReadBuildLinked(t *testing.T) {
	commit := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	vcs := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "aaaaaaaaaaaaaaaa"},
		{Key: "vcs.time", Value: "2026-11-30T12:00:00Z"}, {Key: "vcs.modified", Value: "false"}}}
	bare := &debug.BuildInfo{}
	linked := linkedVCS{"bbbbbbbbbbbbbbbb", "2026-12-01T08:30:00+01:00", "true"}
	tests := []struct {
		name     string
		info     *debug.BuildInfo
		linked   linkedVCS
		revision string
		modified bool
		time     time.Time
	}{
		{"toolchain only", vcs, linkedVCS{}, "aaaaaaaaaaaaaaaa", false, commit},
		{"toolchain beats linker", vcs, linked, "aaaaaaaaaaaaaaaa", false, commit},
		{"linker only", bare, linked, "bbbbbbbbbbbbbbbb", true, time.Date(2026, 12, 1, 7, 30, 0, 0, time.UTC)},
		{"linker, clean tree", bare, linkedVCS{"cccc", "2026-12-01T07:30:00Z", "false"}, "cccc", false,
			time.Date(2026, 12, 1, 7, 30, 0, 0, time.UTC)},
		{"linker, unreadable time", bare, linkedVCS{"cccc", "yesterday", "false"}, "cccc", false, time.Time{}},
		{"neither", bare, linkedVCS{}, "", false, time.Time{}},
		{"time without revision is ignored", bare, linkedVCS{"", "2026-12-01T07:30:00Z", "true"}, "", false, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := readBuild(tt.info, true, tt.linked)
			if b.Revision != tt.revision || b.Modified != tt.modified || !b.Time.Equal(tt.time) {
				t.Fatalf("got revision %q modified %v time %v, want %q %v %v", b.Revision, b.Modified, b.Time,
					tt.revision, tt.modified, tt.time)
			}
		})
	}
}

// TestLDFlagsNamesVars: the script sets the variables this package
// declares, under this package's import path.
func TestLDFlagsNamesVars(t *testing.T) {
	script, err := os.ReadFile("../../cmd/keeper/ldflags.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "pkg=keeper/coordination/admin\n") {
		t.Fatal("ldflags.sh does not name keeper/coordination/admin")
	}
	for _, v := range []string{"linkedRevision", "linkedTime", "linkedModified"} {
		if !strings.Contains(string(script), "$pkg."+v+"=") {
			t.Errorf("ldflags.sh does not set %s", v)
		}
	}
}
