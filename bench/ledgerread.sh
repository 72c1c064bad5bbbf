#!/usr/bin/env bash
# Reads of ledger entries that are only in the bookies' entry logs: cold
# (the page cache dropped, when run as root), with nothing else running,
# and while a forced major compaction moves them (issue 20's reads).
#
#   bash bench/ledgerread.sh
#
# A keeper coordination server and three `keeper bookie` processes on
# 127.0.0.1, each bookie with its HTTP admin server on and entry logs of
# LOG_MB MiB (logSizeLimit; 128, so that a few are sealed and compaction
# has work). `keeper bench ledger --op read` (E3/Qw2/Qa2, SIZE bytes, 1024)
# writes a ledger of ENTRIES entries (200000) interleaved with a second one
# of as many, then a third that pushes them out of the bookies' write caches
# (64 MiB each: ENTRIES × SIZE × 2/3 must exceed it), deletes the second and
# third, and reads READS (2000) entries at random with INFLIGHT (1) reads
# outstanding: cold (--drop-caches, as root; otherwise "flushed"), idle,
# and during the bookies' forced major compaction. ROUNDS (3) runs, each on
# fresh bookies; the bench's JSON lines go to $OUT/results.jsonl (OUT
# defaults to a fresh directory under $TMPDIR) and the medians per phase
# are printed last.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
ENTRIES=${ENTRIES:-200000}
READS=${READS:-2000}
INFLIGHT=${INFLIGHT:-1}
SIZE=${SIZE:-1024}
LOG_MB=${LOG_MB:-128}
ROUNDS=${ROUNDS:-3}
lib_init
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/ledger-read.XXXXXX")}
mkdir -p "$OUT"
: >"$OUT/results.jsonl"
drop=()
if [ "$(id -u)" = 0 ]; then
	drop=(--drop-caches)
fi

for round in $(seq 1 "$ROUNDS"); do
	R=$W/round$round
	mkdir -p "$R"
	read -r -a P <<<"$(free_ports 7)"
	write_cfg "$R/zoo.cfg" "$R/zk" "${P[0]}"
	start_keeper "round$round-zk" "$R/zoo.cfg"
	zkpid=$STARTED_PID
	wait_serving "127.0.0.1:${P[0]}" >/dev/null
	pids=()
	http=()
	for i in 1 2 3; do
		cat >"$R/bk$i.conf" <<CONF
bookiePort=${P[$i]}
advertisedAddress=127.0.0.1
journalDirectories=$R/bk$i/journal
ledgerDirectories=$R/bk$i/ledgers
zkServers=127.0.0.1:${P[0]}
httpServerEnabled=true
httpServerHost=127.0.0.1
httpServerPort=${P[$((i + 3))]}
logSizeLimit=$((LOG_MB << 20))
CONF
		"$KEEPER" bookie "$R/bk$i.conf" --log-level warn >"$R/bk$i.log" 2>&1 &
		pids+=($!)
		http+=("127.0.0.1:${P[$((i + 3))]}")
	done
	zk=127.0.0.1:${P[0]}
	# The bookies are up when a ledger can be written on all three.
	for _ in $(seq 1 100); do
		"$KEEPER" bench ledger --zk "$zk" --quorums 3/3/3 --sizes 100 --inflight 1 --duration 200ms --warmup 0s \
			>/dev/null 2>&1 && break
		sleep 0.2
	done
	echo "round $round: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	"$KEEPER" bench ledger --zk "$zk" --op read --quorums 3/2/2 --sizes "$SIZE" --entries "$ENTRIES" \
		--reads "$READS" --inflight "$INFLIGHT" --bookie-http "$(IFS=,; echo "${http[*]}")" "${drop[@]}" \
		--log-level warn | tee -a "$OUT/results.jsonl"
	kill "${pids[@]}" "$zkpid"
	wait "${pids[@]}" "$zkpid" 2>/dev/null || true
	rm -rf "$R"
done

python3 - "$OUT/results.jsonl" <<'PY'
import json, statistics as st, sys
from collections import defaultdict
runs = defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs[r["phase"]].append(r)
print("phase       reads/s  p50_us  p99_us  p999_us  compaction_s  entry logs before/after  (medians of %d)"
      % max(len(v) for v in runs.values()))
for phase in ("cold", "flushed", "idle", "compaction"):
    xs = runs.get(phase)
    if not xs:
        continue
    m = lambda k: st.median(x.get(k, 0) for x in xs)
    extra = ""
    if phase == "compaction":
        extra = f"  {m('compaction_sec'):12.1f}  {m('entry_logs_before'):.0f}/{m('entry_logs_after'):.0f}"
    print(f"{phase:10} {m('entries_per_sec'):8.0f} {m('p50_us'):7.0f} {m('p99_us'):7.0f} {m('p999_us'):8.0f}{extra}")
PY
echo "results: $OUT/results.jsonl"
