package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/stratalog/strata/record"
)

// The built-in schema registry (package registry) as its clients meet it:
// franz-go's sr client and Serde, kafkajs with
// @kafkajs/confluent-schema-registry, producers refused by schema
// validation on produce, and the registry's state across a restart and a
// change of metadata leader.

// readingV1 is the Go value of readingV1Schema, readingV2 of
// readingV2Schema: a new field with a default, which BACKWARD_TRANSITIVE
// (the registry's default level) takes.
type readingV1 struct {
	Sensor string `avro:"sensor"`
	Value  int32  `avro:"value"`
}

type readingV2 struct {
	Sensor string `avro:"sensor"`
	Value  int32  `avro:"value"`
	Unit   string `avro:"unit"`
}

const (
	readingV1Schema = `{"type":"record","name":"Reading","namespace":"strata.test","fields":[` +
		`{"name":"sensor","type":"string"},{"name":"value","type":"int"}]}`
	readingV2Schema = `{"type":"record","name":"Reading","namespace":"strata.test","fields":[` +
		`{"name":"sensor","type":"string"},{"name":"value","type":"int"},{"name":"unit","type":"string","default":"C"}]}`
	// readingValueAsString changes value from int to string: no reader of
	// either can read the other's records.
	readingValueAsString = `{"type":"record","name":"Reading","namespace":"strata.test","fields":[` +
		`{"name":"sensor","type":"string"},{"name":"value","type":"string"}]}`
)

// registryClient is franz-go's schema registry client for s's registry.
func registryClient(t testing.TB, s *server) *sr.Client {
	t.Helper()
	cl, err := sr.NewClient(sr.URLs("http://" + s.registry))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// registerSchema registers text (AVRO unless typ says otherwise) under
// subject and returns the version the registry answers.
func registerSchema(ctx context.Context, t testing.TB, cl *sr.Client, subject, text string, typ sr.SchemaType) sr.SubjectSchema {
	t.Helper()
	ss, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: text, Type: typ})
	if err != nil {
		t.Fatalf("registering under %s: %v", subject, err)
	}
	return ss
}

// parseAvro parses text with a cache of its own: hamba's global cache is
// shared by every parse in the process, and two versions of one record
// have the same full name.
func parseAvro(t testing.TB, text string) avro.Schema {
	t.Helper()
	parsed, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}

// registerAvroCodec has serde encode and decode values of v's type with
// the Avro schema text, registered as id.
func registerAvroCodec(t testing.TB, serde *sr.Serde, id int, text string, v any) {
	t.Helper()
	parsed := parseAvro(t, text)
	serde.Register(id, v,
		sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(parsed, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(parsed, b, v) }),
	)
}

// wireFormat is payload in the schema registry's wire format: magic byte
// 0, the four-byte schema id, then payload.
func wireFormat(id int, payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), payload...)
}

// avroEncode encodes v with the Avro schema text, in the wire format with
// id.
func avroEncode(t testing.TB, id int, text string, v any) []byte {
	t.Helper()
	payload, err := avro.Marshal(parseAvro(t, text), v)
	if err != nil {
		t.Fatal(err)
	}
	return wireFormat(id, payload)
}

