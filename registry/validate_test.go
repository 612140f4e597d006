package registry

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
)

// Schema validation on produce (CheckBatch) over values franz-go's Serde
// encodes with schemas registered through its client: what passes, and
// each refusal naming the record and why.

// person is the Go value of personSchema.
type person struct {
	Name string `avro:"name"`
	Age  int32  `avro:"age"`
}

var personSchema = avroRecord("Person", `{"name":"name","type":"string"}`, `{"name":"age","type":"int"}`)

// personSerde registers personSchema under subject and returns a Serde
// that encodes and decodes person with it, and the schema's id.
func personSerde(t *testing.T, s *served, subject string) (*sr.Serde, int) {
	t.Helper()
	id, err := s.client.RegisterSchema(t.Context(), subject, avroSchema(personSchema), -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	// A cache of this test's own: hamba's global one is shared by every
	// parse in the process.
	parsed, err := avro.ParseWithCache(personSchema, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	var serde sr.Serde
	serde.Register(id, person{},
		sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(parsed, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(parsed, b, v) }),
	)
	return &serde, id
}

// batchOf builds a producer's batch of records with values.
func batchOf(t *testing.T, values ...[]byte) record.Batch {
	t.Helper()
	records := make([]record.Record, len(values))
	for i, v := range values {
		records[i] = record.Record{Key: []byte{byte('a' + i)}, Value: v}
	}
	return buildBatch(t, records)
}

func buildBatch(t *testing.T, records []record.Record) record.Batch {
	t.Helper()
	b, err := record.Build(record.BuildOptions{ProducerID: -1, BaseSequence: -1, FirstTimestamp: 1}, records)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := record.Check(b)
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// wireFormat is a payload in the registry's wire format: magic byte 0,
// the id, then payload.
func wireFormat(id int, payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), payload...)
}

