#!/usr/bin/env bash
# keeper next to Apache ZooKeeper 3.8 (Debian's package, installed if
# missing), measured in one run on this machine with `keeper bench`:
#
#   bash bench/compare.sh [duration]   (default 3s per measurement; ~20 min)
#   QUICK=1 bash bench/compare.sh      (smoke run: ~2 s per measurement,
#                                       100,000 znodes for the resources)
#
#  1. the disk: write+fdatasync of 4 KiB, appending and preallocated; and
#     whether the machine stops whole when it both computes and syncs
#     (`keeper bench stalls`: a host's CPU cap, which every 1×1 p99 here
#     meets once its load crosses it);
#  2. standalone, then 3-server ensembles on loopback: get, exists, set
#     (100 B), create (unique paths, 100 B) and mixed (90% gets) at 1 client
#     x 1 in flight (latency) and 16 x 16 (throughput), keeper and ZooKeeper
#     alternately (k z k z ...: PAIRS pairs each), with each server's CPU
#     time per request (an ensemble's summed over its members); standalone,
#     the load tool's ceiling against `keeper bench null` in the same
#     rotation, and for the ensembles the floor under a write against
#     `keeper bench null-ensemble` (three members that only forward, log
#     with fdatasync and commit); then watch fan-out: WATCHERS sessions watch one znode, a
#     writer sets it, time from the set to the last notification;
#  3. without the disk: both ensembles again with forceSync=no on every
#     member, 1×1 set and create only: the write path without the three
#     members' fdatasyncs, which share this machine's one disk and
#     dominate the ensemble's 1×1 writes (BENCHMARKS.md);
#  4. resources, standalone: time from process start to the first served
#     read with an empty data directory; resident memory (VmRSS, VmHWM)
#     after creating ZNODES znodes of 100 B; time from process start to the
#     first served read of that tree after a restart; snapshot size;
#  5. failover (not in the default PARTS; ~10 min): bench/failover.sh, with
#     tickTime 2000: the write gap after a leader SIGKILL under load (kazoo,
#     go-zookeeper and keeper's client) and the expiry of dead clients'
#     sessions attached to the leader and to a follower; its own table
#     goes to $OUT/failover/table.md.
#
# Before each setup's measurements both servers run a short unrecorded
# mixed load (PRIME), so that ZooKeeper's JIT has compiled its hot paths.
# ZooKeeper runs as Debian's zkServer.sh runs it, without heap flags (see
# bench/lib.sh; the run records the JVM's resulting maximum heap).
#
# Environment: PAIRS (3), WARMUP (1s, unrecorded load before each
# measurement), PRIME (5s), ZNODES (1000000), WATCHERS (1000), ROUNDS (10
# watch rounds), PARTS ("standalone ensemble nosync resources"), OUT (where the
# results go; default a fresh directory under $TMPDIR), ZK_JVMFLAGS and
# ZK_CLASSPATH (bench/lib.sh), KEEP_WORK=1 keeps the servers' directories.
#
# Output: $OUT/results.jsonl (one JSON line per measurement, with "setup",
# "server" and, for resources, "phase" added), $OUT/machine.txt, and
# $OUT/table.md, the markdown summary printed at the end (medians,
# keeper/ZooKeeper ratios, the targets of issue 8). bench/compare_table.py
# rebuilds the table from a results file.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

if [ "${QUICK:-0}" = 1 ]; then
	DUR=${1:-1500ms} WARMUP=${WARMUP:-500ms} PRIME=${PRIME:-2s}
	ZNODES=${ZNODES:-100000} ROUNDS=${ROUNDS:-5} FSYNC_DUR=1s
else
	DUR=${1:-3s} WARMUP=${WARMUP:-1s} PRIME=${PRIME:-5s}
	ZNODES=${ZNODES:-1000000} ROUNDS=${ROUNDS:-10} FSYNC_DUR=3s
fi
PAIRS=${PAIRS:-3}
WATCHERS=${WATCHERS:-1000}
PARTS=${PARTS:-standalone ensemble nosync resources}
OPS=${OPS:-get exists set create mixed}
SHAPES=${SHAPES:-1x1 16x16}

ensure_zookeeper
lib_init
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/keeper-compare-$(date +%Y%m%d-%H%M%S)-XXXX")}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RESULTS=$OUT/results.jsonl
: >"$RESULTS"
START=$(date +%s)

