// Package compact is the log cleaner: it compacts the local logs of topics
// whose cleanup.policy includes compact, keeping the latest record of each
// key, as Kafka's log cleaner does (docs/architecture.md, "Compaction").
//
// # Usage
//
//	c, err := compact.New(compact.DefaultConfig(), logger, registry)
//	c.Start()
//	defer c.Close()
//	c.Add(compact.Partition{Topic: "t", Partition: 0, Log: log, HighWatermark: hw, Policy: policy})
//	...
//	c.Remove("t", 0) // before the log closes
//
// Clean runs one pass over one log, for tests and tools.
//
// # Invariants
//
//   - Offsets never change, and the log stays dense: a batch that loses
//     some records keeps its base offset and last offset delta; runs of
//     batches that lose them all become one empty batch per leader epoch,
//     and a producer's last batch in a segment stays, empty, with its
//     producer fields (record.Rebuild).
//   - Of the records below where a pass mapped keys, a record is dropped
//     only if a later record of its key was mapped, it has no key, or it
//     is a tombstone whose segment was last written more than
//     delete.retention.ms ago. Records at or above that point are kept.
//   - Only sealed segments below the high watermark, below the first
//     segment with a record younger than min.compaction.lag.ms and below
//     the hot log's RewritableEnd are read or rewritten; the active
//     segment never is.
//   - A segment is replaced through hotlog.RewriteSegment, crash safely:
//     after a kill -9 at any point the log holds the old segment or the
//     new one.
//   - The offset map holds at most Config.DedupeBufferBytes / Threads /
//     MapEntryBytes keys; a pass that fills it cleans up to there and the
//     next goes on.
//
// # Threading
//
// Config.Threads goroutines, started by Start and stopped by Close, each
// take one partition at a time (never the same one), chosen under the
// Cleaner's lock; a pass runs outside it. Remove waits for a pass over the
// partition to end.
package compact
