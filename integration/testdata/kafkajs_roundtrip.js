// A kafkajs round trip against strata, run by kafkajsRoundTrip: the admin
// client creates the topic (unless the fifth argument is "existing"), the
// idempotent producer writes count records (record i: key "k<i>", value
// valueFor(i), header h = "x<i>") with acks=all, 50 to a send, and a
// consumer group reads them all back, checks every byte, commits, and the
// admin client reads the committed offsets. It prints one JSON line with
// what it saw: the counts, the partition and base offset each send was
// acknowledged at, and the partition and offset each key was read at; and
// exits non-zero on any difference.
//
// Usage: node kafkajs_roundtrip.js BROKER[,BROKER...] TOPIC GROUP COUNT [existing]
const { Kafka, logLevel } = require('kafkajs');

const [brokers, topic, groupId, countArg, existing] = process.argv.slice(2);
const count = Number(countArg);

// valueFor is the value of record i; the Go test computes the same.
const valueFor = (i) => `value ${i} ü ✓ `.repeat(1 + (i % 7));

const kafka = new Kafka({ clientId: 'strata-kafkajs-test', brokers: brokers.split(','), logLevel: logLevel.ERROR });

async function main() {
  const admin = kafka.admin();
  await admin.connect();
  if (existing !== 'existing') {
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 3 }] });
  }

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const messages = [];
  for (let i = 0; i < count; i++) {
    messages.push({ key: `k${i}`, value: valueFor(i), headers: { h: `x${i}` } });
  }
  const sends = [];
  for (let i = 0; i < messages.length; i += 50) {
    const acked = await producer.send({ topic, acks: -1, messages: messages.slice(i, i + 50) });
    sends.push(acked.map((p) => ({ partition: p.partition, baseOffset: Number(p.baseOffset) })));
  }
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = new Set();
  const positions = {};
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed ${seen.size} of ${count} records in 60s`)), 60000);
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        const key = message.key.toString();
        const i = Number(key.slice(1));
        const value = message.value.toString();
        const header = message.headers.h && message.headers.h.toString();
        if (value !== valueFor(i) || header !== `x${i}`) {
          reject(new Error(`record ${key}: value ${JSON.stringify(value)}, header ${JSON.stringify(header)}`));
          return;
        }
        seen.add(key);
        positions[key] = { partition, offset: Number(message.offset) };
        if (seen.size === count) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect(); // commits what was consumed

  const fetched = await admin.fetchOffsets({ groupId, topics: [topic] });
  await admin.disconnect();
  const committed = fetched[0].partitions.reduce((sum, p) => sum + Number(p.offset), 0);
  console.log(JSON.stringify({ consumed: seen.size, committed, sends, positions }));
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
