// Package segmentobject writes and reads the one-object-per-segment format
// strata keeps in the bucket. offload writes it; remotefetch and batch jobs
// (strata export) read it back by byte range.
//
// # Format
//
// A sealed hot-log segment becomes one object, so a segment costs one PUT:
//
//	0                                                         size
//	+-------------+--------------+------------+--------+--------+
//	| log         | offset index | time index | epochs | footer |
//	+-------------+--------------+------------+--------+--------+
//	^ batches, byte for byte as the hot log held them   ^ FooterSize bytes
//
// log: the segment's record batches (see record/doc.go), starting at object
// byte 0, so a position in the offset index is both a position in the
// segment file and a byte offset in the object: no translation.
//
// offset index: the hot log's sparse index, 8-byte big-endian entries
// (offset relative to the base offset u32, position u32), one per
// index.interval.bytes of log. Position 0 is implicit.
//
// time index: 12-byte big-endian entries (max timestamp i64, relative offset
// u32), timestamps strictly increasing.
//
// epochs: the leader-epoch entries that cover the segment, 12 bytes each
// (epoch i32, start offset i64), big-endian, epochs and offsets increasing.
//
// footer, FooterSize (128) bytes, big-endian:
//
//	  0   8  magic "STRATSEG"
//	  8   2  format version (1)
//	 10   2  reserved, zero
//	 12   8  base offset       (first offset in the segment)
//	 20   8  next offset       (one past the last)
//	 28   8  max timestamp
//	 36   4  reserved, zero
//	 40  20  log section           offset u64, length u64, CRC-32C u32
//	 60  20  offset index section
//	 80  20  time index section
//	100  20  epochs section
//	120   4  reserved, zero
//	124   4  CRC-32C of bytes 0..124
//
// # Reading
//
// A reader fetches the footer and the sections after the log with one
// suffix-range GET (the manifest records how long that tail is; a reader that
// guesses short learns the right length from the footer and asks once more),
// verifies each section's CRC, and caches the result. Log bytes are then read
// by range; a range cannot be checked against the log section's CRC, which
// covers the whole log, so readers verify each batch's own CRC instead
// (record.Validate) before returning bytes.
//
// # Invariants
//
// Sections are contiguous and in the order drawn; the log starts at 0 and the
// footer ends the object. ParseFooter and ParseTail never trust a length
// they have not checked against the bytes present, and never panic.
//
// # Keys
//
// key.go lays the objects out in the bucket, for offload, remotefetch and
// batch jobs alike:
//
//	[<key prefix>/]<topic>-<topic id>/<partition>/<20-digit base offset>-<segment id>.seg
//	[<key prefix>/]<topic>-<topic id>/<partition>/manifest.json
//
// with <topic> cut to MaxTopicDirName (218) bytes, so that no component
// passes 255 bytes for any legal topic name, and the topic id keeping cut
// names apart.
package segmentobject