// TestSchemaRegistryClients: franz-go's sr client registers an Avro
// schema with the broker's registry, its Serde encodes records that a
// topic validating values (and decoding them) takes, and they read back
// and decode to what was written. An incompatible second version (int to
// string) is refused with 409; a compatible one becomes version 2. Then
// kafkajs with @kafkajs/confluent-schema-registry, unchanged from npm,
// registers the same schema (and gets franz-go's id), writes records with
// registry.encode() that the broker takes, has a value without the wire
// format refused as INVALID_RECORD, and reads and decodes every record,
// franz-go's too; franz-go decodes kafkajs's.
func TestSchemaRegistryClients(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const topic = "readings"
	const subject = topic + "-value"
	createTopic(t, s, topic, 1, map[string]*string{
		"confluent.value.schema.validation": kadmString("true"),
		"strata.schema.validation.decode":   kadmString("true"),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rcl := registryClient(t, s)

	v1 := registerSchema(ctx, t, rcl, subject, readingV1Schema, sr.TypeAvro)
	if v1.Version != 1 || v1.Subject != subject {
		t.Fatalf("the first registration is %+v, want version 1 of %s", v1, subject)
	}
	var serde sr.Serde
	registerAvroCodec(t, &serde, v1.ID, readingV1Schema, readingV1{})
	// gzip, which kafkajs reads without a codec of its own (franz-go's
	// default is snappy).
	cl := newClient(t, s, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	var records []*kgo.Record
	var written []any // by offset
	for i := range 20 {
		r := readingV1{Sensor: fmt.Sprintf("franz-%d", i), Value: int32(i)}
		records = append(records, &kgo.Record{Key: fmt.Appendf(nil, "go%d", i), Value: serde.MustEncode(r)})
		written = append(written, r)
	}
	produced := produceAll(t, cl, topic, records)

	_, err := rcl.CreateSchema(ctx, subject, sr.Schema{Schema: readingValueAsString})
	var refusal *sr.ResponseError
	if !errors.As(err, &refusal) || refusal.ErrorCode != 409 || refusal.StatusCode != 409 {
		t.Fatalf("registering value as a string after an int: %v (%#v), want error code 409", err, refusal)
	}
	v2 := registerSchema(ctx, t, rcl, subject, readingV2Schema, sr.TypeAvro)
	if v2.Version != 2 || v2.ID == v1.ID {
		t.Fatalf("the compatible second registration is %+v (the first has id %d), want version 2 with an id of its own", v2, v1.ID)
	}
	if versions, err := rcl.SubjectVersions(ctx, subject); err != nil || !slices.Equal(versions, []int{1, 2}) {
		t.Fatalf("%s has versions %v, %v; want [1 2]: the refused schema is no version", subject, versions, err)
	}
	registerAvroCodec(t, &serde, v2.ID, readingV2Schema, readingV2{})
	records = records[:0]
	for i := 20; i < 40; i++ {
		r := readingV2{Sensor: fmt.Sprintf("franz-%d", i), Value: int32(i), Unit: "C"}
		records = append(records, &kgo.Record{Key: fmt.Appendf(nil, "go%d", i), Value: serde.MustEncode(r)})
		written = append(written, r)
	}
	produced = append(produced, produceAll(t, cl, topic, records)...)

	consumed := consumeAll(t, s, topic, len(produced))
	checkSameRecords(t, produced, consumed)
	for _, r := range consumed {
		got, err := serde.DecodeNew(r.value)
		if err != nil {
			t.Fatalf("offset %d: decoding: %v", r.offset, err)
		}
		if v := reflect.ValueOf(got).Elem().Interface(); v != written[r.offset] {
			t.Fatalf("offset %d decodes to %+v, was written as %+v", r.offset, v, written[r.offset])
		}
	}

	t.Run("kafkajs", func(t *testing.T) {
		const count = 30 // as kafkajs writes them, in two sends
		total := len(written) + count
		js := kafkajsSchemaRegistry(t, s, topic, readingV2Schema, count, total)
		if js.ID != v2.ID {
			t.Fatalf("kafkajs registered the schema franz-go registered as id %d and got id %d", v2.ID, js.ID)
		}
		if js.Refused == nil || js.Refused.Type != "INVALID_RECORD" || js.Refused.Retriable {
			t.Fatalf("kafkajs sending a value without the wire format: %+v, want a non-retriable INVALID_RECORD", js.Refused)
		}
		// Each send lands right after the one before: the refused one
		// took no offset.
		if len(js.Sends) != 2 || len(js.Sends[0]) != 1 || len(js.Sends[1]) != 1 ||
			js.Sends[0][0].BaseOffset != int64(len(written)) || js.Sends[1][0].BaseOffset != int64(len(written)+count/2) {
			t.Fatalf("kafkajs's sends were acknowledged at %+v, want base offsets %d and %d", js.Sends, len(written), len(written)+count/2)
		}
		if len(js.Records) != total {
			t.Fatalf("kafkajs read %d records, want %d", len(js.Records), total)
		}
		for i, r := range js.Records {
			var want kafkajsReading
			switch w := writtenAt(written, r.Offset).(type) {
			case readingV1:
				want = kafkajsReading{Sensor: w.Sensor, Value: w.Value}
			case readingV2:
				want = kafkajsReading{Sensor: w.Sensor, Value: w.Value, Unit: &w.Unit}
			default:
				j := int(r.Offset) - len(written)
				unit := "K"
				want = kafkajsReading{Sensor: fmt.Sprintf("kafkajs-%d", j), Value: int32(j), Unit: &unit}
			}
			wantID := v2.ID
			if r.Offset < 20 {
				wantID = v1.ID
			}
			if r.Offset != int64(i) || r.SchemaID != wantID || !reflect.DeepEqual(r.Value, want) {
				t.Fatalf("kafkajs read record %d at offset %d with schema %d as %s; want offset %d, schema %d, %s",
					i, r.Offset, r.SchemaID, r.Value, i, wantID, want)
			}
		}
		// franz-go reads kafkajs's records, every one at the offset its
		// send was acknowledged at, and decodes them.
		all := consumeAll(t, s, topic, total)
		for i, r := range all {
			if r.offset != int64(i) {
				t.Fatalf("franz-go read offset %d as record %d: offsets are not dense", r.offset, i)
			}
			if i < len(written) {
				continue
			}
			j := i - len(written)
			got, err := serde.DecodeNew(r.value)
			want := readingV2{Sensor: fmt.Sprintf("kafkajs-%d", j), Value: int32(j), Unit: "K"}
			if err != nil || reflect.ValueOf(got).Elem().Interface() != want || string(r.key) != fmt.Sprintf("js%d", j) {
				t.Fatalf("franz-go decodes kafkajs's record at offset %d (key %q) as %+v, %v; want %+v", r.offset, r.key, got, err, want)
			}
		}
	})
}

// writtenAt is the value written at offset, nil past the end.
func writtenAt(written []any, offset int64) any {
	if offset < int64(len(written)) {
		return written[offset]
	}
	return nil
}

// kafkajsReading is a reading as registry.decode() gives it in
// testdata/kafkajs_schema_registry.js: no unit for a version 1 record.
type kafkajsReading struct {
	Sensor string  `json:"sensor"`
	Value  int32   `json:"value"`
	Unit   *string `json:"unit"`
}

func (r kafkajsReading) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// kafkajsRegistryRun is what testdata/kafkajs_schema_registry.js prints.
type kafkajsRegistryRun struct {
	ID    int
	Sends [][]struct {
		Partition  int32
		BaseOffset int64
	}
	Refused *struct {
		Name, Type string
		Retriable  bool
	}
	Records []struct {
		Offset   int64
		Key      *string
		SchemaID int
		Value    kafkajsReading
	}
}

// kafkajsSchemaRegistry runs testdata/kafkajs_schema_registry.js against
// s: it registers schema under topic's value subject, writes count
// records, and reads total from the topic's start. It skips the test when
// kafkajs or @kafkajs/confluent-schema-registry is not installed.
func kafkajsSchemaRegistry(t *testing.T, s *server, topic, schema string, count, total int) kafkajsRegistryRun {
	t.Helper()
	modules := kafkajsInstalled(t)
	if _, err := os.Stat(filepath.Join(modules, "@kafkajs", "confluent-schema-registry")); err != nil {
		t.Skip("@kafkajs/confluent-schema-registry is not installed in bin/kafkajs (make test installs it through scripts/test-deps)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "testdata/kafkajs_schema_registry.js",
		s.kafka, s.registry, topic, "kafkajs-registry", schema, fmt.Sprint(count), fmt.Sprint(total))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "KAFKAJS_NO_PARTITIONER_WARNING=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafkajs with the schema registry: %v\n%s\nserver log:\n%s", err, stderr.String(), s.log)
	}
	var run kafkajsRegistryRun
	if err := json.Unmarshal(stdout.Bytes(), &run); err != nil {
		t.Fatalf("kafkajs printed %q: %v", stdout.String(), err)
	}
	return run
}

// TestSchemaValidationOnProduce: on topics validating values, keys, and
// values decoded with their schema, each kind of bad record (no wire
// format, an id nobody registered, an id of another subject, a payload
// its schema cannot decode) fails its batch with INVALID_RECORD: franz-go
// sees kerr.InvalidRecord, and the broker's error message (read on a raw
// connection) names the record and why; nothing of the batch lands, and a
// good batch sent right after does, so a consumer from 0 reads only the
// good records, at dense offsets. Null keys and values pass; without
// strata.schema.validation.decode an undecodable payload passes. The
// refusals are counted by reason on /metrics. A subject name strategy
// other than TopicNameStrategy is refused with INVALID_CONFIG.
func TestSchemaValidationOnProduce(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	on := kadmString("true")
	createTopic(t, s, "checked-values", 1, map[string]*string{"confluent.value.schema.validation": on})
	createTopic(t, s, "checked-keys", 1, map[string]*string{"confluent.key.schema.validation": on})
	createTopic(t, s, "checked-decoded", 1, map[string]*string{"confluent.value.schema.validation": on, "strata.schema.validation.decode": on})

	const (
		orderSchema   = `{"type":"record","name":"Order","namespace":"strata.test","fields":[{"name":"id","type":"int"},{"name":"item","type":"string"}]}`
		invoiceSchema = `{"type":"record","name":"Invoice","namespace":"strata.test","fields":[{"name":"number","type":"long"}]}`
		paymentSchema = `{"type":"record","name":"Payment","namespace":"strata.test","fields":[{"name":"amount","type":"long"},{"name":"currency","type":"string"}]}`
		keySchema     = `"string"`
	)
	type order struct {
		ID   int32  `avro:"id"`
		Item string `avro:"item"`
	}
	type invoice struct {
		Number int64 `avro:"number"`
	}
	type payment struct {
		Amount   int64  `avro:"amount"`
		Currency string `avro:"currency"`
	}
	rcl := registryClient(t, s)
	valueID := registerSchema(ctx, t, rcl, "checked-values-value", orderSchema, sr.TypeAvro).ID
	keyID := registerSchema(ctx, t, rcl, "checked-keys-key", keySchema, sr.TypeAvro).ID
	otherID := registerSchema(ctx, t, rcl, "invoices-value", invoiceSchema, sr.TypeAvro).ID
	decodedID := registerSchema(ctx, t, rcl, "checked-decoded-value", paymentSchema, sr.TypeAvro).ID
	const unregistered = 1 << 20

	// good makes topic's i-th good record.
	good := func(topic string, i int) *kgo.Record {
		switch topic {
		case "checked-values":
			return &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: avroEncode(t, valueID, orderSchema, order{ID: int32(i), Item: "book"})}
		case "checked-keys":
			return &kgo.Record{Key: avroEncode(t, keyID, keySchema, fmt.Sprintf("customer-%d", i)), Value: fmt.Appendf(nil, "not checked %d", i)}
		default:
			return &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: avroEncode(t, decodedID, paymentSchema, payment{Amount: int64(i), Currency: "EUR"})}
		}
	}
	refusals := map[string]float64{} // by reason, as /metrics must count them
	payload := avroEncode(t, decodedID, paymentSchema, payment{Amount: 7, Currency: "EUR"})
	for _, tc := range []struct {
		name, topic string
		key, value  []byte // the bad record's
		reason      string // the metric's label
		message     string // in the broker's error message
	}{
		{"a value without the wire format", "checked-values", nil, []byte(`{"id":1,"item":"book"}`), "no_magic_byte",
			"value does not start with the schema registry's wire format"},
		{"a value shorter than the wire format's header", "checked-values", nil, []byte{0, 0, 0}, "no_magic_byte",
			"value does not start with the schema registry's wire format"},
		{"a value with an unregistered id", "checked-values", nil, avroEncode(t, unregistered, orderSchema, order{ID: 1, Item: "book"}), "unknown_schema",
			fmt.Sprintf("value names schema id %d, which is not registered", unregistered)},
		{"a value with another subject's id", "checked-values", nil, avroEncode(t, otherID, invoiceSchema, invoice{Number: 1}), "wrong_subject",
			fmt.Sprintf(`value names schema id %d, which is not a version of subject "checked-values-value"`, otherID)},
		{"a key without the wire format", "checked-keys", []byte("customer-1"), []byte("v"), "no_magic_byte",
			"key does not start with the schema registry's wire format"},
		{"a key with the value subject's id", "checked-keys", avroEncode(t, valueID, orderSchema, order{ID: 1, Item: "book"}), []byte("v"), "wrong_subject",
			fmt.Sprintf(`key names schema id %d, which is not a version of subject "checked-keys-key"`, valueID)},
		{"a value its schema cannot decode", "checked-decoded", nil, payload[:len(payload)-2], "undecodable",
			fmt.Sprintf("value does not decode with schema %d", decodedID)},
	} {
		refusals[tc.reason]++
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			raw := dialRaw(t, s)
			before := logEnd(t, raw, tc.topic)
			// A batch of a good record, the bad one, a good one.
			first, last := good(tc.topic, 0), good(tc.topic, 1)
			batch, err := record.Build(record.BuildOptions{ProducerID: -1, BaseSequence: -1, FirstTimestamp: time.Now().UnixMilli()}, []record.Record{
				{Key: first.Key, Value: first.Value}, {Key: tc.key, Value: tc.value}, {Key: last.Key, Value: last.Value},
			})
			if err != nil {
				t.Fatal(err)
			}
			resp := raw.roundTrip(produceRequest(tc.topic, 0, batch), 8).(*kmsg.ProduceResponse)
			p := resp.Topics[0].Partitions[0]
			message := deref(p.ErrorMessage)
			wantErrorCode(t, tc.name, p.ErrorCode, kerr.InvalidRecord)
			if !strings.Contains(message, "record 1: "+tc.message) {
				t.Fatalf("%s: the error message is %q, want it to name record 1 and say %q", tc.name, message, tc.message)
			}
			if len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 1 || !strings.Contains(deref(p.ErrorRecords[0].ErrorMessage), tc.message) {
				t.Fatalf("%s: the error records are %+v, want record 1 saying %q", tc.name, p.ErrorRecords, tc.message)
			}
			if end := logEnd(t, raw, tc.topic); end != before {
				t.Fatalf("%s: the log end moved from %d to %d: some of a refused batch was appended", tc.name, before, end)
			}
		})
	}
	// franz-go's idempotent producer: each bad record refused alone, then
	// a good batch lands right after it.
	produced := map[string][]testRecord{}
	cl := newClient(t, s)
	next := map[string]int{}
	goodBatch := func(topic string) {
		t.Helper()
		records := []*kgo.Record{good(topic, next[topic]), good(topic, next[topic]+1)}
		next[topic] += 2
		produced[topic] = append(produced[topic], produceAll(t, cl, topic, records)...)
	}
	for _, tc := range []struct {
		topic      string
		key, value []byte
		reason     string
	}{
		{"checked-values", nil, []byte("plain text"), "no_magic_byte"},
		{"checked-values", nil, avroEncode(t, unregistered, orderSchema, order{ID: 1, Item: "book"}), "unknown_schema"},
		{"checked-values", nil, avroEncode(t, otherID, invoiceSchema, invoice{Number: 1}), "wrong_subject"},
		{"checked-keys", []byte("customer-1"), []byte("v"), "no_magic_byte"},
		{"checked-keys", wireFormat(otherID, nil), []byte("v"), "wrong_subject"},
		{"checked-decoded", nil, wireFormat(decodedID, []byte{0xff}), "undecodable"},
	} {
		goodBatch(tc.topic)
		results := produce(cl, tc.topic, []*kgo.Record{{Key: tc.key, Value: tc.value}})
		if err := results.FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("%s: franz-go producing a record refused as %s: %v, want INVALID_RECORD", tc.topic, tc.reason, err)
		}
		refusals[tc.reason]++
		goodBatch(tc.topic)
	}

	// What validation lets through: null values and keys (tombstones,
	// keyless records), and, without decoding, a payload no schema reads.
	for _, r := range []struct {
		topic string
		rec   *kgo.Record
	}{
		{"checked-values", &kgo.Record{Key: []byte("tombstone"), Value: nil}},
		{"checked-values", &kgo.Record{Key: []byte("undecodable"), Value: wireFormat(valueID, []byte{0xff})}},
		{"checked-keys", &kgo.Record{Key: nil, Value: []byte("keyless")}},
		{"checked-decoded", &kgo.Record{Key: []byte("tombstone"), Value: nil}},
	} {
		produced[r.topic] = append(produced[r.topic], produceAll(t, cl, r.topic, []*kgo.Record{r.rec})...)
	}

	// kcat (librdkafka) sees the refusal too.
	if _, err := exec.LookPath("kcat"); err == nil {
		kctx, kcancel := context.WithTimeout(ctx, time.Minute)
		cmd := exec.CommandContext(kctx, "kcat", "-P", "-b", s.kafka, "-t", "checked-values", "-p", "0", "-X", "message.send.max.retries=0")
		cmd.Stdin = strings.NewReader("plain text from kcat\n")
		out, err := cmd.CombinedOutput()
		kcancel()
		if err == nil || !strings.Contains(string(out), "Broker failed to validate record") {
			t.Fatalf("kcat producing a plain value to a validated topic: %v, %q; want it to fail with INVALID_RECORD (Broker failed to validate record)", err, out)
		}
		refusals["no_magic_byte"]++
		goodBatch("checked-values")
	} else {
		t.Log("kcat is not installed: not producing with it (make test installs it through scripts/test-deps)")
	}

	raw := dialRaw(t, s)
	for _, topic := range []string{"checked-values", "checked-keys", "checked-decoded"} {
		checkSameRecords(t, produced[topic], consumeAll(t, s, topic, len(produced[topic])))
		if end := logEnd(t, raw, topic); end != int64(len(produced[topic])) {
			t.Fatalf("%s ends at %d, and %d records were acknowledged", topic, end, len(produced[topic]))
		}
	}
	m := scrapeMetrics(t, s)
	for reason, want := range refusals {
		if got := m.value(t, "strata_registry_records_refused_total", "reason", reason); got != want {
			t.Errorf("strata_registry_records_refused_total{reason=%q} is %v, want %v", reason, got, want)
		}
	}
	if got := m.value(t, "strata_registry_registrations_total"); got != 4 {
		t.Errorf("strata_registry_registrations_total is %v, want 4", got)
	}

	// Only TopicNameStrategy names the subjects validation checks.
	admin := kadm.NewClient(cl)
	for i, name := range []string{"confluent.value.subject.name.strategy", "confluent.key.subject.name.strategy"} {
		resp, err := admin.CreateTopic(ctx, 1, 1, map[string]*string{name: kadmString("io.confluent.kafka.serializers.subject.RecordNameStrategy")}, fmt.Sprintf("record-name-strategy-%d", i))
		if err == nil {
			err = resp.Err
		}
		if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(resp.ErrMessage, name) {
			t.Errorf("creating a topic with %s=RecordNameStrategy: %v %q, want INVALID_CONFIG naming it", name, err, resp.ErrMessage)
		}
		createTopic(t, s, fmt.Sprintf("topic-name-strategy-%d", i), 1, map[string]*string{name: kadmString("io.confluent.kafka.serializers.subject.TopicNameStrategy")})
	}
}

