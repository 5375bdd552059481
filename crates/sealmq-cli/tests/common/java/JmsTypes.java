// What both JMS test programs (IbmJms on IBM's client, JmsClient on Qpid JMS) share: the
// MapMessage and StreamMessage holding every JMS type that their `alltypes` commands send
// (tests/mqclient/amqp.rs reads each back through the other client), and how both print a
// map or stream value ("Class:value", bytes in hex, null as "null").
import javax.jms.JMSException;
import javax.jms.MapMessage;
import javax.jms.StreamMessage;

public final class JmsTypes {
    private JmsTypes() {}

    static void fill(MapMessage m) throws JMSException {
        m.setBoolean("bo", true);
        m.setByte("by", (byte) -5);
        m.setShort("sh", (short) -300);
        m.setChar("ch", '<');
        m.setInt("in", 70000);
        m.setLong("lo", -9000000000L);
        m.setFloat("fl", 1.25f);
        m.setDouble("do", 1e300);
        m.setDouble("nan", Double.NaN);
        m.setDouble("inf", Double.NEGATIVE_INFINITY);
        m.setString("st", "a<b&c\"d'e>\u00e9\u4e2d");
        m.setBytes("bi", new byte[] {0, 1, (byte) 0xab, (byte) 0xff});
        m.setString("empty", "");
        m.setString("k&y <1>", "v");
        m.setObject("nul", null);
    }

    static void fill(StreamMessage st) throws JMSException {
        st.writeBoolean(false);
        st.writeByte((byte) 7);
        st.writeShort((short) 8);
        st.writeChar('z');
        st.writeInt(9);
        st.writeLong(10L);
        st.writeFloat(2.5f);
        st.writeDouble(-0.0);
        st.writeString("s<&>");
        st.writeBytes(new byte[] {9, 8});
        st.writeString(null);
        st.writeString("");
    }

    static String typed(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof byte[]) {
            StringBuilder b = new StringBuilder("byte[]:");
            for (byte x : (byte[]) v) {
                b.append(String.format("%02x", x));
            }
            return b.toString();
        }
        return v.getClass().getSimpleName() + ":" + v;
    }
}
