#!/usr/bin/env bash
# Ledger adds through `keeper sandbox` (a coordination server and three
# bookies in one process, data under $TMPDIR) with two or more keeper
# binaries, alternated run by run, for same-run before/after figures.
#
#   bash bench/ledger_ab.sh OLD_BINARY NEW_BINARY [MORE...]
#
# For each of PAIRS (3) rounds and each binary in turn: a fresh sandbox,
# the disk's floor (`keeper bench fsync`, 4 KiB write + fdatasync, in the
# sandbox's data directory; then, with FLOOR_BIN (the last binary) when it
# has --parallel, Qa writers syncing together, since the sandbox's bookies
# share that disk and an add waits for Qa of them), an unrecorded warmup, then `keeper bench ledger`
# E3/Qw2/Qa2, 1 KiB (QUORUM, SIZE) for each shape of SHAPES ("1x1 16x16":
# ledgers x adds in flight per ledger), DUR (5s) each, with that binary's own
# ledger client. CPU time is taken from outside, so that binaries without
# --cpu-pid are measured alike: the sandbox's from /proc/<pid>/stat around
# the run (the bookies and the coordination server; the run's ledger
# creation and deletion are in it too), the client's from bash's `time`.
# An argument null:BINARY runs BINARY's sandbox without bookies and `keeper
# bench null-bookie` in their place (bookies that only write and fdatasync
# each add), named null-BINARY: the floor of the ledger client, the network
# and the disk, measured by the same runs; its server CPU is the sandbox's
# and the null bookies' together.
# Each run is one JSON line in $OUT/results.jsonl (OUT defaults to a fresh
# directory under $TMPDIR); the last lines printed are medians per binary.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY [MORE...]" >&2; exit 2; }
bins=("$@")
PAIRS=${PAIRS:-3}
DUR=${DUR:-5s}
SHAPES=${SHAPES:-1x1 16x16}
QUORUM=${QUORUM:-3/2/2}
SIZE=${SIZE:-1024}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/ledger-ab.XXXXXX")}
QA=${QUORUM##*/}
FLOOR_BIN=${FLOOR_BIN:-${bins[-1]#null:}}
ZKPORT=${ZKPORT:-32181}
BKPORT=${BKPORT:-33181}
mkdir -p "$OUT"
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; } # utime+stime, 10 ms each
server_ticks() { echo $(($(ticks "$sandbox_pid") + ${null_pid:+$(ticks "$null_pid") +} 0)); }

sandbox_pid="" null_pid=""
stop() { [ -n "$1" ] && kill -INT "$1" 2>/dev/null && wait "$1" || true; }
cleanup() { stop "$null_pid"; stop "$sandbox_pid"; }
trap cleanup EXIT

for p in $(seq 1 "$PAIRS"); do
	for bin in "${bins[@]}"; do
		null=""
		case $bin in null:*) bin=${bin#null:} null=1 ;; esac
		name=${null:+null-}$(basename "$bin")
		d=$(mktemp -d "$OUT/run.XXXXXX")
		"$bin" sandbox --port "$ZKPORT" --bookie-port "$BKPORT" --admin-port -1 --data-dir "$d/data" \
			${null:+--bookies 0} --log-level warn >"$d/sandbox.out" 2>&1 &
		sandbox_pid=$!
		for _ in $(seq 1 300); do grep -q "is running" "$d/sandbox.out" && break; sleep 0.1; done
		grep -q "is running" "$d/sandbox.out" || { cat "$d/sandbox.out" >&2; exit 1; }
		if [ -n "$null" ]; then
			"$bin" bench null-bookie --zk "127.0.0.1:$ZKPORT" --port "$BKPORT" --dir "$d/data/null" >"$d/null.out" 2>&1 &
			null_pid=$!
			for _ in $(seq 1 300); do [ "$(wc -l <"$d/null.out")" -ge 3 ] && break; sleep 0.1; done
			[ "$(wc -l <"$d/null.out")" -ge 3 ] || { cat "$d/null.out" >&2; exit 1; }
		fi
		fs=$("$bin" bench fsync --dir "$d/data" --duration 3s 2>/dev/null)
		echo "{\"pair\":$p,\"bin\":\"$name\",\"fsync\":$fs}" >>"$OUT/results.jsonl"
		if [ "$QA" -gt 1 ] && "$FLOOR_BIN" bench fsync --help 2>/dev/null | grep -q -- --parallel; then
			fs=$("$FLOOR_BIN" bench fsync --dir "$d/data" --duration 3s --parallel "$QA" 2>/dev/null)
			echo "{\"pair\":$p,\"bin\":\"$name\",\"fsync_parallel\":$fs}" >>"$OUT/results.jsonl"
		fi
		"$bin" bench ledger --zk "127.0.0.1:$ZKPORT" --quorums "$QUORUM" --sizes "$SIZE" --ledgers 16 \
			--inflight 16 --duration 2s --warmup 0s >/dev/null 2>&1
		for shape in $SHAPES; do
			L=${shape%x*} I=${shape#*x}
			c0=$(server_ticks)
			TIMEFORMAT='%U %S'
			t=$({ time "$bin" bench ledger --zk "127.0.0.1:$ZKPORT" --quorums "$QUORUM" --sizes "$SIZE" \
				--ledgers "$L" --inflight "$I" --duration "$DUR" --warmup 0s >"$d/run.json" 2>/dev/null; } 2>&1)
			c1=$(server_ticks)
			echo "{\"pair\":$p,\"bin\":\"$name\",\"shape\":\"$shape\",\"server_cpu_ticks\":$((c1 - c0)),\"client_user_s\":${t% *},\"client_sys_s\":${t#* },\"res\":$(cat "$d/run.json")}" >>"$OUT/results.jsonl"
		done
		stop "$null_pid"
		stop "$sandbox_pid"
		sandbox_pid="" null_pid=""
		rm -rf "$d"
	done
done

python3 - "$OUT/results.jsonl" <<'EOF'
import json, statistics as st, sys
from collections import defaultdict
runs, disks, pdisks = defaultdict(list), defaultdict(list), defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "fsync" in r:
        disks[r["bin"]].append(r["fsync"])
        continue
    if "fsync_parallel" in r:
        pdisks[r["bin"]].append(r["fsync_parallel"])
        continue
    x = r["res"]
    runs[(r["shape"], r["bin"])].append(dict(
        eps=x["entries_per_sec"], p50=x["p50_us"], p99=x["p99_us"], p999=x.get("p999_us", 0),
        srv=r["server_cpu_ticks"] * 10000 / x["entries"],
        cli=(r["client_user_s"] + r["client_sys_s"]) * 1e6 / x["entries"]))
for title, d in (("disk", disks), ("disk, writers syncing together", pdisks)):
    if not d:
        continue
    # p999 is 0 from a binary whose fsync bench does not report it.
    print(f"{title}, medians: binary's run, append p50/p99/p999 us, overwrite p50/p99/p999 us")
    for b, v in d.items():
        med = lambda mode, k: st.median(x[mode].get(k, 0) for x in v)
        print(f"  {b}: {med('append','p50_us'):.0f} / {med('append','p99_us'):.0f} / {med('append','p999_us'):.0f}, "
              f"{med('overwrite','p50_us'):.0f} / {med('overwrite','p99_us'):.0f} / {med('overwrite','p999_us'):.0f}"
              + (f" ({v[0]['parallel']} writers)" if v[0].get("parallel", 1) > 1 else ""))
print("adds, medians: shape, binary, entries/s, p50 us, p99 us, p999 us, server CPU us/add, client CPU us/add, runs entries/s")
for (shape, b), v in sorted(runs.items()):
    med = lambda k: st.median(x[k] for x in v)
    print(f"  {shape} {b}: {med('eps'):.0f}, {med('p50'):.0f}, {med('p99'):.0f}, {med('p999'):.0f}, {med('srv'):.1f}, "
          f"{med('cli'):.1f}, {[round(x['eps']) for x in v]}")
EOF
echo "results: $OUT/results.jsonl"
