#!/usr/bin/env python3
"""sealmq beside ActiveMQ Artemis, RabbitMQ and NATS JetStream, every row in one run.

Run by benches/peers.sh, which installs the peers first. Each peer is measured with its own
benchmark client (Artemis `artemis perf`, RabbitMQ PerfTest, `nats bench`), sealmq with
`sealmq bench`; the rounds interleave every row, and the table ends with the medians and the
ratios sealmq / peer (for a round trip, peer time / sealmq time). All servers listen on
127.0.0.1 only and live in a temporary directory.

Rows (1 KiB persistent messages, each put acknowledged once durable):
  put-1, put-16      persistent put by 1 and 16 producers: sealmq (`bench ha`'s single queue
                     manager, a put and a commit each) against Artemis (AIO journal, sends
                     completed by the broker's confirmation, one outstanding; and, for
                     reference, perf's default of sends completed unconfirmed), NATS JetStream
                     R1 (sync_interval: always, synchronous publish) and a RabbitMQ quorum queue
                     of one member (publisher confirms, one outstanding)
  drain              100k persistent messages drained by one consumer: sealmq asynchronous
                     consume (syncpoint 100), Artemis (perf consumer), RabbitMQ quorum queue
                     (manual acks, prefetch 100), NATS limits stream (durable consumer, explicit
                     acks)
  amqp               AMQP 1.0 put / get / round trip with the same client (fe2o3-amqp):
                     `sealmq bench amqp --peer` against Artemis's acceptor
  repl-1, repl-16    3-way replicated persistent put: sealmq's three instances (`bench ha`)
                     against NATS R3 and a RabbitMQ quorum queue of three members, every node
                     on this machine
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(cmd, env=None, timeout=900, check=True):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} ... failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p.stdout + p.stderr


def wait_for(what, pred, deadline_s=180):
    end = time.time() + deadline_s
    while time.time() < end:
        if pred():
            return
        time.sleep(0.5)
    raise RuntimeError(f"timed out waiting for {what}")


class Artemis:
    """One Artemis broker (AIO journal when libaio is there) created with `artemis create`."""

    def __init__(self, home, work):
        self.cli = os.path.join(home, "bin", "artemis")
        self.inst = os.path.join(work, "artemis")
        self.port, self.amqp = free_port(), free_port()
        run([self.cli, "create", self.inst, "--aio", "--host", "127.0.0.1",
                   "--default-port", str(self.port), "--no-web", "--allow-anonymous", "--silent",
                   # Auto-tuned (the default): the journal's buffer timeout from this disk.
                   "--user", "bench", "--password", "bench",
                   "--no-mqtt-acceptor", "--no-stomp-acceptor", "--no-hornetq-acceptor",
                   "--queues", "BENCH.AMQP.Q:anycast"])
        xml = os.path.join(self.inst, "etc", "broker.xml")
        with open(xml) as f:
            text = f.read()
        text = text.replace("tcp://127.0.0.1:5672?", f"tcp://127.0.0.1:{self.amqp}?")
        with open(xml, "w") as f:
            f.write(text)
        self.log = open(os.path.join(work, "artemis.out"), "w")
        self.proc = subprocess.Popen([os.path.join(self.inst, "bin", "artemis"), "run"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        wait_for("Artemis", lambda: "AMQ221007" in open(self.log.name).read())
        self.journal = "AIO" if "Using AIO Journal" in open(self.log.name).read() else "NIO"

    def describe(self):
        return f"Artemis 2.40.0 ({self.journal} journal)"

    def put(self, producers, secs, queue, confirmed=True):
        """Persistent sends, one outstanding per producer. `perf producer` sends with a
        completion listener; without a confirmation window the client completes a send as
        soon as it is written, before the broker's journal has it (seen with strace: 10,862
        sends over about 1,400 fdatasyncs at one producer). With one, a send completes on the
        broker's confirmation, after its journal's sync (one fdatasync per message)."""
        rep = self.log.name + ".json"
        url = f"tcp://127.0.0.1:{self.port}"
        if confirmed:
            url += "?confirmationWindowSize=1048576"
        run([self.cli, "perf", "producer", "--url", url, "--persistent",
             "--message-size", "1024", "--duration", str(secs), "--producers", str(producers),
             "--threads", str(min(producers, 2)), "--silent", "--json", rep, f"queue://{queue}"])
        return interval_rate(rep, "completed")

    def drain(self, n, queue):
        run([self.cli, "perf", "producer", "--url", f"tcp://127.0.0.1:{self.port}", "--persistent",
             "--message-size", "1024", "--message-count", str(n), "--max-pending", "100",
             "--silent", f"queue://{queue}"])
        rep = self.log.name + ".json"
        run([self.cli, "perf", "consumer", "--url", f"tcp://127.0.0.1:{self.port}",
             "--message-count", str(n), "--silent", "--json", rep, f"queue://{queue}"])
        return interval_rate(rep, "received")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def interval_rate(report, field):
    """Messages per second over `artemis perf`'s one-second samples, the first (connection and
    JIT warm-up) left out, the last partial one counted up to its time."""
    with open(report) as f:
        samples = json.load(f)
    iv = [s for s in samples if s.get("sampleType") == "interval" and not s.get("warmup")]
    if len(iv) < 2:
        raise RuntimeError(f"{report}: under two one-second samples, too short to give a rate")
    n = sum(s.get(field, 0) for s in iv[1:])
    return n / max((iv[-1]["time"] - iv[0]["time"]) / 1000.0, 1e-3)


class Rabbit:
    """A three-node RabbitMQ cluster on this machine; quorum queues of one or three members."""

    BIN = "/usr/lib/rabbitmq/bin"

    def __init__(self, work, perftest_cp):
        self.work = os.path.join(work, "rabbit")
        os.makedirs(self.work)
        self.cp = perftest_cp
        self.env = dict(os.environ, HOME=self.work, ERL_EPMD_ADDRESS="127.0.0.1",
                        ERL_EPMD_PORT=str(free_port()),
                        # Idle schedulers sleep instead of spinning: the other brokers and
                        # sealmq share the same two cores.
                        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="+sbwt none +sbwtdcpu none +sbwtdio none")
        with open(os.path.join(self.work, "plugins"), "w") as f:
            f.write("[].\n")
        self.nodes, self.ports = [], []
        for i in (1, 2, 3):
            d = os.path.join(self.work, f"n{i}")
            os.makedirs(d)
            with open(os.path.join(d, "rabbitmq.conf"), "w") as f:
                f.write("loopback_users = none\n")
            node, port = f"bench{i}@localhost", free_port()
            env = dict(self.env, RABBITMQ_NODENAME=node, RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
                       RABBITMQ_NODE_PORT=str(port), RABBITMQ_DIST_PORT=str(free_port()),
                       RABBITMQ_MNESIA_BASE=f"{d}/mnesia", RABBITMQ_LOG_BASE=f"{d}/log",
                       RABBITMQ_PID_FILE=f"{d}/pid", RABBITMQ_CONFIG_FILE=f"{d}/rabbitmq",
                       RABBITMQ_ENABLED_PLUGINS_FILE=f"{self.work}/plugins")
            run([f"{self.BIN}/rabbitmq-server", "-detached"], env=env)
            self.nodes.append(node)
            self.ports.append(port)
        for i, node in enumerate(self.nodes):
            self.ctl(node, "wait", os.path.join(self.work, f"n{i + 1}", "pid"))
        for node in self.nodes[1:]:
            self.ctl(node, "stop_app")
            self.ctl(node, "join_cluster", self.nodes[0])
            self.ctl(node, "start_app")
        self.uri = f"amqp://guest:guest@127.0.0.1:{self.ports[0]}"
        self.version = run([f"{self.BIN}/rabbitmqctl", "-n", self.nodes[0], "version"],
                           env=self.env).strip()

    def ctl(self, node, *args):
        return run([f"{self.BIN}/rabbitmqctl", "-n", node, *args], env=self.env)

    def perftest(self, *args):
        out = run(["java", "-cp", self.cp, "com.rabbitmq.perf.PerfTest", "-h", self.uri, *args])
        return out

    @staticmethod
    def rate(out, way):
        m = re.findall(rf"{way} rate avg: ([0-9]+) msg/s", out)
        if not m:
            raise RuntimeError(f"PerfTest printed no {way} rate:\n{out[-1500:]}")
        return float(m[-1])

    def put(self, producers, secs, queue, members):
        out = self.perftest("-u", queue, "-ad", "false", "-f", "persistent",
                            "-qa", f"x-queue-type=quorum,x-quorum-initial-group-size={members}",
                            "-x", str(producers), "-y", "0", "-s", "1024", "-c", "1",
                            "-z", str(secs))
        return self.rate(out, "sending")

    def drain(self, n, queue):
        qa = "x-queue-type=quorum,x-quorum-initial-group-size=1"
        self.perftest("-u", queue, "-ad", "false", "-f", "persistent", "-qa", qa, "-x", "1",
                      "-y", "0", "-C", str(n), "-s", "1024", "-c", "1000")
        out = self.perftest("-u", queue, "-p", "-ad", "false", "-qa", qa, "-x", "0", "-y", "1",
                            "-D", str(n), "-q", "100")
        return self.rate(out, "receiving")

    def stop(self):
        for node in reversed(self.nodes):
            run([f"{self.BIN}/rabbitmqctl", "-n", node, "stop"], env=self.env, check=False)


class Nats:
    """Three nats-server processes with JetStream (sync_interval: always) in one cluster."""

    def __init__(self, bindir, work):
        self.bin = bindir
        self.work = os.path.join(work, "nats")
        os.makedirs(self.work)
        client = [free_port() for _ in range(3)]
        route = [free_port() for _ in range(3)]
        routes = ", ".join(f'"nats-route://127.0.0.1:{p}"' for p in route)
        self.procs = []
        for i in range(3):
            conf = os.path.join(self.work, f"n{i}.conf")
            with open(conf, "w") as f:
                f.write(f"""server_name: n{i}