// registryView is what a broker's registry serves, as text to compare:
// each live version of each subject with its id, type and schema, which
// the schema by id must match.
func registryView(ctx context.Context, cl *sr.Client) (string, error) {
	subjects, err := cl.Subjects(ctx)
	if err != nil {
		return "", err
	}
	slices.Sort(subjects)
	var b strings.Builder
	for _, subject := range subjects {
		versions, err := cl.SubjectVersions(ctx, subject)
		if err != nil {
			return "", err
		}
		for _, v := range versions {
			ss, err := cl.SchemaByVersion(ctx, subject, v)
			if err != nil {
				return "", err
			}
			byID, err := cl.SchemaByID(ctx, ss.ID)
			if err != nil {
				return "", err
			}
			if byID.Schema != ss.Schema.Schema || byID.Type != ss.Type {
				return "", fmt.Errorf("%s version %d is id %d, and id %d is another schema: %q", subject, v, ss.ID, ss.ID, byID.Schema)
			}
			fmt.Fprintf(&b, "%s v%d id %d %s %s\n", subject, v, ss.ID, ss.Type, ss.Schema.Schema)
		}
	}
	return b.String(), nil
}

// waitForView waits until cl's registry serves want.
func waitForView(ctx context.Context, t *testing.T, cl *sr.Client, what, want string) {
	t.Helper()
	var got string
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got, err = registryView(ctx, cl); err == nil && got == want {
			return
		}
	}
	t.Fatalf("%s: the registry serves\n%s(%v), want\n%s", what, got, err, want)
}

