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
// # Validating a produced batch
//
// Validate checks what every reader of stored bytes needs: header, length,
// CRC-32C, codec, count against last offset delta. ValidateProduced is the
// broker's check of what a client sends, as Kafka's LogValidator checks it,
// in one pass that also computes the CRC: base offset 0, no control batch,
// a base sequence with a producer id, then every record's framing (length,
// attributes, timestamp delta, offset delta equal to the index, key, value,
// header count and header lengths, each inside its record; exactly the
// counted records and nothing after them). Framing lies are ErrInvalid, as
// *RecordError naming the record ("record 3: value length 900 exceeds the
// 12 bytes left"); Kafka raises InvalidRecordException for the same. The
// caller's topic settings add two of Kafka's record checks: a key on every
// record of a compacted topic, and each record's timestamp within the
// message.timestamp.before.max.ms and .after.max.ms bounds
// (ErrInvalidTimestamp).
//
// Uncompressed records are parsed in place. Compressed ones are
// decompressed streaming through a 32 KiB window, with decoders (gzip,
// zstd, lz4, snappy) reset from per-codec pools, so validation allocates
// neither per record nor per decoder, and what it holds does not grow with
// the batch. Snappy is the exception Kafka's format forces: a block is
// decoded whole, once its claimed length has been checked against the
// limit and against what standard Snappy decodes to from the block's size
// (64 bytes from 3). Produced batches must be what every Kafka client
// reads: standard Snappy, not the S2 superset klauspost's decoder also
// takes, and LZ4 frames, not the legacy format nor skippable frames
// (ErrInvalid); Decompress, which reads stored batches, takes those too,
// as an earlier release may have stored them. The decompressed records may come to at most
// ProduceOptions.MaxDecompressedBytes, by default MaxDecompressedBytes
// (64 MiB); past it the batch is ErrTooLarge. The broker passes 64 MiB, or
// max.message.bytes when that is larger, so a compressed batch may hold
// what an uncompressed one could. The cap bounds decompression time and
// what consumers must hold, not the broker's memory: 64 MiB is 64 times the
// default max.message.bytes and 4,000 times a Java producer's default
// batch.size, far beyond what a real producer compresses into one batch,
// and it is what ListOffsets reads exactly before it answers at a batch's
// base offset. A zstd frame may declare a window of at most MaxZstdWindow
// (8 MiB, the window of zstd level 19; franz-go writes 64 KiB ones): the
// decoder allocates the window up front, and the 128 MiB Kafka's decoder
// allows would let a frame of a few bytes claim that much. Producers at
// zstd levels 20-22 are refused; it is the one departure from Kafka here.
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
