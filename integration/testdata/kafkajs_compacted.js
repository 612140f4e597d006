// Reads partition 0 of a compacted topic from its start with a kafkajs
// consumer group until the record keyed "end", and prints one JSON line:
// every record read, as {offset, key, value}. Run by
// TestCompactedTopicOtherClients; exits non-zero if the end is not reached
// within 60 s.
//
// Usage: node kafkajs_compacted.js BROKER TOPIC GROUP
const { Kafka, logLevel } = require('kafkajs');

const [broker, topic, groupId] = process.argv.slice(2);
const kafka = new Kafka({ clientId: 'strata-kafkajs-compacted', brokers: [broker], logLevel: logLevel.ERROR });

async function main() {
  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const read = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${read.length} records and no end marker in 60s`)), 60000);
    consumer.run({
      eachMessage: async ({ message }) => {
        const key = message.key === null ? null : message.key.toString();
        read.push({ offset: Number(message.offset), key, value: message.value === null ? null : message.value.toString() });
        if (key === 'end') {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  console.log(JSON.stringify(read));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
