package hotlog

// The on-disk formats of a partition directory.
//
// Directory <data>/<topic>-<partition>/
//
//	00000000000000000000.log        -+
//	00000000000000000000.index       |  a sealed segment, base offset 0
//	00000000000000000000.timeindex  -+
//	00000000000000052817.log        -+
//	00000000000000052817.index       |  the active segment, base offset 52817
//	00000000000000052817.timeindex  -+
//	leader-epoch-checkpoint            epoch history
//	log-checkpoint                     log start offset and recovery point
//	clean-shutdown                     present only between Close and Open
//	reset-intent                       present only while ResetTo runs
//	prepared.log .index .timeindex     the next segment, made ahead of need
//	*.tmp                              an atomic rewrite in progress
//
// A segment is named by its base offset, the offset of its first batch, in
// 20 decimal digits. Segments are contiguous: each one's base offset is the
// offset after the last batch of the one before.
//
// .log: record batches (v2, see record/doc.go) back to back, byte for byte as
// the producer sent them except baseOffset and partitionLeaderEpoch, which the
// leader stamps (the CRC does not cover them).
//
//	 0              p1                  p2
//	+--------------+-------------------+--------------+---   ---+
//	| batch        | batch             | batch        |   ...   |
//	| base B       | base B+n0         | base B+n0+n1 |         |
//	+--------------+-------------------+--------------+---   ---+
//	                                                          size
//
// Base offsets are dense: a batch's base offset is the previous batch's last
// offset plus one.
//
// .index: the sparse offset index, 8-byte big-endian entries.
//
//	+-------------------+-------------------+---   ---+----------------+
//	| relOffset | pos   | relOffset | pos   |   ...   | 0 0 0 0 ...    |
//	|   u32     |  u32  |   u32     |  u32  |         | (preallocated) |
//	+-------------------+-------------------+---   ---+----------------+
//
// relOffset is a batch's base offset minus the segment's base offset; pos is
// the batch's byte position in the .log. The first batch that starts
// index.interval.bytes or more after the previous entry's position gets an
// entry (position 0 is implicit and never written). Both columns strictly
// increase. The active segment's file is preallocated (sparse) to
// segment.index.bytes and memory-mapped; how many entries are valid is kept in
// memory and persisted in log-checkpoint. Sealing trims the file to its
// entries.
//
// .timeindex: the sparse time index, 12-byte big-endian entries.
//
//	+------------------------------+------------------------------+---
//	| maxTimestamp i64 | relOffset |  maxTimestamp i64 | relOffset |
//	|                  |    u32    |                   |    u32    |
//	+------------------------------+------------------------------+---
//
// maxTimestamp is the largest batch MaxTimestamp in the segment up to that
// point; relOffset is the base offset (relative) of the batch that carries
// it. An entry is written beside an offset-index entry when the maximum has
// grown since the previous time entry, and once more when the segment is
// sealed, so a sealed segment's last entry is its maximum. Timestamps
// strictly increase; offsets do not decrease. Preallocated and trimmed like
// the offset index.
//
// leader-epoch-checkpoint: text, rewritten whole and atomically (tmp file,
// fsync, rename, fsync directory).
//
//	0          version
//	2          number of entries
//	0 0        epoch startOffset    (both strictly increasing)
//	3 1742
//
// log-checkpoint: two slots, each holding a whole checkpoint, at bytes 0
// and 4096 (so on 4 KiB pages and blocks a torn write of one cannot touch
// the other's; where pages or blocks are larger the device's sector
// writes, and the checksum, still keep them apart); the file is 4156
// bytes. Each slot, big-endian:
//
//	+--------+--------+-----+----------+--------+-------------+----------+
//	| "hlcp" | format | seq | logStart | offset | segmentBase | position |
//	|        | u32 =1 | u64 |   i64    |  i64   |     i64     |   i64    |
//	+--------+--------+-----+----------+--------+-------------+----------+
//	| indexEntries u32 | timeIndexEntries u32 | crc32c of the above u32  |
//	+------------------+----------------------+--------------------------+
//
// seq numbers the checkpoints; checkpoint seq goes in slot seq mod 2,
// overwriting the one before the newest, and is fdatasynced: one block,
// already allocated, with no new file, rename or directory fsync. Open
// trusts the valid slot with the higher seq: a crash in a write leaves
// that slot torn (its checksum fails) and the newest checkpoint before it
// in force, as a crash before an atomic rename would. A new log's first
// checkpoint, the one that finishes a reset, and the first after a failed
// write write the whole file atomically (tmp file, fsync, rename, fsync
// directory) with seq 0 in slot 0.
//
// A slot whose checksum holds but whose format is not 1 (a later
// release's) refuses the file: the other slot may be older than that
// release's last truncation. Releases before the slot format wrote
// log-checkpoint as text (version 0, log start offset, then offset
// segmentBase position indexEntries timeIndexEntries, one line each);
// Open reads it, and the next checkpoint replaces it with the slot
// format. The upgrade is one way: those releases refuse the slot format
// as a corrupt file.
//
// The recovery point promises: every segment below segmentBase is sealed,
// and its log and trimmed indexes are fsynced; in segment segmentBase the
// first position bytes hold whole, valid batches ending just before offset,
// and the first indexEntries and timeIndexEntries index entries are fsynced
// and valid. Recovery trusts all of that and checks only what follows.
// Under a disk journal, bytes below position may be durable in the journal
// rather than in the .log, which opening the DiskSync writes back before
// any log opens.
//
// clean-shutdown: empty. Close writes it after persisting a recovery point at
// the log end; Open removes it.
//
// reset-intent: text, written as leader-epoch-checkpoint is, by ResetTo
// before it touches anything else, and removed once the reset is complete.
//
//	0          version
//	5000       offset the log restarts at, empty
//	1          number of epoch entries, then the entries as in
//	3 5000     leader-epoch-checkpoint (start offsets at or below the offset)
//
// Its presence means every segment file in the directory belongs to the log
// being replaced: Open removes them all, writes both checkpoints for the empty
// log at the offset, and then removes reset-intent.
//
// Directory <data> (the DiskSync's), with --disk-journal-bytes set
//
//	hotlog-journal-<seq, 16 hex digits>   the disk journal (journal.go)
//	hotlog-journal-spare                  a retired journal file, to be
//	                                      written over as the next one
//
// A journal file starts with a 28-byte header and then holds entries, each
// a copy of bytes a disk round made durable:
//
//	header: "hljr" | format u32 (2) | seq u64 | previous end u64 |
//	        CRC-32C u32 of the 24 bytes before
//	entry:  CRC-32C u32 | length u32 | inode u64 | generation u32 |
//	        birth time: seconds i64, nanoseconds u32 | position i64 |
//	        path length u16 | path (relative to <data>) | bytes
//
// All big-endian; length counts what follows it, and an entry's CRC is the
// CRC-32C of seq (u64) followed by length and all after it: a file written
// over a spare holds the spare's older entries after its own, and those
// fail their CRCs under the new seq (sequence numbers never repeat over a
// spare's lives). Previous end is the byte at
// which the entries of file seq-1 end (0 where no earlier file is left).
// Replay takes entries in order up to the first that is short or fails its
// CRC (a torn tail, never acknowledged, or a spare's older bytes) and
// writes each one's bytes at position into the file at path, only if that
// file is still the one the identity names; a file followed by another
// must reach where that one's previous end says, and no number may be
// missing between two files of format 2 (they are deleted oldest first). Format 1 (a 20-byte header
// without previous end, CRCs from no seed, never written over a spare) is
// still replayed, each file but the newest to its end. A header that is
// not a journal's, or of another format, refuses the DiskSync's open.