# record SETUP SERVER JSON [FIELDS] appends JSON to the results with
# "setup", "server" and FIELDS (more "key":value pairs) added, and prints
# a one-line summary on stderr.
record() {
	printf '%s\n' "$3" | sed "s/^{/{\"setup\":\"$1\",\"server\":\"$2\",${4:+$4,}/" >>"$RESULTS"
	tail -n 1 "$RESULTS" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
keys = ("op", "clients", "inflight", "ops_per_sec", "p50_us", "p99_us", "server_cpu_us_per_op",
        "ready_sec", "errors", "error", "phase", "append", "overwrite", "rss_kib", "hwm_kib",
        "snapshot_bytes", "snapshot_nodes")
print("  ", r["setup"], r["server"], " ".join(f"{k}={r[k]}" for k in keys if r.get(k) is not None), file=sys.stderr)'
}

# bench SETUP SERVER FIELDS ARG... runs `keeper bench zk ARG...` and records
# its line, or, if it fails, a line with its error: one failed measurement
# does not stop the run.
bench() {
	local setup=$1 server=$2 fields=$3 line
	shift 3
	if line=$("$KEEPER" bench zk "$@" 2>"$W/bench.err"); then
		record "$setup" "$server" "$line" "$fields"
	else
		line=$(python3 -c 'import json, sys; print(json.dumps({"op": sys.argv[1], "error": open(sys.argv[2]).read().strip()[-2000:]}))' \
			"$(printf '%s\n' "$@" | sed -n '/^--op$/{n;p}')" "$W/bench.err")
		record "$setup" "$server" "$line" "$fields"
	fi
}

# measure SETUP SERVER ADDRS PIDS OP SHAPE runs one load measurement.
measure() {
	local setup=$1 server=$2 addrs=$3 pids=$4 op=$5 shape=$6
	bench "$setup" "$server" "" --servers "$addrs" --cpu-pid "$pids" --op "$op" \
		--clients "${shape%x*}" --inflight "${shape#*x}" --size 100 --warmup "$WARMUP" --duration "$DUR"
}

# prime ADDRS runs the unrecorded warm-up load.
prime() {
	"$KEEPER" bench zk --servers "$1" --op mixed --clients 16 --inflight 16 --warmup 0s --duration "$PRIME" >/dev/null
}

# fanout SETUP SERVER ADDRS PIDS runs one watch fan-out measurement.
fanout() {
	bench "$1" "$2" "" --servers "$3" --cpu-pid "$4" --op watch --watchers "$WATCHERS" --rounds "$ROUNDS" --size 100
}

# compare SETUP KADDRS KPIDS ZADDRS ZPIDS [NULLADDR NULLPID] runs every
# load and the watch fan-out, keeper and ZooKeeper alternately, the null
# server third in each rotation if given.
compare() {
	local setup=$1 ka=$2 kp=$3 za=$4 zp=$5 na=${6:-} np=${7:-} op shape pair
	echo "bench: $setup: priming both servers ($PRIME each)" >&2
	prime "$ka"
	prime "$za"
	for op in $OPS; do
		for shape in $SHAPES; do
			for pair in $(seq "$PAIRS"); do
				measure "$setup" keeper "$ka" "$kp" "$op" "$shape"
				measure "$setup" zookeeper "$za" "$zp" "$op" "$shape"
				[ -z "$na" ] || measure "$setup" null "$na" "$np" "$op" "$shape"
			done
		done
	done
	[ "${FANOUT:-1}" = 1 ] || return 0
	for pair in $(seq "$PAIRS"); do
		fanout "$setup" keeper "$ka" "$kp"
		fanout "$setup" zookeeper "$za" "$zp"
	done
}

# machine describes this machine and the software measured.
machine() {
	echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) cpus ($(grep -c ^processor /proc/cpuinfo) in /proc/cpuinfo)"
	echo "memory: $(free -m | awk '/^Mem:/ {print $2 " MiB total, " $7 " MiB available"}')"
	local src
	src=$(findmnt -no SOURCE -T "$W" | head -n 1)
	echo "disk ($W): $src $(findmnt -no FSTYPE,OPTIONS -T "$W" | head -n 1)"
	lsblk -dno NAME,SIZE,ROTA,MODEL 2>/dev/null | sed 's/^/  lsblk: /' || true
	echo "kernel: $(uname -r)"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "go: $(go version)"
	echo "java: $(java -version 2>&1 | head -n 1)"
	echo "zookeeper package: $(dpkg-query -W -f '${Version}' zookeeper 2>/dev/null || echo '?')"
	# shellcheck disable=SC2086
	echo "zookeeper JVM flags: '${ZK_JVMFLAGS}'; resulting MaxHeapSize: $(java $ZK_JVMFLAGS -XX:+PrintFlagsFinal -version 2>/dev/null |
		awk '$2 == "MaxHeapSize" {printf "%.0f MiB", $4 / 1048576}'), GC: $(java $ZK_JVMFLAGS -XX:+PrintFlagsFinal -version 2>/dev/null |
		awk '$2 ~ /^Use.*GC$/ && $4 == "true" {print $2}' | tr '\n' ' ')"
	echo "keeper: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "run: duration $DUR, warmup $WARMUP, prime $PRIME, pairs $PAIRS, znodes $ZNODES, watchers $WATCHERS, rounds $ROUNDS, parts: $PARTS"
}

