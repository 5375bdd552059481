"""An AMQP 1.0 application on Apache Qpid Proton (python-qpid-proton), driven by
crates/sealmq-cli/tests/amqp.rs against a sealmq AMQP channel.

    proton_client.py URL COMMAND [ARGS]

send QUEUE N         sends N durable messages (ids, correlation ids, reply-to) to QUEUE
receive QUEUE N      receives N messages, accepts them; prints one JSON line each
browse QUEUE N       receives N copies (distribution-mode copy): nothing is taken
dynamic -            a dynamic receiver (temporary queue), a message sent to it and got back
reject QUEUE         receives one message and rejects it
release QUEUE        receives one message and releases it
forbidden QUEUE      tries to send to QUEUE; prints the error condition
"""
import json
import sys

from proton import Message
from proton.utils import BlockingConnection


def main():
    url, cmd, queue = sys.argv[1], sys.argv[2], sys.argv[3]
    if cmd == "forbidden":
        # Refused at the connection (CHLAUTH) or at the attach (authority): the error says why.
        try:
            conn = BlockingConnection(url, allowed_mechs="ANONYMOUS", timeout=20)
            snd = conn.create_sender(queue)
            snd.send(Message(body="x"))
            conn.close()
            print(json.dumps({"error": None}))
        except Exception as e:  # noqa: BLE001 - any refusal is the answer
            print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
        return
    conn = BlockingConnection(url, allowed_mechs="ANONYMOUS", timeout=20)
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
                }))
        elif cmd == "browse":
            from proton.reactor import Copy
            rcv = conn.create_receiver(queue, credit=10, options=Copy())
            bodies = []
            for _ in range(int(sys.argv[4])):
                m = rcv.receive(timeout=20)
                rcv.accept()
                bodies.append(m.body)
            print(json.dumps({"browsed": bodies}))
        elif cmd == "selector":
            from proton.reactor import Selector
            try:
                rcv = conn.create_receiver(queue, options=Selector("color = 'red'"))
                rcv.receive(timeout=5)
                print(json.dumps({"error": None}))
            except Exception as e:  # noqa: BLE001 - the refusal is the answer
                print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
        elif cmd == "dynamic":
            # A temporary queue (JMS TemporaryQueue, reply-to): made at attach, gone after.
            rcv = conn.create_receiver(None, dynamic=True, credit=10)
            address = rcv.link.remote_source.address
            snd = conn.create_sender(address)
            snd.send(Message(body="reply", durable=False))
            m = rcv.receive(timeout=20)
            rcv.accept()
            print(json.dumps({"address": address, "body": m.body}))
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
