# Shared setup of the bench/*.sh scripts: source it from bash after
# `set -euo pipefail`. It defines functions and a few globals; nothing runs
# until lib_init.
#
#   ensure_zookeeper       install Debian's zookeeper package if missing
#   lib_init               cd to the repo, make the work dir $W, build $KEEPER,
#                          and stop every server started here on exit
#   free_ports N           N distinct free TCP ports on 127.0.0.1
#   fourletter PORT WORD   a four-letter word's reply ("" if down)
#   write_cfg FILE DATADIR PORT [LINE...]
#                          a zoo.cfg both servers read
#   start_keeper NAME CFG [ARG...], start_zk NAME CFG, start_null NAME,
#   start_null_ensemble NAME
#                          start a server in the background, log in $W/NAME.log;
#                          its pid is left in $STARTED_PID (the null server's
#                          address in $NULL_ADDR, the null ensemble's three
#                          in $NULL_ADDRS and its pids in $NULL_PIDS)
#   stop_server PID        SIGTERM, then SIGKILL after 60 s; waits for exit
#   wait_serving ADDR [PID [PATH]]
#                          wait until ADDR serves a read (of PATH, default /)
#   ensemble_setup WHO BASE, ensemble_start WHO, ensemble_leader WHO,
#   ensemble_servers WHO, ensemble_pids WHO
#                          3-member ensembles on loopback, ports from ${P[@]}
#   rss_kib PID, hwm_kib PID
#                          VmRSS and VmHWM from /proc/PID/status, in KiB
#
# Apache ZooKeeper runs as Debian's zkServer.sh would run it: QuorumPeerMain
# from /usr/share/java/zookeeper.jar (whose manifest names its dependencies)
# with no heap flags, so the JVM picks its defaults (G1, a maximum heap of
# a quarter of RAM). ZK_JVMFLAGS adds flags; ZK_CLASSPATH replaces the
# classpath, which adds slf4j-simple so that ZooKeeper's log is not
# discarded (Debian's own classpath has no SLF4J binding, so its log goes
# nowhere).

ZK_CLASSPATH=${ZK_CLASSPATH:-/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar}
ZK_JVMFLAGS=${ZK_JVMFLAGS:-}
# Ensemble timing, the same for both servers.
TICK=100 INIT=50 SYNC=10

# ensure_zookeeper installs Apache ZooKeeper from Debian's packages if it is
# missing, with the same check as the Makefile's deps target.
ensure_zookeeper() {
	if [ -x /usr/share/zookeeper/bin/zkServer.sh ] && [ -f /usr/share/java/zookeeper.jar ]; then
		return
	fi
	local sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	echo "bench: installing Debian's zookeeper package" >&2
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q zookeeper
}

# lib_cleanup stops what the script started (its own jobs, nothing else)
# and removes $W (kept if KEEP_WORK=1, for its logs).
lib_cleanup() {
	local pid
	for pid in $(jobs -p); do
		kill -KILL "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	if [ "${KEEP_WORK:-0}" = 1 ]; then
		echo "bench: work directory kept: $W" >&2
	else
		rm -rf "$W"
	fi
}

# lib_init: the repo root as working directory, a fresh work directory $W
# (under $TMPDIR, so on the disk whose fsync is measured), keeper built as
# $KEEPER.
lib_init() {
	cd "$(dirname "${BASH_SOURCE[0]}")/.."
	export PATH="/usr/local/go/bin:$PATH"
	W=$(mktemp -d)
	trap lib_cleanup EXIT
	go build -ldflags "$(sh cmd/keeper/ldflags.sh)" -o "$W/keeper" ./cmd/keeper
	KEEPER=$W/keeper
}

# free_ports N prints N distinct free ports, space-separated.
free_ports() {
	python3 - "$1" <<'PY'
import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))
PY
}

# fourletter PORT WORD prints the reply (empty if the server is down).
fourletter() {
	python3 - "$1" "$2" <<'PY' 2>/dev/null || true
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)
s.sendall(sys.argv[2].encode()); out = b""
while True:
    b = s.recv(65536)
    if not b: break
    out += b
print(out.decode(errors="replace"))
PY
}

# write_cfg FILE DATADIR PORT [LINE...] writes a zoo.cfg for either server:
# tickTime $CFG_TICK (default 2000 ms), loopback only, no connection limit,
# no admin server, every four-letter word, forceSync, snapCount and
# preAllocSize at their defaults; extra lines follow.
write_cfg() {
	local file=$1 dir=$2 port=$3
	shift 3
	mkdir -p "$dir"
	{
		cat <<CFG
tickTime=${CFG_TICK:-2000}
dataDir=$dir
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
CFG
		local line
		for line in "$@"; do echo "$line"; done
	} >"$file"
}

# start_keeper NAME CFG [ARG...] starts `keeper server CFG ARG...`.
start_keeper() {
	local name=$1 cfg=$2
	shift 2
	"$KEEPER" server "$cfg" "$@" >"$W/$name.log" 2>&1 &
	STARTED_PID=$!
}

# start_zk NAME CFG starts Apache ZooKeeper's QuorumPeerMain on CFG (it
# runs standalone when CFG has no server.N lines), as zkServer.sh does.
start_zk() {
	local name=$1 cfg=$2
	# shellcheck disable=SC2086 # ZK_JVMFLAGS is a list of flags
	java "-Dzookeeper.log.dir=$W" -Dorg.slf4j.simpleLogger.showDateTime=true \
		-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS -XX:+HeapDumpOnOutOfMemoryError "-XX:HeapDumpPath=$W" -XX:OnOutOfMemoryError='kill -9 %p' \
		$ZK_JVMFLAGS -cp "$ZK_CLASSPATH" org.apache.zookeeper.server.quorum.QuorumPeerMain "$cfg" \
		>"$W/$name.log" 2>&1 &
	STARTED_PID=$!
}

