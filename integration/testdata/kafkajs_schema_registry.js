// Registers an Avro schema with @kafkajs/confluent-schema-registry under
// TOPIC-value, sends COUNT records its registry.encode() wrote, in two sends
// around one send of a value without the wire format (which the broker
// must refuse), then reads the topic from its start with a consumer group
// until it has TOTAL records, decoding each with registry.decode(), which
// learns every schema by its id from the registry. Prints one JSON line:
// {id, sends, refused, records: [{offset, key, schemaId, value}]}. Run by
// TestSchemaRegistryClients; exits non-zero on anything unexpected or if
// TOTAL records are not read within 60 s.
//
// Usage: node kafkajs_schema_registry.js BROKER REGISTRY TOPIC GROUP SCHEMA COUNT TOTAL
const { Kafka, logLevel } = require('kafkajs');
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry');

const [broker, registryAddress, topic, groupId, schema, countArg, totalArg] = process.argv.slice(2);
const count = Number(countArg);
const total = Number(totalArg);
const kafka = new Kafka({ clientId: 'strata-kafkajs-registry', brokers: [broker], logLevel: logLevel.NOTHING, retry: { retries: 3 } });
const registry = new SchemaRegistry({ host: `http://${registryAddress}` });

// The value of record i, as the Go test expects it back.
function value(i) {
  return { sensor: `kafkajs-${i}`, value: i, unit: 'K' };
}

async function sendEncoded(producer, id, from, to) {
  const messages = [];
  for (let i = from; i < to; i++) {
    messages.push({ key: `js${i}`, value: await registry.encode(id, value(i)) });
  }
  const acked = await producer.send({ topic, acks: -1, messages });
  return acked.map((r) => ({ partition: r.partition, baseOffset: Number(r.baseOffset) }));
}

async function main() {
  const { id } = await registry.register({ type: SchemaType.AVRO, schema }, { subject: `${topic}-value` });

  const producer = kafka.producer();
  await producer.connect();
  const sends = [await sendEncoded(producer, id, 0, count / 2)];
  // A value a producer wrote without the serializer: refused, and nothing
  // of its send lands.
  let refused = null;
  try {
    await producer.send({ topic, acks: -1, messages: [{ key: 'plain', value: '{"sensor":"plain","value":1}' }] });
  } catch (err) {
    const cause = err.type ? err : err.cause || {};
    refused = { name: err.name, type: cause.type || null, retriable: cause.retriable === true };
  }
  sends.push(await sendEncoded(producer, id, count / 2, count));
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const records = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${records.length} of ${total} records in 60s`)), 60000);
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      clearTimeout(timer);
      reject(payload.error);
    });
    consumer.run({
      eachMessage: async ({ message }) => {
        records.push({
          offset: Number(message.offset),
          key: message.key === null ? null : message.key.toString(),
          schemaId: message.value.readInt32BE(1),
          value: await registry.decode(message.value),
        });
        if (records.length >= total) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  console.log(JSON.stringify({ id, sends, refused, records }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