standalone() {
	local kport zport kpid zpid npid
	read -r kport zport <<<"$(free_ports 2)"
	write_cfg "$W/s-keeper.cfg" "$W/s-keeper" "$kport"
	write_cfg "$W/s-zk.cfg" "$W/s-zk" "$zport"
	start_keeper s-keeper "$W/s-keeper.cfg"
	kpid=$STARTED_PID
	start_zk s-zk "$W/s-zk.cfg"
	zpid=$STARTED_PID
	start_null s-null
	npid=$STARTED_PID
	wait_serving "127.0.0.1:$kport" >/dev/null
	wait_serving "127.0.0.1:$zport" >/dev/null
	compare standalone "127.0.0.1:$kport" "$kpid" "127.0.0.1:$zport" "$zpid" "$NULL_ADDR" "$npid"
	stop_server "$kpid"
	stop_server "$zpid"
	stop_server "$npid"
}

# ensembles SETUP [LINE...] runs compare SETUP on a 3-server keeper
# ensemble and a ZooKeeper one, both with the extra zoo.cfg LINEs; with
# NULL_ENSEMBLE=1, `keeper bench null-ensemble` third in each rotation.
ensembles() {
	local setup=$1
	shift
	read -r -a P <<<"$(free_ports 18)"
	ensemble_setup keeper 0 "$@"
	ensemble_setup zk 9 "$@"
	ensemble_start keeper
	ensemble_start zk
	local kl zl NULL_ADDRS="" NULL_PIDS=""
	if [ "${NULL_ENSEMBLE:-0}" = 1 ]; then
		start_null_ensemble "$setup-null"
	fi
	kl=$(ensemble_leader keeper)
	zl=$(ensemble_leader zk)
	echo "bench: $setup leaders: keeper member $kl, zookeeper member $zl" >&2
	compare "$setup" "$(ensemble_servers keeper)" "$(ensemble_pids keeper)" "$(ensemble_servers zk)" "$(ensemble_pids zk)" \
		"$NULL_ADDRS" "$NULL_PIDS"
	local pid
	for pid in $(ensemble_pids keeper | tr , ' ') $(ensemble_pids zk | tr , ' ') $(echo "$NULL_PIDS" | tr , ' '); do
		stop_server "$pid"
	done
}

# ensemble: the ensembles, and the null ensemble (three processes that only
# forward, log with fdatasync and commit each write, the second leading):
# the floor of the hops and the disk under the ensemble's writes.
ensemble() { NULL_ENSEMBLE=1 ensembles ensemble; }

# nosync: the ensembles again with forceSync=no on every member (both
# servers then write their logs without fdatasync), 1×1 writes only: the
# write path without the disk, to set beside the ensemble's 1×1 rows,
# which the three members' fdatasyncs on one disk dominate.
nosync() {
	local OPS="set create" SHAPES=1x1 FANOUT=0
	ensembles nosync forceSync=no
}

# start_server WHO NAME CFG starts keeper or zookeeper.
start_server() {
	if [ "$1" = keeper ]; then start_keeper "$2" "$3"; else start_zk "$2" "$3"; fi
}

# memory SERVER PID PHASE RSS0 records the resident memory of PID.
memory() {
	record resources "$1" "{\"op\":\"memory\",\"znodes\":$ZNODES,\"rss_empty_kib\":$4,\"rss_kib\":$(rss_kib "$2"),\"hwm_kib\":$(hwm_kib "$2")}" "\"phase\":\"$3\""
}

# snapshot SERVER DIR records the size and node count of the newest snapshot
# in DIR (none if the server took none) and the size of the data directory.
snapshot() {
	local newest nodes=null bytes=null
	newest=$(find "$2" -name 'snapshot.*' -printf '%T@ %p\n' | sort -n | tail -n 1 | cut -d' ' -f2)
	if [ -n "$newest" ]; then
		bytes=$(stat -c %s "$newest")
		nodes=$("$KEEPER" tool snapshot verify "$newest" 2>&1 | sed -n 's/.*, \([0-9]*\) nodes,.*/\1/p' | head -n 1)
	fi
	record resources "$1" "{\"op\":\"snapshot\",\"file\":\"$(basename "${newest:-none}")\",\"snapshot_bytes\":$bytes,\"snapshot_nodes\":${nodes:-null},\"snapshots\":$(find "$2" -name 'snapshot.*' | wc -l),\"datadir_bytes\":$(du -sb "$2" | cut -f1)}"
}