# start_null NAME starts `keeper bench null` and sets NULL_ADDR.
start_null() {
	local name=$1 i
	"$KEEPER" bench null --addr 127.0.0.1:0 >"$W/$name.addr" 2>"$W/$name.log" &
	STARTED_PID=$!
	for i in $(seq 200); do
		NULL_ADDR=$(head -n 1 "$W/$name.addr")
		[ -n "$NULL_ADDR" ] && return
		sleep 0.05
	done
	echo "bench: the null server did not start" >&2
	exit 1
}

# start_null_ensemble NAME starts `keeper bench null-ensemble` as three
# processes, one member each, as the ensembles run (NULL_PROCS=1: one
# process), logs under $W/NAME, and sets NULL_ADDRS (the members' client
# addresses, the leader's second) and NULL_PIDS, both comma-separated.
start_null_ensemble() {
	local name=$1 id i peer addrs=() pids=()
	mkdir -p "$W/$name"
	if [ "${NULL_PROCS:-3}" = 1 ]; then
		"$KEEPER" bench null-ensemble --dir "$W/$name" >"$W/$name.addr" 2>"$W/$name.log" &
		pids=($!)
		set -- ""
	else
		peer=127.0.0.1:$(free_ports 1)
		for id in 2 1 3; do
			"$KEEPER" bench null-ensemble --dir "$W/$name" --members "$id" --peer-addr "$peer" \
				>"$W/$name.addr$id" 2>"$W/$name.log$id" &
			pids[id]=$!
		done
		set -- 1 2 3
	fi
	for id in "$@"; do
		for i in $(seq 1200); do
			[ -s "$W/$name.addr$id" ] && break
			sleep 0.05
		done
		[ -s "$W/$name.addr$id" ] || { echo "bench: the null ensemble did not start:" >&2; cat "$W/$name.log"* >&2; exit 1; }
		addrs+=("$(head -n 1 "$W/$name.addr$id")")
	done
	NULL_ADDRS=$(IFS=,; echo "${addrs[*]}")
	NULL_PIDS=$(IFS=,; echo "${pids[*]}")
}

# stop_server PID stops a server started here and waits until it is gone.
stop_server() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 600); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# wait_serving ADDR [PID [PATH]] waits (up to 10 minutes) until ADDR serves
# a read of PATH (default /) and prints bench zk's ready line, whose
# ready_sec counts from PID's start when PID is given.
wait_serving() {
	local addr=$1 pid=${2:-} path=${3:-/}
	"$KEEPER" bench zk --servers "$addr" --op ready --path "$path" --duration 600s ${pid:+--cpu-pid "$pid"}
}

declare -A CLIENT PID

# ensemble_setup WHO BASE [LINE...] writes the configs of members 1-3 of
# ensemble WHO under $W/WHO1..3, taking 9 ports from P[BASE] on (client,
# quorum and election port of each member), with the extra zoo.cfg LINEs.
# Sessions may last up to 30 s: the default cap of 20 ticks (2 s) would
# turn a slow stretch into ConnectionLoss.
ensemble_setup() {
	local who=$1 base=$2 id j
	shift 2
	for id in 1 2 3; do
		local d="$W/$who$id"
		CLIENT[$who$id]=${P[$((base + 3 * (id - 1)))]}
		local servers=()
		for j in 1 2 3; do
			servers+=("server.$j=127.0.0.1:${P[$((base + 3 * (j - 1) + 1))]}:${P[$((base + 3 * (j - 1) + 2))]}")
		done
		CFG_TICK=$TICK write_cfg "$d/zoo.cfg" "$d/data" "${CLIENT[$who$id]}" \
			"initLimit=$INIT" "syncLimit=$SYNC" "maxSessionTimeout=30000" "${servers[@]}" "$@"
		echo "$id" >"$d/data/myid"
	done
}

# ensemble_start WHO starts the members of ensemble WHO (keeper or zk).
ensemble_start() {
	local who=$1 id
	for id in 1 2 3; do
		if [ "$who" = keeper ]; then
			start_keeper "$who$id" "$W/$who$id/zoo.cfg"
		else
			start_zk "$who$id" "$W/$who$id/zoo.cfg"
		fi
		PID[$who$id]=$STARTED_PID
	done
}

# ensemble_leader WHO waits until all three members serve and prints the
# leader's id.
ensemble_leader() {
	local who=$1 id mode lead ok
	for _ in $(seq 300); do
		lead="" ok=0
		for id in 1 2 3; do
			mode=$(fourletter "${CLIENT[$who$id]}" srvr | sed -n 's/^Mode: //p')
			case $mode in
			leader) lead=$id ok=$((ok + 1)) ;;
			follower) ok=$((ok + 1)) ;;
			esac
		done
		if [ "$ok" = 3 ] && [ -n "$lead" ]; then
			echo "$lead"
			return
		fi
		sleep 0.2
	done
	echo "bench: $who ensemble did not form; logs:" >&2
	tail -n 20 "$W/$who"?.log >&2
	exit 1
}

# ensemble_servers WHO prints the members' client addresses, comma-separated.
ensemble_servers() { echo "127.0.0.1:${CLIENT[${1}1]},127.0.0.1:${CLIENT[${1}2]},127.0.0.1:${CLIENT[${1}3]}"; }

# ensemble_pids WHO prints the members' pids, comma-separated.
ensemble_pids() { echo "${PID[${1}1]},${PID[${1}2]},${PID[${1}3]}"; }

# rss_kib PID and hwm_kib PID print VmRSS and VmHWM in KiB.
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
