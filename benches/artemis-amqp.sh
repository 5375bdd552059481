#!/usr/bin/env bash
# sealmq's AMQP channel side by side with Apache ActiveMQ Artemis's AMQP 1.0 acceptor, in one
# run: `sealmq bench amqp --peer` measures put, get and round trips with the same AMQP client
# (fe2o3-amqp) on sealmq (and sealmq's native protocol) and on an embedded Artemis broker
# (persistence on, journal in a temporary directory, loopback only), interleaved per round.
#
#   benches/artemis-amqp.sh [N=20000] [SIZE=1024] [ROUNDS=3] [--persistent]
#
# Needs Java and Maven (Artemis from Maven Central) and `cargo build --release -p sealmq`.
# Not part of CI.
set -euo pipefail
N=${1:-20000}
SIZE=${2:-1024}
ROUNDS=${3:-3}
EXTRA=${4:-}
root=$(cd "$(dirname "$0")/.." && pwd)
sealmq=$root/target/release/sealmq
work=$(mktemp -d)
broker=""
cleanup() {
    if [ -n "$broker" ]; then
        exec 3>&- || true
        wait "$broker" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

mvn -q -B -f "$root/benches/artemis/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$work/lib"
javac -cp "$work/lib/*" -d "$work/classes" "$root/benches/artemis/EmbeddedBroker.java"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The broker runs until its standard input (fd 3 here) closes.
mkfifo "$work/stdin"
java -cp "$work/classes:$work/lib/*" EmbeddedBroker "$port" "$work/data" <"$work/stdin" >"$work/broker.out" 2>&1 &
broker=$!
exec 3>"$work/stdin"
for _ in $(seq 1 120); do
    grep -q ready "$work/broker.out" 2>/dev/null && break
    sleep 0.5
done
grep -q ready "$work/broker.out" || { cat "$work/broker.out"; exit 1; }
echo "Artemis 2.31.2 (embedded, AMQP on 127.0.0.1:$port)"
SEALMQ_HOME="$work/home" "$sealmq" bench amqp --messages "$N" --size "$SIZE" --rounds "$ROUNDS" \
    --peer "127.0.0.1:$port" $EXTRA
