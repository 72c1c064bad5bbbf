#!/usr/bin/env bash
# Failover and session expiry of a 3-server keeper ensemble next to a
# 3-server Apache ZooKeeper 3.8 ensemble, with ZooKeeper's sample timing
# (tickTime=2000, initLimit=10, syncLimit=5), both on 127.0.0.1 and
# measured in the same run. bench/compare.sh runs it as its "failover" part.
#
#   bash bench/failover.sh                 (KILLS=10: about 10 minutes)
#   KILLS=2 EXPIRY_ROUNDS=1 bash bench/failover.sh     (a quick look)
#
#  1. Leader failover: for each client in CLIENTS, WRITERS writers set
#     their own znode back to back through the whole ensemble while the
#     leader is SIGKILLed KILLS times (the killed member is restarted and
#     rejoins before the next kill). The write gap of a kill is the time
#     from the last acknowledgement before the kill to the first
#     acknowledgement of a write issued after it, over all writers.
#     Clients: kazoo (bench/failover_kazoo.py), go-zookeeper and keeper's
#     own zkclient (verify/compat/failoverload), each with its library's
#     own reconnection (zkclient's writers redial the next member at once).
#  2. Session expiry: EXPIRY_SESSIONS go-zookeeper sessions (10 s) attached
#     to the leader and as many to a follower each hold an ephemeral and
#     send a request every 50 ms; their process is SIGKILLed at a random
#     moment, and a watcher polling every 2 ms notes when each ephemeral is
#     gone, counted from the kill. EXPIRY_ROUNDS rounds. ZooKeeper's
#     guarantee is expiry no sooner than the timeout after the last
#     request; the target is no later than the timeout and tickTime/2.
#
# Output: $OUT/results.jsonl (one line per kill and per ephemeral) and
# $OUT/table.md, the medians and worst cases side by side.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
KILLS=${KILLS:-10}
CLIENTS=${CLIENTS:-kazoo gozk keeper}
WRITERS=${WRITERS:-4}
EXPIRY_SESSIONS=${EXPIRY_SESSIONS:-10}
EXPIRY_ROUNDS=${EXPIRY_ROUNDS:-2}
SESSION_MS=10000
ensure_zookeeper
lib_init
go build -o "$W/failoverload" ./verify/compat/failoverload
LOAD=$W/failoverload
TICK=2000 INIT=10 SYNC=5
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/keeper-failover-$(date +%Y%m%d-%H%M%S)-XXXX")}
mkdir -p "$OUT"
RESULTS=$OUT/results.jsonl
: >"$RESULTS"

read -r -a P <<<"$(free_ports 18)"
ensemble_setup keeper 0
ensemble_setup zk 9
ensemble_start keeper
ensemble_start zk
ensemble_leader keeper >/dev/null
ensemble_leader zk >/dev/null

now_ns() { date +%s%N; }

# restart WHO ID starts member ID of WHO again on its old directory.
restart() {
	local who=$1 id=$2
	if [ "$who" = keeper ]; then
		start_keeper "$who$id-r$RANDOM" "$W/$who$id/zoo.cfg"
	else
		start_zk "$who$id-r$RANDOM" "$W/$who$id/zoo.cfg"
	fi
	PID[$who$id]=$STARTED_PID
}

# acked_after FILE NS: succeeds once FILE has an ack of a write issued after NS.
acked_after() {
	awk -v t="$2" '$1 > t {found=1; exit} END {exit !found}' "$1"
}

# wait_acked_after FILE NS waits (up to 120 s) for such an ack.
wait_acked_after() {
	local i
	for i in $(seq 12000); do
		acked_after "$1" "$2" && return 0
		sleep 0.01
	done
	echo "bench: no write acknowledged within 120 s after the kill" >&2
	return 1
}

# failover WHO CLIENT kills the leader of WHO KILLS times under CLIENT's load.
failover() {
	local who=$1 client=$2 acks="$W/acks-$1-$2" kills="$W/kills-$1-$2" pid k lead
	: >"$kills"
	case $client in
	kazoo) /usr/bin/python3 bench/failover_kazoo.py "$(ensemble_servers "$who")" "$acks" "$WRITERS" & ;;
	*) "$LOAD" -mode write -client "$client" -servers "$(ensemble_servers "$who")" -out "$acks" -writers "$WRITERS" & ;;
	esac
	pid=$!
	for k in $(seq "$KILLS"); do
		lead=$(ensemble_leader "$who")
		local t0
		t0=$(now_ns)
		sleep 2 # writes flowing on every member before the kill
		wait_acked_after "$acks" "$t0"
		local killed
		killed=$(now_ns)
		kill -KILL "${PID[$who$lead]}"
		wait "${PID[$who$lead]}" 2>/dev/null || true
		echo "$killed" >>"$kills"
		wait_acked_after "$acks" "$killed"
		echo "bench: failover: $who/$client: kill $k of member $lead done" >&2
		restart "$who" "$lead"
	done
	ensemble_leader "$who" >/dev/null
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
	python3 - "$acks" "$kills" "$who" "$client" >>"$RESULTS" <<'PY'
