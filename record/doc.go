// Package record reads and validates Kafka record batches (message format v2,
// "magic 2"), the unit strata stores, ships and serves byte for byte.
//
// # Format
//
// A batch is a 61-byte header followed by its records:
//
//	offset  size  field
//	     0     8  baseOffset            (rewritten by the leader)
//	     8     4  batchLength           (bytes after this field)
//	    12     4  partitionLeaderEpoch  (rewritten by the leader)
//	    16     1  magic                 (2)
//	    17     4  crc                   (CRC-32C of bytes 21..end)
//	    21     2  attributes            (codec, timestamp type, transactional, control)
//	    23     4  lastOffsetDelta
//	    27     8  firstTimestamp
//	    35     8  maxTimestamp
//	    43     8  producerId
//	    51     2  producerEpoch
//	    53     4  baseSequence
//	    57     4  recordsCount
//	    61     …  records (compressed as a whole when the codec is not none)
//
// Every integer is big-endian. Each record is length-prefixed with a zig-zag
// varint and holds attributes, timestamp delta, offset delta, key, value and
// headers.
//
// # Invariants
//
// The CRC covers attributes to the end, so the two fields the leader writes,
// baseOffset and partitionLeaderEpoch, can be stamped in place (SetBaseOffset,
// SetPartitionLeaderEpoch) without recomputing any checksum.
//
// Nothing here panics on malformed input or allocates a buffer sized by an
// untrusted field beyond the batch's own verified length: lengths are checked
// against the bytes actually present before they are used, and decompression
// takes an explicit output limit.
package record
