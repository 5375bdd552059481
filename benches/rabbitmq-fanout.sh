#!/usr/bin/env bash
# Issue 28's fan-out side by side with RabbitMQ's fanout exchange, in one run: one publisher of
# non-persistent SIZE-byte messages and K subscribers (1, 10 and 100), each with a queue of its
# own — on RabbitMQ a server-named queue bound to a fanout exchange, consumed with automatic
# acknowledgement (PerfTest from Maven Central, SECS seconds per run, its own average receiving
# rate: JVM start-up not counted); on sealmq non-durable subscriptions to one topic (`sealmq bench
# fanout`, one get per message, until every subscriber has every publication). Runs are
# interleaved per round; the last lines are the medians and sealmq's ratio to RabbitMQ.
#
#   benches/rabbitmq-fanout.sh [ROUNDS=3] [SIZE=1024] [SECS=10] [SUBSCRIBERS="1 10 100"]
#
# Needs rabbitmq-server (Debian package), Java and Maven, and `cargo build --release -p sealmq`.
# RabbitMQ runs as this user from a temporary directory, on loopback only. Not part of CI.
set -euo pipefail
ROUNDS=${1:-3}
SIZE=${2:-1024}
SECS=${3:-10}
SUBSCRIBERS=${4:-1 10 100}
root=$(cd "$(dirname "$0")/.." && pwd)
sealmq=$root/target/release/sealmq
work=$(mktemp -d)
cleanup() {
    HOME=$work /usr/lib/rabbitmq/bin/rabbitmqctl -n "$RABBITMQ_NODENAME" stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

if [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
    apt-get install -y rabbitmq-server >/dev/null
fi
# The Debian package starts a system RabbitMQ of its own; this run uses its own node.
cat > "$work/pom.xml" <<'POM'
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>sealmq.bench</groupId><artifactId>perftest</artifactId><version>1</version>
<dependencies><dependency><groupId>com.rabbitmq</groupId><artifactId>perf-test</artifactId>
<version>2.22.1</version></dependency></dependencies></project>
POM
(cd "$work" && mvn -q dependency:build-classpath -Dmdep.outputFile=cp.txt >/dev/null)
cp=$(cat "$work/cp.txt")

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
export HOME=$work
export RABBITMQ_NODENAME=sealmqfanout@localhost
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
export RABBITMQ_NODE_PORT=$(free_port)
export RABBITMQ_DIST_PORT=$(free_port)
export ERL_EPMD_ADDRESS=127.0.0.1
export RABBITMQ_MNESIA_BASE=$work/mnesia
export RABBITMQ_LOG_BASE=$work/log
export RABBITMQ_PID_FILE=$work/rabbit.pid
export RABBITMQ_ENABLED_PLUGINS_FILE=$work/enabled_plugins
echo '[].' > "$work/enabled_plugins"
/usr/lib/rabbitmq/bin/rabbitmq-server -detached
/usr/lib/rabbitmq/bin/rabbitmqctl wait "$work/rabbit.pid" >/dev/null
uri="amqp://guest:guest@127.0.0.1:$RABBITMQ_NODE_PORT"
echo "RabbitMQ $(/usr/lib/rabbitmq/bin/rabbitmqctl version 2>/dev/null) on 127.0.0.1:$RABBITMQ_NODE_PORT"

rabbit_run() {
    # Without a queue name each PerfTest consumer declares a server-named queue of its own,
    # bound to the exchange: a fanout exchange gives every queue every message.
    java -cp "$cp" com.rabbitmq.perf.PerfTest -h "$uri" -e "fanout.$1.$2" -t fanout \
        -x 1 -y "$1" -a -s "$SIZE" -z "$SECS" 2>&1 |
        sed -n 's/.*receiving rate avg: \([0-9]*\).*/\1/p' | tail -1
}
sealmq_run() {
    SEALMQ_HOME="$work/sealmq" "$sealmq" bench fanout --subscribers "$1" --size "$SIZE" \
        --rounds 1 --json | python3 -c 'import sys,json
for l in sys.stdin:
    if l.startswith("{"): print(round(json.loads(l)["deliveries_per_s"]))'
}

declare -A R S
for r in $(seq 1 "$ROUNDS"); do
    for k in $SUBSCRIBERS; do
        rr=$(rabbit_run "$k" "$r")
        ss=$(sealmq_run "$k")
        echo "round $r, $k subscriber(s): RabbitMQ fanout $rr deliveries/s, sealmq $ss deliveries/s"
        R[$k]="${R[$k]:-} $rr"
        S[$k]="${S[$k]:-} $ss"
    done
done
median() { printf '%s\n' $@ | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for k in $SUBSCRIBERS; do
    mr=$(median ${R[$k]}); ms=$(median ${S[$k]})
    echo "median, $k subscriber(s): RabbitMQ $mr, sealmq $ms deliveries/s (sealmq/RabbitMQ $(python3 -c "print(round($ms/max($mr,1),2))")x)"
done
