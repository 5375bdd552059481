"""An AMQP 1.0 application on Apache Qpid Proton that follows a replicated queue manager's
failover (issue 26, crates/sealmq-cli/tests/ha/follow.rs) with Proton's own failover list and
reconnection (Container.connect(urls=..., reconnect=Backoff(...))).

    proton_failover.py URL,URL,... send QUEUE N
    proton_failover.py URL,URL,... receive QUEUE N

send     sends N durable messages with bodies "fo 0" .. "fo N-1"; a message whose outcome had
         not come when the connection dropped is sent again once reconnected (at least once);
         prints {"accepted": N, "resent": K, "reconnects": R}
receive  receives and accepts messages until it saw N distinct bodies (one seen again after a
         reconnection counts as redelivered); prints {"distinct": N, "redelivered": K,
         "reconnects": R}
"""
import json
import sys

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Backoff, Container


class Failover(MessagingHandler):
    def __init__(self, urls, cmd, queue, n):
        super().__init__(auto_accept=False)
        self.urls, self.cmd, self.queue, self.n = urls, cmd, queue, n
        self.next = 0
        self.pending = {}
        self.resend = []
        self.accepted = set()
        self.seen = set()
        self.resent = self.redelivered = self.reconnects = 0
        self.conn = None
        self.connected = False

    def on_connection_opened(self, event):
        self.connected = True

    def on_start(self, event):
        self.conn = event.container.connect(
            urls=self.urls, reconnect=Backoff(max_delay=0.5), allowed_mechs="ANONYMOUS")
        if self.cmd == "send":
            event.container.create_sender(self.conn, self.queue)
        else:
            event.container.create_receiver(self.conn, self.queue)

    def on_disconnected(self, event):
        # An address that did not answer is passed over; a connection that was made and is
        # lost is a reconnection.
        if self.connected:
            self.reconnects += 1
            sys.stderr.write("disconnected: accepted %d, seen %d, pending %d\n" % (
                len(self.accepted), len(self.seen), len(self.pending)))
            sys.stderr.flush()
        self.connected = False
        # Outcomes that did not come: those messages go again.
        self.resend.extend(self.pending.values())
        self.resent += len(self.pending)
        self.pending.clear()

    def on_sendable(self, event):
        while event.sender.credit and (self.resend or self.next < self.n):
            if self.resend:
                i = self.resend.pop(0)
            else:
                i, self.next = self.next, self.next + 1
            d = event.sender.send(Message(body="fo %d" % i, durable=True))
            self.pending[d] = i

    def on_accepted(self, event):
        i = self.pending.pop(event.delivery, None)
        if i is not None:
            self.accepted.add(i)
        if len(self.accepted) == self.n:
            print(json.dumps({"accepted": len(self.accepted), "resent": self.resent,
                              "reconnects": self.reconnects}))
            event.connection.close()

    def on_rejected(self, event):
        self.on_released(event)

    def on_released(self, event):
        i = self.pending.pop(event.delivery, None)
        if i is not None:
            self.resend.append(i)

    def on_message(self, event):
        body = event.message.body
        if not isinstance(body, str):
            body = bytes(body).decode()
        i = int(body.split()[1])
        if i in self.seen:
            self.redelivered += 1
        self.seen.add(i)
        self.accept(event.delivery)
        if len(self.seen) == self.n:
            print(json.dumps({"distinct": len(self.seen), "redelivered": self.redelivered,
                              "reconnects": self.reconnects}))
            event.receiver.close()
            event.connection.close()


def main():
    urls, cmd, queue, n = sys.argv[1].split(","), sys.argv[2], sys.argv[3], int(sys.argv[4])
    Container(Failover(urls, cmd, queue, n)).run()


if __name__ == "__main__":
    main()