resources() {
	local who pid pair line root
	declare -A port
	read -r "port[keeper]" "port[zookeeper]" "port[keeper-empty]" "port[zookeeper-empty]" <<<"$(free_ports 4)"
	echo "bench: resources: start with an empty data directory" >&2
	for pair in $(seq "$PAIRS"); do
		for who in keeper zookeeper; do
			rm -rf "$W/r-$who-empty"
			write_cfg "$W/r-$who-empty.cfg" "$W/r-$who-empty" "${port[$who-empty]}"
			start_server "$who" "r-$who-empty" "$W/r-$who-empty.cfg"
			pid=$STARTED_PID
			line=$(wait_serving "127.0.0.1:${port[$who-empty]}" "$pid" /)
			record resources "$who" "$line" '"phase":"start-empty"'
			stop_server "$pid"
		done
	done
	for who in keeper zookeeper; do
		echo "bench: resources: $who: $ZNODES znodes of 100 B" >&2
		write_cfg "$W/r-$who.cfg" "$W/r-$who" "${port[$who]}"
		start_server "$who" "r-$who" "$W/r-$who.cfg"
		pid=$STARTED_PID
		wait_serving "127.0.0.1:${port[$who]}" >/dev/null
		local rss0
		rss0=$(rss_kib "$pid")
		line=$("$KEEPER" bench zk --servers "127.0.0.1:${port[$who]}" --cpu-pid "$pid" --op fill \
			--keyspace "$ZNODES" --clients 16 --inflight 16 --size 100)
		record resources "$who" "$line" '"phase":"fill"'
		root=$(printf '%s\n' "$line" | python3 -c 'import json, sys; print(json.load(sys.stdin)["root"])')
		memory "$who" "$pid" filled "$rss0"
		stop_server "$pid"
		echo "$rss0" >"$W/r-$who.rss0"
		echo "$root" >"$W/r-$who.root"
	done
	for pair in $(seq "$PAIRS"); do
		for who in keeper zookeeper; do
			echo "bench: resources: $who: restart $pair" >&2
			start_server "$who" "r-$who-restart$pair" "$W/r-$who.cfg"
			pid=$STARTED_PID
			line=$(wait_serving "127.0.0.1:${port[$who]}" "$pid" "$(cat "$W/r-$who.root")/k-$((ZNODES - 1))")
			record resources "$who" "$line" '"phase":"restart"'
			memory "$who" "$pid" restarted "$(cat "$W/r-$who.rss0")"
			stop_server "$pid"
		done
	done
	for who in keeper zookeeper; do
		snapshot "$who" "$W/r-$who"
	done
}

# failover runs bench/failover.sh, which starts its own ensembles.
failover() {
	OUT="$OUT/failover" bash bench/failover.sh >&2
}

machine | tee "$OUT/machine.txt" >&2
echo "bench: the disk" >&2
record disk disk "$("$KEEPER" bench fsync --dir "$W" --size 4096 --duration "$FSYNC_DUR")"
record machine stalls "$("$KEEPER" bench stalls --dir "$W" --duration "$FSYNC_DUR")"
# run_part PART runs one part in a subshell that stops the servers it
# started if it fails, so that the other parts and the table still run.
run_part() {
	set +e
	(
		trap 'for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done; wait' EXIT
		set -e
		"$1"
	)
	local rc=$?
	set -e
	[ "$rc" = 0 ] || echo "bench: $1 failed (exit $rc); its logs are in $W (KEEP_WORK=1 keeps them)" >&2
}
for part in $PARTS; do
	case $part in
	standalone | ensemble | nosync | resources | failover) ;;
	*)
		echo "bench: unknown part $part (want standalone, ensemble, nosync, resources or failover)" >&2
		exit 2
		;;
	esac
	echo "bench: $part" >&2
	t0=$(date +%s)
	run_part "$part"
	echo "$part: $(($(date +%s) - t0)) s" >>"$W/timings"
done
echo "bench: done in $(($(date +%s) - START)) s" >&2
echo "elapsed: $(($(date +%s) - START)) s ($(paste -sd, "$W/timings" | sed 's/,/, /g'))" >>"$OUT/machine.txt"
python3 bench/compare_table.py "$RESULTS" "$OUT/machine.txt" | tee "$OUT/table.md"
echo
echo "results: $RESULTS"
echo "table: $OUT/table.md"
