#!/usr/bin/env bash
# Every row of issue 47's peer table in one run: sealmq beside ActiveMQ Artemis 2.40.0 (from
# Maven Central, AIO journal), RabbitMQ (the distribution's package, a three-node cluster of
# quorum queues) and NATS JetStream (nats-server and the nats CLI built with the Go toolchain,
# three servers, sync_interval: always), medians of interleaved rounds (benches/peers.py).
#
#   benches/peers.sh [--rounds 3] [--seconds 10] [--drain 100000] [--amqp 20000]
#                    [--rows put,drain,amqp,repl]
#
# The peers are installed once into target/peers/ (Artemis, PerfTest's class path, the NATS
# binaries); rabbitmq-server and libaio1 come from apt-get when they are missing (as root).
# Every server listens on 127.0.0.1 only, in a temporary directory removed at the end.
# Needs Java, Maven, Go and Python 3. Not part of CI: a full run takes 15-25 minutes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
peers=$root/target/peers
mkdir -p "$peers/bin"

missing=()
[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || missing+=(rabbitmq-server)
ldconfig -p | grep -q 'libaio\.so\.1' || missing+=(libaio1)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "peers.sh: install ${missing[*]} (apt-get, as root) first" >&2
        exit 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi

artemis=$peers/apache-artemis-2.40.0
if [ ! -x "$artemis/bin/artemis" ]; then
    mvn -q -B dependency:copy -Dartifact=org.apache.activemq:apache-artemis:2.40.0:tar.gz:bin \
        -DoutputDirectory="$peers"
    tar -xzf "$peers/apache-artemis-2.40.0-bin.tar.gz" -C "$peers"
fi

if [ ! -s "$peers/perftest.cp" ]; then
    cat > "$peers/pom.xml" <<'POM'
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>sealmq.bench</groupId><artifactId>perftest</artifactId><version>1</version>
<dependencies><dependency><groupId>com.rabbitmq</groupId><artifactId>perf-test</artifactId>
<version>2.22.1</version></dependency></dependencies></project>
POM
    mvn -q -B -f "$peers/pom.xml" dependency:build-classpath \
        -Dmdep.outputFile="$peers/perftest.cp" >/dev/null
fi

if [ ! -x "$peers/bin/nats-server" ] || [ ! -x "$peers/bin/nats" ]; then
    GOBIN=$peers/bin go install github.com/nats-io/nats-server/v2@v2.15.2
    GOBIN=$peers/bin go install github.com/nats-io/natscli/nats@v0.5.0
fi

cargo build -q --release -p sealmq --manifest-path "$root/Cargo.toml"
exec python3 "$root/benches/peers.py" --peers "$peers" --sealmq "$root/target/release/sealmq" "$@"
