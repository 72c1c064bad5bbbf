#!/usr/bin/env bash
# Write throughput of a 3-server keeper ensemble next to a 3-server Apache
# ZooKeeper 3.8 ensemble, both on 127.0.0.1 and measured in the same run.
#
#   bash bench/ensemble.sh [duration]     (default 10s per measurement)
#
# Both ensembles run at once with the same tickTime/initLimit/syncLimit,
# forceSync on, admin server off, data under $TMPDIR. maxSessionTimeout is
# raised so the bench's 30 s sessions are not clamped to 20 ticks (2 s),
# whose 2/3 liveness limit would turn a slow stretch into ConnectionLoss. Each measurement runs
# `keeper bench zk` with its clients spread over all three members (so
# most writes are forwarded by a follower), alternating keeper and
# ZooKeeper: ops set and create, at 16 clients x 16 in flight and at
# 1 client x 1 in flight. --cpu-pid is the leader's pid, so
# server_cpu_us_per_op is the leader's CPU per write. Each line of output
# is one JSON result (with "server" added); the last lines are a table.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
DUR=${1:-10s}
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$W"' EXIT

TICK=100 INIT=50 SYNC=10

go build -o "$W/keeper" ./cmd/keeper
# Six distinct free ports per ensemble: client, quorum, election x 3.
ports() { python3 -c '
import socket
ss = [socket.socket() for _ in range(18)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))'; }
read -r -a P <<<"$(ports)"

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

declare -A CLIENT PID
# setup WHO BASE: configs for members 1-3 of ensemble WHO, ports from P[BASE].
setup() {
	local who=$1 base=$2 id
	for id in 1 2 3; do
		local d="$W/$who$id"
		mkdir -p "$d/data"
		echo $id >"$d/data/myid"
		CLIENT[$who$id]=${P[$((base + 3 * (id - 1)))]}
		cat >"$d/zoo.cfg" <<CFG
tickTime=$TICK
initLimit=$INIT
syncLimit=$SYNC
dataDir=$d/data
clientPort=${CLIENT[$who$id]}
clientPortAddress=127.0.0.1
maxClientCnxns=0
maxSessionTimeout=30000
admin.enableServer=false
4lw.commands.whitelist=*
CFG
		for j in 1 2 3; do
			echo "server.$j=127.0.0.1:${P[$((base + 3 * (j - 1) + 1))]}:${P[$((base + 3 * (j - 1) + 2))]}" >>"$d/zoo.cfg"
		done
	done
}
setup keeper 0
setup zk 9

for id in 1 2 3; do
	"$W/keeper" server "$W/keeper$id/zoo.cfg" >"$W/keeper$id.log" 2>&1 &
	PID[keeper$id]=$!
	java -Xmx1000m -XX:+UseG1GC -Dzookeeper.log.dir="$W" -cp '/usr/share/java/*:/usr/share/zookeeper/*' \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$W/zk$id/zoo.cfg" >"$W/zk$id.log" 2>&1 &
	PID[zk$id]=$!
done

# leader WHO waits until all three members serve and prints the leader's id.
leader() {
	local who=$1 id mode lead
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
	echo "bench/ensemble.sh: $who ensemble did not form; logs:" >&2
	tail -n 20 "$W/$who"?.log >&2
	exit 1
}
KL=$(leader keeper)
ZL=$(leader zk)
echo "keeper leader: member $KL; zookeeper leader: member $ZL" >&2
servers() { echo "127.0.0.1:${CLIENT[${1}1]},127.0.0.1:${CLIENT[${1}2]},127.0.0.1:${CLIENT[${1}3]}"; }

for op in set create; do
	for shape in "16 16" "1 1"; do
		read -r clients inflight <<<"$shape"
		for who in keeper zk; do
			name=$who; [ $who = zk ] && name=zookeeper
			lead=$KL; [ $who = zk ] && lead=$ZL
			"$W/keeper" bench zk --servers "$(servers $who)" --cpu-pid "${PID[$who$lead]}" --op $op \
				--clients "$clients" --inflight "$inflight" --size 100 --warmup 2s --duration "$DUR" |
				sed "s/^{/{\"server\":\"$name\",/" | tee -a "$W/results"
		done
	done
done
echo
python3 - "$W/results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {(r["op"], r["clients"], r["inflight"], r["server"]): r for r in rows}
print(f"{'op':7s}{'clients x inflight':>19s}{'keeper ops/s':>14s}{'zk ops/s':>10s}{'ratio':>7s}"
      f"{'keeper p50/p99 us':>19s}{'zk p50/p99 us':>16s}{'leader cpu us/op k/zk':>23s}")
for (op, c, i, s), r in sorted(by.items(), key=lambda kv: (kv[0][0] != "set", -kv[0][1], kv[0][3])):
    z = by.get((op, c, i, "zookeeper"))
    if s != "keeper" or not z:
        continue
    cpu = lambda x: f"{x['server_cpu_us_per_op']:.0f}" if x.get("server_cpu_us_per_op") is not None else "-"
    print(f"{op:7s}{f'{c} x {i}':>19s}{r['ops_per_sec']:14.0f}{z['ops_per_sec']:10.0f}"
          f"{r['ops_per_sec']/max(z['ops_per_sec'],1):7.2f}"
          f"{str(round(r['p50_us']))+'/'+str(round(r['p99_us'])):>19s}"
          f"{str(round(z['p50_us']))+'/'+str(round(z['p99_us'])):>16s}"
          f"{cpu(r)+'/'+cpu(z):>23s}")
PY
