"""An AMQP 1.0 application on Apache Qpid Proton (python-qpid-proton), driven by
crates/sealmq-cli/tests/amqp.rs against a sealmq AMQP channel.

    proton_client.py URL COMMAND [ARGS]

send QUEUE N         sends N durable messages (ids, correlation ids, reply-to, application
                     properties colour = red/blue alternating, n = i, half = i / 2.0) to QUEUE
receive QUEUE N      receives N messages, accepts them; prints one JSON line each
select QUEUE N SEL   receives N messages through a JMS selector; prints their bodies
badselect QUEUE SEL  tries a receiver with a selector that does not parse; prints the error
txsend QUEUE N commit|rollback     sends N messages in a transaction, then discharges it
txreceive QUEUE N commit|rollback  accepts N messages in a transaction, then discharges it
txmove QUEUE OUT commit|rollback   in one transaction accepts a message from QUEUE and sends its
                                   body to OUT, then discharges it
samename QUEUE                     sends and receives one message on links of one name
browse QUEUE N       receives N copies (distribution-mode copy): nothing is taken
dynamic -            a dynamic receiver (temporary queue), a message sent to it and got back
reject QUEUE         receives one message and rejects it
release QUEUE        receives one message and releases it
forbidden QUEUE      tries to send to QUEUE; prints the error condition
dynforbidden -       tries a dynamic target (a temporary queue); prints the error condition
topic ADDRESS        tries a sender and a receiver with the capability 'topic' (a JMS
                     Topic); prints both errors
temptopic -          a temporary topic (JMS TemporaryTopic): made, subscribed to, published
                     to from another connection, refused to it to subscribe, then deleted
burst QUEUE N        sends N durable messages as fast as credit allows (many unsettled at
                     once), waits for every outcome; prints how many were accepted
hold QUEUE           sends one message to QUEUE, opens a receiver on it with no credit,
                     prints {"ready": true} and keeps the connection until stdin closes

The SASL mechanism is ANONYMOUS unless SEALMQ_AMQP_MECHS names others (EXTERNAL, PLAIN: the
user and password then come from the URL). An amqps:// URL uses TLS: SEALMQ_TLS_CA is the
certificate the queue manager's must chain to; SEALMQ_TLS_CERT and SEALMQ_TLS_KEY, when set,
are the client's certificate and key.
"""
import json
import os
import sys

from proton import Message
from proton.reactor import LinkOption
from proton.utils import BlockingConnection


class DynamicTarget(LinkOption):
    """A sending link whose target the peer makes (dynamic)."""

    def apply(self, link):
        link.target.dynamic = True


class Capability(LinkOption):
    """The terminus (target of a sender, source of a receiver) has capability `cap`, as Qpid
    JMS marks a JMS Topic ('topic') or TemporaryTopic ('temporary-topic'); `dynamic`: the peer
    makes it."""

    def __init__(self, cap, dynamic=False):
        self.cap, self.dynamic = cap, dynamic

    def apply(self, link):
        from proton import Data
        terminus = link.target if link.is_sender else link.source
        if self.dynamic:
            terminus.dynamic = True
        terminus.capabilities.put_array(False, Data.SYMBOL)
        terminus.capabilities.enter()
        terminus.capabilities.put_symbol(self.cap)
        terminus.capabilities.exit()


def TopicCapability():  # noqa: N802 - an option as the others are made
    return Capability("topic")


def mechs():
    return os.environ.get("SEALMQ_AMQP_MECHS", "ANONYMOUS")


def ssl_domain(url):
    """The client's TLS settings for an amqps:// URL (None otherwise)."""
    if not url.startswith("amqps://"):
        return None
    from proton import SSLDomain
    d = SSLDomain(SSLDomain.MODE_CLIENT)
    d.set_trusted_ca_db(os.environ["SEALMQ_TLS_CA"])
    # Queue managers have no DNS names: the certificate must chain to the trusted one.
    d.set_peer_authentication(SSLDomain.VERIFY_PEER)
    if os.environ.get("SEALMQ_TLS_CERT"):
        d.set_credentials(os.environ["SEALMQ_TLS_CERT"], os.environ["SEALMQ_TLS_KEY"], None)
    return d


