// A JMS application on IBM's own MQ client (IBM MQ classes for JMS, client mode), driven by
// tests/mqclient.rs against a sealmq queue manager: each command prints one JSON line.
//
//   java IbmJms PORT CHANNEL USER PASSWORD COMMAND ARGS...
//     send QUEUE N            N persistent TextMessages "ibm I" with properties n=I, colour=red
//     receive QUEUE N WAITMS  up to N messages: text, properties and header fields of each
//     sessions QUEUE N        N sessions on one connection, each sends one and receives it
//     request QUEUE           a request with a temporary reply queue, then waits for the reply
//     types QUEUE             one BytesMessage, MapMessage, StreamMessage and TextMessage
//     alltypes QUEUE          a MapMessage and a StreamMessage holding every JMS type
//                             (receive prints their values as "Class:value")
//     sized QUEUE SIZE...     a TextMessage of SIZE characters (and a 200-character property)
//                             for each SIZE
//     transacted QUEUE        a transacted session: one send rolled back, one committed
//     listen QUEUE N IDLEMS MODE  a MessageListener until N messages came or none for IDLEMS:
//                             MODE auto (AUTO_ACKNOWLEDGE), transacted (commits each), or
//                             rollback (transacted; rolls back each message's first delivery)
//     publish TOPIC N         N TextMessages "pub I" published on topic string TOPIC
//     durable TOPIC NAME N WAITMS [unsubscribe]  the durable subscription NAME (client id
//                             "sealmq-it"): up to N messages, then closed (or unsubscribed)
//     shared TOPIC NAME N WAITMS  two consumers of the shared subscription NAME: N messages
//                             between them; then the first closes and the second gets 3 more
//     produce QUEUE BATCHES SIZE  a transacted producer with client reconnect: each batch of
//                             SIZE messages "b<B>-<I>" committed; prints each batch's outcome
//                             (committed, or rolledback: resent under a new batch id)
// System properties: sealmq.cipher (TLS), sealmq.reconnect SECONDS (client reconnect),
// sealmq.ccdt URL with sealmq.qmgr (a JSON CCDT instead of PORT and CHANNEL).
// USER "-" connects without a user and password. A JMSException prints {"error": reason}.
import com.ibm.mq.jms.MQConnectionFactory;
import com.ibm.msg.client.wmq.WMQConstants;
import javax.jms.*;
import org.json.JSONObject;

public class IbmJms {
    public static void main(String[] a) throws Exception {
        MQConnectionFactory cf = new MQConnectionFactory();
        if (a.length > 4 && a[4].equals("durable")) cf.setClientID("sealmq-it");
        cf.setTransportType(WMQConstants.WMQ_CM_CLIENT);
        if (System.getProperty("sealmq.ccdt") != null) {
            // A JSON CCDT names the channel and the addresses; PORT and CHANNEL are unused.
            cf.setCCDTURL(new java.net.URL(System.getProperty("sealmq.ccdt")));
            cf.setQueueManager(System.getProperty("sealmq.qmgr"));
        } else {
            cf.setHostName("127.0.0.1");
            cf.setPort(Integer.parseInt(a[0]));
            cf.setChannel(a[1]);
            if (System.getProperty("sealmq.qmgr") != null) cf.setQueueManager(System.getProperty("sealmq.qmgr"));
        }
        if (System.getProperty("sealmq.reconnect") != null) {
            cf.setClientReconnectOptions(WMQConstants.WMQ_CLIENT_RECONNECT);
            cf.setClientReconnectTimeout(Integer.parseInt(System.getProperty("sealmq.reconnect")));
        }
        // TLS: the CipherSpec (a JSSE suite name; the key and trust stores come from the
        // javax.net.ssl system properties).
        if (System.getProperty("sealmq.cipher") != null) cf.setSSLCipherSuite(System.getProperty("sealmq.cipher"));
        Connection c = null;
        try {
            c = a[2].equals("-") ? cf.createConnection() : cf.createConnection(a[2], a[3]);
            c.start();
            run(c, a[4], java.util.Arrays.copyOfRange(a, 5, a.length));
        } catch (JMSException e) {
            System.out.println(new JSONObject().put("error", reason(e)).put("class", e.getClass().getSimpleName()));
        } finally {
            if (c != null) c.close();
        }
    }

