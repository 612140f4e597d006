package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runConsume is `strata consume TOPIC`. Without --follow it stops at the
// high watermark each partition had when it started.
//
// With --decode, a key or value in the schema registry's wire format is
// printed as its schema decodes it, as JSON (recordDecoder, schema.go);
// one without the wire format is printed as without --decode. A record
// whose key or value does not decode (its schema id unknown, its bytes
// not what the schema says) is not printed: a line on standard error
// names it and why (under --json the record is printed, undecoded, with
// key_error or value_error saying why), the records after it go on, and
// the command exits 1 once done, so a script knows the output is short
// of some. A registry that cannot be reached, or refuses the login,
// stops it at once.
func runConsume(ctx context.Context, e *env, args []string) error {
	var (
		client       clientFlags
		from         string
		partition    int
		follow       bool
		maxRecords   int
		keySeparator string
		decode       bool
		registry     registryFlags
	)
	fs := newFlagSet(e, "consume", "TOPIC [flags]")
	client.register(fs)
	fs.StringVar(&from, "from", "earliest", "where to start: earliest, latest, an offset, or @TIME (RFC 3339 or Unix milliseconds)")
	fs.IntVar(&partition, "partition", -1, "read only this partition (-1: all)")
	fs.BoolVar(&follow, "follow", false, "keep waiting for new records (stop with Ctrl-C)")
	fs.IntVar(&maxRecords, "max", 0, "stop after this many records (0: no limit)")
	fs.StringVar(&keySeparator, "key-separator", "", "print each record's key, then `SEP`, then its value (default: value only)")
	fs.BoolVar(&decode, "decode", false, "print keys and values in the schema registry's wire format (magic byte 0, a 4-byte schema id) as JSON, decoded with their schemas from --registry; one that does not decode is named on standard error, and the command exits 1 once done")
	registry.register(fs, &client.security.tls, &client.security.sasl)
	names, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(names) != 1 {
		return usageError("give exactly one topic")
	}
	topic := names[0]
	if err := checkTopicName("topic", topic); err != nil {
		return err
	}
	partition32, err := partitionFlag(partition, true)
	if err != nil {
		return err
	}
	if maxRecords < 0 {
		return usageError("--max %d: give a record count, or 0 for no limit", maxRecords)
	}
	start, err := parseStart(from)
	if err != nil {
		return err
	}
	printer := &recordPrinter{asJSON: client.json, keySeparator: keySeparator, stderr: e.stderr}
	switch {
	case decode:
		registryClient, err := registry.client()
		if err != nil {
			return err
		}
		printer.decoder = newRecordDecoder(registryClient, client.timeout, registry.explain)
	case flagGiven(fs, "registry") || flagGiven(fs, "admin-token-file"):
		return usageError("--registry and --admin-token-file are for --decode: give --decode to print records decoded with their schemas")
	}

	setup, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(setup, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	offsets, ends, err := startOffsets(setup, admin, topic, partition32, start)
	if err != nil {
		return err
	}

	// remaining holds, for each partition still to finish, the offset to
	// read up to; --follow has none and reads until interrupted.
	remaining := map[int32]int64{}
	consume := map[int32]kgo.Offset{}
	for p, offset := range offsets {
		consume[p] = kgo.NewOffset().At(offset)
		if follow || offset < ends[p] {
			remaining[p] = ends[p]
		}
	}
	if !follow && len(remaining) == 0 {
		return nil
	}
	cl, err := newClient(setup, &client, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: consume}))
	if err != nil {
		return err
	}
	defer cl.Close()

	out := bufio.NewWriter(e.stdout)
	defer out.Flush()
	printer.out, printer.encoder = out, json.NewEncoder(out)
	printed := 0
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			out.Flush()
			return printer.undecodableError()
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			fetchErr = errors.Join(fetchErr, fmt.Errorf("%s[%d]: %w", t, p, err))
		})
		if fetchErr != nil {
			return fetchErr
		}
		done := false
		var printErr error
		fetches.EachRecord(func(r *kgo.Record) {
			if done || printErr != nil {
				return
			}
			end, wanted := remaining[r.Partition]
			if !wanted {
				return
			}
			if !follow && r.Offset >= end {
				delete(remaining, r.Partition)
				return
			}
			if printErr = printer.print(ctx, r); printErr != nil {
				return
			}
			printed++
			if !follow && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
			if maxRecords > 0 && printed >= maxRecords {
				done = true
			}
		})
		if printErr != nil {
			if ctx.Err() != nil { // interrupted while asking the registry
				return printer.undecodableError()
			}
			return printErr
		}
		if done || (!follow && len(remaining) == 0) {
			if err := out.Flush(); err != nil {
				return err
			}
			return printer.undecodableError()
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// startPosition is a parsed --from.
type startPosition struct {
	kind   string // "earliest", "latest", "offset", "time"
	offset int64
	millis int64
}

func parseStart(from string) (startPosition, error) {
	switch {
	case from == "earliest" || from == "latest":
		return startPosition{kind: from}, nil
	case strings.HasPrefix(from, "@"):
		t := from[1:]
		if ms, err := strconv.ParseInt(t, 10, 64); err == nil {
			return startPosition{kind: "time", millis: ms}, nil
		}
		parsed, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			return startPosition{}, usageError("--from %q: after @ give RFC 3339 (2024-05-01T12:00:00Z) or Unix milliseconds", from)
		}
		return startPosition{kind: "time", millis: parsed.UnixMilli()}, nil
	default:
		offset, err := strconv.ParseInt(from, 10, 64)
		if err != nil || offset < 0 {
			return startPosition{}, usageError("--from %q: want earliest, latest, an offset, or @TIME", from)
		}
		return startPosition{kind: "offset", offset: offset}, nil
	}
}

