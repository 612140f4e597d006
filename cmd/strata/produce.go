package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxLineBytes is the longest line `strata produce` reads as one record.
const maxLineBytes = 16 << 20

// runProduce is `strata produce TOPIC`: one record per line of stdin.
func runProduce(ctx context.Context, e *env, args []string) error {
	var (
		client       clientFlags
		keySeparator string
		headers      keyValues
		partition    int
		acks         string
		compression  string
	)
	fs := newFlagSet(e, "produce", "TOPIC [flags]")
	client.register(fs)
	fs.StringVar(&keySeparator, "key-separator", "", "split each line at the first `SEP` into key and value (default: no key)")
	fs.Var(&headers, "header", "add header `name=value` to every record (repeatable)")
	fs.IntVar(&partition, "partition", -1, "produce to this partition (-1: by key hash, or spread when there is no key)")
	fs.StringVar(&acks, "acks", "all", "acknowledgement: all, 1 or 0 (1 and 0 turn idempotence off)")
	fs.StringVar(&compression, "compression", "none", "batch compression: none, gzip, snappy, lz4, zstd")
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

	opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0)}
	switch acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return usageError("--acks %q: want all, 1 or 0", acks)
	}
	codec, err := compressionCodec(compression)
	if err != nil {
		return err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}

	dial, cancel := context.WithTimeout(ctx, client.timeout)
	cl, err := newClient(dial, &client, opts...)
	cancel()
	if err != nil {
		return err
	}
	defer cl.Close()

	var recordHeaders []kgo.RecordHeader
	for _, name := range headers.order {
		recordHeaders = append(recordHeaders, kgo.RecordHeader{Key: name, Value: []byte(headers.values[name])})
	}

	// Results are printed in the order the lines were read; kgo keeps that
	// order per partition and reports each record once.
	var (
		mu       sync.Mutex
		firstErr error
		produced int
		output   = json.NewEncoder(e.stdout)
	)
	scanner := bufio.NewScanner(e.stdin)
	scanner.Buffer(make([]byte, 64<<10), maxLineBytes)
	for scanner.Scan() {
		line := scanner.Text()
		r := &kgo.Record{Value: []byte(line), Headers: recordHeaders, Partition: partition32}
		if keySeparator != "" {
			if key, value, ok := strings.Cut(line, keySeparator); ok {
				r.Key, r.Value = []byte(key), []byte(value)
			}
		}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("record %q: %w", truncate(string(r.Value), 40), err)
				}
				return
			}
			produced++
			if client.json {
				output.Encode(producedRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli()})
			}
		})
	}
	scanErr := scanner.Err()
	if flushErr := cl.Flush(ctx); flushErr != nil && firstErr == nil {
		firstErr = flushErr
	}
	mu.Lock()
	defer mu.Unlock()
	if scanErr != nil {
		return errors.Join(fmt.Errorf("reading standard input: %w", scanErr), firstErr)
	}
	if firstErr != nil {
		return fmt.Errorf("%d records produced, then: %w", produced, firstErr)
	}
	if !client.json {
		fmt.Fprintf(e.stdout, "produced %d records to %s\n", produced, topic)
	}
	return nil
}

type producedRecord struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Timestamp int64  `json:"timestamp"`
}

func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, usageError("--compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
