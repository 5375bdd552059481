// `sealmq bench jms`'s JMS application (crates/sealmq-cli/src/bench/jms.rs compiles and runs
// it): the same JMS code on IBM MQ classes for JMS (MQ's client protocol) or Apache Qpid JMS
// (AMQP 1.0), one JSON line with the rate.
//
//   java JmsBench ibm PORT CHANNEL  MODE PRODUCERS MESSAGES SIZE
//   java JmsBench qpid URL -        MODE PRODUCERS MESSAGES SIZE
//     MODE put: PRODUCERS connections each send MESSAGES/PRODUCERS persistent BytesMessages
//               to BENCH.JMS.Q (no transaction; each send returns once the message is stored)
//     MODE rr:  PRODUCERS requesters, each with its own connection and temporary reply queue,
//               send non-persistent requests to BENCH.JMS.REQ one at a time and wait for the
//               reply; PRODUCERS responders answer them (MESSAGES round trips in all)
import javax.jms.*;

public class JmsBench {
    static String provider, where, channel;

    static ConnectionFactory factory() throws Exception {
        if (provider.equals("ibm")) {
            com.ibm.mq.jms.MQConnectionFactory cf = new com.ibm.mq.jms.MQConnectionFactory();
            cf.setHostName("127.0.0.1");
            cf.setPort(Integer.parseInt(where));
            cf.setChannel(channel);
            cf.setTransportType(com.ibm.msg.client.wmq.WMQConstants.WMQ_CM_CLIENT);
            return cf;
        }
        return new org.apache.qpid.jms.JmsConnectionFactory(where);
    }

    public static void main(String[] a) throws Exception {
        provider = a[0];
        where = a[1];
        channel = a[2];
        String mode = a[3];
        int producers = Integer.parseInt(a[4]);
        int messages = Integer.parseInt(a[5]);
        int size = Integer.parseInt(a[6]);
        ConnectionFactory cf = factory();
        int each = Math.max(1, messages / producers);
        long ns = mode.equals("put") ? put(cf, producers, each, size) : rr(cf, producers, each, size);
        double rate = (double) each * producers / (ns / 1e9);
        System.out.println("{\"provider\":\"" + provider + "\",\"mode\":\"" + mode + "\",\"producers\":"
            + producers + ",\"messages\":" + each * producers + ",\"rate\":" + rate + "}");
    }

    /** Threads that each run `body` on a connection of their own once all are ready: the
     * nanoseconds from the start to the last one done. */
    interface Body { void run(Connection c) throws Exception; }

    static long together(ConnectionFactory cf, int n, Body body) throws Exception {
        Connection[] cs = new Connection[n];
        for (int i = 0; i < n; i++) { cs[i] = cf.createConnection(); cs[i].start(); }
        java.util.concurrent.CyclicBarrier go = new java.util.concurrent.CyclicBarrier(n + 1);
        java.util.concurrent.atomic.AtomicReference<Exception> failed = new java.util.concurrent.atomic.AtomicReference<>();
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            final Connection c = cs[i];
            ts[i] = new Thread(() -> {
                try { go.await(); body.run(c); } catch (Exception e) { failed.set(e); }
            });
            ts[i].start();
        }
        go.await();
        long t = System.nanoTime();
        for (Thread th : ts) th.join();
        long ns = System.nanoTime() - t;
        for (Connection c : cs) c.close();
        if (failed.get() != null) throw failed.get();
        return ns;
    }

    static long put(ConnectionFactory cf, int producers, int each, int size) throws Exception {
        byte[] body = new byte[size];
        return together(cf, producers, c -> {
            Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
            MessageProducer p = s.createProducer(s.createQueue("BENCH.JMS.Q"));
            p.setDeliveryMode(DeliveryMode.PERSISTENT);
            for (int i = 0; i < each; i++) {
                BytesMessage m = s.createBytesMessage();
                m.writeBytes(body);
                p.send(m);
            }
        });
    }

    static long rr(ConnectionFactory cf, int producers, int each, int size) throws Exception {
        byte[] body = new byte[size];
        // Responders: each answers until it is closed.
        Connection[] rs = new Connection[producers];
        for (int i = 0; i < producers; i++) {
            rs[i] = cf.createConnection();
            Session s = rs[i].createSession(false, Session.AUTO_ACKNOWLEDGE);
            MessageProducer out = s.createProducer(null);
            out.setDeliveryMode(DeliveryMode.NON_PERSISTENT);
            s.createConsumer(s.createQueue("BENCH.JMS.REQ")).setMessageListener(m -> {
                try {
                    BytesMessage r = s.createBytesMessage();
                    r.writeBytes(body);
                    r.setJMSCorrelationID(m.getJMSMessageID());
                    out.send(m.getJMSReplyTo(), r);
                } catch (JMSException e) {
                    throw new RuntimeException(e);
                }
            });
            rs[i].start();
        }
        long ns = together(cf, producers, c -> {
            Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
            TemporaryQueue reply = s.createTemporaryQueue();
            MessageConsumer in = s.createConsumer(reply);
            MessageProducer p = s.createProducer(s.createQueue("BENCH.JMS.REQ"));
            p.setDeliveryMode(DeliveryMode.NON_PERSISTENT);
            for (int i = 0; i < each; i++) {
                BytesMessage m = s.createBytesMessage();
                m.writeBytes(body);
                m.setJMSReplyTo(reply);
                p.send(m);
                if (in.receive(30000) == null) throw new java.lang.IllegalStateException("no reply in 30 s");
            }
        });
        for (Connection c : rs) c.close();
        return ns;
    }
}
