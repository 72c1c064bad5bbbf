#!/usr/bin/env bash
# Writes to a 3-server keeper ensemble with two or more keeper binaries,
# alternated run by run, for same-run before/after figures (no ZooKeeper
# needed; bench/ensemble.sh compares with ZooKeeper).
#
#   bash bench/ensemble_ab.sh OLD_BINARY NEW_BINARY [MORE...]
#
# For each of PAIRS (3) rounds and each binary in turn: a fresh ensemble on
# loopback (bench/lib.sh's ensemble_setup: the same zoo.cfg as
# bench/ensemble.sh, data under $TMPDIR, ports from BASE, default 47300, on:
# 9 of them), the disk's floor (`keeper bench fsync` in member 1's data
# directory), then `keeper bench zk` for each of RUNS ("op:CxI", default
# "set:1x1 create:1x1 set:16x16 create:16x16"), 100-byte data, WARMUP (2s)
# unrecorded, DUR (8s) measured, clients spread over the members as in
# bench/ensemble.sh (one client: member 1, which is a follower unless it
# leads), with --cpu-pid every member: server_cpu_us_per_op is the CPU of
# all three per write. With PROFILE=1 each member also writes a CPU profile
# of its whole life to $OUT/<binary>-<pair>-m<id>.pprof, and the leader's id
# is in the results. Each run is one JSON line in $OUT/results.jsonl, with
# the 1-minute load average when it ended; the last lines printed are
# medians per binary and their ratios to the first binary's.
# An argument null:BINARY runs `BINARY bench null-ensemble` in place of an
# ensemble, named null-BINARY: three processes (NULL_PROCS=1: one) that
# only forward, log with fdatasync and commit each write (the second
# leads), the floor of the hops and the disk, measured by the same runs.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY [MORE...]" >&2; exit 2; }
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bins=()
for b in "$@"; do
	pre=""
	case $b in null:*) pre=null: b=${b#null:} ;; esac
	bins+=("$pre$(cd "$(dirname "$b")" && pwd)/$(basename "$b")")
done
PAIRS=${PAIRS:-3}
DUR=${DUR:-8s}
WARMUP=${WARMUP:-2s}
RUNS=${RUNS:-set:1x1 create:1x1 set:16x16 create:16x16}
BASE=${BASE:-47300}
PROFILE=${PROFILE:-0}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/ensemble-ab.XXXXXX")}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
W=$(mktemp -d)
trap lib_cleanup EXIT
P=()
for i in $(seq 0 8); do P+=($((BASE + i))); done

for p in $(seq 1 "$PAIRS"); do
	for bin in "${bins[@]}"; do
		null=""
		case $bin in null:*) bin=${bin#null:} null=1 ;; esac
		KEEPER=$bin
		name=${null:+null-}$(basename "$bin")
		rm -rf "$W/keeper"? "$W/null" "$W/null.addr"*
		if [ -n "$null" ]; then
			start_null_ensemble null
			servers=$NULL_ADDRS pids=$NULL_PIDS lead=2 datadir=$W/null
		else
			ensemble_setup keeper 0
			for id in 1 2 3; do
				args=()
				[ "$PROFILE" = 1 ] && args=(--cpu-profile "$OUT/$name-$p-m$id.pprof")
				start_keeper "keeper$id" "$W/keeper$id/zoo.cfg" --log-level warn "${args[@]}"
				PID[keeper$id]=$STARTED_PID
			done
			lead=$(ensemble_leader keeper)
			servers=$(ensemble_servers keeper) pids=$(ensemble_pids keeper) datadir=$W/keeper1/data
		fi
		fs=$("$bin" bench fsync --dir "$datadir" --duration 2s 2>/dev/null)
		echo "{\"pair\":$p,\"bin\":\"$name\",\"leader\":$lead,\"fsync\":$fs}" >>"$OUT/results.jsonl"
		for run in $RUNS; do
			op=${run%:*} shape=${run#*:}
			"$bin" bench zk --servers "$servers" --cpu-pid "$pids" --op "$op" \
				--clients "${shape%x*}" --inflight "${shape#*x}" --size 100 --warmup "$WARMUP" --duration "$DUR" \
				>"$W/run.json"
			load=$(cut -d' ' -f1 /proc/loadavg)
			echo "{\"pair\":$p,\"bin\":\"$name\",\"leader\":$lead,\"run\":\"$run\",\"load1\":$load,\"res\":$(grep '^{' "$W/run.json" | tail -n 1)}" >>"$OUT/results.jsonl"
			tail -n 1 "$OUT/results.jsonl" >&2
		done
		if [ -n "$null" ]; then
			for pid in ${pids//,/ }; do stop_server "$pid"; done
		else
			for id in 1 2 3; do stop_server "${PID[keeper$id]}"; done
		fi
	done
done

names=()
for b in "${bins[@]}"; do
	case $b in null:*) names+=("null-$(basename "${b#null:}")") ;; *) names+=("$(basename "$b")") ;; esac
done
python3 - "$OUT/results.jsonl" "${names[@]}" <<'EOF'
import json, statistics as st, sys
from collections import defaultdict
order = sys.argv[2:]
runs, disks, loads = defaultdict(list), defaultdict(list), []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "fsync" in r:
        disks[r["bin"]].append(r["fsync"])
        continue
    x = r["res"]
    loads.append(r["load1"])
    runs[(r["run"], r["bin"])].append(dict(ops=x["ops_per_sec"], p50=x["p50_us"], p99=x["p99_us"],
                                           cpu=x.get("server_cpu_us_per_op") or 0))
print("disk, medians: binary, append p50/p99 us, overwrite p50/p99 us")
for b in order:
    v = disks[b]
    med = lambda mode, k: st.median(x[mode][k] for x in v)
    print(f"  {b}: {med('append','p50_us'):.0f} / {med('append','p99_us'):.0f}, "
          f"{med('overwrite','p50_us'):.0f} / {med('overwrite','p99_us'):.0f}")
print(f"load average (1 min) at the end of the runs: {min(loads):.1f} to {max(loads):.1f}")
print("medians: run, binary, ops/s, p50 us, p99 us, members' CPU us/op; ratio to the first binary; per run ops/s, p50")
for run in dict.fromkeys(k[0] for k in runs):
    base = None
    for b in order:
        v = runs[(run, b)]
        m = {k: st.median(x[k] for x in v) for k in ("ops", "p50", "p99", "cpu")}
        base = base or m
        ratio = " ".join(f"{k} {m[k]/base[k]:.2f}" for k in ("ops", "p50", "p99", "cpu") if base[k])
        print(f"  {run} {b}: {m['ops']:.0f}, {m['p50']:.0f}, {m['p99']:.0f}, {m['cpu']:.1f}; {ratio}; "
              f"{[(round(x['ops']), round(x['p50'])) for x in v]}")
EOF
echo "results: $OUT/results.jsonl"
