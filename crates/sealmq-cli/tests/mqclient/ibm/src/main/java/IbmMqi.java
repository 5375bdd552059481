// An MQI application on IBM's own MQ classes for Java (com.ibm.mq: MQQueueManager, MQQueue,
// MQMessage; client mode), driven by tests/mqclient.rs against a sealmq queue manager: MQ's
// verbs and options as a C, .NET or Go MQI application uses them, not JMS. Each command
// prints JSON lines.
//
//   java IbmMqi PORT CHANNEL COMMAND ARGS...
//     put QUEUE N             N messages "mqi I" (format MQSTR, priority 3, persistent,
//                             correlation id "mqi-corr-I", reply-to REPLY.Q, expiry 6000,
//                             report MQRO_EXCEPTION | MQRO_PASS_CORREL_ID, feedback
//                             MQFB_APPL_FIRST + 7)
//                             with properties colour=blue, n=I, big=2^40, ratio=0.5,
//                             flag=true, raw=bytes 01ff
//     get QUEUE N PROPS       up to N messages (no wait), the get's properties option PROPS:
//                             asqdef (none named: the queue's PROPCTL decides), handle
//                             (MQGMO_PROPERTIES_IN_HANDLE), force (..._FORCE_MQRFH2), none
//                             (MQGMO_NO_PROPERTIES), compat (..._COMPATIBILITY); prints each
//                             one's descriptor, its properties as the client gives them, and
//                             its data (an MQRFH2 in it shown as "RFH2:" and its folders)
//     inq QUEUE               the queue's attributes through MQINQ
// A failing MQI call prints {"error": reason}.
import com.ibm.mq.*;
import com.ibm.mq.constants.CMQC;
import java.util.Enumeration;
import java.util.Hashtable;
import org.json.JSONObject;

public class IbmMqi {
    public static void main(String[] a) throws Exception {
        Hashtable<String, Object> p = new Hashtable<>();
        p.put(CMQC.HOST_NAME_PROPERTY, "127.0.0.1");
        p.put(CMQC.PORT_PROPERTY, Integer.parseInt(a[0]));
        p.put(CMQC.CHANNEL_PROPERTY, a[1]);
        p.put(CMQC.TRANSPORT_PROPERTY, CMQC.TRANSPORT_MQSERIES_CLIENT);
        MQQueueManager qm = null;
        try {
            qm = new MQQueueManager("", p);
            run(qm, a[2], java.util.Arrays.copyOfRange(a, 3, a.length));
        } catch (MQException e) {
            System.out.println(new JSONObject().put("error", e.getReason()));
        } finally {
            if (qm != null) qm.disconnect();
        }
    }

