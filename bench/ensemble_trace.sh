#!/usr/bin/env bash
# Where one write through a follower of a 3-server keeper ensemble spends
# its time and its CPU, as the kernel sees it (BENCHMARKS.md, "Ensemble 1×1
# writes through a follower"). Needs perf, and root or
# kernel.perf_event_paranoid <= 1.
#
#   bash bench/ensemble_trace.sh [KEEPER_BINARY]
#
# A fresh ensemble on loopback (bench/lib.sh's ensemble_setup: the zoo.cfg
# of bench/ensemble.sh, ports from BASE, default 47400, on: 9 of them), then
# `keeper bench zk` at 1 client × 1 in flight through a follower (OP,
# default create, 100-byte data) while:
#   1. `perf stat` counts each member's system calls and context switches
#      for STAT seconds (default 4), printed per write (every member
#      fdatasyncs once per write at one write in flight);
#   2. `perf record` takes the read, write and fdatasync tracepoints of the
#      members and the client for TRACE seconds (default 1), and the median
#      time of each step of a write is printed: the client's request, the
#      follower's REQUEST, the leader's PROPOSAL, the follower's fsync and
#      ACK, the leader's COMMIT, the reply. Tracing adds a few µs per call.
# Without a binary, keeper is built from this tree.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
STAT=${STAT:-4}
TRACE=${TRACE:-1}
OP=${OP:-create}
BASE=${BASE:-47400}
if [ $# -ge 1 ]; then
	KEEPER=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
	W=$(mktemp -d)
	trap lib_cleanup EXIT
else
	lib_init
fi
P=()
for i in $(seq 0 8); do P+=($((BASE + i))); done
ensemble_setup keeper 0
for id in 1 2 3; do
	start_keeper "keeper$id" "$W/keeper$id/zoo.cfg" --log-level warn
	PID[keeper$id]=$STARTED_PID
done
lead=$(ensemble_leader keeper)
follower=1
[ "$lead" = 1 ] && follower=2
other=$((6 - lead - follower))
"$KEEPER" bench zk --servers "127.0.0.1:${CLIENT[keeper$follower]}" --op "$OP" --clients 1 --inflight 1 \
	--size 100 --warmup 1s --duration "$((STAT + TRACE + 4))s" >"$W/run.json" 2>/dev/null &
client=$!
sleep 2
events=syscalls:sys_enter_nanosleep,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_pwait
events+=,syscalls:sys_enter_write,syscalls:sys_enter_read,syscalls:sys_enter_fdatasync,context-switches,task-clock
stats=()
for id in 1 2 3; do
	perf stat -x, -e "$events" -p "${PID[keeper$id]}" -o "$W/stat$id.txt" sleep "$STAT" &
	stats+=($!)
done
wait "${stats[@]}"
perf record -q -o "$W/trace.data" -a -e syscalls:sys_enter_read -e syscalls:sys_exit_read \
	-e syscalls:sys_enter_write -e syscalls:sys_enter_fdatasync -e syscalls:sys_exit_fdatasync \
	-- sleep "$TRACE" >/dev/null 2>&1
wait "$client"
perf script -i "$W/trace.data" -F pid,tid,time,event,trace 2>/dev/null >"$W/trace.txt"
echo "leader: member $lead; the client writes through member $follower" >&2
python3 - "$W" "$lead" "$follower" "$other" "${PID[keeper$follower]}" "${PID[keeper$other]}" \
	"${PID[keeper$lead]}" "$client" <<'PY'
import json, re, statistics as st, sys
w, lead, fol, oth = sys.argv[1:5]
F, O, L, C = sys.argv[5:9]
print("per write (perf stat): member, system calls and context switches, CPU µs")
for i in (1, 2, 3):
    d = {}
    for line in open(f"{w}/stat{i}.txt"):
        f = line.strip().split(",")
        if len(f) > 2 and f[0][:1].isdigit():
            d[f[2].replace("syscalls:sys_enter_", "")] = float(f[0])
    n = d.pop("fdatasync")
    cpu = d.pop("task-clock")
    role = "leader" if str(i) == lead else "follower"
    print(f"  {i} ({role}, {n:.0f} writes): " + ", ".join(f"{k} {v / n:.1f}" for k, v in d.items())
          + f", CPU {1000 * cpu / n:.0f}")
# The trace: (time µs, pid, kind) for writes, reads that returned data,
# fdatasync starts and ends.
ev, last = [], {}
pat = re.compile(r"\s*(\d+)/(\d+)\s+([\d.]+):\s+syscalls:(\w+):\s*(.*)")
for line in open(f"{w}/trace.txt"):
    m = pat.match(line)
    if not m:
        continue
    pid, tid, t, e, rest = m.groups()
    t = float(t) * 1e6
    if e.startswith("sys_enter"):
        fd = re.search(r"fd: (0x[0-9a-f]+)", rest)
        cnt = re.search(r"count: (0x[0-9a-f]+)", rest)
        last[tid] = e
        if e == "sys_enter_write" and cnt and int(cnt.group(1), 16) > 8:  # 8: the runtime's eventfd
            ev.append((t, pid, "write", int(fd.group(1), 16)))
        elif e == "sys_enter_fdatasync":
            ev.append((t, pid, "fsync", 0))
    else:
        r = int(rest.split()[0], 16)
        if e == "sys_exit_read" and 0 < r < 1 << 63 and r != 8:
            ev.append((t, pid, "read", 0))
        elif e == "sys_exit_fdatasync":
            ev.append((t, pid, "fsynced", 0))
fds = [x[3] for x in ev if x[1] == C and x[2] == "write"]
cfd = max(set(fds), key=fds.count) if fds else None
steps = [("the follower reads the request", F, "read"), ("it writes REQUEST to the leader", F, "write"),
         ("the leader reads it", L, "read"), ("it writes its first PROPOSAL", L, "write"),
         ("the follower reads it", F, "read"), ("its fdatasync starts", F, "fsync"),
         ("its fdatasync ends", F, "fsynced"), ("it writes ACK", F, "write"),
         ("the leader reads an ACK", L, "read"), ("it writes its first COMMIT", L, "write"),
         ("the follower reads it", F, "read"), ("it writes the reply", F, "write"),
         ("the client reads it", C, "read")]
segs, cur = [], None
for x in ev:
    if x[1] == C and x[2] == "write" and x[3] == cfd:
        if cur:
            segs.append(cur)
        cur = [x]
    elif cur is not None:
        cur.append(x)
rows = []
for seg in segs:
    t, row = seg[0][0], []
    for _, pid, kind in steps:
        nxt = next((x[0] for x in seg if x[0] >= t and x[1] == pid and x[2] == kind), None)
        if nxt is None:
            break
        row.append(nxt - t)
        t = nxt
    else:
        rows.append(row)
print(f"one write's steps, median µs over {len(rows)} of {len(segs)} traced writes (each after the one above):")
for i, (name, _, _) in enumerate(steps):
    print(f"  {name}: {st.median(r[i] for r in rows):.0f}")
if rows:
    print(f"  whole write: {st.median(sum(r) for r in rows):.0f}")
res = [json.loads(l) for l in open(f"{w}/run.json") if l.startswith("{")]
if res:
    r = res[-1]
    print(f"load: {r['ops_per_sec']:.0f} writes/s, p50 {r['p50_us']:.0f} µs (untraced and traced seconds together)")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