def connect(url):
    # The client is willing to send a password without TLS: whether it may is the channel's
    # decision, which the tests check. SEALMQ_AMQP_CONTAINER names the container (its id goes
    # in the Open).
    container = None
    if os.environ.get("SEALMQ_AMQP_CONTAINER"):
        from proton.reactor import Container
        container = Container()
        container.container_id = os.environ["SEALMQ_AMQP_CONTAINER"]
    return BlockingConnection(url, allowed_mechs=mechs(), ssl_domain=ssl_domain(url), timeout=20,
                              allow_insecure_mechs=True, container=container)


def refusal(attempt):
    """Runs attempt(); the error it raised as "Type: text", or None when it got through (the
    refusal is the answer)."""
    try:
        attempt()
        return None
    except Exception as e:  # noqa: BLE001 - any refusal is the answer
        return "%s: %s" % (type(e).__name__, e)


def send_one(url, queue, options=None):
    """Connects, sends one message on a new link, closes."""
    conn = connect(url)
    conn.create_sender(queue, options=options).send(Message(body="x"))
    conn.close()


def bodies(rcv, n):
    """The bodies of the next n messages, each accepted."""
    got = []
    for _ in range(n):
        got.append(rcv.receive(timeout=20).body)
        rcv.accept()
    return got


def burst(url, queue, n):
    """N durable messages with as many unsettled as the link's credit allows."""
    from proton.handlers import MessagingHandler
    from proton.reactor import Container

    class Burst(MessagingHandler):
        def __init__(self):
            super().__init__()
            self.sent = self.accepted = self.other = 0

        def on_start(self, event):
            conn = event.container.connect(url, allowed_mechs=mechs(), ssl_domain=ssl_domain(url))
            event.container.create_sender(conn, queue)

        def on_sendable(self, event):
            while event.sender.credit and self.sent < n:
                event.sender.send(Message(body="burst %d" % self.sent, durable=True))
                self.sent += 1

        def on_accepted(self, event):
            self.accepted += 1
            self.check(event)

        def on_rejected(self, event):
            self.other += 1
            self.check(event)

        def check(self, event):
            if self.accepted + self.other == n:
                event.connection.close()

    b = Burst()
    Container(b).run()
    print(json.dumps({"accepted": b.accepted, "other": b.other}))


