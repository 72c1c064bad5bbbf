#!/usr/bin/env bash
# CPU profiles of a standalone keeper server, and of Apache ZooKeeper for
# comparison, under the 16 clients x 16 in flight loads of bench/compare.sh.
#
#   bash bench/profile.sh [duration]     (default 10s per op)
#
# keeper: for each op (OPS, default "get set") a fresh `keeper server
# --cpu-profile` is loaded for the duration and stopped with SIGTERM,
# which writes the pprof profile: keeper-OP.pprof, and keeper-OP.top.txt
# (`go tool pprof -top`, flat and cumulative). The profile covers the
# server's whole life, of which the measured load is nearly all; keeper has
# no pprof endpoint, and none is needed for this.
#
# With perf installed (PERF=0 turns it off), `perf record -g` samples the
# same process during the measured interval, kernel included:
# keeper-OP.perf.data, and keeper-OP.perf.txt, its time by DSO, then by
# DSO and symbol (system calls,
# fdatasync and loopback TCP show up there, which Go's profiler attributes
# only to the calling Go frame).
#
# ZooKeeper (ZK=0 skips it): one server, warmed up with PRIME of mixed
# load, profiled per op with Java Flight Recorder (jcmd JFR.start/stop):
# zk-OP.jfr, and zk-OP.top.txt, the methods on top of the sampled Java
# stacks and the busiest threads (JFR samples running Java code only:
# time in native code and the kernel is not in it); with perf, zk-OP.perf.txt
# (JIT-compiled frames are unnamed there, but the JVM's own, GC's and the
# kernel's shares are visible).
#
# Results go to OUT (default a fresh directory under $TMPDIR), with the
# bench lines of the profiled runs in results.jsonl.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
DUR=${1:-10s}
WARMUP=${WARMUP:-1s}
PRIME=${PRIME:-5s}
OPS=${OPS:-get set}
PERF=${PERF:-1}
ZK=${ZK:-1}
command -v perf >/dev/null || PERF=0
ensure_zookeeper
lib_init
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/keeper-profile-$(date +%Y%m%d-%H%M%S)-XXXX")}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# seconds DURATION prints a Go duration (10s, 1500ms) in seconds.
seconds() {
	python3 -c 'import re, sys
m = re.fullmatch(r"([0-9.]+)(ms|s|m)", sys.argv[1])
print(float(m[1]) * {"ms": 0.001, "s": 1, "m": 60}[m[2]])' "$1"
}

# load NAME ADDR PID OP runs the 16x16 load, perf-sampling PID meanwhile.
load() {
	local name=$1 addr=$2 pid=$3 op=$4 bench
	"$KEEPER" bench zk --servers "$addr" --cpu-pid "$pid" --op "$op" --clients 16 --inflight 16 --size 100 \
		--warmup "$WARMUP" --duration "$DUR" | sed "s/^{/{\"server\":\"$name\",/" >>"$OUT/results.jsonl" &
	bench=$!
	if [ "$PERF" = 1 ]; then
		sleep "$(seconds "$WARMUP")"
		perf record -q -F 499 -g -p "$pid" -o "$OUT/$name-$op.perf.data" -- sleep "$(seconds "$DUR")" 2>/dev/null
	fi
	wait "$bench"
	tail -n 1 "$OUT/results.jsonl" >&2
	if [ "$PERF" = 1 ]; then
		{
			perf report -i "$OUT/$name-$op.perf.data" --no-children --sort dso --stdio -g none 2>/dev/null
			perf report -i "$OUT/$name-$op.perf.data" --no-children --sort dso,sym --stdio -g none 2>/dev/null | head -n 80
		} | grep -v '^$' >"$OUT/$name-$op.perf.txt" || true
	fi
}

read -r port <<<"$(free_ports 1)"
for op in $OPS; do
	rm -rf "$W/keeper-data"
	write_cfg "$W/keeper.cfg" "$W/keeper-data" "$port"
	start_keeper "keeper-$op" "$W/keeper.cfg" --cpu-profile "$OUT/keeper-$op.pprof"
	pid=$STARTED_PID
	wait_serving "127.0.0.1:$port" >/dev/null
	load keeper "127.0.0.1:$port" "$pid" "$op"
	stop_server "$pid"
	go tool pprof -top -nodecount=60 "$W/keeper" "$OUT/keeper-$op.pprof" >"$OUT/keeper-$op.top.txt" 2>/dev/null
	go tool pprof -top -cum -nodecount=60 "$W/keeper" "$OUT/keeper-$op.pprof" >"$OUT/keeper-$op.cum.txt" 2>/dev/null
	cp "$W/keeper" "$OUT/keeper.bin" # pprof needs the binary the profile came from
done

if [ "$ZK" = 1 ]; then
	write_cfg "$W/zk.cfg" "$W/zk-data" "$port"
	start_zk zk "$W/zk.cfg"
	pid=$STARTED_PID
	wait_serving "127.0.0.1:$port" >/dev/null
	"$KEEPER" bench zk --servers "127.0.0.1:$port" --op mixed --clients 16 --inflight 16 --warmup 0s --duration "$PRIME" >/dev/null
	for op in $OPS; do
		jcmd "$pid" JFR.start name=bench settings=profile >/dev/null
		load zookeeper "127.0.0.1:$port" "$pid" "$op"
		jcmd "$pid" JFR.stop name=bench filename="$OUT/zk-$op.jfr" >/dev/null
		jfr print --events jdk.ExecutionSample "$OUT/zk-$op.jfr" | python3 -c '
import collections, re, sys
top, threads, n = collections.Counter(), collections.Counter(), 0
want = False
for line in sys.stdin:
    s = line.strip()
    m = re.match(r"sampledThread = \"([^\"]*)\"", s)
    if m:
        threads[re.sub(r"[-0-9]+$", "", m[1])] += 1
    if s.startswith("stackTrace = ["):
        want = True
    elif want:
        want = False
        top[re.sub(r"\s+line:.*", "", s)] += 1
        n += 1
print(f"{n} samples of running Java code\n\nself, by method:")
for k, v in top.most_common(40):
    print(f"{100 * v / n:6.1f}%  {k}")
print("\nby thread (numbers stripped):")
for k, v in threads.most_common(15):
    print(f"{100 * v / n:6.1f}%  {k}")' >"$OUT/zk-$op.top.txt"
	done
	stop_server "$pid"
fi
ls -l "$OUT"
echo "profiles: $OUT"
