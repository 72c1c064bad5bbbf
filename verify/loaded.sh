#!/usr/bin/env bash
# Runs a command on a busy machine, as a shared CI runner or a laptop that
# is also compiling something would be: one busy loop per core at normal
# priority, and a process writing and fdatasyncing on the disk the tests
# use (TMPDIR). The load stops when the command ends.
#
#   bash verify/loaded.sh make test      (what `make test-loaded` runs)
set -euo pipefail
dir=$(mktemp -d "${TMPDIR:-/tmp}/keeper-load.XXXXXX")
pids=()
cleanup() {
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq "$(nproc)"); do
	(while :; do :; done) &
	pids+=($!)
done
(while :; do dd if=/dev/zero of="$dir/sync" bs=64k count=16 conv=fdatasync status=none; done) &
pids+=($!)
echo "loaded.sh: $(nproc) busy loops and an fdatasync writer in $dir" >&2
"$@"
