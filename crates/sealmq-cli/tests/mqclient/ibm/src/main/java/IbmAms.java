import com.ibm.mq.MQException;
import com.ibm.mq.MQGetMessageOptions;
import com.ibm.mq.MQMessage;
import com.ibm.mq.MQPutMessageOptions;
import com.ibm.mq.MQQueue;
import com.ibm.mq.MQQueueManager;
import com.ibm.mq.constants.CMQC;
import java.nio.charset.StandardCharsets;
import java.util.Hashtable;

/**
 * An MQI application on IBM's MQ classes for Java with Advanced Message Security's interceptor
 * on (the JVM is given -DMQS_KEYSTORE_CONF=keystore.conf naming a keytool keystore). It puts and
 * gets text messages; IBM's interceptor protects and unprotects them as the queue's policy,
 * which it learns from the queue manager, says. One JSON line per message or refusal.
 *
 * <p>IbmAms PORT CHANNEL put QUEUE TEXT COUNT | get QUEUE COUNT | index POLICY-QUEUE
 */
public class IbmAms {
    public static void main(String[] a) throws Exception {
        Hashtable<String, Object> p = new Hashtable<>();
        p.put(CMQC.HOST_NAME_PROPERTY, "127.0.0.1");
        p.put(CMQC.PORT_PROPERTY, Integer.parseInt(a[0]));
        p.put(CMQC.CHANNEL_PROPERTY, a[1]);
        p.put(CMQC.TRANSPORT_PROPERTY, CMQC.TRANSPORT_MQSERIES_CLIENT);
        // TLS (system property sealmq.cipher: the JSSE suite of the channel's CipherSpec).
        if (System.getProperty("sealmq.cipher") != null) {
            p.put(CMQC.SSL_CIPHER_SUITE_PROPERTY, System.getProperty("sealmq.cipher"));
        }
        MQQueueManager qm = new MQQueueManager("", p);
        String op = a[2], queue = a[3];
        try {
            if (op.equals("index")) {
                // What the queue manager tells IBM's interceptor: the policy index, as text.
                MQQueue q = qm.accessQueue(queue, CMQC.MQOO_BROWSE);
                MQMessage m = new MQMessage();
                m.correlationId = new byte[24];
                java.util.Arrays.fill(m.correlationId, (byte) 0xff);
                MQGetMessageOptions g = new MQGetMessageOptions();
                g.options = CMQC.MQGMO_BROWSE_FIRST;
                g.matchOptions = CMQC.MQMO_MATCH_CORREL_ID;
                q.get(m, g);
                byte[] b = new byte[m.getDataLength()];
                m.readFully(b);
                String t = new String(b, StandardCharsets.UTF_8).replaceAll("[^A-Za-z0-9. ]", " ");
                System.out.println("{\"index\":\"" + t + "\"}");
                q.close();
            } else if (op.equals("put")) {
                MQQueue q = qm.accessQueue(queue, CMQC.MQOO_OUTPUT);
                int n = Integer.parseInt(a[5]);
                for (int i = 0; i < n; i++) {
                    MQMessage m = new MQMessage();
                    m.format = CMQC.MQFMT_STRING;
                    m.characterSet = 1208;
                    m.write((a[4] + " " + i).getBytes(StandardCharsets.UTF_8));
                    q.put(m, new MQPutMessageOptions());
                }
                q.close();
                System.out.println("{\"sent\":" + n + "}");
            } else {
                MQQueue q = qm.accessQueue(queue, CMQC.MQOO_INPUT_AS_Q_DEF);
                int n = Integer.parseInt(a[4]);
                for (int i = 0; i < n; i++) {
                    MQMessage m = new MQMessage();
                    try {
                        q.get(m, new MQGetMessageOptions());
                    } catch (MQException e) {
                        System.out.println("{\"reason\":" + e.reasonCode + "}");
                        continue;
                    }
                    byte[] b = new byte[m.getDataLength()];
                    m.readFully(b);
                    System.out.println("{\"data\":\"" + new String(b, StandardCharsets.UTF_8)
                            + "\",\"format\":\"" + m.format.trim() + "\"}");
                }
                q.close();
            }
        } catch (MQException e) {
            System.out.println("{\"reason\":" + e.reasonCode + "}");
        }
        qm.disconnect();
    }
}