    static void run(MQQueueManager qm, String cmd, String[] a) throws Exception {
        switch (cmd) {
            case "put": {
                MQQueue q = qm.accessQueue(a[0], CMQC.MQOO_OUTPUT);
                int n = Integer.parseInt(a[1]);
                for (int i = 0; i < n; i++) {
                    MQMessage m = new MQMessage();
                    m.format = CMQC.MQFMT_STRING;
                    m.priority = 3;
                    m.persistence = CMQC.MQPER_PERSISTENT;
                    m.expiry = 6000;
                    m.correlationId = java.util.Arrays.copyOf(("mqi-corr-" + i).getBytes("UTF-8"), 24);
                    m.replyToQueueName = "REPLY.Q";
                    m.report = CMQC.MQRO_EXCEPTION | CMQC.MQRO_PASS_CORREL_ID;
                    m.feedback = CMQC.MQFB_APPL_FIRST + 7;
                    m.setStringProperty("colour", "blue");
                    m.setIntProperty("n", i);
                    m.setLongProperty("big", 1L << 40);
                    m.setDoubleProperty("ratio", 0.5);
                    m.setBooleanProperty("flag", true);
                    m.setBytesProperty("raw", new byte[] {1, (byte) 0xff});
                    m.writeString("mqi " + i);
                    q.put(m, new MQPutMessageOptions());
                }
                q.close();
                System.out.println(new JSONObject().put("sent", n));
                break;
            }
            case "get": {
                MQQueue q = qm.accessQueue(a[0], CMQC.MQOO_INPUT_AS_Q_DEF | CMQC.MQOO_INQUIRE);
                int n = Integer.parseInt(a[1]);
                for (int i = 0; i < n; i++) {
                    MQMessage m = new MQMessage();
                    MQGetMessageOptions g = new MQGetMessageOptions();
                    g.options = CMQC.MQGMO_NO_WAIT | option(a[2]);
                    try {
                        q.get(m, g);
                    } catch (MQException e) {
                        if (e.getReason() == CMQC.MQRC_NO_MSG_AVAILABLE) break;
                        throw e;
                    }
                    System.out.println(describe(m));
                }
                q.close();
                System.out.println(new JSONObject().put("done", true));
                break;
            }
            case "inq": {
                MQQueue q = qm.accessQueue(a[0], CMQC.MQOO_INQUIRE);
                int[] sel = {CMQC.MQIA_PROPERTY_CONTROL, CMQC.MQIA_DEF_READ_AHEAD, CMQC.MQIA_CURRENT_Q_DEPTH};
                int[] ints = new int[sel.length];
                q.inquire(sel, ints, new byte[0]);
                q.close();
                System.out.println(new JSONObject()
                    .put("propctl", ints[0]).put("defreada", ints[1]).put("depth", ints[2]));
                break;
            }
            default:
                throw new IllegalArgumentException(cmd);
        }
    }

    static int option(String s) {
        switch (s) {
            case "asqdef": return CMQC.MQGMO_PROPERTIES_AS_Q_DEF;
            case "handle": return CMQC.MQGMO_PROPERTIES_IN_HANDLE;
            case "force": return CMQC.MQGMO_PROPERTIES_FORCE_MQRFH2;
            case "none": return CMQC.MQGMO_NO_PROPERTIES;
            case "compat": return CMQC.MQGMO_PROPERTIES_COMPATIBILITY;
            default: throw new IllegalArgumentException(s);
        }
    }

    static JSONObject describe(MQMessage m) throws Exception {
        JSONObject props = new JSONObject();
        for (Enumeration<String> e = m.getPropertyNames("%"); e.hasMoreElements();) {
            String k = e.nextElement();
            Object v = m.getObjectProperty(k);
            if (v instanceof byte[]) {
                StringBuilder b = new StringBuilder("bytes:");
                for (byte x : (byte[]) v) b.append(String.format("%02x", x));
                v = b.toString();
            }
            props.put(k, v);
        }
        byte[] data = new byte[m.getDataLength()];
        m.readFully(data);
        String text;
        if (m.format.trim().equals(CMQC.MQFMT_RF_HEADER_2.trim())) {
            // The MQRFH2 as the application reads it: its folders, then the data after it.
            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(data);
            b.order(m.encoding % 16 == 2 ? java.nio.ByteOrder.LITTLE_ENDIAN : java.nio.ByteOrder.BIG_ENDIAN);
            int len = b.getInt(8);
            StringBuilder folders = new StringBuilder();
            for (int off = 36; off + 4 <= len;) {
                int fl = b.getInt(off);
                folders.append(new String(data, off + 4, fl, "UTF-8").trim());
                off += 4 + fl;
            }
            text = "RFH2:" + folders + "|" + new String(data, len, data.length - len, "UTF-8");
        } else {
            text = new String(data, "UTF-8");
        }
        return new JSONObject()
            .put("format", m.format.trim())
            .put("data", text)
            .put("props", props)
            .put("priority", m.priority)
            .put("persistent", m.persistence == CMQC.MQPER_PERSISTENT)
            .put("expiry", m.expiry)
            .put("correl", new String(m.correlationId, "UTF-8").replace("\u0000", ""))
            .put("replyto", m.replyToQueueName.trim())
            .put("user", m.userId.trim())
            .put("report", m.report)
            .put("feedback", m.feedback)
            .put("appl", m.putApplicationName.trim());
    }
}