listen: 127.0.0.1:{client[i]}
jetstream {{ store_dir: "{self.work}/store{i}", sync_interval: always }}
cluster {{ name: bench, listen: 127.0.0.1:{route[i]}, routes: [{routes}] }}
""")
            log = open(os.path.join(self.work, f"n{i}.log"), "w")
            self.procs.append(subprocess.Popen([os.path.join(bindir, "nats-server"), "-c", conf],
                                               stdout=log, stderr=subprocess.STDOUT))
        self.url = f"nats://127.0.0.1:{client[0]}"
        # `stream ls` answers once the cluster has a JetStream meta leader.
        wait_for("a JetStream cluster",
                 lambda: subprocess.run(self.nats("stream", "ls"), capture_output=True,
                                        timeout=30).returncode == 0)
        self.version = run([os.path.join(bindir, "nats-server"), "--version"]).strip()
        self.estimate = {}

    def nats(self, *args):
        return [os.path.join(self.bin, "nats"), "-s", self.url, "--no-context", *args]

    @staticmethod
    def rate(out):
        """The aggregated figure when several clients ran, else the one client's."""
        lines = [l for l in out.splitlines() if re.search(r"stats: [0-9,.]+ msgs/sec", l)]
        agg = [l for l in lines if "aggregated" in l.lower()] or lines
        if not agg:
            raise RuntimeError(f"nats bench printed no stats:\n{out[-1500:]}")
        return float(re.search(r"stats: ([0-9,.]+) msgs/sec", agg[-1]).group(1).replace(",", ""))

    def put(self, producers, secs, stream, replicas):
        key = (producers, replicas)
        msgs = max(int(self.estimate.get(key, 500) * secs), 1000)
        out = run(self.nats("bench", "js", "pub", "sync", f"{stream}.s", "--stream", stream,
                            "--create", "--storage", "file", "--replicas", str(replicas),
                            "--purge", "--clients", str(producers), "--msgs", str(msgs),
                            "--size", "1KB", "--no-progress"))
        r = self.rate(out)
        self.estimate[key] = r
        return r

    def drain(self, n, stream):
        run(self.nats("bench", "js", "pub", "async", f"{stream}.s", "--stream", stream,
                      "--create", "--storage", "file", "--replicas", "1", "--purge",
                      "--msgs", str(n), "--size", "1KB", "--no-progress"))
        out = run(self.nats("bench", "js", "consume", "--stream", stream, "--msgs", str(n),
                            "--size", "1KB", "--no-progress"))
        return self.rate(out)

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


