package admin

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// ZooKeeperVersion is the Apache ZooKeeper release whose protocol and
// operator interface keeper follows; clients read it from srvr and envi.
const ZooKeeperVersion = "3.8.0"

// Build describes the running binary, from the Go build information.
type Build struct {
	// ZooKeeperVersion is the ZooKeeper release keeper speaks.
	ZooKeeperVersion string
	// Version is the main module's version ("v1.2.3", or "(devel)" for a
	// build from a work tree).
	Version string
	// Revision is the VCS commit the binary was built from, "" if the
	// build did not record one (go test, go run outside a repository).
	Revision string
	// Modified reports that the work tree had uncommitted changes.
	Modified bool
	// Time is the commit time, or, without VCS information, the time the
	// executable was written; zero if neither is known.
	Time time.Time
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// The commit a binary was built from, when the build passed it with
// -ldflags -X (cmd/keeper/ldflags.sh prints the flags; make build and the
// bench scripts use it). The Go toolchain records no VCS data for go run,
// for a git worktree, or with -buildvcs=false, so a build from a checkout
// passes what git says instead. Empty in any other build. The linker sets
// them; nothing at run time writes them.
var (
	linkedRevision string // the full commit hash
	linkedTime     string // the commit time, RFC 3339
	linkedModified string // "true" when the work tree had uncommitted changes
)

// ReadBuild returns the running binary's build information.
func ReadBuild() Build {
	info, ok := debug.ReadBuildInfo()
	b := readBuild(info, ok, linkedVCS{linkedRevision, linkedTime, linkedModified})
	if b.Time.IsZero() {
		if exe, err := os.Executable(); err == nil {
			if st, err := os.Stat(exe); err == nil {
				b.Time = st.ModTime()
			}
		}
	}
	return b
}

// linkedVCS is what the linker was told of the commit.
type linkedVCS struct{ revision, time, modified string }

// readBuild reads the Go build information, and takes the commit from
// linked when the toolchain recorded none.
func readBuild(info *debug.BuildInfo, ok bool, linked linkedVCS) Build {
	b := Build{ZooKeeperVersion: ZooKeeperVersion, Version: "(devel)", GoVersion: runtime.Version()}
	if ok {
		if info.Main.Version != "" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			case "vcs.time":
				if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
					b.Time = t
				}
			}
		}
	}
	if b.Revision == "" && linked.revision != "" {
		b.Revision = linked.revision
		b.Modified = linked.modified == "true"
		if t, err := time.Parse(time.RFC3339, linked.time); err == nil {
			b.Time = t
		}
	}
	return b
}

// Tag returns the part after the ZooKeeper version: "keeper", then the
// module version when it is a release, the revision's first 12 digits
// and "dirty" for a modified tree, joined by '-'. It holds only letters,
// digits, '.' and '-', which go-zookeeper's FLWSrvr requires.
func (b Build) Tag() string {
	parts := []string{"keeper"}
	if v := strings.TrimPrefix(b.Version, "v"); v != "" && v != "(devel)" {
		parts = append(parts, v)
	}
	if b.Revision != "" {
		parts = append(parts, b.Revision[:min(12, len(b.Revision))])
	}
	if b.Modified {
		parts = append(parts, "dirty")
	}
	tag := strings.Join(parts, "-")
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') {
			return r
		}
		return '.'
	}, tag)
}

// FullVersion is the version text of srvr, stat, mntr and envi, in
// ZooKeeper's "<version>-<build>, built on <date>" form:
//
//	3.8.0-keeper-0123456789ab, built on 05/17/2026 09:30 GMT
//
// The date is in ZooKeeper 3.4's MM/dd/yyyy HH:mm zone style, the only
// one go-zookeeper's FLWSrvr parses; kazoo's server_version() reads the
// numbers before the first '-'.
func (b Build) FullVersion() string {
	t := b.Time
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return b.ZooKeeperVersion + "-" + b.Tag() + ", built on " + t.UTC().Format("01/02/2006 15:04") + " GMT"
}
