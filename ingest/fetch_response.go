package ingest

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchKey is the Fetch API key.
const fetchKey = 1

// fetchReply is a FetchResponse whose record batches stay in segment files.
// kmsg can only encode records it holds in memory, so this encoder writes
// every other field itself, byte for byte as kmsg.FetchResponse.AppendTo
// would, and leaves a splice where each partition's records go; the writer
// then sends the records from the file (sendfile or pread).
//
// The tagged fields a broker sets (DivergingEpoch, CurrentLeader, SnapshotID
// per partition; Brokers at the top) are written like kmsg writes them.
// Unknown tags are never written: the broker has none to send.
type fetchReply struct {
	version        int16
	throttleMillis int32
	errorCode      int16
	sessionID      int32
	topics         []fetchReplyTopic
	brokers        []kmsg.FetchResponseBroker
}

type fetchReplyTopic struct {
	name       string
	id         [16]byte
	partitions []fetchReplyPartition
}

// fetchReplyPartition is a partition's answer. Its RecordBatches field is
// ignored: records holds the file sections to send, in order.
type fetchReplyPartition struct {
	kmsg.FetchResponseTopicPartition
	records []section
}

func (r *fetchReply) release() {
	for i := range r.topics {
		for j := range r.topics[i].partitions {
			for _, s := range r.topics[i].partitions[j].records {
				if s.release != nil {
					s.release()
				}
			}
		}
	}
}

func (r *fetchReply) throttle(ms int32) { r.throttleMillis = max(r.throttleMillis, ms) }

// bytes is the records' size, what consumer_byte_rate counts.
func (r *fetchReply) bytes() int64 {
	var n int64
	for _, t := range r.topics {
		for _, p := range t.partitions {
			for _, s := range p.records {
				n += s.length
			}
		}
	}
	return n
}

func (r *fetchReply) writeTo(w *responseWriter, correlationID int32) error {
	frame, splices := r.appendTo(w.buffer(), correlationID)
	return w.writeFrame(frame, splices)
}

// appendTo encodes the response frame after dst and returns it with the
// places where file sections go.
func (r *fetchReply) appendTo(dst []byte, correlationID int32) ([]byte, []splice) {
	version := r.version
	flexible := version >= 12
	dst = appendResponseHeader(dst, correlationID, fetchKey, flexible)
	var splices []splice

	if version >= 1 {
		dst = kbin.AppendInt32(dst, r.throttleMillis)
	}
	if version >= 7 {
		dst = kbin.AppendInt16(dst, r.errorCode)
		dst = kbin.AppendInt32(dst, r.sessionID)
	}
	dst = appendArrayLength(dst, len(r.topics), flexible)
	for i := range r.topics {
		t := &r.topics[i]
		if version <= 12 {
			dst = appendString(dst, t.name, flexible)
		} else {
			dst = kbin.AppendUuid(dst, t.id)
		}
		dst = appendArrayLength(dst, len(t.partitions), flexible)
		for j := range t.partitions {
			p := &t.partitions[j]
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			if version >= 4 {
				dst = kbin.AppendInt64(dst, p.LastStableOffset)
			}
			if version >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			if version >= 4 {
				aborted := p.AbortedTransactions
				if flexible {
					dst = kbin.AppendCompactNullableArrayLen(dst, len(aborted), aborted == nil)
				} else {
					dst = kbin.AppendNullableArrayLen(dst, len(aborted), aborted == nil)
				}
				for _, a := range aborted {
					dst = kbin.AppendInt64(dst, a.ProducerID)
					dst = kbin.AppendInt64(dst, a.FirstOffset)
					if flexible {
						dst = append(dst, 0)
					}
				}
			}
			if version >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			var length int64
			for _, s := range p.records {
				length += s.length
			}
			if flexible {
				dst = kbin.AppendUvarint(dst, uint32(length+1))
			} else {
				dst = kbin.AppendInt32(dst, int32(length))
			}
			for _, s := range p.records {
				splices = append(splices, splice{at: len(dst), section: s})
			}
			if flexible {
				dst = appendPartitionTags(dst, &p.FetchResponseTopicPartition)
			}
		}
		if flexible {
			dst = append(dst, 0)
		}
	}
	if flexible {
		if len(r.brokers) == 0 {
			dst = append(dst, 0)
		} else {
			dst = kbin.AppendUvarint(dst, 1)
			dst = appendTag(dst, 0, func(dst []byte) []byte {
				dst = kbin.AppendCompactArrayLen(dst, len(r.brokers))
				for _, b := range r.brokers {
					dst = kbin.AppendInt32(dst, b.NodeID)
					dst = kbin.AppendCompactString(dst, b.Host)
					dst = kbin.AppendInt32(dst, b.Port)
					dst = kbin.AppendCompactNullableString(dst, b.Rack)
					dst = append(dst, 0)
				}
				return dst
			})
		}
	}
	return dst, splices
}

// appendPartitionTags writes a partition's tagged fields in tag order, each
// only when it differs from its default, as kmsg does.
func appendPartitionTags(dst []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	diverging := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1
	leader := p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1
	snapshot := p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
	count := 0
	for _, set := range []bool{diverging, leader, snapshot} {
		if set {
			count++
		}
	}
	dst = kbin.AppendUvarint(dst, uint32(count))
	if diverging {
		dst = appendTag(dst, 0, func(dst []byte) []byte {
			dst = kbin.AppendInt32(dst, p.DivergingEpoch.Epoch)
			dst = kbin.AppendInt64(dst, p.DivergingEpoch.EndOffset)
			return append(dst, 0)
		})
	}
	if leader {
		dst = appendTag(dst, 1, func(dst []byte) []byte {
			dst = kbin.AppendInt32(dst, p.CurrentLeader.LeaderID)
			dst = kbin.AppendInt32(dst, p.CurrentLeader.LeaderEpoch)
			return append(dst, 0)
		})
	}
	if snapshot {
		dst = appendTag(dst, 2, func(dst []byte) []byte {
			dst = kbin.AppendInt64(dst, p.SnapshotID.EndOffset)
			dst = kbin.AppendInt32(dst, p.SnapshotID.Epoch)
			return append(dst, 0)
		})
	}
	return dst
}

// appendTag writes one tagged field: its tag, its size, then its body.
func appendTag(dst []byte, tag uint32, body func([]byte) []byte) []byte {
	dst = kbin.AppendUvarint(dst, tag)
	encoded := body(nil)
	dst = kbin.AppendUvarint(dst, uint32(len(encoded)))
	return append(dst, encoded...)
}

func appendArrayLength(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactArrayLen(dst, n)
	}
	return kbin.AppendArrayLen(dst, n)
}

func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactString(dst, s)
	}
	return kbin.AppendString(dst, s)
}