def transaction(url, cmd, queue, n, outcome, out=None):
    """A local transaction (the coordinator link) on the reactor API, which proton's blocking
    API does not offer: sends or accepts n messages in it (txmove: accepts one and sends its
    body to `out`), then commits or rolls back."""
    from proton.handlers import MessagingHandler, TransactionHandler
    from proton.reactor import Container

    class Tx(MessagingHandler, TransactionHandler):
        def __init__(self):
            super().__init__(prefetch=0, auto_accept=False)
            self.txn = None
            self.done = 0
            self.bodies = []

        def on_start(self, event):
            self.conn = event.container.connect(
                url, allowed_mechs=mechs(), ssl_domain=ssl_domain(url))
            if cmd == "txsend":
                self.link = event.container.create_sender(self.conn, queue)
            else:
                self.link = event.container.create_receiver(self.conn, queue)
            if cmd == "txmove":
                self.out = event.container.create_sender(self.conn, out)
                self.moving = None
            event.container.declare_transaction(self.conn, handler=self)

        def on_transaction_declared(self, event):
            self.txn = event.transaction
            if cmd == "txsend":
                self.send_all()
            else:
                self.link.flow(n)

        def on_sendable(self, event):
            if cmd == "txsend":
                self.send_all()
            if cmd == "txmove":
                self.move()

        def move(self):
            # The body goes out in the transaction once there is credit to send it.
            if self.moving is None or self.out.credit < 1:
                return
            self.txn.send(self.out, Message(body=self.moving, durable=True))
            self.moving = None
            self.discharge()

        def send_all(self):
            # Only with the transaction declared and credit on the link: a transfer proton
            # held for want of credit would otherwise leave after the discharge, in a
            # transaction already ended.
            if self.txn is None or self.done or self.link.credit < n:
                return
            self.done = n
            for i in range(n):
                self.txn.send(self.link, Message(body="tx %d" % i, durable=True))
            self.discharge()

        def on_message(self, event):
            self.bodies.append(event.message.body)
            self.txn.accept(event.delivery)
            if cmd == "txmove":
                self.moving = event.message.body
                self.move()
            elif len(self.bodies) == n:
                self.discharge()

        def discharge(self):
            if outcome == "commit":
                self.txn.commit()
            else:
                self.txn.abort()

        def on_transaction_committed(self, event):
            self.finish("committed")

        def on_transaction_aborted(self, event):
            self.finish("rolled back")

        def on_transaction_commit_failed(self, event):
            self.finish("commit failed")

        def on_transaction_declare_failed(self, event):
            self.finish("declare failed")

        def finish(self, how):
            print(json.dumps({"transaction": how, "bodies": self.bodies}))
            self.conn.close()

    Container(Tx()).run()


