package registry

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
)

// Schema validation on produce, Confluent Server's broker-side validation:
// on a topic with confluent.value.schema.validation (or .key.) every
// record's value (key) must carry the registry's wire format, a magic byte
// 0 and the four-byte big-endian id of a schema registered under the
// topic's subject (<topic>-value or <topic>-key, TopicNameStrategy), as a
// live version. With strata.schema.validation.decode the rest must also
// decode with that schema. A null value or key passes (a tombstone; a
// keyless record). A refused record fails its whole batch with
// INVALID_RECORD naming the record and why (record.RecordError).

// validation is a topic's schema validation settings.
type validation struct {
	key, value, decode bool
}

func validationOf(t meta.Topic) validation {
	on := func(name string) bool {
		v, _ := t.Config(name)
		return v == "true"
	}
	return validation{
		key: on("confluent.key.schema.validation"), value: on("confluent.value.schema.validation"),
		decode: on("strata.schema.validation.decode"),
	}
}

// CheckBatch checks the records of a produced batch for topic t, which
// has schema validation on, against st, this broker's metadata. decompressLimit bounds
// the batch's decompressed records.
//
// A registration returns once the broker that took it has applied it, and
// other brokers apply it a moment later; a serializer registers a schema
// and produces with it at once, to whichever broker leads the partition.
// So a record naming an id st does not know as a live version of its
// subject is checked again against a linearizable state (one barrier on
// the metadata leader) before it is refused.
func (r *Registry) CheckBatch(ctx context.Context, st *meta.State, t meta.Topic, b record.Batch, decompressLimit int) error {
	v := validationOf(t)
	records, err := record.Records(b.Bytes(), decompressLimit)
	if err != nil {
		return err
	}
	fresh := false
	keys, values := liveIDs(st, t.Name+"-key"), liveIDs(st, t.Name+"-value")
	check := func(i int, subject string, live *[]int32, data []byte, what string) error {
		reason, why := r.checkField(st, subject, *live, data, v.decode)
		if (reason == reasonUnknownSchema || reason == reasonWrongSubject) && !fresh {
			fresh = true
			if latest, err := r.meta.LinearizableState(ctx); err == nil {
				st = latest
				keys, values = liveIDs(st, t.Name+"-key"), liveIDs(st, t.Name+"-value")
				reason, why = r.checkField(st, subject, *live, data, v.decode)
			}
		}
		if reason == "" {
			return nil
		}
		r.metrics.refused.WithLabelValues(reason).Inc()
		return record.NewRecordError(i, what+" "+why)
	}
	for i, rec := range records {
		if v.key {
			if err := check(i, t.Name+"-key", &keys, rec.Key, "key"); err != nil {
				return err
			}
		}
		if v.value {
			if err := check(i, t.Name+"-value", &values, rec.Value, "value"); err != nil {
				return err
			}
		}
	}
	return nil
}

// The reasons a record is refused, as the refused metric counts them.
const (
	reasonNoMagicByte   = "no_magic_byte"
	reasonUnknownSchema = "unknown_schema"
	reasonWrongSubject  = "wrong_subject"
	reasonUndecodable   = "undecodable"
)

// liveIDs is the schema ids of subject's live versions.
func liveIDs(st *meta.State, subject string) []int32 {
	sub, _ := st.Subject(subject)
	var ids []int32
	for _, v := range sub.Live() {
		ids = append(ids, v.SchemaID)
	}
	return ids
}

// checkField checks one key or value against subject, returning the
// metric's reason and a message, or "" when it passes.
func (r *Registry) checkField(st *meta.State, subject string, live []int32, data []byte, decode bool) (reason, message string) {
	if data == nil {
		return "", ""
	}
	if len(data) < 5 || data[0] != 0 {
		return reasonNoMagicByte, fmt.Sprintf("does not start with the schema registry's wire format (magic byte 0 and a 4-byte schema id): validation is on for subject %q", subject)
	}
	id := int32(binary.BigEndian.Uint32(data[1:5]))
	if !slices.Contains(live, id) {
		if _, ok := st.Schema(id); !ok {
			return reasonUnknownSchema, fmt.Sprintf("names schema id %d, which is not registered", id)
		}
		return reasonWrongSubject, fmt.Sprintf("names schema id %d, which is not a version of subject %q", id, subject)
	}
	if !decode {
		return "", ""
	}
	s, _, err := r.Schema(st, id)
	if err == nil {
		_, err = s.Decode(data[5:])
	}
	if err != nil {
		return reasonUndecodable, fmt.Sprintf("does not decode with schema %d: %v", id, err)
	}
	return "", ""
}