func TestSerdeRoundTrip(t *testing.T) {
	t.Parallel()
	s := serve(t, testMeta(t))
	serde, id := personSerde(t, s, subjectName(t, "value"))
	in := person{Name: "Ada", Age: 36}
	encoded, err := serde.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if encoded[0] != 0 || int(binary.BigEndian.Uint32(encoded[1:5])) != id {
		t.Fatalf("encoded % x does not carry id %d", encoded, id)
	}
	var out person
	if err := serde.Decode(encoded, &out); err != nil || out != in {
		t.Fatalf("decoded %+v, %v; want %+v", out, err, in)
	}

	// The registry decodes it too, with the schema it serves for the id.
	st := s.reg.meta.State()
	parsed, _, err := s.reg.Schema(st, int32(id))
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := parsed.Decode(encoded[5:])
	if err != nil || string(decoded) != `{"name":"Ada","age":36}` {
		t.Fatalf("the registry decodes %s, %v", decoded, err)
	}

	// A client that learns the schema by id from the registry decodes it
	// as well: the text it serves parses to the same schema.
	text, err := s.client.SchemaTextByID(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	served, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	var again person
	if err := avro.Unmarshal(served, encoded[5:], &again); err != nil || again != in {
		t.Fatalf("decoded with the served schema %+v, %v", again, err)
	}
}

func TestCheckBatch(t *testing.T) {
	t.Parallel()
	node := testMeta(t)
	s := serve(t, node)
	base := strings.ToLower(subjectName(t, ""))
	plain := createTopic(t, node, base+"-plain", map[string]string{"confluent.value.schema.validation": "true"})
	decoding := createTopic(t, node, base+"-decode", map[string]string{
		"confluent.value.schema.validation": "true", "strata.schema.validation.decode": "true"})
	keyed := createTopic(t, node, base+"-keyed", map[string]string{"confluent.key.schema.validation": "true"})

	serde, id := personSerde(t, s, plain.Name+"-value")
	if _, err := s.client.RegisterSchema(t.Context(), decoding.Name+"-value", avroSchema(personSchema), -1, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.RegisterSchema(t.Context(), keyed.Name+"-key", avroSchema(personSchema), -1, -1); err != nil {
		t.Fatal(err)
	}
	// A schema of another subject only.
	otherID, err := s.client.RegisterSchema(t.Context(), base+"-elsewhere-value", avroSchema(`"string"`), -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	good := serde.MustEncode(person{Name: "Grace", Age: 85})
	truncated := good[:len(good)-1]

	for _, tc := range []struct {
		name   string
		topic  meta.Topic
		batch  record.Batch
		index  int    // of the refused record; -1 when the batch passes
		reason string // in the error
		metric string // the reason label counted
	}{
		{"good", plain, batchOf(t, good), -1, "", ""},
		{"good, decoded", decoding, batchOf(t, good, good), -1, "", ""},
		{"null values", plain, batchOf(t, nil, good, nil), -1, "", ""},
		{"truncated without decoding", plain, batchOf(t, truncated), -1, "", ""},
		{"no magic byte", plain, batchOf(t, good, []byte(`{"name":"Grace"}`)), 1, "magic byte", "no_magic_byte"},
		{"magic byte 1", plain, batchOf(t, append([]byte{1}, good[1:]...)), 0, "magic byte", "no_magic_byte"},
		{"too short for an id", plain, batchOf(t, good, good, []byte{0, 0, 0}), 2, "magic byte", "no_magic_byte"},
		{"empty", plain, batchOf(t, good, []byte{}), 1, "magic byte", "no_magic_byte"},
		{"unregistered id", plain, batchOf(t, wireFormat(1<<30, good[5:])), 0, "not registered", "unknown_schema"},
		{"negative id", plain, batchOf(t, wireFormat(-1, good[5:])), 0, "not registered", "unknown_schema"},
		{"another subject's id", plain, batchOf(t, good, wireFormat(otherID, []byte{2, 'x'})), 1, "not a version of subject", "wrong_subject"},
		{"undecodable", decoding, batchOf(t, good, truncated), 1, "does not decode", "undecodable"},
		{"bytes after the value", decoding, batchOf(t, append(good[:len(good):len(good)], 0)), 0, "does not decode", "undecodable"},
		{"values unchecked on a key topic", keyed, buildBatch(t, []record.Record{{Key: good, Value: []byte("x")}}), -1, "", ""},
		{"keyless record", keyed, buildBatch(t, []record.Record{{Value: []byte("x")}}), -1, "", ""},
		{"bad key", keyed, buildBatch(t, []record.Record{{Key: good}, {Key: []byte("k")}}), 1, "key does not start", "no_magic_byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := refusedCount(t, s, tc.metric)
			err := s.reg.CheckBatch(t.Context(), node.State(), tc.topic, tc.batch, record.MaxDecompressedBytes)
			if tc.index < 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var re *record.RecordError
			if !errors.As(err, &re) {
				t.Fatalf("error %v (%T), want a *record.RecordError", err, err)
			}
			if re.Index != tc.index || !strings.Contains(re.Reason, tc.reason) {
				t.Fatalf("record %d: %q; want record %d, %q", re.Index, re.Reason, tc.index, tc.reason)
			}
			if !errors.Is(err, record.ErrInvalid) {
				t.Fatalf("%v does not match record.ErrInvalid", err)
			}
			if got := refusedCount(t, s, tc.metric); got != before+1 {
				t.Fatalf("refused{reason=%q} went from %v to %v", tc.metric, before, got)
			}
		})
	}

	// A version soft-deleted no longer validates; registered again, it does.
	check := func() error {
		return s.reg.CheckBatch(t.Context(), node.State(), plain, batchOf(t, good), record.MaxDecompressedBytes)
	}
	if _, err := s.client.DeleteSubject(t.Context(), plain.Name+"-value", sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	var re *record.RecordError
	if err := check(); !errors.As(err, &re) || !strings.Contains(re.Reason, "not a version of subject") {
		t.Fatalf("after a soft delete: %v", err)
	}
	if again, err := s.client.RegisterSchema(t.Context(), plain.Name+"-value", avroSchema(personSchema), -1, -1); err != nil || again != id {
		t.Fatalf("registered again: %d, %v", again, err)
	}
	if err := check(); err != nil {
		t.Fatalf("registered again: %v", err)
	}
}

// A compressed batch is checked record by record after decompression.
func TestCheckBatchCompressed(t *testing.T) {
	t.Parallel()
	node := testMeta(t)
	s := serve(t, node)
	topic := createTopic(t, node, strings.ToLower(subjectName(t, "")), map[string]string{
		"confluent.value.schema.validation": "true", "strata.schema.validation.decode": "true"})
	serde, _ := personSerde(t, s, topic.Name+"-value")
	var records []record.Record
	for i := range 50 {
		records = append(records, record.Record{Value: serde.MustEncode(person{Name: strings.Repeat("n", i), Age: int32(i)})})
	}
	records[37].Value = records[37].Value[:6]
	for _, codec := range []record.Codec{record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		b, err := record.Build(record.BuildOptions{Codec: codec, ProducerID: -1, BaseSequence: -1}, records)
		if err != nil {
			t.Fatal(err)
		}
		batch, err := record.Check(b)
		if err != nil {
			t.Fatal(err)
		}
		err = s.reg.CheckBatch(t.Context(), node.State(), topic, batch, record.MaxDecompressedBytes)
		var re *record.RecordError
		if !errors.As(err, &re) || re.Index != 37 {
			t.Fatalf("codec %v: %v", codec, err)
		}
	}
}

// refusedCount is the registry's refused-records counter for reason ("":
// none, 0).
func refusedCount(t *testing.T, s *served, reason string) float64 {
	t.Helper()
	if reason == "" {
		return 0
	}
	families, err := s.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "strata_registry_records_refused_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestCheckBatchCatchesUp: a broker whose metadata has not applied a
// registration yet (another broker took it a moment ago) checks a record
// naming the new id against a linearizable state before refusing it.
func TestCheckBatchCatchesUp(t *testing.T) {
	t.Parallel()
	node := testMeta(t)
	s := serve(t, node)
	topic := createTopic(t, node, strings.ToLower(subjectName(t, "")), map[string]string{"confluent.value.schema.validation": "true"})
	stale := node.State() // before the registration
	serde, _ := personSerde(t, s, topic.Name+"-value")
	value, err := serde.Encode(person{Name: "ada", Age: 36})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.reg.CheckBatch(t.Context(), stale, topic, batchOf(t, value), record.MaxDecompressedBytes); err != nil {
		t.Fatalf("a record with an id registered after the state was read: %v", err)
	}
	if err := s.reg.CheckBatch(t.Context(), stale, topic, batchOf(t, wireFormat(9999, []byte{2, 'x', 2})), record.MaxDecompressedBytes); err == nil {
		t.Fatal("an id no state knows was accepted")
	}
}

// behind is a broker whose metadata state has not caught up with the
// group's: State is a snapshot from before, LinearizableState the group's.
type behind struct {
	*meta.Node
	stale *meta.State
}

func (b behind) State() *meta.State { return b.stale }

// TestAReadOnABrokerBehindFindsANewSchema: a serializer registers a
// schema through one broker and produces; a deserializer whose registry
// address is another broker, whose state has not applied the commit yet,
// asks for the schema by id, its subject's versions and its latest
// version. Each is answered from a linearizable read after the miss: they
// were 40403 and 40401, and Confluent's deserializer failed the record.
func TestAReadOnABrokerBehindFindsANewSchema(t *testing.T) {
	t.Parallel()
	node := testMeta(t)
	stale := node.State()
	writer, reader := serve(t, node), serve(t, behind{Node: node, stale: stale})
	subject := subjectName(t, "value")
	status, body := writer.do(t, "POST", "/subjects/"+subject+"/versions", `{"schema":"\"string\""}`)
	if status != http.StatusOK {
		t.Fatalf("registering: %d %s", status, body)
	}
	var registered struct{ ID int32 }
	if err := json.Unmarshal(body, &registered); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"/schemas/ids/" + strconv.Itoa(int(registered.ID)),
		"/subjects/" + subject + "/versions",
		"/subjects/" + subject + "/versions/latest",
	} {
		if status, body := reader.do(t, "GET", path, ""); status != http.StatusOK {
			t.Errorf("GET %s on a broker behind: %d %s, want 200", path, status, body)
		}
	}
	if status, body := reader.do(t, "GET", "/schemas/ids/99999", ""); status != http.StatusNotFound || errorCode(body) != 40403 {
		t.Errorf("GET of an id nobody registered: %d %s, want 40403", status, body)
	}
}
