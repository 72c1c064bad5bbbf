#!/bin/sh
# Prints the -ldflags that stamp a keeper binary with the commit it is
# built from (keeper version, srvr, envi; docs/observability.md, "Build
# information"): go build -ldflags "$(sh cmd/keeper/ldflags.sh)" ...
# The Go toolchain stamps the commit itself only for go build in a plain
# clone with VCS stamping on; this covers go run, git worktrees and
# GOFLAGS=-buildvcs=false too. Outside a git checkout, or without git, it
# prints nothing, and the build goes on unstamped.
cd "$(dirname "$0")" || exit 0
rev=$(git rev-parse HEAD 2>/dev/null) || exit 0
[ -n "$rev" ] || exit 0
# Only the repository whose root is this module's: not one that merely
# holds an unpacked copy of the source.
top=$(git rev-parse --show-toplevel 2>/dev/null) || exit 0
[ "$(cd ../.. && pwd -P)" = "$(cd "$top" && pwd -P)" ] || exit 0
when=$(git log -1 --format=%cI HEAD 2>/dev/null) || exit 0
modified=false
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	modified=true
fi
pkg=keeper/coordination/admin
echo "-X $pkg.linkedRevision=$rev -X $pkg.linkedTime=$when -X $pkg.linkedModified=$modified"
