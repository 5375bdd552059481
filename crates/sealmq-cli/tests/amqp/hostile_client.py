"""A hostile AMQP 1.0 application on Apache Qpid Proton (python-qpid-proton), for
tests/amqp_hostile.rs: floods of refused attaches, links, temporary queues and sessions, and
timed password guesses. Prints one JSON line with what it saw.

usage: hostile_client.py URL COMMAND ARGS...
  dupattach QUEUE N     N sending links named alike on QUEUE in one session (each after the
                        first is refused by the queue manager after it opened the queue)
  links QUEUE N         N sending links on QUEUE in one connection, until one is refused
  temps N               N temporary queues (dynamic receiving links) in one connection
  sessions N            N sessions in one connection
  receivers QUEUE N S   N receiving links on QUEUE in one connection (credit 10 each), held S
                        seconds while they accept what arrives: how many messages they got
  login USER PASSWORD   one SASL PLAIN login: whether it got in, and how long the answer took
  stall QUEUE N CREDIT  N receiving links on QUEUE with CREDIT each, then reads nothing more
                        (prints {"attached": N}) until its standard input closes
  holdmany QUEUE N      one receiving link with credit N takes N messages, settling none, then
                        accepts them all (as a transacted or client-acknowledging consumer)
  deep QUEUE N KIND     one message whose amqp-value body nests N lists or described values
                        (KIND list or described): what became of it
  txpost QUEUE N SIZE   N messages of SIZE bytes posted to one transaction never discharged:
                        what ended its session or link
  partial QUEUE N SIZE  N whole messages of SIZE bytes on one link, then N links each with a
                        message of SIZE bytes begun and never finished: how many links were
                        refused, and why
"""
import json
import sys
import time

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container, DynamicNodeProperties
from proton.utils import BlockingConnection


def out(**kw):
    print(json.dumps(kw))
    sys.stdout.flush()


def refusal(attempt):
    try:
        attempt()
        return None
    except Exception as e:  # noqa: BLE001 - a refusal is the answer
        return "%s: %s" % (type(e).__name__, e)


