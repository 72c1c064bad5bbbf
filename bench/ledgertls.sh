#!/usr/bin/env bash
# Ledger adds over plain connections next to adds over TLS (BookKeeper's
# START_TLS, docs/bookie-tls.md), to the same three bookies in the same
# run, alternately (PAIRS rounds).
#
#   bash bench/ledgertls.sh [duration]     (default 5s per measurement)
#
# A keeper coordination server and three `keeper bookie` processes on
# 127.0.0.1, as `keeper sandbox` runs them but each bookie with a
# bookkeeper.conf that turns TLS on (PEM key stores, mutual authentication,
# the default protocols and suites). Each round runs `keeper bench ledger`
# E3/Qw2/Qa2, 1 KiB, for each shape of SHAPES ("1x1 16x16": ledgers x adds
# in flight per ledger) with --protocols v3,v3+tls: the same client
# binary, plain then TLS. --cpu-pid sums the bookies' CPU per add. The last
# lines are a table of medians and the TLS/plain ratios.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
DUR=${1:-5s}
PAIRS=${PAIRS:-3}
SHAPES=${SHAPES:-1x1 16x16}
lib_init

pki=$W/pki
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
	-keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
for who in bookie client; do
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$who" \
		-keyout "$pki/$who.key" -out "$pki/$who.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$pki/$who.ext"
	openssl x509 -req -in "$pki/$who.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial -days 2 \
		-extfile "$pki/$who.ext" -out "$pki/$who.crt" 2>/dev/null
done

read -r -a P <<<"$(free_ports 4)"
write_cfg "$W/zk/zoo.cfg" "$W/zk/data" "${P[0]}"
start_keeper zk "$W/zk/zoo.cfg"
wait_serving "127.0.0.1:${P[0]}" >/dev/null
pids=()
for i in 1 2 3; do
	cat >"$W/bk$i.conf" <<CONF
bookiePort=${P[$i]}
advertisedAddress=127.0.0.1
journalDirectories=$W/bk$i/journal
ledgerDirectories=$W/bk$i/ledgers
zkServers=127.0.0.1:${P[0]}
tlsProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory
tlsKeyStoreType=PEM
tlsKeyStore=$pki/bookie.key
tlsCertificatePath=$pki/bookie.crt
tlsClientAuthentication=true
tlsTrustStoreType=PEM
tlsTrustStore=$pki/ca.pem
CONF
	"$KEEPER" bookie "$W/bk$i.conf" --log-level warn >"$W/bk$i.log" 2>&1 &
	pids+=($!)
done
cat >"$W/client.conf" <<CONF
tlsProviderFactoryClass=org.apache.bookkeeper.tls.TLSContextFactory
clientTrustStoreType=PEM
clientTrustStore=$pki/ca.pem
tlsClientAuthentication=true
clientKeyStoreType=PEM
clientKeyStore=$pki/client.key
tlsCertificatePath=$pki/client.crt
CONF
cpu=$(IFS=,; echo "${pids[*]}")
zk=127.0.0.1:${P[0]}
# The bookies are up once a short unrecorded run over TLS succeeds.
for _ in $(seq 1 100); do
	"$KEEPER" bench ledger --zk "$zk" --client-conf "$W/client.conf" --protocols v3+tls --quorums 3/2/2 \
		--sizes 1024 --duration 1s --warmup 0s >/dev/null 2>&1 && break
	sleep 0.2
done

: >"$W/results.jsonl"
for p in $(seq 1 "$PAIRS"); do
	for shape in $SHAPES; do
		L=${shape%x*} I=${shape#*x}
		"$KEEPER" bench ledger --zk "$zk" --client-conf "$W/client.conf" --protocols v3,v3+tls --quorums 3/2/2 \
			--sizes 1024 --ledgers "$L" --inflight "$I" --duration "$DUR" --warmup 1s --cpu-pid "$cpu" 2>/dev/null |
			while read -r line; do echo "{\"pair\":$p,\"shape\":\"$shape\",\"res\":$line}"; done >>"$W/results.jsonl"
	done
done

python3 - "$W/results.jsonl" <<'EOF'
import json, statistics as st, sys
from collections import defaultdict
runs = defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    x = r["res"]
    if "entries_per_sec" not in x:
        continue
    runs[(r["shape"], x["protocol"])].append(x)
med = lambda xs, k: st.median(x.get(k, 0) for x in xs)
print("shape  protocol  entries/s  p50_us  p99_us  bookie_cpu_us/add  client_cpu_us/add  (medians of %d)" % max(len(v) for v in runs.values()))
for (shape, proto), xs in sorted(runs.items()):
    print(f"{shape:6} {proto:8} {med(xs,'entries_per_sec'):10.0f} {med(xs,'p50_us'):7.0f} {med(xs,'p99_us'):7.0f}"
          f" {med(xs,'server_cpu_us_per_add'):18.1f} {med(xs,'client_cpu_us_per_add'):18.1f}")
for shape in sorted({s for s, _ in runs}):
    a, b = runs.get((shape, "v3")), runs.get((shape, "v3+tls"))
    if a and b:
        print(f"{shape}: TLS/plain entries/s {med(b,'entries_per_sec')/med(a,'entries_per_sec'):.2f}, "
              f"p50 {med(b,'p50_us')/med(a,'p50_us'):.2f}, p99 {med(b,'p99_us')/med(a,'p99_us'):.2f}")
EOF