def main():
    url, cmd, queue = sys.argv[1], sys.argv[2], sys.argv[3]
    if cmd == "burst":
        burst(url, queue, int(sys.argv[4]))
        return
    if cmd in ("txsend", "txreceive"):
        transaction(url, cmd, queue, int(sys.argv[4]), sys.argv[5])
        return
    if cmd == "txmove":
        transaction(url, cmd, queue, 1, sys.argv[5], out=sys.argv[4])
        return
    if cmd == "dynforbidden":
        # A dynamic target (as Qpid JMS makes temporary queues): refused without authority.
        print(json.dumps({"error": refusal(lambda: send_one(url, None, DynamicTarget()))}))
        return
    if cmd == "forbidden":
        # Refused at the connection (CHLAUTH) or at the attach (authority): the error says why.
        print(json.dumps({"error": refusal(lambda: send_one(url, queue))}))
        return
    if cmd == "topic":
        def receive_topic():
            conn = connect(url)
            conn.create_receiver(queue, options=TopicCapability()).receive(timeout=5)
            conn.close()
        print(json.dumps({
            "sender": refusal(lambda: send_one(url, queue, TopicCapability())),
            "receiver": refusal(receive_topic),
        }))
        return
    conn = connect(url)
    try:
        if cmd == "send":
            snd = conn.create_sender(queue)
            for i in range(int(sys.argv[4])):
                m = Message(
                    body="hello %d" % i,
                    durable=True,
                    priority=3,
                    id="amqp-%d" % i,
                    correlation_id="corr-%d" % i,
                    reply_to="REPLY.Q",
                    properties={
                        "colour": "red" if i % 2 == 0 else "blue",
                        "n": i,
                        "half": i / 2.0,
                    },
                )
                snd.send(m)  # returns once the queue manager accepted it
            print(json.dumps({"sent": int(sys.argv[4])}))
        elif cmd == "receive":
            rcv = conn.create_receiver(queue, credit=10)
            for _ in range(int(sys.argv[4])):
                m = rcv.receive(timeout=20)
                rcv.accept()
                print(json.dumps({
                    "body": m.body if isinstance(m.body, str) else bytes(m.body).decode("latin-1"),
                    "id": str(m.id) if m.id is not None else None,
                    "correlation_id": str(m.correlation_id) if m.correlation_id is not None else None,
                    "durable": bool(m.durable),
                    "delivery_count": m.delivery_count,
                    "reply_to": m.reply_to,
                    "properties": {k: (v if isinstance(v, (str, int, float, bool)) or v is None
                                       else repr(v)) for k, v in (m.properties or {}).items()},
                }))
        elif cmd == "browse":
            from proton.reactor import Copy
            rcv = conn.create_receiver(queue, credit=10, options=Copy())
            print(json.dumps({"browsed": bodies(rcv, int(sys.argv[4]))}))
        elif cmd == "select":
            from proton.reactor import Selector
            rcv = conn.create_receiver(queue, credit=10, options=Selector(sys.argv[5]))
            print(json.dumps({"selected": bodies(rcv, int(sys.argv[4]))}))
        elif cmd == "badselect":
            from proton.reactor import Selector
            attempt = lambda: conn.create_receiver(queue, options=Selector(sys.argv[4])).receive(timeout=5)  # noqa: E731
            print(json.dumps({"error": refusal(attempt)}))
        elif cmd == "dynamic":
            # A temporary queue (JMS TemporaryQueue, reply-to): made at attach, gone after.
            rcv = conn.create_receiver(None, dynamic=True, credit=10)
            address = rcv.link.remote_source.address
            snd = conn.create_sender(address)
            snd.send(Message(body="reply", durable=False))
            m = rcv.receive(timeout=20)
            rcv.accept()
            print(json.dumps({"address": address, "body": m.body}))
        elif cmd == "temptopic":
            # A temporary topic as Qpid JMS makes one (a sender with a dynamic target of
            # capability 'temporary-topic'); this connection subscribes; another may publish
            # but not subscribe, nor make one with a dynamic source; once the sender that made
            # it is closed, the topic is gone.
            temp = "temporary-topic"
            anchor = conn.create_sender(None, options=Capability(temp, dynamic=True))
            address = anchor.link.remote_target.address
            rcv = conn.create_receiver(address, credit=10, options=Capability(temp))
            other = connect(url)
            stolen = refusal(lambda: other.create_receiver(
                address, credit=10, options=Capability(temp)).receive(timeout=5))
            reply = other.create_sender(address, options=Capability(temp))
            reply.send(Message(body="reply"))
            reply.close()
            m = rcv.receive(timeout=20)
            rcv.accept()
            dynamic = refusal(lambda: other.create_receiver(
                None, credit=10, options=Capability(temp, dynamic=True)).receive(timeout=5))
            anchor.close()
            late = refusal(lambda: other.create_sender(address, options=Capability(temp)).send(
                Message(body="late")))
            other.close()
            print(json.dumps({"address": address, "body": m.body, "other_receiver": stolen,
                              "dynamic_source": dynamic, "late": late}))
        elif cmd == "samename":
            # A sending and a receiving link of one session with one name (proton's own naming
            # for both directions of one address on one connection), both used.
            snd = conn.create_sender(queue, name="both")
            rcv = conn.create_receiver(queue, name="both", credit=1)
            snd.send(Message(body="same name", durable=True))
            m = rcv.receive(timeout=20)
            rcv.accept()
            print(json.dumps({"body": m.body}))
        elif cmd == "hold":
            snd = conn.create_sender(queue)
            snd.send(Message(body="held", durable=False))
            # A name of its own: proton names both links <container>-<address>, which
            # fe2o3-amqp (the channel's AMQP engine) takes as one link (docs/amqp.md).
            conn.create_receiver(queue, credit=0, name="hold-receiver")
            print(json.dumps({"ready": True}), flush=True)
            sys.stdin.read()
        elif cmd in ("reject", "release"):
            rcv = conn.create_receiver(queue, credit=1)
            m = rcv.receive(timeout=20)
            if cmd == "reject":
                rcv.reject()
            else:
                rcv.release()
            print(json.dumps({cmd: m.body}))
    finally:
        conn.close()


if __name__ == "__main__":
    main()