// sensorSchema is version n (from 1) of the sensors subject: each adds a
// field with a default.
func sensorSchema(n int) string {
	fields := []string{`{"name":"sensor","type":"string"}`, `{"name":"value","type":"int"}`}
	for i := 2; i <= n; i++ {
		fields = append(fields, fmt.Sprintf(`{"name":"extra%d","type":"string","default":""}`, i))
	}
	return `{"type":"record","name":"Sensor","namespace":"strata.test","fields":[` + strings.Join(fields, ",") + `]}`
}

const (
	alertSchema = `{"type":"object","properties":{"level":{"type":"string"}},"required":["level"]}`
	eventSchema = "syntax = \"proto3\";\npackage strata.test;\n\nmessage Event {\n  string name = 1;\n  int32 count = 2;\n}\n"
)

// createValidatedTopicOn creates topic with validation of its values,
// partition p led by (the only replica on) brokers[p].
func createValidatedTopicOn(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, brokers ...int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30_000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, broker := range brokers {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), []int32{broker}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name, c.Value = "confluent.value.schema.validation", kmsg.StringPtr("true")
	rt.Configs = append(rt.Configs, c)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		if err = kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
			err = fmt.Errorf("%w: %s", err, deref(resp.Topics[0].ErrorMessage))
		}
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	waitPartitions(ctx, t, kadm.NewClient(cl), topic, "led by their brokers", func(p kadm.PartitionDetail) bool {
		return p.Leader == brokers[p.Partition]
	})
}