class Flood(MessagingHandler):
    """Opens `n` links or sessions as fast as the connection takes them; counts how many were
    attached and how many refused, then closes."""

    def __init__(self, url, kind, n, queue=None, hold=8.0):
        super().__init__()
        self.url, self.kind, self.n, self.queue, self.hold = url, kind, n, queue, hold
        self.opened = self.refused = self.received = 0
        self.errors = []
        self.closed_by_peer = None

    def on_start(self, event):
        self.conn = event.container.connect(self.url, allowed_mechs="ANONYMOUS", reconnect=False)
        for i in range(self.n):
            if self.kind == "dupattach":
                event.container.create_sender(self.conn, self.queue, name="same-name")
            elif self.kind == "links":
                event.container.create_sender(self.conn, self.queue, name="link-%d" % i)
            elif self.kind == "temps":
                event.container.create_receiver(
                    self.conn, None, dynamic=True, name="temp-%d" % i,
                    options=DynamicNodeProperties({"x-opt-test": True}))
            elif self.kind == "sessions":
                s = self.conn.session()
                s.open()
            elif self.kind == "receivers":
                event.container.create_receiver(self.conn, self.queue, name="recv-%d" % i)
        self.timer = event.reactor.schedule(self.hold, self)

    def on_message(self, event):
        self.received += 1

    def on_timer_task(self, event):
        self.finish()

    def finish(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def on_link_opened(self, event):
        link = event.link
        if link.remote_source.address or link.remote_target.address or \
                link.remote_source.dynamic or link.remote_target.address is not None:
            self.opened += 1

    def on_link_error(self, event):
        self.refused += 1
        cond = event.link.remote_condition
        if cond is not None and len(self.errors) < 3:
            self.errors.append("%s: %s" % (cond.name, cond.description))

    def on_link_closed(self, event):
        pass

    def on_session_error(self, event):
        cond = event.session.remote_condition
        if cond is not None and len(self.errors) < 3:
            self.errors.append("%s: %s" % (cond.name, cond.description))

    def on_connection_error(self, event):
        cond = event.connection.remote_condition
        self.closed_by_peer = "%s: %s" % (cond.name, cond.description) if cond else "closed"
        self.finish()

    def on_transport_error(self, event):
        cond = event.transport.condition
        self.closed_by_peer = "%s: %s" % (cond.name, cond.description) if cond else "transport"
        self.conn = None


def deep(url, queue, n, kind):
    """Sends one message nesting `n` values deep, built without recursion (proton's Data)."""
    from proton import Data
    d = Data()
    d.put_described()
    d.enter()
    d.put_ulong(0x77)  # an amqp-value section
    for _ in range(n):
        if kind == "described":
            d.put_described()
            d.enter()
            d.put_ulong(1)
        else:
            d.put_list()
            d.enter()
    d.put_null()
    for _ in range(n + 1):
        d.exit()
    c = BlockingConnection(url, allowed_mechs="ANONYMOUS", timeout=30)
    link = c.create_sender(queue).link
    dlv = link.delivery(b"deep")
    link.send(d.encode())
    link.advance()
    try:
        c.wait(lambda: dlv.remote_state != 0 or link.state & link.REMOTE_CLOSED, timeout=30)
        return {"outcome": dlv.remote_state, "closed": bool(link.state & link.REMOTE_CLOSED)}
    except Exception as e:  # noqa: BLE001 - what became of it is the answer
        return {"error": "%s: %s" % (type(e).__name__, e)}


def partial(url, queue, n, size):
    """Whole messages first (each gives back what it held), then messages never finished."""
    import time
    c = BlockingConnection(url, allowed_mechs="ANONYMOUS", timeout=60)
    whole = c.create_sender(queue, name="whole")
    for _ in range(n):
        whole.send(Message(body=b"\x01" * size))
    links = []
    for i in range(n):
        # Not waiting for each attach: a refusal of an earlier link may come meanwhile.
        link = c.container.create_sender(c.conn, queue, name="part-%d" % i)
        link.delivery(b"t%d" % i)
        link.send(b"\x00" * size)
        links.append(link)

    def refused():
        return [lk for lk in links if lk.state & lk.REMOTE_CLOSED]
    # Until the refusals stop coming (8 s without a new one: a loaded machine running a debug
    # build can take seconds to refuse the first), 60 s at most.
    end, seen, quiet = time.monotonic() + 60, 0, time.monotonic()
    while time.monotonic() < end and time.monotonic() - quiet < 8:
        try:
            c.wait(lambda: False, timeout=0.5)
        except Exception:  # noqa: BLE001 - a timeout or a link's refusal: look again
            pass
        if len(refused()) != seen:
            seen, quiet = len(refused()), time.monotonic()
    conds = sorted({lk.remote_condition.name for lk in refused() if lk.remote_condition})
    return {"whole": n, "refused": len(refused()), "conditions": conds}


def txpost(url, queue, n, size):
    """Posts n messages to a transaction it never discharges; what ended it."""
    from proton.handlers import TransactionHandler

    class Post(MessagingHandler, TransactionHandler):
        def __init__(self):
            super().__init__(auto_accept=False, auto_settle=False)
            self.sent, self.txn, self.ended = 0, None, None

        def on_start(self, event):
            self.conn = event.container.connect(url, allowed_mechs="ANONYMOUS", reconnect=False)
            self.sender = event.container.create_sender(self.conn, queue)
            event.container.declare_transaction(self.conn, handler=self)
            self.timer = event.container.schedule(30, self)

        def on_transaction_declared(self, event):
            self.txn = event.transaction
            self.pump()

        def on_sendable(self, event):
            self.pump()

        def pump(self):
            while self.txn and self.sent < n and self.sender.credit > 0:
                self.txn.send(self.sender, Message(body=b"\x01" * size))
                self.sent += 1

        def on_session_error(self, event):
            self.end(event, event.session.remote_condition)

        def on_link_error(self, event):
            self.end(event, event.link.remote_condition)

        def end(self, event, cond):
            if self.ended is None:
                self.ended = "%s: %s" % (cond.name, cond.description) if cond else "ended"
            self.timer.cancel()
            event.connection.close()

        def on_timer_task(self, event):
            self.conn.close()

    h = Post()
    Container(h).run()
    return {"sent": h.sent, "ended": h.ended}


def main():
    url, cmd = sys.argv[1], sys.argv[2]
    if cmd == "login":
        user, password = sys.argv[3], sys.argv[4]
        t = time.monotonic()
        why = refusal(lambda: BlockingConnection(
            url, allowed_mechs="PLAIN", user=user, password=password, timeout=30,
            allow_insecure_mechs=True).close())
        out(login=why is None, seconds=time.monotonic() - t, error=why)
        return
    if cmd == "stall":
        queue, n, credit = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        c = BlockingConnection(url, allowed_mechs="ANONYMOUS", timeout=30)
        links = [c.create_receiver(queue, credit=credit, name="stall-%d" % i) for i in range(n)]
        out(attached=len(links))
        sys.stdin.read()  # the socket is not read meanwhile
        return
    if cmd == "holdmany":
        n = int(sys.argv[4])
        c = BlockingConnection(url, allowed_mechs="ANONYMOUS", timeout=60)
        rcv = c.create_receiver(sys.argv[3], credit=n)
        for _ in range(n):
            rcv.receive(timeout=60)
        for _ in range(n):  # then every one of them (proton settles one per call)
            rcv.accept()
        try:  # the dispositions go out before the connection closes
            c.wait(lambda: False, timeout=2)
        except Exception:  # noqa: BLE001 - the wait's timeout is its end
            pass
        c.close()
        out(received=n)
        return
    if cmd == "txpost":
        out(**txpost(url, sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
        return
    if cmd == "partial":
        out(**partial(url, sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
        return
    if cmd == "deep":
        out(**deep(url, sys.argv[3], int(sys.argv[4]), sys.argv[5]))
        return
    if cmd == "sessions":
        h = Flood(url, cmd, int(sys.argv[3]))
    elif cmd == "temps":
        h = Flood(url, cmd, int(sys.argv[3]))
    elif cmd == "receivers":
        h = Flood(url, cmd, int(sys.argv[4]), queue=sys.argv[3], hold=float(sys.argv[5]))
    else:
        h = Flood(url, cmd, int(sys.argv[4]), queue=sys.argv[3])
    Container(h).run()
    out(opened=h.opened, refused=h.refused, errors=h.errors, closed=h.closed_by_peer,
        received=h.received)


if __name__ == "__main__":
    main()
