package registry

import (
	"fmt"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/stratalog/strata/record"
)

// BenchmarkCheckBatch measures what schema validation costs a produced
// batch, per record: a batch of 100 Avro records (a name and an age, in
// the wire format) checked for the wire format and a registered id, and
// with strata.schema.validation.decode, decoded too. The limit beside it,
// in the same run, is decoding the batch's records alone (record.Records),
// which any check of its records needs; the ratio is limit time over check
// time, so 1 means the check costs nothing past reading the records.
func BenchmarkCheckBatch(b *testing.B) {
	node := testMeta(b)
	s := serve(b, node)
	topic := subjectName(b, "")
	id, err := s.client.RegisterSchema(b.Context(), topic+"-value", avroSchema(personSchema), -1, -1)
	if err != nil {
		b.Fatal(err)
	}
	parsed, err := avro.ParseWithCache(personSchema, "", &avro.SchemaCache{})
	if err != nil {
		b.Fatal(err)
	}
	const n = 100
	records := make([]record.Record, n)
	for i := range records {
		payload, err := avro.Marshal(parsed, person{Name: fmt.Sprintf("person %d", i), Age: int32(20 + i%50)})
		if err != nil {
			b.Fatal(err)
		}
		records[i] = record.Record{Key: []byte(fmt.Sprint(i)), Value: wireFormat(id, payload)}
	}
	raw, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, records)
	if err != nil {
		b.Fatal(err)
	}
	batch, err := record.Check(raw)
	if err != nil {
		b.Fatal(err)
	}
	limit := perRecord(b, "records decoded (limit)", func() error {
		_, err := record.Records(batch.Bytes(), record.MaxDecompressedBytes)
		return err
	})
	for _, mode := range []struct {
		name    string
		configs map[string]string
	}{
		{"wire format and id", map[string]string{"confluent.value.schema.validation": "true"}},
		{"decoded", map[string]string{"confluent.value.schema.validation": "true", "strata.schema.validation.decode": "true"}},
	} {
		name := fmt.Sprintf("%s-%s", topic, map[bool]string{false: "id", true: "decode"}[mode.configs["strata.schema.validation.decode"] == "true"])
		t := createTopic(b, node, name, mode.configs)
		if _, err := s.client.RegisterSchema(b.Context(), name+"-value", avroSchema(personSchema), -1, -1); err != nil {
			b.Fatal(err)
		}
		st := node.State()
		per := perRecord(b, mode.name, func() error {
			return s.reg.CheckBatch(b.Context(), st, t, batch, record.MaxDecompressedBytes)
		})
		b.Logf("%s: %.0f ns a record, the limit %.0f: %.2f of the limit", mode.name, per, limit, limit/per)
	}
}

// perRecord runs check as a sub-benchmark and returns its time per record
// of the benchmark's 100-record batch, reported as ns/record.
func perRecord(b *testing.B, name string, check func() error) float64 {
	var per float64
	b.Run(name, func(b *testing.B) {
		for b.Loop() {
			if err := check(); err != nil {
				b.Fatal(err)
			}
		}
		per = float64(b.Elapsed().Nanoseconds()) / float64(b.N) / 100
		b.ReportMetric(per, "ns/record")
	})
	return per
}
