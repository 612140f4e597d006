package ingest

import (
	"fmt"

	"github.com/stratalog/strata/record"
	"github.com/stratalog/strata/replica"
)

// groupLogs answers the group coordinator's lag questions from the
// partitions this broker has open.
type groupLogs struct {
	partitions *replica.Manager
	meta       Metadata
}

// HighWatermark is the partition's high watermark.
func (l groupLogs) HighWatermark(topic string, partition int32) (int64, error) {
	p, err := l.partitions.Leader(l.meta.State(), topic, partition)
	if err != nil {
		return 0, err
	}
	return p.HighWatermark(), nil
}

// LogStartOffset is the first offset a consumer can read: in the bucket
// when the partition is tiered, else in the hot log.
func (l groupLogs) LogStartOffset(topic string, partition int32) (int64, error) {
	st := l.meta.State()
	p, err := l.partitions.Leader(st, topic, partition)
	if err != nil {
		return 0, err
	}
	return p.LogStartOffset(), nil
}

// TimestampAt reads the header of the batch holding offset: its first
// timestamp, or the append time on LogAppendTime topics.
func (l groupLogs) TimestampAt(topic string, partition int32, offset int64) (int64, error) {
	p, err := l.partitions.Leader(l.meta.State(), topic, partition)
	if err != nil {
		return 0, err
	}
	s, err := p.Log().Read(offset, record.HeaderSize)
	if err != nil {
		return 0, err
	}
	defer s.Release()
	if s.Length < record.HeaderSize {
		return 0, fmt.Errorf("ingest: no batch at offset %d of %s-%d", offset, topic, partition)
	}
	var header [record.HeaderSize]byte
	if _, err := s.File.ReadAt(header[:], s.Position); err != nil {
		return 0, fmt.Errorf("ingest: reading a batch header of %s at %d: %w", s.File.Name(), s.Position, err)
	}
	h, err := record.ParseHeader(header[:])
	if err != nil {
		return 0, fmt.Errorf("ingest: batch header of %s at %d: %w", s.File.Name(), s.Position, err)
	}
	if h.Attributes.LogAppendTime() {
		return h.MaxTimestamp, nil
	}
	return h.FirstTimestamp, nil
}
