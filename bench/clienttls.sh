#!/usr/bin/env bash
# Get and set throughput over TLS of a standalone keeper next to a
# standalone Apache ZooKeeper 3.8, both serving clients on a
# secureClientPort only (ssl.clientAuth=need, the default TLSv1.2 and
# suites), from the same openssl keys: PEM stores for keeper, PKCS12 (key
# store from openssl, trust store from keytool) for ZooKeeper on Netty.
#
#   bash bench/clienttls.sh [duration]     (default 10s per measurement)
#
# Both servers run at once with forceSync on. Each measurement is
# `keeper bench zk` over TLS (--client-conf: a client certificate and the
# CA), at 16 clients x 16 in flight and at 1 x 1, get then set; keeper and
# ZooKeeper alternate within each of PAIRS pairs (default 3), so drift on
# the machine falls on both, after an unrecorded warm-up pass of WARMUP
# (default 15s) per server and op. --cpu-pid gives each server's CPU per op. The
# last lines are a table of medians and the keeper/ZooKeeper ratios.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
DUR=${1:-10s}
PAIRS=${PAIRS:-3}
ensure_zookeeper
lib_init
PASS=bench-tls
# NettyServerCnxnFactory, which ZooKeeper needs for TLS, loads Netty
# modules the zookeeper jar's manifest leaves out.
for jar in netty-codec netty-resolver netty-transport-native-unix-common; do
	[ -f "/usr/share/java/$jar.jar" ] && ZK_CLASSPATH="$ZK_CLASSPATH:/usr/share/java/$jar.jar"
done

# A CA, a server certificate naming 127.0.0.1 and a client certificate.
pki=$W/pki
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
	-keyout "$pki/ca.key" -out "$pki/ca.pem" 2>/dev/null
for who in server client; do
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=bench $who" \
		-keyout "$pki/$who.key" -out "$pki/$who.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >"$pki/$who.ext"
	openssl x509 -req -in "$pki/$who.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial -days 2 \
		-extfile "$pki/$who.ext" -out "$pki/$who.crt" 2>/dev/null
	cat "$pki/$who.key" "$pki/$who.crt" >"$pki/$who.pem"
done
openssl pkcs12 -export -in "$pki/server.crt" -inkey "$pki/server.key" -certfile "$pki/ca.pem" -name server \
	-out "$pki/server.p12" -passout "pass:$PASS"
keytool -importcert -noprompt -alias ca -file "$pki/ca.pem" -keystore "$pki/trust.p12" -storetype PKCS12 \
	-storepass "$PASS" >/dev/null 2>&1

# secureClientPort only: no plaintext client port.
read -r kport zport <<<"$(free_ports 2)"
tls_cfg() { # FILE DATADIR PORT LINE...
	local file=$1 dir=$2 port=$3
	shift 3
	mkdir -p "$dir"
	printf '%s\n' "tickTime=2000" "dataDir=$dir" "secureClientPort=$port" "secureClientPortAddress=127.0.0.1" \
		"maxClientCnxns=0" "admin.enableServer=false" "4lw.commands.whitelist=*" \
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory" "$@" >"$file"
}
tls_cfg "$W/keeper.cfg" "$W/keeper-data" "$kport" "ssl.keyStore.location=$pki/server.pem" "ssl.trustStore.location=$pki/ca.pem"
tls_cfg "$W/zk.cfg" "$W/zk-data" "$zport" "ssl.keyStore.location=$pki/server.p12" "ssl.keyStore.password=$PASS" \
	"ssl.trustStore.location=$pki/trust.p12" "ssl.trustStore.password=$PASS"
printf '%s\n' "zookeeper.client.secure=true" "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty" \
	"zookeeper.ssl.keyStore.location=$pki/client.pem" "zookeeper.ssl.trustStore.location=$pki/ca.pem" >"$W/client.conf"

start_keeper keeper "$W/keeper.cfg"
kpid=$STARTED_PID
start_zk zookeeper "$W/zk.cfg"
zpid=$STARTED_PID
for who in keeper zookeeper; do
	port=$kport pid=$kpid
	[ "$who" = zookeeper ] && port=$zport pid=$zpid
	"$KEEPER" bench zk --client-conf "$W/client.conf" --servers "127.0.0.1:$port" --op ready --duration 600s \
		--cpu-pid "$pid" | sed "s/^{/{\"server\":\"$who\",/"
done
grep -q "serving tls clients" "$W/keeper.log" || {
	echo "bench: keeper does not serve TLS clients" >&2
	exit 1
}

# A warm-up pass on each server, not recorded: ZooKeeper's first seconds
# under load carry the JVM's compilation, which is not its steady rate.
for who in keeper zookeeper; do
	port=$kport
	[ "$who" = zookeeper ] && port=$zport
	for op in get set; do
		"$KEEPER" bench zk --client-conf "$W/client.conf" --servers "127.0.0.1:$port" --op "$op" \
			--clients 16 --inflight 16 --size 100 --duration "${WARMUP:-15s}" >/dev/null
	done
done

for _ in $(seq "$PAIRS"); do
	for op in get set; do
		for shape in "16 16" "1 1"; do
			read -r clients inflight <<<"$shape"
			for who in keeper zookeeper; do
				port=$kport pid=$kpid
				[ "$who" = zookeeper ] && port=$zport pid=$zpid
				"$KEEPER" bench zk --client-conf "$W/client.conf" --servers "127.0.0.1:$port" --cpu-pid "$pid" --op "$op" \
					--clients "$clients" --inflight "$inflight" --size 100 --warmup 2s --duration "$DUR" |
					sed "s/^{/{\"server\":\"$who\",/" | tee -a "$W/results"
			done
		done
	done
done
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$W/results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def med(who, op, c, i, key):
    vals = [r[key] for r in rows if r["server"] == who and r["op"] == op and r["clients"] == c
            and r["inflight"] == i and r.get(key) is not None]
    return statistics.median(vals) if vals else float("nan")
print(f"{'op':>4s}{'clients x inflight':>19s}{'keeper ops/s':>14s}{'zk ops/s':>10s}{'keeper/zk':>10s}"
      f"{'keeper p50 us':>15s}{'zk p50 us':>11s}{'cpu us/op keeper/zk':>21s}")
for op in ("get", "set"):
    for c, i in ((16, 16), (1, 1)):
        k, z = med("keeper", op, c, i, "ops_per_sec"), med("zookeeper", op, c, i, "ops_per_sec")
        print(f"{op:>4s}{f'{c} x {i}':>19s}{k:14.0f}{z:10.0f}{k/z:10.2f}"
              f"{med('keeper', op, c, i, 'p50_us'):15.0f}{med('zookeeper', op, c, i, 'p50_us'):11.0f}"
              f"{med('keeper', op, c, i, 'server_cpu_us_per_op'):12.0f}/{med('zookeeper', op, c, i, 'server_cpu_us_per_op'):.0f}")
PY