import json, sys
acks = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 2]
for k, line in enumerate(open(sys.argv[2])):
    t = int(line)
    last = max(a for i, a in acks if a <= t)
    first = min(a for i, a in acks if i > t)
    print(json.dumps({"setup": "failover", "server": sys.argv[3], "client": sys.argv[4], "kill": k + 1,
                      "gap_ms": round((first - last) / 1e6, 1)}))
PY
}

# expiry WHO runs EXPIRY_ROUNDS rounds of dying sessions on the leader and
# on a follower of WHO.
expiry() {
	local who=$1 gone="$W/gone-$1" round lead fol id watch
	lead=$(ensemble_leader "$who")
	for id in 1 2 3; do [ "$id" != "$lead" ] && fol=$id && break; done
	"$LOAD" -mode watch -servers "$(ensemble_servers "$who")" -out "$gone" &
	watch=$!
	: >"$W/deaths-$who"
	for round in $(seq "$EXPIRY_ROUNDS"); do
		local hl hf
		"$LOAD" -mode hold -server "127.0.0.1:${CLIENT[$who$lead]}" -sessions "$EXPIRY_SESSIONS" -tag "leader-$round" -timeout ${SESSION_MS}ms >"$W/hold-l" &
		hl=$!
		"$LOAD" -mode hold -server "127.0.0.1:${CLIENT[$who$fol]}" -sessions "$EXPIRY_SESSIONS" -tag "follower-$round" -timeout ${SESSION_MS}ms >"$W/hold-f" &
		hf=$!
		for _ in $(seq 3000); do
			grep -q ready "$W/hold-l" && grep -q ready "$W/hold-f" && break
			sleep 0.01
		done
		sleep "$(python3 -c 'import random; print(round(random.uniform(0.5, 4), 3))')"
		local died
		died=$(now_ns)
		kill -KILL "$hl" "$hf"
		wait "$hl" "$hf" 2>/dev/null || true
		echo "$round $died" >>"$W/deaths-$who"
		for _ in $(seq 6000); do
			[ "$(grep -c -- "-$round-" "$gone" || true)" -ge $((2 * EXPIRY_SESSIONS)) ] && break
			sleep 0.01
		done
		echo "bench: expiry: $who: round $round done" >&2
	done
	kill -TERM "$watch"
	wait "$watch" 2>/dev/null || true
	python3 - "$gone" "$W/deaths-$who" "$who" >>"$RESULTS" <<'PY'
import json, sys
deaths = dict(l.split() for l in open(sys.argv[2]))
for line in open(sys.argv[1]):
    t, name = line.split()
    attach, rnd, i = name.rsplit("-", 2)
    print(json.dumps({"setup": "expiry", "server": sys.argv[3], "attach": attach, "round": int(rnd),
                      "ms": round((int(t) - int(deaths[rnd])) / 1e6, 1)}))
PY
}

for client in $CLIENTS; do
	for who in keeper zk; do
		failover "$who" "$client"
	done
done
for who in keeper zk; do
	expiry "$who"
done
python3 - "$RESULTS" "$SESSION_MS" "$TICK" <<'PY' | tee "$OUT/table.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
timeout, tick = int(sys.argv[2]), int(sys.argv[3])
name = {"keeper": "keeper", "zk": "ZooKeeper"}
print(f"tickTime={tick} initLimit=10 syncLimit=5; 3 servers on loopback\n")
print("| leader SIGKILL: write gap (ms) | keeper median | keeper worst | ZooKeeper median | ZooKeeper worst | median keeper/ZooKeeper |")
print("|---|---|---|---|---|---|")
for c in sorted({r["client"] for r in rows if r["setup"] == "failover"}):
    g = {s: sorted(r["gap_ms"] for r in rows if r["setup"] == "failover" and r["client"] == c and r["server"] == s) for s in ("keeper", "zk")}
    if not g["keeper"] or not g["zk"]:
        continue
    mk, mz = statistics.median(g["keeper"]), statistics.median(g["zk"])
    print(f"| {c} ({len(g['keeper'])}/{len(g['zk'])} kills) | {mk:.0f} | {g['keeper'][-1]:.0f} | {mz:.0f} | {g['zk'][-1]:.0f} | {mk / mz:.2f} |")
print()
print(f"| session expiry after the client's death (ms), {timeout} ms sessions | median | worst | within timeout+tickTime/2 |")
print("|---|---|---|---|")
for s in ("keeper", "zk"):
    for a in ("leader", "follower"):
        v = sorted(r["ms"] for r in rows if r["setup"] == "expiry" and r["server"] == s and r["attach"] == a)
        if v:
            ok = sum(1 for x in v if x <= timeout + tick / 2)
            print(f"| {name[s]}, attached to the {a} | {statistics.median(v):.0f} | {v[-1]:.0f} | {ok}/{len(v)} |")
PY
echo "results: $RESULTS"
