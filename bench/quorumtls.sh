#!/usr/bin/env bash
# Write throughput of a 3-server keeper ensemble whose members talk in
# plaintext next to one whose members talk TLS (sslQuorum, mutual, the
# default TLSv1.2 and suites, hostname verification on), both on
# 127.0.0.1 and measured in the same run, alternately (PAIRS pairs).
#
#   bash bench/quorumtls.sh [duration]     (default 10s per measurement)
#
# Both ensembles run at once with bench/lib.sh's timing and forceSync on.
# Each measurement runs `keeper bench zk --op set` with its clients spread
# over all three members (most writes are forwarded by a follower, so
# each crosses the quorum links twice), at 16 clients x 16 in flight and
# at 1 x 1; --cpu-pid sums the three members' CPU. The certificates are
# made with openssl into the work dir. The last lines are a table of
# medians and the TLS/plaintext ratio.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
DUR=${1:-10s}
PAIRS=${PAIRS:-3}
lib_init

# A CA and one certificate per member naming 127.0.0.1, as PEM key stores.
pki=$W/pki
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
	-keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
for id in 1 2 3; do
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=member $id" \
		-keyout "$pki/m$id.key" -out "$pki/m$id.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$pki/m$id.ext"
	openssl x509 -req -in "$pki/m$id.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial -days 2 \
		-extfile "$pki/m$id.ext" -out "$pki/m$id.crt" 2>/dev/null
	cat "$pki/m$id.key" "$pki/m$id.crt" >"$pki/m$id.pem"
done

read -r -a P <<<"$(free_ports 18)"
ensemble_setup plain 0
ensemble_setup tls 9
for id in 1 2 3; do
	printf '%s\n' "sslQuorum=true" "ssl.quorum.keyStore.location=$pki/m$id.pem" \
		"ssl.quorum.trustStore.location=$pki/ca.pem" >>"$W/tls$id/zoo.cfg"
done
for who in plain tls; do
	for id in 1 2 3; do
		start_keeper "$who$id" "$W/$who$id/zoo.cfg"
		PID[$who$id]=$STARTED_PID
	done
done
ensemble_leader plain >/dev/null
ensemble_leader tls >/dev/null
grep -h "transport listening" "$W"/tls?.log | grep -q "tls=only" || {
	echo "bench: the tls ensemble does not run TLS" >&2
	exit 1
}

for _ in $(seq "$PAIRS"); do
	for shape in "16 16" "1 1"; do
		read -r clients inflight <<<"$shape"
		for who in plain tls; do
			"$KEEPER" bench zk --servers "$(ensemble_servers $who)" --cpu-pid "$(ensemble_pids $who)" --op set \
				--clients "$clients" --inflight "$inflight" --size 100 --warmup 2s --duration "$DUR" |
				sed "s/^{/{\"quorum\":\"$who\",/" | tee -a "$W/results"
		done
	done
done
echo
python3 - "$W/results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def med(who, c, i, key):
    vals = [r[key] for r in rows if r["quorum"] == who and r["clients"] == c and r["inflight"] == i and r.get(key) is not None]
    return statistics.median(vals) if vals else float("nan")
print(f"{'clients x inflight':>19s}{'plain ops/s':>13s}{'tls ops/s':>11s}{'tls/plain':>10s}"
      f"{'plain p50 us':>14s}{'tls p50 us':>12s}{'cpu us/op plain/tls':>21s}")
for c, i in ((16, 16), (1, 1)):
    p, t = med("plain", c, i, "ops_per_sec"), med("tls", c, i, "ops_per_sec")
    print(f"{f'{c} x {i}':>19s}{p:13.0f}{t:11.0f}{t/p:10.2f}"
          f"{med('plain', c, i, 'p50_us'):14.0f}{med('tls', c, i, 'p50_us'):12.0f}"
          f"{med('plain', c, i, 'server_cpu_us_per_op'):12.0f}/{med('tls', c, i, 'server_cpu_us_per_op'):.0f}")
PY
