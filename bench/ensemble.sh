#!/usr/bin/env bash
# Write throughput of a 3-server keeper ensemble next to a 3-server Apache
# ZooKeeper 3.8 ensemble, both on 127.0.0.1 and measured in the same run.
#
#   bash bench/ensemble.sh [duration]     (default 10s per measurement)
#
# Both ensembles run at once with the same tickTime/initLimit/syncLimit,
# forceSync on, admin server off, data under $TMPDIR; ZooKeeper with
# -Xmx1000m and G1 (ZK_JVMFLAGS overrides; see bench/lib.sh, which also
# explains the raised maxSessionTimeout). Each measurement runs
# `keeper bench zk` with its clients spread over all three members (so
# most writes are forwarded by a follower), alternating keeper and
# ZooKeeper: ops set and create, at 16 clients x 16 in flight and at
# 1 client x 1 in flight. --cpu-pid is the leader's pid, so
# server_cpu_us_per_op is the leader's CPU per write. Each line of output
# is one JSON result (with "server" added); the last lines are a table.
set -euo pipefail
ZK_JVMFLAGS=${ZK_JVMFLAGS:--Xmx1000m -XX:+UseG1GC}
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
DUR=${1:-10s}
ensure_zookeeper
lib_init

read -r -a P <<<"$(free_ports 18)"
ensemble_setup keeper 0
ensemble_setup zk 9
ensemble_start keeper
ensemble_start zk
KL=$(ensemble_leader keeper)
ZL=$(ensemble_leader zk)
echo "keeper leader: member $KL; zookeeper leader: member $ZL" >&2

for op in set create; do
	for shape in "16 16" "1 1"; do
		read -r clients inflight <<<"$shape"
		for who in keeper zk; do
			name=$who; [ $who = zk ] && name=zookeeper
			lead=$KL; [ $who = zk ] && lead=$ZL
			"$KEEPER" bench zk --servers "$(ensemble_servers $who)" --cpu-pid "${PID[$who$lead]}" --op $op \
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
