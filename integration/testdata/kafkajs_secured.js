// kafkajs against a SASL_SSL listener, run by TestSecuredKafkajs: it logs
// in with SASL PLAIN over TLS trusting the CA in CA_FILE, its idempotent
// producer writes the records read from standard input (a JSON array of
// { key, value } strings) with acks=all, 50 to a send, and a consumer in
// GROUP reads TOPIC from the beginning until it has as many records as it
// wrote, then disconnects, which commits. It prints the records it
// consumed as one JSON array of { key, value, partition, offset }, for the
// test to compare, and exits non-zero on any error.
//
// Usage: KAFKAJS_PASSWORD=... node kafkajs_secured.js BROKER TOPIC GROUP CA_FILE USER
// (the password comes from the environment so that it is not in argv).
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

const [broker, topic, groupId, caFile, username] = process.argv.slice(2);
const password = process.env.KAFKAJS_PASSWORD;
if (!password) {
  console.error('KAFKAJS_PASSWORD is not set');
  process.exit(2);
}

const kafka = new Kafka({
  clientId: 'strata-kafkajs-secured-test',
  brokers: [broker],
  ssl: { ca: [fs.readFileSync(caFile, 'utf8')] },
  sasl: { mechanism: 'plain', username, password },
  logLevel: logLevel.ERROR,
});

async function main() {
  const records = JSON.parse(fs.readFileSync(0, 'utf8'));

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  for (let i = 0; i < records.length; i += 50) {
    const messages = records.slice(i, i + 50).map((r) => ({ key: r.key, value: r.value }));
    await producer.send({ topic, acks: -1, messages });
  }
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const consumed = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed ${consumed.length} of ${records.length} records in 60s`)), 60000);
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        consumed.push({
          key: message.key.toString(),
          value: message.value.toString(),
          partition,
          offset: Number(message.offset),
        });
        if (consumed.length === records.length) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect(); // commits what was consumed
  console.log(JSON.stringify(consumed));
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
