package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runConsume is `strata consume TOPIC`. Without --follow it stops at the
// high watermark each partition had when it started.
func runConsume(ctx context.Context, e *env, args []string) error {
	var (
		client       clientFlags
		from         string
		partition    int
		follow       bool
		maxRecords   int
		keySeparator string
	)
	fs := newFlagSet(e, "consume", "TOPIC [flags]")
	client.register(fs)
	fs.StringVar(&from, "from", "earliest", "where to start: earliest, latest, an offset, or @TIME (RFC 3339 or Unix milliseconds)")
	fs.IntVar(&partition, "partition", -1, "read only this partition (-1: all)")
	fs.BoolVar(&follow, "follow", false, "keep waiting for new records (stop with Ctrl-C)")
	fs.IntVar(&maxRecords, "max", 0, "stop after this many records (0: no limit)")
	fs.StringVar(&keySeparator, "key-separator", "", "print each record's key, then `SEP`, then its value (default: value only)")
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
	encoder := json.NewEncoder(out)
	printed := 0
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			fetchErr = errors.Join(fetchErr, fmt.Errorf("%s[%d]: %w", t, p, err))
		})
		if fetchErr != nil {
			return fetchErr
		}
		done := false
		fetches.EachRecord(func(r *kgo.Record) {
			if done {
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
			if client.json {
				encoder.Encode(consumedJSON(r))
			} else {
				if keySeparator != "" {
					out.Write(r.Key)
					out.WriteString(keySeparator)
				}
				out.Write(r.Value)
				out.WriteByte('\n')
			}
			printed++
			if !follow && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
			if maxRecords > 0 && printed >= maxRecords {
				done = true
			}
		})
		if done || (!follow && len(remaining) == 0) {
			return out.Flush()
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