// metadataLeader is the metadata leader's node id as s sees it now.
func metadataLeader(t *testing.T, s *server) string {
	t.Helper()
	st, err := clusterStatusOf(s)
	if err != nil {
		return "unknown: " + err.Error()
	}
	return st.LeaderID
}

// TestSchemaRegistrySurvivesRestartAndLeaderChange: in a cluster of three,
// schemas of each type registered through one broker's registry are served
// alike, with the same ids and versions, by the others', and a record
// written with a schema just registered through one broker is taken by a
// validating partition whichever broker leads it. With the metadata leader
// killed, a survivor registers another version; the killed broker,
// restarted, serves every version with the ids it had. A single broker
// stopped and started keeps its registry: schemas, ids, a subject's level,
// a soft-deleted version, validation of produce.
func TestSchemaRegistrySurvivesRestartAndLeaderChange(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("three brokers", func(t *testing.T) {
		servers := startCluster(t, 3)
		clients := make([]*sr.Client, len(servers))
		for i, s := range servers {
			clients[i] = registryClient(t, s)
		}
		ids := map[int]bool{}
		for n := 1; n <= 2; n++ {
			ss := registerSchema(ctx, t, clients[0], "sensors-value", sensorSchema(n), sr.TypeAvro)
			if ss.Version != n {
				t.Fatalf("registered sensors-value version %d, want %d", ss.Version, n)
			}
			ids[ss.ID] = true
		}
		ids[registerSchema(ctx, t, clients[0], "alerts-value", alertSchema, sr.TypeJSON).ID] = true
		ids[registerSchema(ctx, t, clients[0], "events-value", eventSchema, sr.TypeProtobuf).ID] = true
		if len(ids) != 4 {
			t.Fatalf("four schemas registered with ids %v", ids)
		}
		want, err := registryView(ctx, clients[0])
		if err != nil {
			t.Fatal(err)
		}
		for i, cl := range clients[1:] {
			waitForView(ctx, t, cl, fmt.Sprintf("broker %d", i+2), want)
		}

		// Register and produce at once, as Confluent's serializers do
		// (auto.register.schemas): the partition's leader must know the
		// id whichever broker registered it.
		seeds := kafkaAddresses(servers)
		producer := newClientSeeds(t, seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		createValidatedTopicOn(ctx, t, producer, "sensors", 1, 2, 3)
		version := 2
		var refused []string
		var retry []*kgo.Record
		var via int // the broker the last round registered through
		for round := range 6 {
			via = round % len(servers)
			version++
			ss := registerSchema(ctx, t, clients[via], "sensors-value", sensorSchema(version), sr.TypeAvro)
			ids[ss.ID] = true
			value := avroEncode(t, ss.ID, sensorSchema(version), map[string]any{"sensor": "s", "value": round})
			var records []*kgo.Record
			for p := range int32(len(servers)) {
				records = append(records, &kgo.Record{Topic: "sensors", Partition: p, Value: value})
			}
			for _, res := range producer.ProduceSync(ctx, records...) {
				if res.Err != nil {
					refused = append(refused, fmt.Sprintf("schema %d registered through broker %d (metadata leader %s), produced to the partition broker %d leads: %v",
						ss.ID, via+1, metadataLeader(t, servers[0]), res.Record.Partition+1, res.Err))
					retry = append(retry, &kgo.Record{Topic: "sensors", Partition: res.Record.Partition, Value: res.Record.Value})
				}
			}
		}
		if len(refused) > 0 {
			// Once every broker serves the registration, the same
			// records are taken: the partition leaders refused them
			// because their metadata had not yet applied it.
			want, err := registryView(ctx, clients[via])
			if err != nil {
				t.Fatal(err)
			}
			for i, cl := range clients {
				waitForView(ctx, t, cl, fmt.Sprintf("broker %d", i+1), want)
			}
			taken := producer.ProduceSync(ctx, retry...).FirstErr()
			t.Errorf("records written with a schema just registered through another broker were refused with INVALID_RECORD "+
				"(sent again once every broker serves the registration: %v):\n%s", taken, strings.Join(refused, "\n"))
		}

		st := waitForStatus(t, servers[0], "a metadata leader", func(st metaStatus) bool { return st.LeaderID != "" })
		var leader int
		fmt.Sscan(st.LeaderID, &leader)
		killed := servers[leader-1]
		var survivors []*sr.Client
		var survivorServers []*server
		for i, s := range servers {
			if i != leader-1 {
				survivors, survivorServers = append(survivors, clients[i]), append(survivorServers, s)
			}
		}
		before, err := registryView(ctx, survivors[0])
		if err != nil {
			t.Fatal(err)
		}
		killed.kill()
		waitForStatus(t, survivorServers[0], "a new metadata leader", func(st metaStatus) bool {
			return st.LeaderID != "" && st.LeaderID != fmt.Sprint(leader)
		})
		version++
		ss := registerSchema(ctx, t, survivors[1], "sensors-value", sensorSchema(version), sr.TypeAvro)
		if ids[ss.ID] || ss.Version != version {
			t.Fatalf("registered after the leader's kill: %+v; ids before %v, want version %d with a new id", ss, ids, version)
		}
		want, err = registryView(ctx, survivors[1])
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.SplitAfter(before, "\n") {
			if !strings.Contains(want, line) {
				t.Fatalf("after the leader's kill the registry no longer serves %q:\n%s", line, want)
			}
		}
		waitForView(ctx, t, survivors[0], "the other survivor", want)

		killed.restart()
		waitForView(ctx, t, clients[leader-1], fmt.Sprintf("broker %d, killed as the metadata leader and restarted", leader), want)
	})

	t.Run("one broker restarted", func(t *testing.T) {
		s := startServer(t)
		cl := registryClient(t, s)
		v1 := registerSchema(ctx, t, cl, "readings-value", readingV1Schema, sr.TypeAvro)
		v2 := registerSchema(ctx, t, cl, "readings-value", readingV2Schema, sr.TypeAvro)
		alert := registerSchema(ctx, t, cl, "alerts-value", alertSchema, sr.TypeJSON)
		if set := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "alerts-value"); set[0].Err != nil {
			t.Fatal(set[0].Err)
		}
		if err := cl.DeleteSchema(ctx, "readings-value", 1, sr.SoftDelete); err != nil {
			t.Fatal(err)
		}
		createTopic(t, s, "readings", 1, map[string]*string{"confluent.value.schema.validation": kadmString("true")})
		kcl := newClient(t, s)
		produced := produceAll(t, kcl, "readings", []*kgo.Record{{Value: avroEncode(t, v2.ID, readingV2Schema, readingV2{Sensor: "a", Value: 1, Unit: "C"})}})
		want, err := registryView(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}

		s.stop()
		s.restart()

		if got, err := registryView(ctx, cl); err != nil || got != want {
			t.Fatalf("after a restart the registry serves\n%s(%v), want\n%s", got, err, want)
		}
		if byID, err := cl.SchemaByID(ctx, v1.ID); err != nil || byID.Schema != readingV1Schema {
			t.Fatalf("after a restart the soft-deleted version's id %d answers %+v, %v", v1.ID, byID, err)
		}
		if versions, err := cl.SubjectVersions(ctx, "readings-value"); err != nil || !slices.Equal(versions, []int{2}) {
			t.Fatalf("after a restart readings-value has live versions %v, %v; want [2]", versions, err)
		}
		if got := cl.Compatibility(ctx, "alerts-value"); got[0].Err != nil || got[0].Level != sr.CompatNone {
			t.Fatalf("after a restart alerts-value's level is %+v, want NONE", got[0])
		}
		if again := registerSchema(ctx, t, cl, "readings-value", readingV2Schema, sr.TypeAvro); again.ID != v2.ID || again.Version != 2 {
			t.Fatalf("registering version 2 again after a restart answers %+v, want id %d version 2", again, v2.ID)
		}
		fresh := registerSchema(ctx, t, cl, "fresh-value", sensorSchema(1), sr.TypeAvro)
		if slices.Contains([]int{v1.ID, v2.ID, alert.ID}, fresh.ID) {
			t.Fatalf("a schema registered after a restart got id %d, which was given before", fresh.ID)
		}
		// Validation on produce still knows the ids.
		produced = append(produced, produceAll(t, kcl, "readings", []*kgo.Record{{Value: avroEncode(t, v2.ID, readingV2Schema, readingV2{Sensor: "b", Value: 2, Unit: "C"})}})...)
		if err := produce(kcl, "readings", []*kgo.Record{{Value: avroEncode(t, fresh.ID, sensorSchema(1), readingV1{Sensor: "c"})}}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("after a restart, a value with another subject's id: %v, want INVALID_RECORD", err)
		}
		checkSameRecords(t, produced, consumeAll(t, s, "readings", len(produced)))
	})
}

