// Package segmentobject writes and reads the one-object-per-segment format
// strata keeps in the bucket, and the manifest that lists a partition's
// segment objects. offload writes both; remotefetch and batch jobs (strata
// export) read them back, the objects by byte range.
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
// # Manifest
//
// Manifest (manifest.go) is the one Go type for a partition's committed
// segment objects. offload publishes it into the bucket after every change
// (Encode), as one line of JSON, the fields in this order:
//
//	{"version":1,"topic":"orders","topic_id":"6f1c…","partition":3,
//	 "log_start_offset":1200,
//	 "segments":[{"id":"0b6e…","key":"orders-6f1c…/3/00000000000000001200-0b6e….seg",
//	   "base_offset":1200,"end_offset":2399,"max_timestamp":1700000000000,
//	   "log_bytes":1048117,"tail_bytes":2712,
//	   "leader_epochs":[{"epoch":4,"start_offset":1200}]}]}
//
// version is 1 (ManifestVersion); ParseManifest refuses other versions,
// and fields added within a version are ones it ignores. log_start_offset
// is the first offset served. segments are sorted and never overlap;
// end_offset is inclusive. An object is log_bytes + tail_bytes long: a
// reader fetches the last tail_bytes (indexes, epochs, footer) with one
// suffix read, then log bytes by range. leader_epochs are the segment's
// epochs section: the first starts at base_offset, epochs and offsets
// grow. Keys are relative to the store. testdata/manifest-v1.golden pins
// the format.
//
// meta derives the same type from its Raft state (meta.Manifest.Committed),
// without tail sizes (0: unknown, a reader guesses); Validate holds for
// both. EpochsBelow answers a new replica's question: the leader-epoch
// history of the tiered offsets below the one it starts at.
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