class Sealmq:
    def __init__(self, exe, work):
        self.exe = exe
        self.env = dict(os.environ, SEALMQ_HOME=os.path.join(work, "sealmq"))

    def bench(self, *args):
        out = run([self.exe, "bench", *args, "--json"], env=self.env, timeout=1800)
        return [json.loads(l) for l in out.splitlines() if l.startswith("{")]

    def ha(self, secs):
        """Single and replicated persistent put, 1 and 16 producers, in one `bench ha`."""
        objs = self.bench("ha", "--seconds", str(secs), "--kills", "0", "--messages", "1000")
        return objs[-1]

    def drain(self, n):
        for o in self.bench("drain", "--messages", str(n), "--persistent"):
            if o.get("way") == "async consume --syncpoint 100":
                return float(o["rate_per_s"])
        raise RuntimeError("bench drain printed no async consume row")

    def amqp(self, n, peer_port):
        objs = self.bench("amqp", "--messages", str(n), "--persistent",
                          "--peer", f"127.0.0.1:{peer_port}")
        return objs[0]


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peers", required=True, help="where benches/peers.sh installed the peers")
    ap.add_argument("--sealmq", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--drain", type=int, default=100_000)
    ap.add_argument("--amqp", type=int, default=20_000)
    ap.add_argument("--rows", default="put,drain,amqp,repl",
                    help="comma-separated: put (put-1, put-16), drain, amqp, repl (repl-1, repl-16)")
    a = ap.parse_args()
    rows = set(a.rows.split(","))
    work = tempfile.mkdtemp(prefix="sealmq-peers-")
    with open(os.path.join(a.peers, "perftest.cp")) as f:
        cp = f.read().strip()
    sealmq = Sealmq(a.sealmq, work)
    artemis = rabbit = nats = None
    figures = {}  # (row, who) -> [values]

    def add(row, who, value):
        figures.setdefault((row, who), []).append(value)
        print(f"  {row:<10} {who:<28} {value:>12,.1f}", flush=True)

    try:
        artemis = Artemis(os.path.join(a.peers, "apache-artemis-2.40.0"), work)
        rabbit = Rabbit(work, cp)
        nats = Nats(os.path.join(a.peers, "bin"), work)
        print(f"peers: {artemis.describe()}; RabbitMQ {rabbit.version} (3 nodes); "
              f"{nats.version} (3 servers); load average {loadavg()}", flush=True)
        S = a.seconds
        for r in range(1, a.rounds + 1):
            print(f"round {r}/{a.rounds} (load average {loadavg()})", flush=True)
            if rows & {"put", "repl"}:
                ha = sealmq.ha(S)
                for p in (1, 16):
                    if "put" in rows:
                        add(f"put-{p}", "sealmq", ha[f"put_{p}_single"])
                    if "repl" in rows:
                        add(f"repl-{p}", "sealmq", ha[f"put_{p}_replicated"])
            for p in (1, 16):
                if "put" in rows:
                    add(f"put-{p}", "Artemis", artemis.put(p, S, f"BENCH.PUT.{r}.{p}"))
                    add(f"put-{p}", "Artemis, unconfirmed sends",
                        artemis.put(p, S, f"BENCH.PUTU.{r}.{p}", confirmed=False))
                    add(f"put-{p}", "NATS R1", nats.put(p, S, f"PUT1_{p}", 1))
                    add(f"put-{p}", "RabbitMQ quorum", rabbit.put(p, S, f"put.{r}.{p}", 1))
                if "repl" in rows:
                    add(f"repl-{p}", "NATS R3", nats.put(p, S, f"PUT3_{p}", 3))
                    add(f"repl-{p}", "RabbitMQ quorum R3", rabbit.put(p, S, f"repl.{r}.{p}", 3))
            if "drain" in rows:
                add("drain", "sealmq", sealmq.drain(a.drain))
                add("drain", "Artemis", artemis.drain(a.drain, f"BENCH.DRAIN.{r}"))
                add("drain", "RabbitMQ quorum", rabbit.drain(a.drain, f"drain.{r}"))
                add("drain", "NATS limits stream", nats.drain(a.drain, f"DRAIN{r}"))
            if "amqp" in rows:
                o = sealmq.amqp(a.amqp, artemis.amqp)
                add("amqp-put", "sealmq", o["amqp_put_per_s"])
                add("amqp-put", "Artemis", o["peer_put_per_s"])
                add("amqp-get", "sealmq", o["amqp_get_per_s"])
                add("amqp-get", "Artemis", o["peer_get_per_s"])
                add("amqp-rt-us", "sealmq", o["amqp_round_trip_us"])
                add("amqp-rt-us", "Artemis", o["peer_round_trip_us"])
        print(f"\nmedians of {a.rounds} interleaved round(s), {S} s per put run, "
              f"load average at the end {loadavg()}:")
        print(f"| row | peer | sealmq | peer's figure | sealmq / peer |")
        print("| --- | --- | --- | --- | --- |")
        for row in sorted({k[0] for k in figures}):
            ours = statistics.median(figures.get((row, "sealmq"), [0.0]))
            for (rw, who), vals in sorted(figures.items()):
                if rw != row or who == "sealmq":
                    continue
                theirs = statistics.median(vals)
                # A round trip is a time: the ratio is the peer's time over sealmq's.
                ratio = theirs / ours if row.endswith("-us") else ours / max(theirs, 1e-9)
                print(f"| {row} | {who} | {ours:,.0f} | {theirs:,.0f} | {ratio:.2f} |")
    finally:
        for peer in (artemis, rabbit, nats):
            if peer is not None:
                peer.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