// startOffsets resolves where each wanted partition starts and its current
// high watermark.
func startOffsets(ctx context.Context, admin *kadm.Client, topic string, partition int32, start startPosition) (map[int32]int64, map[int32]int64, error) {
	ends, err := admin.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	if err := ends.Error(); err != nil {
		return nil, nil, kafkaError(fmt.Sprintf("topic %q", topic), err, "")
	}
	var listed kadm.ListedOffsets
	switch start.kind {
	case "earliest":
		listed, err = admin.ListStartOffsets(ctx, topic)
	case "time":
		listed, err = admin.ListOffsetsAfterMilli(ctx, start.millis, topic)
	}
	if err != nil {
		return nil, nil, err
	}
	offsets, highWatermarks := map[int32]int64{}, map[int32]int64{}
	for p, end := range ends[topic] {
		if partition >= 0 && p != partition {
			continue
		}
		highWatermarks[p] = end.Offset
		switch start.kind {
		case "latest":
			offsets[p] = end.Offset
		case "offset":
			offsets[p] = start.offset
		default:
			o, ok := listed.Lookup(topic, p)
			if !ok || o.Err != nil || o.Offset < 0 {
				offsets[p] = end.Offset
			} else {
				offsets[p] = o.Offset
			}
		}
	}
	if partition >= 0 && len(offsets) == 0 {
		return nil, nil, fmt.Errorf("topic %q has no partition %d (`strata topic describe %s` lists them)", topic, partition, topic)
	}
	return offsets, highWatermarks, nil
}

// consumedRecord is one record in --json output. Keys, values and header
// values are strings when they are valid UTF-8, else base64 in the *_base64
// field.
type consumedRecord struct {
	Topic       string           `json:"topic"`
	Partition   int32            `json:"partition"`
	Offset      int64            `json:"offset"`
	Timestamp   int64            `json:"timestamp"`
	Key         *string          `json:"key"`
	KeyBase64   []byte           `json:"key_base64,omitempty"`
	Value       *string          `json:"value"`
	ValueBase64 []byte           `json:"value_base64,omitempty"`
	Headers     []consumedHeader `json:"headers,omitempty"`
}

type consumedHeader struct {
	Key         string  `json:"key"`
	Value       *string `json:"value"`
	ValueBase64 []byte  `json:"value_base64,omitempty"`
}

func consumedJSON(r *kgo.Record) consumedRecord {
	c := consumedRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli()}
	c.Key, c.KeyBase64 = textOrBinary(r.Key)
	c.Value, c.ValueBase64 = textOrBinary(r.Value)
	for _, h := range r.Headers {
		ch := consumedHeader{Key: h.Key}
		ch.Value, ch.ValueBase64 = textOrBinary(h.Value)
		c.Headers = append(c.Headers, ch)
	}
	return c
}

func textOrBinary(b []byte) (*string, []byte) {
	if b == nil {
		return nil, nil
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, nil
	}
	return nil, b
}

// recordPrinter prints consumed records: the value (after the key and
// --key-separator), or one JSON object each; with a decoder, decoded.
type recordPrinter struct {
	out          *bufio.Writer
	encoder      *json.Encoder
	stderr       io.Writer
	asJSON       bool
	keySeparator string
	decoder      *recordDecoder // nil: no --decode
	// undecodable counts the records whose key or value did not decode.
	undecodable int
}

// decodedField is a key or value through the decoder: its JSON, the
// schema id it named (0: no wire format, printed as it is), or why it did
// not decode.
type decodedField struct {
	json     []byte
	schemaID int
	err      error
}

