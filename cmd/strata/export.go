package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/remotefetch"
	"github.com/stratalog/strata/segmentobject"
)

// runExport is `strata export`: it reads a partition's tiered records
// straight from the bucket, through the manifest offload publishes there
// (remotefetch.OpenBucketReader), with nothing but bucket credentials (for
// s3:// and minio://, from the environment: AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, …). No broker is involved. On a terminal, a
// progress bar is drawn on standard error while the output is redirected. Output is one JSON
// object per record (as `strata consume --json` prints them), or with
// --format raw the record batches byte for byte, as Kafka stores them.
func runExport(ctx context.Context, e *env, args []string) error {
	var (
		bucket    string
		topic     string
		partition int
		from      int64
		fromTime  string
		to        int64
		format    string
		keyPrefix string
		asJSON    bool
	)
	fs := newFlagSet(e, "export", "--bucket URL --topic T --partition P [flags]")
	fs.StringVar(&bucket, "bucket", "", "the bucket `URL` the servers tier to (as their --bucket)")
	fs.StringVar(&topic, "topic", "", "the `topic` to export")
	fs.IntVar(&partition, "partition", 0, "the `partition` to export")
	fs.Int64Var(&from, "from", -1, "first `offset` to export (default: the first tiered offset)")
	fs.StringVar(&fromTime, "from-time", "", "start at the first record at or after `TIME` (RFC 3339 or Unix milliseconds)")
	fs.Int64Var(&to, "to", -1, "stop before this `offset` (default: the end of the tiered log)")
	fs.StringVar(&format, "format", "json", "output: json (one record per line) or raw (record batches)")
	fs.StringVar(&keyPrefix, "key-prefix", "", "the key prefix offload was configured with, if any")
	fs.BoolVar(&asJSON, "json", false, "print errors as JSON on standard error (records are JSON lines unless --format raw)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(rest) != 0:
		return usageError("export takes flags only, not %q", rest[0])
	case bucket == "" || topic == "":
		return usageError("--bucket and --topic are required")
	case partition < 0 || partition > math.MaxInt32:
		return usageError("--partition %d: want 0 to %d", partition, math.MaxInt32)
	case from < -1:
		return usageError("--from %d: give an offset, 0 or more", from)
	case to < -1:
		return usageError("--to %d: give an offset, 0 or more", to)
	case from >= 0 && to >= 0 && from >= to:
		return usageError("--from %d is not before --to %d: the range [from, to) holds no offset", from, to)
	case from >= 0 && fromTime != "":
		return usageError("give --from or --from-time, not both")
	case format != "json" && format != "raw":
		return usageError("--format %q: want json or raw", format)
	}
	if err := checkTopicName("--topic", topic); err != nil {
		return err
	}
	if err := segmentobject.CheckKeyPrefix(keyPrefix); err != nil {
		return usageError("--key-prefix: %v", err)
	}
	var fromMillis int64 = -1
	if fromTime != "" {
		start, err := parseStart("@" + fromTime)
		if err != nil {
			return usageError("--from-time %q: want RFC 3339 (2024-05-01T12:00:00Z) or Unix milliseconds", fromTime)
		}
		fromMillis = start.millis
	}

	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store, err := objstore.Open(openCtx, bucket, objstore.DefaultConfig())
	if err != nil {
		return fmt.Errorf("--bucket: %w", err)
	}
	defer store.Close()
	reader, err := remotefetch.OpenBucketReader(openCtx, store, remotefetch.BucketLocation{
		KeyPrefix: keyPrefix, Topic: topic, Partition: int32(partition),
	}, remotefetch.ScanConfig())
	if err != nil {
		return fmt.Errorf("opening %s-%d in the bucket: %w", topic, partition, err)
	}
	defer reader.Close()

	m := reader.Manifest()
	tiered := fmt.Sprintf("%s-%d's tiered offsets are %d to %d", topic, partition, m.LogStartOffset, m.NextOffset()-1)
	if m.NextOffset() == m.LogStartOffset {
		tiered = fmt.Sprintf("%s-%d has no tiered records (its next offset is %d)", topic, partition, m.NextOffset())
	}
	switch {
	case from >= m.NextOffset():
		return fmt.Errorf("--from %d is past the end of the bucket: %s (newer records are on the brokers: `strata consume`)", from, tiered)
	case from >= 0 && from < m.LogStartOffset:
		return fmt.Errorf("--from %d is before the start of the bucket: %s (remote retention deleted the older ones)", from, tiered)
	case from < 0:
		from = m.LogStartOffset
	}
	if fromMillis >= 0 {
		found, ok, err := reader.OffsetForTimestamp(ctx, fromMillis)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("--from-time %s is after every record in the bucket: %s (newer records are on the brokers: `strata consume --from @TIME`)", fromTime, tiered)
		}
		from = found.Offset
	}
	if to < 0 {
		to = math.MaxInt64
	}
	if from >= min(to, m.NextOffset()) {
		return nil // --from-time found a record at or after --to
	}
	out := bufio.NewWriterSize(e.stdout, 1<<20)
	var write func(remotefetch.Batch) error
	if format == "raw" {
		write = func(b remotefetch.Batch) error { _, err := out.Write(b.Bytes); return err }
	} else {
		enc := json.NewEncoder(out)
		write = func(b remotefetch.Batch) error { return exportJSON(enc, topic, int32(partition), b, from, to) }
	}
	bar := newProgress(e.stderr, e.stdout, from, min(to, m.NextOffset()))
	reached := from
	for batch, err := range reader.Batches(ctx, from, to) {
		if err != nil {
			out.Flush()
			bar.done(reached)
			return fmt.Errorf("reading %s-%d: %w", topic, partition, err)
		}
		if err := write(batch); err != nil {
			return err
		}
		reached = batch.Header.NextOffset()
		bar.advance(reached, len(batch.Bytes))
	}
	bar.done(reached)
	return out.Flush()
}

// exportJSON writes the records of one batch in [from, to) as JSON lines.
func exportJSON(enc *json.Encoder, topic string, partition int32, b remotefetch.Batch, from, to int64) error {
	if b.Header.Attributes.Control() {
		return nil
	}
	records, err := record.Records(b.Bytes, exportMaxBatchBytes)
	if err != nil {
		return fmt.Errorf("decoding batch %d: %w", b.Header.BaseOffset, err)
	}
	for _, r := range records {
		offset := b.Header.BaseOffset + int64(r.OffsetDelta)
		if offset < from || offset >= to {
			continue
		}
		ts := b.Header.FirstTimestamp + r.TimestampDelta
		if b.Header.Attributes.LogAppendTime() {
			ts = b.Header.MaxTimestamp
		}
		c := consumedRecord{Topic: topic, Partition: partition, Offset: offset, Timestamp: ts}
		c.Key, c.KeyBase64 = textOrBinary(r.Key)
		c.Value, c.ValueBase64 = textOrBinary(r.Value)
		for _, h := range r.Headers {
			ch := consumedHeader{Key: h.Key}
			ch.Value, ch.ValueBase64 = textOrBinary(h.Value)
			c.Headers = append(c.Headers, ch)
		}
		if err := enc.Encode(c); err != nil {
			return err
		}
	}
	return nil
}

// exportMaxBatchBytes caps the decompressed size of one batch the JSON
// output decodes, so a corrupt or hostile batch cannot exhaust memory.
const exportMaxBatchBytes = 256 << 20
