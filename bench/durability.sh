#!/usr/bin/env bash
# Durable-write throughput of keeper next to Apache ZooKeeper 3.8 and next to
# the disk's raw fsync rate, all measured in one run on this machine.
#
#   bash bench/durability.sh [duration]     (default 10s per measurement)
#
# Both servers run standalone on 127.0.0.1 with their data in the same
# filesystem (under $TMPDIR), forceSync on; ZooKeeper with -Xmx1000m and G1
# (ZK_JVMFLAGS overrides; see bench/lib.sh). Each line of output is one JSON
# result from `keeper bench`; the last lines are a summary table.
set -euo pipefail
ZK_JVMFLAGS=${ZK_JVMFLAGS:--Xmx1000m -XX:+UseG1GC}
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
DUR=${1:-10s}
ensure_zookeeper
lib_init

read -r KP ZP <<<"$(free_ports 2)"
write_cfg "$W/keeper.cfg" "$W/keeper-data" "$KP"
write_cfg "$W/zk.cfg" "$W/zk-data" "$ZP"
start_keeper keeper "$W/keeper.cfg"
KPID=$STARTED_PID
start_zk zk "$W/zk.cfg"
ZPID=$STARTED_PID
wait_serving "127.0.0.1:$KP" >/dev/null
wait_serving "127.0.0.1:$ZP" >/dev/null

"$KEEPER" bench fsync --dir "$W/zk-data" --size 4096 --duration 5s | tee "$W/results"
for op in set create; do
	for clients in 1 16 64; do
		"$KEEPER" bench zk --servers 127.0.0.1:$KP --cpu-pid $KPID --op $op --clients $clients --inflight 1 \
			--size 100 --warmup 2s --duration "$DUR" | sed 's/^{/{"server":"keeper",/' | tee -a "$W/results"
		"$KEEPER" bench zk --servers 127.0.0.1:$ZP --cpu-pid $ZPID --op $op --clients $clients --inflight 1 \
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