import (
	"fmt"
	"strconv"
	"strings"
)

// File names.
const (
	logSuffix             = ".log"
	indexSuffix           = ".index"
	timeIndexSuffix       = ".timeindex"
	epochCheckpointName   = "leader-epoch-checkpoint"
	logCheckpointName     = "log-checkpoint"
	cleanShutdownName     = "clean-shutdown"
	resetIntentName       = "reset-intent"
	preparedName          = "prepared"
	temporarySuffix       = ".tmp"
	indexEntrySize        = 8
	timeIndexEntrySize    = 12
	baseOffsetDigits      = 20
	checkpointFileVersion = 0
)

// segmentFileName returns the name of a segment's file with the given suffix.
func segmentFileName(baseOffset int64, suffix string) string {
	return fmt.Sprintf("%0*d%s", baseOffsetDigits, baseOffset, suffix)
}

// parseSegmentFileName returns the base offset and suffix of a segment file
// name, or ok=false for any other name.
func parseSegmentFileName(name string) (baseOffset int64, suffix string, ok bool) {
	dot := strings.IndexByte(name, '.')
	if dot != baseOffsetDigits {
		return 0, "", false
	}
	suffix = name[dot:]
	if suffix != logSuffix && suffix != indexSuffix && suffix != timeIndexSuffix {
		return 0, "", false
	}
	base, err := strconv.ParseInt(name[:dot], 10, 64)
	if err != nil || base < 0 {
		return 0, "", false
	}
	return base, suffix, true
}
