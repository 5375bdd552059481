// A JMS 2 application on Apache Qpid JMS (javax.jms), driven by crates/sealmq-cli/tests/amqp.rs
// against a sealmq AMQP channel. Each command prints JSON lines.
//
//   java -cp ... JmsClient URL send QUEUE N        N persistent text messages with properties
//                                                  (colour red/blue alternating, n = i, and
//                                                  kind, big, ok, ratio) and a correlation id
//   java -cp ... JmsClient URL receive QUEUE N     receives N; prints each one's fields
//   java -cp ... JmsClient URL select QUEUE N SEL  receives N through a message selector
//   java -cp ... JmsClient URL tx QUEUE            transacted sessions committing and rolling back
//   java -cp ... JmsClient URL temp                a temporary queue, sent to and read from
//   java -cp ... JmsClient URL forbidden QUEUE     a producer and a consumer on a queue the
//                                                  principal may not use; prints the errors
//   java -cp ... JmsClient URL topic NAME          a temporary topic, subscribed to and published
//                                                  to from another connection, then deleted; and
//                                                  a subscriber to NAME with a bad selector
//   java -cp ... JmsClient URL pubsub NAME         a publisher and three subscribers on topic
//                                                  NAME: one with a selector, one durable that
//                                                  disconnects and comes back for what it missed
//   java -cp ... JmsClient URL shared TOPIC NAME   two connections share a durable subscription
//                                                  (no client id), then a shared non-durable one
//                                                  (and a consumer with another selector on it);
//                                                  then an unsubscribe
//   java -cp ... JmsClient URL typed QUEUE        a MapMessage and a StreamMessage, sent and got
//   java -cp ... JmsClient URL alltypes QUEUE     a MapMessage and a StreamMessage holding every
//                                                  JMS type (receive prints them "Class:value")
//   java -cp ... JmsClient URL nolocal TOPIC      a noLocal subscriber beside another, one message
//                                                  published by its connection and one by another
//   java -cp ... JmsClient URL unsubscribe NAME    removes client id jms-audit's durable
//                                                  subscription NAME, twice; prints the errors

import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import javax.jms.BytesMessage;
import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.JMSContext;
import javax.jms.JMSConsumer;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Queue;
import javax.jms.Session;
import javax.jms.TemporaryQueue;
import javax.jms.TextMessage;
import org.apache.qpid.jms.JmsConnectionFactory;

public class JmsClient {
    static final long WAIT = 20_000;

    static String q(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static String value(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof String) {
            return q((String) v);
        }
        return v.toString();
    }

    static String list(List<String> items) {
        List<String> quoted = new ArrayList<>();
        for (String s : items) {
            quoted.add(q(s));
        }
        return "[" + String.join(",", quoted) + "]";
    }

    static String body(Message m) throws Exception {
        if (m == null) {
            return "(none)";
        }
        if (m instanceof TextMessage) {
            return ((TextMessage) m).getText();
        }
        if (m instanceof BytesMessage) {
            BytesMessage b = (BytesMessage) m;
            byte[] data = new byte[(int) b.getBodyLength()];
            b.readBytes(data);
            return new String(data, "UTF-8");
        }
        return m.getClass().getSimpleName();
    }

    /** One received message as a JSON line. */
    static String describe(Message m) throws Exception {
        StringBuilder props = new StringBuilder("{");
        List<String> names = new ArrayList<>();
        for (Enumeration<?> e = m.getPropertyNames(); e.hasMoreElements();) {
            names.add((String) e.nextElement());
        }
        Collections.sort(names);
        for (String n : names) {
            if (props.length() > 1) {
                props.append(',');
            }
            Object v = m.getObjectProperty(n);
            props.append(q(n)).append(':').append(value(v));
            props.append(',').append(q(n + ".type")).append(':')
                    .append(q(v == null ? "null" : v.getClass().getSimpleName()));
        }
        props.append('}');
        String type = m instanceof TextMessage ? "text"
                : m instanceof javax.jms.MapMessage ? "map"
                : m instanceof javax.jms.StreamMessage ? "stream" : "bytes";
        StringBuilder items = new StringBuilder("{");
        if (m instanceof javax.jms.MapMessage) {
            javax.jms.MapMessage mm = (javax.jms.MapMessage) m;
            for (Enumeration<?> e = mm.getMapNames(); e.hasMoreElements();) {
                String k = (String) e.nextElement();
                items.append(items.length() > 1 ? "," : "").append(q(k)).append(':')
                        .append(q(JmsTypes.typed(mm.getObject(k))));
            }
        }
        items.append('}');
        StringBuilder stream = new StringBuilder("[");
        if (m instanceof javax.jms.StreamMessage) {
            try {
                while (true) {
                    Object v = ((javax.jms.StreamMessage) m).readObject();
                    stream.append(stream.length() > 1 ? "," : "").append(q(JmsTypes.typed(v)));
                }
            } catch (javax.jms.MessageEOFException end) {
            }
        }
        stream.append(']');
        return "{\"body\":" + q(body(m))
                + ",\"type\":" + q(type)
                + ",\"map\":" + items
                + ",\"stream\":" + stream
                + ",\"correlation_id\":" + q(m.getJMSCorrelationID())
                + ",\"persistent\":" + (m.getJMSDeliveryMode() == DeliveryMode.PERSISTENT)
                + ",\"priority\":" + m.getJMSPriority()
                + ",\"redelivered\":" + m.getJMSRedelivered()
                + ",\"properties\":" + props + "}";
    }

