import org.apache.activemq.artemis.api.core.QueueConfiguration;
import org.apache.activemq.artemis.api.core.RoutingType;
import org.apache.activemq.artemis.core.config.impl.ConfigurationImpl;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;
import org.apache.activemq.artemis.core.settings.impl.AddressSettings;

/** An embedded Apache ActiveMQ Artemis broker with an AMQP 1.0 acceptor on loopback, for
 *  `sealmq bench amqp --peer`: persistence on (a journal under DIR, synced for durable
 *  messages), security off (SASL ANONYMOUS), queue BENCH.AMQP.Q (anycast).
 *  java EmbeddedBroker PORT DIR; it prints "ready" and runs until stdin closes. */
public class EmbeddedBroker {
    public static void main(String[] args) throws Exception {
        String port = args[0];
        String dir = args[1];
        ConfigurationImpl c = new ConfigurationImpl();
        c.setPersistenceEnabled(true);
        c.setSecurityEnabled(false);
        c.setJournalDirectory(dir + "/journal");
        c.setBindingsDirectory(dir + "/bindings");
        c.setLargeMessagesDirectory(dir + "/large");
        c.setPagingDirectory(dir + "/paging");
        c.addAcceptorConfiguration("amqp", "tcp://127.0.0.1:" + port + "?protocols=AMQP");
        c.addAddressSetting("#", new AddressSettings()
                .setDefaultAddressRoutingType(RoutingType.ANYCAST)
                .setDefaultQueueRoutingType(RoutingType.ANYCAST));
        c.addQueueConfiguration(new QueueConfiguration("BENCH.AMQP.Q")
                .setAddress("BENCH.AMQP.Q").setRoutingType(RoutingType.ANYCAST));
        EmbeddedActiveMQ broker = new EmbeddedActiveMQ();
        broker.setConfiguration(c);
        broker.start();
        System.out.println("ready");
        System.out.flush();
        while (System.in.read() >= 0) {
        }
        broker.stop();
    }
}
