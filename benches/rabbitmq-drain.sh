#!/usr/bin/env bash
# The drain of issue 14 side by side with RabbitMQ, in one run: N persistent messages of SIZE
# bytes are put (publisher confirms, durable queue), then drained by one consumer with manual
# acks and prefetch 100 (RabbitMQ PerfTest from Maven Central), interleaved with `sealmq
# bench drain` rounds on the same machine; prints each round and the medians.
#
#   benches/rabbitmq-drain.sh [N=100000] [SIZE=1024] [ROUNDS=3]
#
# Needs rabbitmq-server (Debian package), Java and Maven, and `cargo build --release -p sealmq`.
# RabbitMQ runs as this user from a temporary directory, on loopback only. Not part of CI.
set -euo pipefail
N=${1:-100000}
SIZE=${2:-1024}
ROUNDS=${3:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
sealmq=$root/target/release/sealmq
work=$(mktemp -d)
cleanup() {
    HOME=$work /usr/lib/rabbitmq/bin/rabbitmqctl -n "$RABBITMQ_NODENAME" stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# PerfTest and its dependencies, from Maven Central.
cat > "$work/pom.xml" <<'POM'
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>sealmq.bench</groupId><artifactId>perftest</artifactId><version>1</version>
<dependencies><dependency><groupId>com.rabbitmq</groupId><artifactId>perf-test</artifactId>
<version>2.22.1</version></dependency></dependencies></project>
POM
(cd "$work" && mvn -q dependency:build-classpath -Dmdep.outputFile=cp.txt >/dev/null)
cp=$(cat "$work/cp.txt")

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
dist=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export HOME=$work
export RABBITMQ_NODENAME=sealmqbench@localhost
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
export RABBITMQ_NODE_PORT=$port
export RABBITMQ_DIST_PORT=$dist
export ERL_EPMD_ADDRESS=127.0.0.1
export RABBITMQ_MNESIA_BASE=$work/mnesia
export RABBITMQ_LOG_BASE=$work/log
export RABBITMQ_PID_FILE=$work/rabbit.pid
export RABBITMQ_ENABLED_PLUGINS_FILE=$work/enabled_plugins
echo '[].' > "$work/enabled_plugins"
/usr/lib/rabbitmq/bin/rabbitmq-server -detached
/usr/lib/rabbitmq/bin/rabbitmqctl wait "$work/rabbit.pid" >/dev/null
uri="amqp://guest:guest@127.0.0.1:$port"

rabbit_round() {
    local q=drain.$1
    java -cp "$cp" com.rabbitmq.perf.PerfTest -h "$uri" -u "$q" -ad false -f persistent \
        -x 1 -y 0 -C "$N" -s "$SIZE" -c 1000 >/dev/null 2>&1
    # PerfTest's own average receiving rate (JVM start-up not counted).
    java -cp "$cp" com.rabbitmq.perf.PerfTest -h "$uri" -u "$q" -p -ad false \
        -x 0 -y 1 -D "$N" -q 100 2>&1 | sed -n 's/.*receiving rate avg: \([0-9]*\).*/\1/p' | tail -1
}

declare -a rabbit sealmq_async sealmq_get
for r in $(seq 1 "$ROUNDS"); do
    rr=$(rabbit_round "$r")
    out=$("$sealmq" bench drain --messages "$N" --size "$SIZE" --persistent --json)
    get=$(echo "$out" | python3 -c 'import sys,json
for l in sys.stdin:
    o=json.loads(l)
    if o.get("way")=="get": print(round(o["rate_per_s"]))')
    asy=$(echo "$out" | python3 -c 'import sys,json
for l in sys.stdin:
    o=json.loads(l)
    if o.get("way")=="async consume --syncpoint 100": print(round(o["rate_per_s"]))')
    echo "round $r: RabbitMQ (manual acks, prefetch 100) $rr msg/s; sealmq async consume under syncpoint $asy msg/s; sealmq plain get $get msg/s"
    rabbit+=("$rr"); sealmq_async+=("$asy"); sealmq_get+=("$get")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mr=$(median "${rabbit[@]}"); ma=$(median "${sealmq_async[@]}"); mg=$(median "${sealmq_get[@]}")
echo "medians: RabbitMQ $mr msg/s, sealmq async consume (syncpoint 100) $ma msg/s ($(python3 -c "print(round($ma/$mr,2))")x), sealmq plain get $mg msg/s"