    /** A session of connection c and one of c2, which is started. */
    static Session[] sessions(Connection c, Connection c2) throws Exception {
        c2.start();
        return new Session[] {
            c.createSession(false, Session.AUTO_ACKNOWLEDGE),
            c2.createSession(false, Session.AUTO_ACKNOWLEDGE)
        };
    }

    /** N messages taken by two consumers of one subscription, in turn, sorted; how many each
     * took in from[0] and from[1]. */
    static List<String> split(MessageConsumer a, MessageConsumer b, int n, int[] from)
            throws Exception {
        List<String> got = new ArrayList<>();
        from[0] = from[1] = 0;
        MessageConsumer[] both = {a, b};
        long end = System.currentTimeMillis() + WAIT;
        while (got.size() < n && System.currentTimeMillis() < end) {
            for (int i = 0; i < 2; i++) {
                Message m = both[i].receive(100);
                if (m != null) {
                    got.add(body(m));
                    from[i]++;
                }
            }
        }
        Collections.sort(got);
        return got;
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String cmd = args[1];
        JmsConnectionFactory f = new JmsConnectionFactory(url);
        try (Connection c = f.createConnection()) {
            c.start();
            switch (cmd) {
                case "send": {
                    Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                    MessageProducer p = s.createProducer(s.createQueue(args[2]));
                    int n = Integer.parseInt(args[3]);
                    for (int i = 0; i < n; i++) {
                        TextMessage m = s.createTextMessage("jms " + i);
                        m.setJMSCorrelationID("jms-corr-" + i);
                        m.setStringProperty("colour", i % 2 == 0 ? "red" : "blue");
                        m.setIntProperty("n", i);
                        m.setLongProperty("big", 1L << 40);
                        m.setBooleanProperty("ok", true);
                        m.setDoubleProperty("ratio", 0.25);
                        m.setStringProperty("kind", "order");
                        p.send(m, DeliveryMode.PERSISTENT, 6, 0);
                    }
                    System.out.println("{\"sent\":" + n + "}");
                    break;
                }
                case "alltypes": {
                    // A MapMessage and a StreamMessage holding every JMS type.
                    Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                    MessageProducer p = s.createProducer(s.createQueue(args[2]));
                    javax.jms.MapMessage m = s.createMapMessage();
                    JmsTypes.fill(m);
                    p.send(m);
                    javax.jms.StreamMessage st = s.createStreamMessage();
                    JmsTypes.fill(st);
                    p.send(st);
                    System.out.println("{\"sent\":2}");
                    break;
                }
                case "receive":
                case "select": {
                    Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                    Queue queue = s.createQueue(args[2]);
                    MessageConsumer r = cmd.equals("select")
                            ? s.createConsumer(queue, args[4])
                            : s.createConsumer(queue);
                    int n = Integer.parseInt(args[3]);
                    for (int i = 0; i < n; i++) {
                        Message m = r.receive(WAIT);
                        if (m == null) {
                            System.out.println("{\"timeout\":" + i + "}");
                            System.exit(2);
                        }
                        System.out.println(describe(m));
                    }
                    r.close();
                    break;
                }
                case "tx": {
                    Queue queue;
                    // A transacted producer: rolled back, nothing arrives; committed, both do.
                    Session ts = c.createSession(true, Session.SESSION_TRANSACTED);
                    queue = ts.createQueue(args[2]);
                    MessageProducer p = ts.createProducer(queue);
                    p.send(ts.createTextMessage("never 1"));
                    p.send(ts.createTextMessage("never 2"));
                    ts.rollback();
                    p.send(ts.createTextMessage("kept 1"));
                    p.send(ts.createTextMessage("kept 2"));
                    ts.commit();
                    System.out.println("{\"produced\":\"committed\"}");
                    // A transacted consumer: rolled back, the message comes again to the same
                    // consumer, redelivered; committed, it is gone.
                    MessageConsumer r = ts.createConsumer(queue);
                    Message first = r.receive(WAIT);
                    ts.rollback();
                    Message again = r.receive(WAIT);
                    System.out.println("{\"first\":" + q(body(first)) + ",\"again\":"
                            + q(again == null ? null : body(again)) + ",\"redelivered\":"
                            + (again != null && again.getJMSRedelivered()) + "}");
                    Message second = r.receive(WAIT);
                    ts.commit();
                    System.out.println("{\"committed\":[" + q(body(again)) + ","
                            + q(second == null ? null : body(second)) + "]}");
                    r.close();
                    break;
                }
                case "temp": {
                    // JMS 2 simplified API on a temporary queue: a reply-to destination.
                    try (JMSContext ctx = f.createContext()) {
                        TemporaryQueue tq = ctx.createTemporaryQueue();
                        JMSConsumer r = ctx.createConsumer(tq);
                        ctx.createProducer().send(tq, "to the temporary queue");
                        String got = r.receiveBody(String.class, WAIT);
                        System.out.println("{\"temporary\":" + q(tq.getQueueName())
                                + ",\"body\":" + q(got) + "}");
                        r.close();
                        tq.delete();
                    }
                    break;
                }
                case "tempforbidden": {
                    // A temporary queue the user may not make (no authority on the model).
                    String error = null;
                    try (Session ts = c.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
                        try {
                            ts.createTemporaryQueue();
                        } catch (javax.jms.JMSException e) {
                            error = e.getClass().getSimpleName() + ": " + e.getMessage();
                        }
                    }
                    System.out.println("{\"temporary\":" + q(error) + "}");
                    break;
                }
                case "forbidden": {
                    String[] errors = new String[2];
                    try (Session fs = c.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
                        Queue fq = fs.createQueue(args[2]);
                        try {
                            fs.createProducer(fq);
                        } catch (javax.jms.JMSException e) {
                            errors[0] = e.getClass().getSimpleName() + ": " + e.getMessage();
                        }
                        try {
                            fs.createConsumer(fq);
                        } catch (javax.jms.JMSException e) {
                            errors[1] = e.getClass().getSimpleName() + ": " + e.getMessage();
                        }
                    }
                    System.out.println("{\"producer\":" + q(errors[0]) + ",\"consumer\":"
                            + q(errors[1]) + "}");
                    break;
                }
                case "pubsub": {
                    try (Connection dc = f.createConnection()) {
                        dc.setClientID("jms-audit");
                        dc.start();
                        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                        javax.jms.Topic t = s.createTopic(args[2]);
                        Session ds = dc.createSession(false, Session.AUTO_ACKNOWLEDGE);
                        javax.jms.Topic dt = ds.createTopic(args[2]);
                        MessageConsumer all = s.createConsumer(t);
                        MessageConsumer red = s.createConsumer(t, "colour = 'red'");
                        MessageConsumer durable = ds.createDurableSubscriber(dt, "AUDIT");
                        MessageProducer p = s.createProducer(t);
                        for (int i = 0; i < 3; i++) {
                            TextMessage m = s.createTextMessage("price " + i);
                            m.setStringProperty("colour", i == 1 ? "red" : "blue");
                            p.send(m);
                        }
                        List<String> a = new ArrayList<>(), r = new ArrayList<>(),
                                d1 = new ArrayList<>(), d2 = new ArrayList<>();
                        for (int i = 0; i < 3; i++) {
                            a.add(body(all.receive(WAIT)));
                            d1.add(body(durable.receive(WAIT)));
                        }
                        r.add(body(red.receive(WAIT)));
                        Message extra = red.receive(500);
                        durable.close();
                        // Published while the durable subscriber is away: kept for it.
                        p.send(s.createTextMessage("while away"));
                        a.add(body(all.receive(WAIT)));
                        MessageConsumer back = ds.createDurableSubscriber(dt, "AUDIT");
                        d2.add(body(back.receive(WAIT)));
                        back.close();
                        System.out.println("{\"all\":" + list(a) + ",\"red\":" + list(r)
                                + ",\"red_extra\":" + (extra != null) + ",\"durable\":"
                                + list(d1) + ",\"durable_again\":" + list(d2) + "}");
                    }
                    break;
                }
                case "unsubscribe": {
                    // Session.unsubscribe of the durable subscription NAME of client id
                    // jms-audit, twice: the second finds none.
                    try (Connection dc = f.createConnection()) {
                        dc.setClientID("jms-audit");
                        dc.start();
                        Session ds = dc.createSession(false, Session.AUTO_ACKNOWLEDGE);
                        String[] errors = new String[2];
                        for (int i = 0; i < 2; i++) {
                            try {
                                ds.unsubscribe(args[2]);
                            } catch (javax.jms.JMSException e) {
                                errors[i] = e.getClass().getSimpleName() + ": " + e.getMessage();
                            }
                        }
                        System.out.println("{\"first\":" + q(errors[0]) + ",\"second\":"
                                + q(errors[1]) + "}");
                    }
                    break;
                }
                case "shared": {
                    // Two connections without a client id share the durable subscription NAME
                    // on topic TOPIC (JMS 2 createSharedDurableConsumer); 10 publications are
                    // split between them. Then a shared non-durable subscription, and the
                    // durable one's removal.
                    try (Connection c2 = f.createConnection()) {
                        Session[] ss = sessions(c, c2);
                        Session s1 = ss[0], s2 = ss[1];
                        javax.jms.Topic t = s1.createTopic(args[2]);
                        MessageConsumer a = s1.createSharedDurableConsumer(t, args[3]);
                        MessageConsumer b = s2.createSharedDurableConsumer(s2.createTopic(args[2]), args[3]);
                        MessageProducer p = s1.createProducer(t);
                        for (int i = 0; i < 10; i++) {
                            p.send(s1.createTextMessage("m" + i));
                        }
                        int[] from = new int[2];
                        List<String> got = split(a, b, 10, from);
                        int fromA = from[0], fromB = from[1];
                        // A shared non-durable subscription (JMS 2 createSharedConsumer) of
                        // both connections: 10 publications split between its two consumers;
                        // a third consumer asking another selector while they are open is
                        // refused; after they close it is gone (published meanwhile: lost).
                        MessageConsumer v1 = s1.createSharedConsumer(t, "VOLATILE");
                        MessageConsumer v2 = s2.createSharedConsumer(s2.createTopic(args[2]), "VOLATILE");
                        for (int i = 0; i < 10; i++) {
                            p.send(s1.createTextMessage("v" + i));
                        }
                        List<String> vgot = split(v1, v2, 10, from);
                        int fromV1 = from[0], fromV2 = from[1];
                        Message vextra = v1.receive(300);
                        if (vextra == null) {
                            vextra = v2.receive(300);
                        }
                        String mismatch = null;
                        // (From a third connection: Qpid JMS refuses it itself on the others.)
                        try (Connection c3 = f.createConnection()) {
                            c3.start();
                            Session s3 = c3.createSession(false, Session.AUTO_ACKNOWLEDGE);
                            s3.createSharedConsumer(s3.createTopic(args[2]), "VOLATILE",
                                    "colour = 'red'").receive(500);
                        } catch (javax.jms.JMSException e) {
                            mismatch = e.getMessage();
                        }
                        v1.close();
                        v2.close();
                        a.close();
                        b.close();
                        String unsub = null;
                        try {
                            s1.unsubscribe(args[3]);
                        } catch (javax.jms.JMSException e) {
                            unsub = e.getClass().getSimpleName() + ": " + e.getMessage();
                        }
                        System.out.println("{\"got\":" + list(got) + ",\"from_a\":" + fromA
                                + ",\"from_b\":" + fromB + ",\"volatile\":" + list(vgot)
                                + ",\"volatile_from_1\":" + fromV1 + ",\"volatile_from_2\":"
                                + fromV2 + ",\"volatile_extra\":" + (vextra != null)
                                + ",\"volatile_mismatch\":" + q(mismatch)
                                + ",\"unsubscribe\":" + q(unsub) + "}");
                    }
                    break;
                }
                case "typed": {
                    // A MapMessage and a StreamMessage sent to QUEUE and received back.
                    try (Session ts = c.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
                        Queue tq = ts.createQueue(args[2]);
                        MessageProducer p = ts.createProducer(tq);
                        javax.jms.MapMessage mm = ts.createMapMessage();
                        mm.setString("name", "widget");
                        mm.setInt("count", 42);
                        mm.setBoolean("ok", true);
                        mm.setDouble("price", 9.5);
                        p.send(mm);
                        javax.jms.StreamMessage sm = ts.createStreamMessage();
                        sm.writeString("first");
                        sm.writeLong(7L);
                        p.send(sm);
                        MessageConsumer r = ts.createConsumer(tq);
                        Message m1 = r.receive(WAIT);
                        Message m2 = r.receive(WAIT);
                        String map = "null", stream = "null";
                        if (m1 instanceof javax.jms.MapMessage) {
                            javax.jms.MapMessage g = (javax.jms.MapMessage) m1;
                            map = "{\"name\":" + q(g.getString("name")) + ",\"count\":"
                                    + g.getInt("count") + ",\"ok\":" + g.getBoolean("ok")
                                    + ",\"price\":" + g.getDouble("price") + "}";
                        }
                        if (m2 instanceof javax.jms.StreamMessage) {
                            javax.jms.StreamMessage g = (javax.jms.StreamMessage) m2;
                            stream = "[" + q(g.readString()) + "," + g.readLong() + "]";
                        }
                        System.out.println("{\"map\":" + map + ",\"stream\":" + stream
                                + ",\"types\":" + list(java.util.Arrays.asList(
                                        m1 == null ? "none" : m1.getClass().getSimpleName(),
                                        m2 == null ? "none" : m2.getClass().getSimpleName()))
                                + "}");
                    }
                    break;
                }
                case "nolocal": {
                    // Two subscribers of one connection to TOPIC, one noLocal; that connection
                    // and another each publish one message: the noLocal one gets only the
                    // other connection's.
                    try (Connection c2 = f.createConnection()) {
                        Session[] ss = sessions(c, c2);
                        Session s = ss[0], s2 = ss[1];
                        javax.jms.Topic t = s.createTopic(args[2]);
                        MessageConsumer mine = s.createConsumer(t, null, true);
                        MessageConsumer all = s.createConsumer(t);
                        s.createProducer(t).send(s.createTextMessage("own"));
                        s2.createProducer(s2.createTopic(args[2]))
                                .send(s2.createTextMessage("elsewhere"));
                        List<String> a = new ArrayList<>(), m = new ArrayList<>();
                        a.add(body(all.receive(WAIT)));
                        a.add(body(all.receive(WAIT)));
                        m.add(body(mine.receive(WAIT)));
                        Message extra = mine.receive(500);
                        System.out.println("{\"all\":" + list(a) + ",\"no_local\":" + list(m)
                                + ",\"no_local_extra\":" + (extra != null) + "}");
                    }
                    break;
                }
                case "topic": {
                    // A temporary topic: this connection subscribes, another publishes to it
                    // (a reply); once deleted, a publisher to it is refused. Then a topic
                    // subscriber with a selector that does not parse.
                    String got = null, name = null, late = null, selector = null;
                    try (Connection c2 = f.createConnection()) {
                        c2.start();
                        Session ts = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
                        Session s2 = c2.createSession(false, Session.AUTO_ACKNOWLEDGE);
                        javax.jms.TemporaryTopic tt = ts.createTemporaryTopic();
                        name = tt.getTopicName();
                        MessageConsumer r = ts.createConsumer(tt);
                        MessageProducer p2 = s2.createProducer(tt);
                        p2.send(s2.createTextMessage("to the temporary topic"));
                        got = body(r.receive(WAIT));
                        r.close();
                        p2.close();
                        tt.delete();
                        try {
                            s2.createProducer(tt).send(s2.createTextMessage("too late"));
                        } catch (javax.jms.JMSException e) {
                            late = e.getClass().getSimpleName() + ": " + e.getMessage();
                        }
                        try {
                            ts.createConsumer(ts.createTopic(args[2]), "nonsense ===").receive(1000);
                        } catch (javax.jms.JMSException e) {
                            selector = e.getMessage();
                        }
                    }
                    System.out.println("{\"temporary\":" + q(name) + ",\"body\":" + q(got)
                            + ",\"late\":" + q(late) + ",\"consumer\":" + q(selector) + "}");
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown command " + cmd);
            }
        }
    }
}