// TestSchemaCLI: a schema registered with `strata schema register`
// validates a topic's values; records franz-go writes with it read back
// through `strata consume --decode` as JSON, and a record without the wire
// format prints as it is.
func TestSchemaCLI(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic = "cli-orders"
	const text = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"item","type":"string"}]}`
	file := filepath.Join(t.TempDir(), "order.avsc")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := s.strata(ctx, "", append(args, "--registry", s.registry)...)
		if err != nil {
			t.Fatalf("strata %v: %v\n%s", args, err, out)
		}
		return out
	}
	if out := run("schema", "register", topic+"-value", "--file", file); !strings.Contains(out, "version 1") {
		t.Fatalf("schema register printed %q", out)
	}
	id := registerSchema(ctx, t, registryClient(t, s), topic+"-value", text, sr.TypeAvro).ID // the same schema: its id
	createTopic(t, s, topic, 1, nil)
	type order struct {
		ID   int64  `avro:"id"`
		Item string `avro:"item"`
	}
	cl := newClient(t, s, kgo.DefaultProduceTopic(topic))
	for _, v := range []*kgo.Record{
		{Value: avroEncode(t, id, text, order{ID: 1, Item: "tea"})},
		{Value: []byte("plain text")},
		{Value: avroEncode(t, id, text, order{ID: 2, Item: "café"})},
	} {
		if err := cl.ProduceSync(ctx, v).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out := run("consume", topic, "--decode", "--max", "3")
	want := []string{`{"id":1,"item":"tea"}`, "plain text", `{"id":2,"item":"café"}`}
	if got := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(got, want) {
		t.Fatalf("consume --decode printed %q, want %q", got, want)
	}
}
