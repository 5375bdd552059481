// An AMQP 1.0 application on rhea (Node.js), driven by crates/sealmq-cli/tests/amqp.rs:
//   node rhea_client.js PORT QUEUE N
// sends N durable messages to QUEUE, then receives N from it (accepting each), and prints one
// JSON line: {"sent": N, "received": [bodies...]}.
const rhea = require(process.env.RHEA_PATH || "rhea");

const [port, queue, n] = [Number(process.argv[2]), process.argv[3], Number(process.argv[4])];
const container = rhea.create_container({ id: "rhea-test" });
let sent = 0;
const received = [];

container.on("connection_open", (ctx) => {
  ctx.connection.open_sender(queue);
});
container.on("sendable", (ctx) => {
  while (ctx.sender.sendable() && sent < n) {
    ctx.sender.send({ body: "rhea " + sent, durable: true, message_id: "rhea-" + sent });
    sent++;
  }
});
container.on("accepted", (ctx) => {
  if (ctx.delivery.link.is_sender() && --ctx.delivery.link._left === 0) {
    ctx.connection.open_receiver({ source: queue, credit_window: 10, autoaccept: true });
  }
});
container.on("sender_open", (ctx) => {
  ctx.sender._left = n;
});
container.on("message", (ctx) => {
  received.push(ctx.message.body);
  if (received.length === n) {
    console.log(JSON.stringify({ sent, received }));
    ctx.connection.close();
  }
});
container.on("error", (ctx) => {
  console.error("error", ctx.error);
  process.exit(2);
});
setTimeout(() => {
  console.error("timed out: sent " + sent + ", received " + received.length);
  process.exit(3);
}, 20000).unref();

// A user name without a password: rhea uses SASL ANONYMOUS, which the channel allows (it has
// an MCAUSER).
container.connect({ host: "127.0.0.1", port, reconnect: false, username: "anonymous" });