    static int reason(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof com.ibm.mq.MQException) return ((com.ibm.mq.MQException) t).getReason();
            if (t instanceof JMSException && ((JMSException) t).getLinkedException() != null
                && ((JMSException) t).getLinkedException() != t) {
                int r = reason(((JMSException) t).getLinkedException());
                if (r != -1) return r;
            }
        }
        return -1;
    }

    static void run(Connection c, String cmd, String[] a) throws Exception {
        boolean tx = cmd.equals("transacted") || cmd.equals("produce") || (cmd.equals("listen") && !a[3].equals("auto"));
        Session s = c.createSession(tx, tx ? Session.SESSION_TRANSACTED : Session.AUTO_ACKNOWLEDGE);
        if (cmd.equals("publish") || cmd.equals("durable") || cmd.equals("shared")) {
            topics(c, s, cmd, a);
            return;
        }
        Queue q = s.createQueue(a[0]);
        switch (cmd) {
            case "send": {
                int n = Integer.parseInt(a[1]);
                MessageProducer p = s.createProducer(q);
                for (int i = 0; i < n; i++) {
                    TextMessage m = s.createTextMessage("ibm " + i);
                    m.setIntProperty("n", i);
                    m.setStringProperty("colour", "red");
                    m.setJMSCorrelationID("corr-" + i);
                    p.send(m);
                }
                System.out.println(new JSONObject().put("sent", n));
                break;
            }
            case "receive": {
                MessageConsumer r = s.createConsumer(q);
                int n = Integer.parseInt(a[1]);
                long wait = Long.parseLong(a[2]);
                for (int i = 0; i < n; i++) {
                    Message m = r.receive(wait);
                    if (m == null) break;
                    JSONObject o = new JSONObject()
                        .put("type", m.getClass().getSimpleName())
                        .put("id", m.getJMSMessageID())
                        .put("correl", m.getJMSCorrelationID() == null ? JSONObject.NULL : m.getJMSCorrelationID())
                        .put("persistent", m.getJMSDeliveryMode() == DeliveryMode.PERSISTENT)
                        .put("priority", m.getJMSPriority());
                    if (m instanceof TextMessage) o.put("text", ((TextMessage) m).getText());
                    if (m instanceof MapMessage) {
                        JSONObject map = new JSONObject();
                        for (java.util.Enumeration<?> e = ((MapMessage) m).getMapNames(); e.hasMoreElements();) {
                            String k = (String) e.nextElement();
                            map.put(k, JmsTypes.typed(((MapMessage) m).getObject(k)));
                        }
                        o.put("map", map);
                    }
                    if (m instanceof StreamMessage) {
                        org.json.JSONArray items = new org.json.JSONArray();
                        try {
                            while (true) items.put(JmsTypes.typed(((StreamMessage) m).readObject()));
                        } catch (MessageEOFException end) { }
                        o.put("stream", items);
                    }
                    if (m instanceof BytesMessage) {
                        byte[] b = new byte[(int) ((BytesMessage) m).getBodyLength()];
                        ((BytesMessage) m).readBytes(b);
                        o.put("bytes", new String(b, "UTF-8"));
                    }
                    JSONObject props = new JSONObject();
                    for (java.util.Enumeration<?> e = m.getPropertyNames(); e.hasMoreElements();) {
                        String k = (String) e.nextElement();
                        if (!k.startsWith("JMS")) props.put(k, m.getObjectProperty(k));
                    }
                    o.put("props", props);
                    System.out.println(o);
                }
                System.out.println(new JSONObject().put("done", true));
                break;
            }
            case "sized": {
                MessageProducer p = s.createProducer(q);
                for (int k = 1; k < a.length; k++) {
                    TextMessage m = s.createTextMessage("x".repeat(Integer.parseInt(a[k])));
                    m.setStringProperty("pad", "p".repeat(200));
                    p.send(m);
                }
                System.out.println(new JSONObject().put("sent", a.length - 1));
                break;
            }
            case "types": {
                MessageProducer p = s.createProducer(q);
                BytesMessage b = s.createBytesMessage();
                b.writeBytes(new byte[] {'r', 'a', 'w', 0, 1});
                p.send(b);
                MapMessage m = s.createMapMessage();
                m.setInt("a", 1);
                m.setString("b", "two");
                m.setDouble("c", 3.5);
                p.send(m);
                StreamMessage st = s.createStreamMessage();
                st.writeInt(1);
                st.writeString("two");
                st.writeBoolean(true);
                p.send(st);
                p.send(s.createTextMessage("text"));
                System.out.println(new JSONObject().put("sent", 4));
                break;
            }
            case "alltypes": {
                MessageProducer p = s.createProducer(q);
                MapMessage m = s.createMapMessage();
                JmsTypes.fill(m);
                p.send(m);
                StreamMessage st = s.createStreamMessage();
                JmsTypes.fill(st);
                p.send(st);
                System.out.println(new JSONObject().put("sent", 2));
                break;
            }
            case "sessions": {
                int n = Integer.parseInt(a[1]);
                Session[] all = new Session[n];
                for (int i = 0; i < n; i++) all[i] = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                int got = 0;
                for (int i = 0; i < n; i++) {
                    all[i].createProducer(q).send(all[i].createTextMessage("session " + i));
                    if (all[i].createConsumer(q).receive(5000) != null) got++;
                }
                System.out.println(new JSONObject().put("sessions", n).put("got", got));
                break;
            }
            case "request": {
                TemporaryQueue reply = s.createTemporaryQueue();
                TextMessage m = s.createTextMessage("request");
                m.setJMSReplyTo(reply);
                s.createProducer(q).send(m);
                Message r = s.createConsumer(reply).receive(Long.parseLong(a[1]));
                System.out.println(new JSONObject().put("replyTo", reply.getQueueName())
                    .put("reply", r instanceof TextMessage ? ((TextMessage) r).getText() : JSONObject.NULL));
                break;
            }
            case "transacted": {
                MessageProducer p = s.createProducer(q);
                p.send(s.createTextMessage("rolled back"));
                s.rollback();
                p.send(s.createTextMessage("committed"));
                s.commit();
                System.out.println(new JSONObject().put("transacted", true));
                break;
            }
            case "produce": {
                produce(s, q, Integer.parseInt(a[1]), Integer.parseInt(a[2]));
                break;
            }
            case "listen": {
                listen(c, s, q, Integer.parseInt(a[1]), Long.parseLong(a[2]), a[3]);
                break;
            }
            default:
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    /** A MessageListener on a stopped connection, started once it is set (as JMS requires). */
    static void listen(Connection c, Session s, Queue q, int n, long idle, String mode) throws Exception {
        c.stop();
        final java.util.Set<String> distinct = java.util.concurrent.ConcurrentHashMap.newKeySet();
        final java.util.concurrent.atomic.AtomicInteger got = new java.util.concurrent.atomic.AtomicInteger();
        final java.util.concurrent.atomic.AtomicInteger redelivered = new java.util.concurrent.atomic.AtomicInteger();
        final java.util.concurrent.atomic.AtomicLong last = new java.util.concurrent.atomic.AtomicLong(System.currentTimeMillis());
        final java.util.concurrent.atomic.AtomicReference<String> failed = new java.util.concurrent.atomic.AtomicReference<>();
        MessageConsumer r = s.createConsumer(q);
        r.setMessageListener(m -> {
            try {
                got.incrementAndGet();
                if (m.getJMSRedelivered()) redelivered.incrementAndGet();
                if (mode.equals("rollback") && !m.getJMSRedelivered()) {
                    s.rollback();
                } else {
                    distinct.add(((TextMessage) m).getText());
                    if (!mode.equals("auto")) s.commit();
                }
                last.set(System.currentTimeMillis());
            } catch (JMSException e) {
                failed.set(e.toString());
            }
        });
        long began = System.currentTimeMillis();
        c.start();
        while (distinct.size() < n && System.currentTimeMillis() - last.get() < idle) Thread.sleep(20);
        long ms = System.currentTimeMillis() - began;
        r.close();
        System.out.println(new JSONObject().put("received", got.get()).put("distinct", distinct.size())
            .put("redelivered", redelivered.get()).put("ms", ms)
            .put("failed", failed.get() == null ? JSONObject.NULL : failed.get()));
    }

    /** Publish and subscribe on topic string a[0]. */
    static void topics(Connection c, Session s, String cmd, String[] a) throws Exception {
        Topic t = s.createTopic(a[0]);
        switch (cmd) {
            case "publish": {
                MessageProducer p = s.createProducer(t);
                int n = Integer.parseInt(a[1]);
                for (int i = 0; i < n; i++) p.send(s.createTextMessage("pub " + i));
                System.out.println(new JSONObject().put("published", n));
                break;
            }
            case "durable": {
                MessageConsumer r = s.createDurableSubscriber(t, a[1]);
                org.json.JSONArray got = new org.json.JSONArray();
                for (int i = 0; i < Integer.parseInt(a[2]); i++) {
                    Message m = r.receive(Long.parseLong(a[3]));
                    if (m == null) break;
                    got.put(((TextMessage) m).getText());
                }
                r.close();
                if (a.length > 4 && a[4].equals("unsubscribe")) s.unsubscribe(a[1]);
                System.out.println(new JSONObject().put("got", got));
                break;
            }
            case "shared": {
                Session s2 = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                MessageConsumer r1 = s.createSharedConsumer(t, a[1]);
                MessageConsumer r2 = s2.createSharedConsumer(t, a[1]);
                Session pub = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                int n = Integer.parseInt(a[2]);
                MessageProducer p = pub.createProducer(t);
                for (int i = 0; i < n; i++) p.send(pub.createTextMessage("shared " + i));
                java.util.Set<String> seen = new java.util.HashSet<>();
                int got = 0, first = 0, second = 0;
                long wait = Long.parseLong(a[3]);
                boolean more = true;
                while (more) {
                    more = false;
                    Message m = r1.receive(wait);
                    if (m != null) { got++; first++; seen.add(((TextMessage) m).getText()); more = true; }
                    m = r2.receive(wait);
                    if (m != null) { got++; second++; seen.add(((TextMessage) m).getText()); more = true; }
                }
                // The first consumer goes: the subscription stays for the second.
                r1.close();
                for (int i = 0; i < 3; i++) p.send(pub.createTextMessage("after " + i));
                int after = 0;
                while (r2.receive(wait * 3) != null) after++;
                System.out.println(new JSONObject().put("got", got).put("distinct", seen.size())
                    .put("first", first).put("second", second).put("after", after));
                break;
            }
        }
    }

    /** Batches committed one by one; a batch whose commit fails is resent under a new id. */
    static void produce(Session s, Queue q, int batches, int size) throws Exception {
        MessageProducer p = s.createProducer(q);
        int id = 0;
        for (int b = 0; b < batches; b++) {
            while (true) {
                id++;
                try {
                    for (int i = 0; i < size; i++) p.send(s.createTextMessage("b" + id + "-" + i));
                    s.commit();
                    System.out.println(new JSONObject().put("batch", id).put("outcome", "committed"));
                    break;
                } catch (JMSException e) {
                    System.out.println(new JSONObject().put("batch", id).put("outcome", "rolledback").put("reason", reason(e)));
                    try { s.rollback(); } catch (JMSException ignored) { }
                }
            }
        }
        System.out.println(new JSONObject().put("done", true));
    }
}