// print prints r. The error is one that stops the command: a record that
// does not decode is counted and named, not an error.
func (p *recordPrinter) print(ctx context.Context, r *kgo.Record) error {
	withKey := p.asJSON || p.keySeparator != ""
	if p.decoder == nil {
		if p.asJSON {
			return p.encoder.Encode(consumedJSON(r))
		}
		if withKey {
			p.out.Write(r.Key)
			p.out.WriteString(p.keySeparator)
		}
		p.out.Write(r.Value)
		return p.out.WriteByte('\n')
	}
	var key, value decodedField
	var err error
	if withKey {
		if key, err = p.decode(ctx, r.Key); err != nil {
			return err
		}
	}
	if value, err = p.decode(ctx, r.Value); err != nil {
		return err
	}
	if key.err != nil || value.err != nil {
		p.undecodable++
	}
	if p.asJSON {
		return p.encoder.Encode(decodedJSON(r, key, value))
	}
	if key.err != nil || value.err != nil {
		var why []string
		if key.err != nil {
			why = append(why, "key "+key.err.Error())
		}
		if value.err != nil {
			why = append(why, "value "+value.err.Error())
		}
		_, err := fmt.Fprintf(p.stderr, "strata consume: %s[%d] offset %d: %s; not printed\n", r.Topic, r.Partition, r.Offset, strings.Join(why, "; "))
		return err
	}
	if withKey {
		p.out.Write(key.or(r.Key))
		p.out.WriteString(p.keySeparator)
	}
	p.out.Write(value.or(r.Value))
	return p.out.WriteByte('\n')
}

// decode runs data through the decoder; the error stops the command.
func (p *recordPrinter) decode(ctx context.Context, data []byte) (decodedField, error) {
	out, id, err := p.decoder.decode(ctx, data)
	var bad *undecodableError
	switch {
	case errors.As(err, &bad):
		return decodedField{schemaID: id, err: bad}, nil
	case err != nil:
		return decodedField{}, err
	}
	if bytes.ContainsAny(out, "\r\n") { // one record, one line
		var compact bytes.Buffer
		if json.Compact(&compact, out) == nil {
			out = compact.Bytes()
		}
	}
	return decodedField{json: out, schemaID: id}, nil
}

// or is the field as printed: its JSON when it decoded, else raw.
func (f decodedField) or(raw []byte) []byte {
	if f.json != nil {
		return f.json
	}
	return raw
}

// undecodableError is the command's failure when some records did not
// decode, nil when all did.
func (p *recordPrinter) undecodableError() error {
	records := fmt.Sprintf("%d records", p.undecodable)
	if p.undecodable == 1 {
		records = "1 record"
	}
	switch {
	case p.undecodable == 0:
		return nil
	case p.asJSON:
		return fmt.Errorf("%s did not decode (key_error or value_error says why)", records)
	}
	return fmt.Errorf("%s did not decode (each is named above, with why)", records)
}

// decodedRecord is one record in --json --decode output: a key or value
// that decoded is its JSON, with the schema id it named; one without the
// wire format, or that did not decode, is as consumedRecord has it, the
// latter with why in key_error or value_error.
type decodedRecord struct {
	Topic         string           `json:"topic"`
	Partition     int32            `json:"partition"`
	Offset        int64            `json:"offset"`
	Timestamp     int64            `json:"timestamp"`
	Key           any              `json:"key"`
	KeyBase64     []byte           `json:"key_base64,omitempty"`
	KeySchemaID   int              `json:"key_schema_id,omitempty"`
	KeyError      string           `json:"key_error,omitempty"`
	Value         any              `json:"value"`
	ValueBase64   []byte           `json:"value_base64,omitempty"`
	ValueSchemaID int              `json:"value_schema_id,omitempty"`
	ValueError    string           `json:"value_error,omitempty"`
	Headers       []consumedHeader `json:"headers,omitempty"`
}

func decodedJSON(r *kgo.Record, key, value decodedField) decodedRecord {
	plain := consumedJSON(r)
	d := decodedRecord{Topic: plain.Topic, Partition: plain.Partition, Offset: plain.Offset, Timestamp: plain.Timestamp, Headers: plain.Headers}
	d.Key, d.KeyBase64, d.KeySchemaID, d.KeyError = key.document(plain.Key, plain.KeyBase64)
	d.Value, d.ValueBase64, d.ValueSchemaID, d.ValueError = value.document(plain.Value, plain.ValueBase64)
	return d
}

// document is the field's JSON fields: the decoded JSON, else the text or
// base64 consumedRecord has.
func (f decodedField) document(text *string, base64 []byte) (any, []byte, int, string) {
	if f.json != nil {
		return json.RawMessage(f.json), nil, f.schemaID, ""
	}
	why := ""
	if f.err != nil {
		why = f.err.Error()
	}
	if text == nil {
		return nil, base64, f.schemaID, why
	}
	return text, nil, f.schemaID, why
}
