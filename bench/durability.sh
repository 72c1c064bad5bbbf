#!/usr/bin/env bash
# Durable-write throughput of keeper next to Apache ZooKeeper 3.8 and next to
# the disk's raw fsync rate, all measured in one run on this machine.
#
#   bash bench/durability.sh [duration]     (default 10s per measurement)
#
# Both servers run standalone on 127.0.0.1 with their data in the same
# filesystem (under $TMPDIR), forceSync on. Each line of output is one JSON
# result from `keeper bench`; the last lines are a summary table.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
DUR=${1:-10s}
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$W"' EXIT

go build -o "$W/keeper" ./cmd/keeper
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
KP=$(free_port); ZP=$(free_port)

for who in keeper zk; do
	port=$KP; [ $who = zk ] && port=$ZP
	mkdir -p "$W/$who-data"
	cat > "$W/$who.cfg" <<CFG
tickTime=2000
dataDir=$W/$who-data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
CFG
done
"$W/keeper" server "$W/keeper.cfg" 2>"$W/keeper.log" &
KPID=$!
java -Xmx1000m -XX:+UseG1GC -cp '/usr/share/java/*:/usr/share/zookeeper/*' \
	org.apache.zookeeper.server.ZooKeeperServerMain "$W/zk.cfg" >"$W/zk.log" 2>&1 &
ZPID=$!
for port in $KP $ZP; do
	for _ in $(seq 100); do
		"$W/keeper" shell --server 127.0.0.1:$port ls / >/dev/null 2>&1 && break
		sleep 0.2
	done
done

"$W/keeper" bench fsync --dir "$W/zk-data" --size 4096 --duration 5s | tee "$W/results"
for op in set create; do
	for clients in 1 16 64; do
		"$W/keeper" bench zk --servers 127.0.0.1:$KP --cpu-pid $KPID --op $op --clients $clients --inflight 1 \
			--size 100 --warmup 2s --duration "$DUR" | sed 's/^{/{"server":"keeper",/' | tee -a "$W/results"
		"$W/keeper" bench zk --servers 127.0.0.1:$ZP --cpu-pid $ZPID --op $op --clients $clients --inflight 1 \
			--size 100 --warmup 2s --duration "$DUR" | sed 's/^{/{"server":"zookeeper",/' | tee -a "$W/results"
	done
done
echo
python3 - "$W/results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for r in rows:
    if "append" in r or "overwrite" in r:
        for mode in ("append", "overwrite"):
            m = r.get(mode)
            if m:
                print(f"fsync {mode:9s} {m.get('ops_per_sec', 0):9.0f}/s  p50 {m.get('p50_us', 0)} us")
print(f"{'op':7s}{'writers':>8s}{'keeper ops/s':>14s}{'zk ops/s':>10s}{'ratio':>7s}{'keeper p50/p99 us':>19s}{'zk p50/p99 us':>16s}")
by = {}
for r in rows:
    if "server" in r:
        by[(r["op"], r["clients"], r["server"])] = r
for (op, c, s), r in sorted(by.items()):
    if s != "keeper":
        continue
    z = by.get((op, c, "zookeeper"))
    if not z:
        continue
    print(f"{op:7s}{c:8d}{r['ops_per_sec']:14.0f}{z['ops_per_sec']:10.0f}{r['ops_per_sec']/max(z['ops_per_sec'],1):7.2f}"
          f"{str(r['p50_us'])+'/'+str(r['p99_us']):>19s}{str(z['p50_us'])+'/'+str(z['p99_us']):>16s}")
PY
