package hotlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A journal is a DiskSync's write-ahead copy of what its disk rounds make
// durable, for rounds with little new data in each file: one sequential
// write and one fdatasync of the journal file instead of a syncfs that
// writes every file's last page and inode out. At 4,000
// partitions and 92 MB/s, a sink doing only a syncfs per group commit
// over a file per partition answered at p99 820 ms, the same sink without
// the syncfs at 20 ms (docs/bench.md): the per-file writeback is the
// cost, and a journal round's cost does not grow with the number of files.
// Measured on the broker at 4,000 partitions and 40 MB/s, the journal cut
// the median from 98-173 ms to 11-12 ms, and the p99 from about 300 ms to
// 49-60 once the producer snapshots rode it too (SyncWrites, and SyncAll
// without a syncfs), no round waited behind a retirement's syncfs, and
// files were written over spares; each retirement's syncfs beside the
// rounds is what is left.
//
// The segment files still get every byte (appends write them as before);
// a journal entry is a copy of a range of one, made by a disk round (or a
// Log's own flusher round, journalOwn) from the file's page cache, and the
// segment's own pages reach the disk later, by writeback the rounds start
// (hintWriteback) or at the latest when the journal file is retired: once
// a journal file holds its limit (OpenDiskSync's journalBytes), disk
// rounds go on in a new one, and a syncfs, made after every entry of the
// old one was copied, makes the segment files durable before the old file
// is deleted, or kept as the spare the next file is written over
// (startFileLocked). Open of a DiskSync (a restart, after a crash) first
// replays the journal files left: it writes each entry's bytes back into
// its file, fdatasyncs each file it wrote and deletes them, so a Log
// opened after it finds every acknowledged byte in its segment files, and
// the replay is bounded by the journal files not yet retired (the current
// one, and those a retirement in progress covers), however long the log.
//
// An entry names its file by path relative to the DiskSync's directory
// and by identity (inode number, generation where the file system tells
// it, birth time), and replay writes it only into the same file: a
// segment deleted, replaced (ResetTo, a rewrite) or whose directory was
// removed is skipped, even if a new file has its name. A file cut short
// in place is the one case identity does not cover, so TruncateTo retires
// every journal file first (barrier) when one may hold an entry of the
// file: no entry for the bytes it removes is left to bring them back.
// Open's recovery cuts files in place too, but only after the last
// process's journal was replayed and deleted, and only bytes past the last
// whole batch, which no entry covers.
//
// Format (format.go draws it): a file starts with a header (magic
// "hljr", format version, the file's sequence number, where the file
// before it ended, CRC-32C); each entry is a CRC-32C of the rest, started
// from the file's sequence number, the rest's length, the file's identity
// and relative path, the position and the bytes. Replay stops at the
// first entry that is short or fails its checksum: a torn tail, written by
// a round that had not returned, whose bytes were not acknowledged, or
// the older bytes of a spare written over.
type journal struct {
	dir   string // the DiskSync's directory, absolute
	limit int64  // bytes of a journal file before the next

	mu struct {
		sync.Mutex
		file *os.File
		seq  uint64 // the current file's
		size int64  // the current file's written bytes
		// written is how long the current file is: below it a write
		// goes over blocks already allocated and written, and its
		// fdatasync writes no metadata (commitJournal).
		written int64
		// spare says a retired file waits under journalSpareName to
		// be written over as the next one.
		spare bool
		// live are the sequence numbers of the files not yet retired,
		// oldest first, the current one last.
		live []uint64
		// closed is, by directory, the newest live file holding an
		// entry of a Log closed in this process, for its next Open
		// (journaledBeforeOpen).
		closed map[string]uint64
	}
	buf []byte // the rounds goroutine's entries (journalRound)
	// group gathers the entries of callers who commit while another
	// commit is under way into the next one (commitJournal).
	group struct {
		mu   sync.Mutex
		next *journalBatch // the batch callers join; nil when none is forming
		turn chan struct{} // buffered 1: held while a batch is committed
	}
	// retireMu serializes retirements; retiring says one is wanted or
	// running for a rotation by size.
	retireMu sync.Mutex
	retiring atomic.Bool
	// retirers is the retirement goroutine a round started; Close waits
	// for it.
	retirers sync.WaitGroup
}

const (
	journalPrefix = "hotlog-journal-"
	// journalSpareName is a retired journal file kept to be written over
	// as the next one (startFileLocked).
	journalSpareName  = journalPrefix + "spare"
	journalMagic      = "hljr"
	journalVersion    = 2
	journalHeaderSize = 4 + 4 + 8 + 8 + 4
	// A file of format 1 (before spares), which replay still reads: no
	// previousEnd in its header, entry checksums from no seed.
	journalVersion1HeaderSize = 4 + 4 + 8 + 4
	// journalEntryFixed is an entry's bytes before its path: CRC, length,
	// inode, generation, birth time (seconds, nanoseconds), position,
	// path length.
	journalEntryFixed = 4 + 4 + 8 + 4 + 8 + 4 + 8 + 2
	// journalBelowBytes is the most new bytes per file, on average, a
	// disk round may have for its journal to take it: above it a syncfs
	// writes whole pages of few files, and copying the bytes again costs
	// more than it saves.
	journalBelowBytes = 16 << 10
)

// fileID names a file in a journal entry (a segment's .log, or a file
// SyncWrites was given): its path relative to the DiskSync's directory
// and its identity, which no later file at that path shares.
type fileID struct {
	rel       string
	ino       uint64
	gen       uint32
	btimeSec  int64
	btimeNsec uint32
}

// identify reads f's identity: its inode number, birth time and, where the
// file system has it (ext4, xfs), the inode's generation, which changes
// when a freed inode number is reused. It fails where the file system
// records no birth time.
func identify(f *os.File) (fileID, error) {
	var stx unix.Statx_t
	if err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_INO|unix.STATX_BTIME, &stx); err != nil {
		return fileID{}, fmt.Errorf("statx %s: %w", f.Name(), err)
	}
	if stx.Mask&unix.STATX_BTIME == 0 {
		return fileID{}, fmt.Errorf("%s: the file system records no birth time, which the disk journal needs to tell a file from a later one of the same name", f.Name())
	}
	id := fileID{ino: stx.Ino, btimeSec: stx.Btime.Sec, btimeNsec: stx.Btime.Nsec}
	// FS_IOC_GETVERSION; file systems without it leave gen 0.
	if gen, err := unix.IoctlGetUint32(int(f.Fd()), 0x80087601); err == nil {
		id.gen = gen
	}
	return id, nil
}

// same reports whether id and other name the same file, whatever their
// paths.
func (id fileID) same(other fileID) bool {
	return id.ino == other.ino && id.gen == other.gen && id.btimeSec == other.btimeSec && id.btimeNsec == other.btimeNsec
}

func journalName(seq uint64) string { return fmt.Sprintf("%s%016x", journalPrefix, seq) }

// parseJournalName returns the sequence number of a journal file's name.
func parseJournalName(name string) (uint64, bool) {
	hex, ok := strings.CutPrefix(name, journalPrefix)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	seq, err := strconv.ParseUint(hex, 16, 64)
	return seq, err == nil
}

// journalHeader is what a journal file's header says.
type journalHeader struct {
	version uint32 // as parsed; appendJournalHeader writes journalVersion
	seq     uint64
	// previousEnd is where the entries of file seq-1 end, which replay
	// checks them against (they are followed by older bytes where that
	// file was written over a spare); 0 where no earlier file is left to
	// replay.
	previousEnd int64
}

// size is the header's length in bytes.
func (h journalHeader) size() int {
	if h.version == 1 {
		return journalVersion1HeaderSize
	}
	return journalHeaderSize
}

// entrySeed is the CRC-32C each entry's checksum in the file starts from:
// in the current format the file's sequence number, so that an entry left
// from the file's life before it was a spare fails its checksum in the
// next, and replay stops at the end of what the current one wrote.
func (h journalHeader) entrySeed() uint32 {
	if h.version == 1 {
		return 0
	}
	return crc32.Checksum(binary.BigEndian.AppendUint64(nil, h.seq), castagnoli)
}

func appendJournalHeader(b []byte, h journalHeader) []byte {
	h.version = journalVersion
	start := len(b)
	b = append(b, journalMagic...)
	b = binary.BigEndian.AppendUint32(b, journalVersion)
	b = binary.BigEndian.AppendUint64(b, h.seq)
	b = binary.BigEndian.AppendUint64(b, uint64(h.previousEnd))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

// sealJournalEntries fills in the checksum of each of the whole entries
// b holds (appendJournalEntry's) for the journal file h heads: the file
// they go into is known only when they are written (commitJournal).
func sealJournalEntries(b []byte, h journalHeader) {
	seed := h.entrySeed()
	for len(b) > 0 {
		end := 8 + int(binary.BigEndian.Uint32(b[4:]))
		binary.BigEndian.PutUint32(b, crc32.Update(seed, castagnoli, b[4:end]))
		b = b[end:]
	}
}

// appendFileEntry appends an entry for n bytes at position of f, which id
// names, to b, the bytes read back from f (its page cache, just written).
func appendFileEntry(b []byte, id *fileID, f *os.File, position int64, n int) ([]byte, error) {
	return appendJournalEntry(b, id, position, n, func(p []byte) error {
		if _, err := f.ReadAt(p, position); err != nil {
			return fmt.Errorf("disk journal: reading %s: %w", f.Name(), err)
		}
		return nil
	})
}

// appendJournalEntry appends an entry for n bytes at position of the file
// id names to b, the bytes filled in by fill (appendFileEntry's reads
// them from the file; tests make them up), its checksum left for
// sealJournalEntries.
func appendJournalEntry(b []byte, id *fileID, position int64, n int, fill func([]byte) error) ([]byte, error) {
	start := len(b)
	b = append(b, make([]byte, 8)...) // CRC and length, below
	b = binary.BigEndian.AppendUint64(b, id.ino)
	b = binary.BigEndian.AppendUint32(b, id.gen)
	b = binary.BigEndian.AppendUint64(b, uint64(id.btimeSec))
	b = binary.BigEndian.AppendUint32(b, id.btimeNsec)
	b = binary.BigEndian.AppendUint64(b, uint64(position))
	b = binary.BigEndian.AppendUint16(b, uint16(len(id.rel)))
	b = append(b, id.rel...)
	data := len(b)
	b = slices.Grow(b, n)[:data+n]
	if err := fill(b[data:]); err != nil {
		return b[:start], err
	}
	binary.BigEndian.PutUint32(b[start+4:], uint32(len(b)-start-8))
	return b, nil
}

// journalEntry is one parsed entry: data goes at position in the file id
// names.
type journalEntry struct {
	file     fileID
	position int64
	data     []byte
}

var (
	errJournalHeader  = errors.New("not a journal file")
	errJournalVersion = errors.New("a journal file of a later format")
)

// parseJournal reads a journal file's header and entries, up to the
// first short or corrupt entry (a torn tail, or the older bytes of a file
// written over a spare). A header that is not a journal's, or of a format
// this release does not know, is an error: replay must not skip what a
// later release wrote.
func parseJournal(b []byte) (h journalHeader, entries []journalEntry, err error) {
	h, entries, _, err = parseJournalTo(b)
	return h, entries, err
}

// parseJournalHeader reads the header at the start of b.
func parseJournalHeader(b []byte) (journalHeader, error) {
	// The magic and version come first in every format.
	if len(b) < 8 || string(b[:4]) != journalMagic {
		return journalHeader{}, errJournalHeader
	}
	h := journalHeader{version: binary.BigEndian.Uint32(b[4:])}
	if h.version != 1 && h.version != journalVersion {
		return journalHeader{}, fmt.Errorf("%w (format %d)", errJournalVersion, h.version)
	}
	crcAt := h.size() - 4
	if len(b) < h.size() || binary.BigEndian.Uint32(b[crcAt:]) != crc32.Checksum(b[:crcAt], castagnoli) {
		return journalHeader{}, errJournalHeader
	}
	h.seq = binary.BigEndian.Uint64(b[8:])
	if h.version > 1 {
		if h.previousEnd = int64(binary.BigEndian.Uint64(b[16:])); h.previousEnd < 0 {
			return journalHeader{}, errJournalHeader
		}
	}
	return h, nil
}

// parseJournalTo is parseJournal, also returning how many bytes of b the
// header and the entries parsed take: less than len(b) where it stopped
// at a short or corrupt entry.
func parseJournalTo(b []byte) (h journalHeader, entries []journalEntry, end int, err error) {
	h, err = parseJournalHeader(b)
	if err != nil {
		return h, nil, 0, err
	}
	seed := h.entrySeed()
	rest := b[h.size():]
	for len(rest) >= journalEntryFixed {
		length := int64(binary.BigEndian.Uint32(rest[4:]))
		if length < journalEntryFixed-8 || length > int64(len(rest))-8 {
			break
		}
		body := rest[8 : 8+length]
		if binary.BigEndian.Uint32(rest) != crc32.Update(seed, castagnoli, rest[4:8+length]) {
			break
		}
		pathLen := int(binary.BigEndian.Uint16(body[32:]))
		if 34+pathLen > len(body) {
			break
		}
		position := int64(binary.BigEndian.Uint64(body[24:]))
		if position < 0 {
			break
		}
		entries = append(entries, journalEntry{
			file: fileID{
				ino:       binary.BigEndian.Uint64(body),
				gen:       binary.BigEndian.Uint32(body[8:]),
				btimeSec:  int64(binary.BigEndian.Uint64(body[12:])),
				btimeNsec: binary.BigEndian.Uint32(body[20:]),
				rel:       string(body[34 : 34+pathLen]),
			},
			position: position,
			data:     body[34+pathLen:],
		})
		rest = rest[8+length:]
	}
	return h, entries, len(b) - len(rest), nil
}

// JournalReplay is what opening a DiskSync found of an earlier process's
// journal.
type JournalReplay struct {
	Files   int   // journal files replayed
	Entries int   // their entries
	Written int   // entries written back into their files
	Skipped int   // entries whose file is gone or replaced
	Bytes   int64 // bytes written back
}

// replayJournals writes every entry of dir's journal files back into its
// file, fdatasyncs each file it wrote, and deletes the journal files (and
// any new one's temporary, which never held an entry; a spare stays). It
// returns the highest sequence number found (0 if none). A journal file
// that cannot be read or parsed fails it, as does one whose entries end
// before the next file's header says they do: only the newest may end
// torn, since rounds move to a new file only after the old one's last
// write returned. The files stay for the next attempt.
func replayJournals(dir string) (JournalReplay, uint64, error) {
	var r JournalReplay
	names, err := os.ReadDir(dir)
	if err != nil {
		return r, 0, err
	}
	var seqs []uint64
	for _, e := range names {
		if seq, ok := parseJournalName(e.Name()); ok {
			seqs = append(seqs, seq)
		}
		if strings.HasPrefix(e.Name(), journalPrefix) && strings.HasSuffix(e.Name(), temporarySuffix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return r, 0, err
			}
		}
	}
	if len(seqs) == 0 {
		return r, 0, nil
	}
	slices.Sort(seqs)
	// The file at each path an entry names, opened once, with its
	// identity; nil where there is none.
	type target struct {
		f       *os.File
		id      fileID
		written bool
	}
	open := map[string]*target{}
	defer func() {
		for _, t := range open {
			if t != nil {
				t.f.Close()
			}
		}
	}()
	// file returns the file an entry names, nil when it is gone or
	// another file has its name.
	file := func(id fileID) (*target, error) {
		t, seen := open[id.rel]
		if !seen {
			f, err := os.OpenFile(filepath.Join(dir, id.rel), os.O_WRONLY, 0)
			if errors.Is(err, os.ErrNotExist) {
				open[id.rel] = nil
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			got, err := identify(f)
			if err != nil {
				f.Close()
				return nil, err
			}
			t = &target{f: f, id: got}
			open[id.rel] = t
		}
		if t == nil || !t.id.same(id) {
			return nil, nil
		}
		return t, nil
	}
	for i, seq := range seqs {
		path := filepath.Join(dir, journalName(seq))
		b, err := os.ReadFile(path)
		if err != nil {
			return r, 0, err
		}
		h, entries, end, err := parseJournalTo(b)
		if err != nil {
			return r, 0, fmt.Errorf("%s: %w", path, err)
		}
		if h.seq != seq {
			return r, 0, fmt.Errorf("%s: %w (it says it is number %d)", path, errJournalHeader, h.seq)
		}
		switch {
		case i+1 == len(seqs):
		case h.version == 1:
			// Never written over a spare: an older file parses to
			// its end.
			if end < len(b) {
				return r, 0, fmt.Errorf("%s: %w: its entries end at byte %d, damaged there, of %d, and the entries after it would be lost (only the newest journal file may end torn); %s", path, ErrCorruptFile, end, len(b), journalDamageFix)
			}
		default:
			if err := checkJournalEnd(dir, seq, seqs[i+1], end); err != nil {
				return r, 0, fmt.Errorf("%s: %w", path, err)
			}
		}
		r.Files++
		r.Entries += len(entries)
		for _, e := range entries {
			t, err := file(e.file)
			if err != nil {
				return r, 0, fmt.Errorf("replaying %s: %w", path, err)
			}
			if t == nil {
				r.Skipped++
				continue
			}
			if _, err := t.f.WriteAt(e.data, e.position); err != nil {
				return r, 0, fmt.Errorf("replaying %s into %s: %w", path, t.f.Name(), err)
			}
			t.written = true
			r.Written++
			r.Bytes += int64(len(e.data))
		}
	}
	for _, t := range open {
		if t == nil || !t.written {
			continue
		}
		if err := unix.Fdatasync(int(t.f.Fd())); err != nil {
			return r, 0, fmt.Errorf("replaying the journal: fdatasync %s: %w", t.f.Name(), err)
		}
	}
	if _, err := retireFiles(dir, seqs, 0); err != nil {
		return r, 0, err
	}
	return r, seqs[len(seqs)-1], nil
}

// journalDamageFix is what an operator can do about a damaged journal.
const journalDamageFix = "restore the journal files from a copy, or move them aside and let the partitions' replicas make up what they held"

// checkJournalEnd checks that the entries of journal file seq, which
// parse to byte end, reach where the next file left in dir, number next,
// says they end.
func checkJournalEnd(dir string, seq, next uint64, end int) error {
	if next != seq+1 {
		return fmt.Errorf("%w: journal file %d is missing after it, and the entries it held would be lost; %s", ErrCorruptFile, seq+1, journalDamageFix)
	}
	f, err := os.Open(filepath.Join(dir, journalName(next)))
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, journalHeaderSize)
	if _, err := io.ReadFull(f, b); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	h, err := parseJournalHeader(b)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	// Entries past it are whole ones of this file, acknowledged by rounds
	// that went on in it after the next file's start failed past its
	// rename (a header-only file left behind), and replayed.
	if int64(end) < h.previousEnd {
		return fmt.Errorf("%w: its entries end at byte %d, damaged there, where the next file says they go on to byte %d, and the entries after it would be lost (only the newest journal file may end torn); %s", ErrCorruptFile, end, h.previousEnd, journalDamageFix)
	}
	return nil
}

// fsyncPath fsyncs the file or directory at path, with no DiskSync: the
// journal's directory after its files were created or removed, and files
// replayed before the DiskSync exists.
func fsyncPath(path string) error { return newSyncer(nil, nil).syncPath(path) }

// openJournal starts d's journal in its directory at file seq, files of
// limit bytes.
func openJournal(d *DiskSync, seq uint64, limit int64) (*journal, error) {
	if !d.Shared() {
		return nil, fmt.Errorf("hotlog: disk journal: a syncfs on %s may miss a failed write (%s), and retiring a journal file counts on one", d.dir.Name(), d.errors)
	}
	if _, err := identify(d.dir); err != nil {
		return nil, fmt.Errorf("hotlog: disk journal: %w", err)
	}
	if limit < 1<<20 {
		return nil, fmt.Errorf("hotlog: disk journal: files of %d bytes: at least 1 MiB", limit)
	}
	j := &journal{dir: d.dir.Name(), limit: limit}
	j.group.turn = make(chan struct{}, 1)
	j.mu.Lock()
	defer j.mu.Unlock()
	spareSeq, err := adoptSpare(j.dir, limit)
	if err != nil {
		return nil, err
	}
	// Sequence numbers never repeat over a spare's lives: an entry it
	// holds from one parses only under its own file's number, which its
	// header, rewritten at each life, is the highest of.
	j.mu.spare = spareSeq > 0
	if err := j.startFileLocked(max(seq, spareSeq+1)); err != nil {
		return nil, err
	}
	return j, nil
}

// adoptSpare returns the sequence number in the header of the spare a
// journal in dir left, or 0 where there is none to take: none left, or
// one whose header does not parse (its older entries' numbers are then
// unknown) or far larger than a file of limit bytes (replay reads a file
// whole), which is deleted.
func adoptSpare(dir string, limit int64) (uint64, error) {
	path := filepath.Join(dir, journalSpareName)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("disk journal: %w", err)
	}
	defer f.Close()
	header := make([]byte, journalHeaderSize)
	_, err = io.ReadFull(f, header)
	h, herr := parseJournalHeader(header)
	st, serr := f.Stat()
	if err == nil && herr == nil && serr == nil && st.Mode().IsRegular() && h.version == journalVersion && st.Size() <= 2*limit {
		// Its name made durable before it is written over: a process
		// killed between its rename and the directory's sync may have
		// left it under its numbered name on disk.
		if err := fsyncPath(dir); err != nil {
			return 0, fmt.Errorf("disk journal: %w", err)
		}
		return max(h.seq, 1), nil
	}
	if err := os.Remove(path); err != nil {
		return 0, fmt.Errorf("disk journal: %w", err)
	}
	return 0, nil
}

// startFileLocked makes file seq the current one: its header written
// and fsynced under a temporary name, renamed, and the directory synced
// before any round counts on it, so a crash never leaves a journal file
// without its header (replay deletes a leftover temporary). Where a
// retired file waits as the spare it is written over instead, from its
// header on: its blocks are allocated and written already, so a round's
// fdatasync of it writes the pages of its entries and no metadata, and no
// new file's blocks are allocated nor an old one's freed (with online
// discard, as here, each freed 256 MiB is a discard). Its older entries
// fail their checksums under the new sequence number.
func (j *journal) startFileLocked(seq uint64) error {
	path := filepath.Join(j.dir, journalName(seq))
	from, flags := path+temporarySuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC
	if j.mu.spare {
		// Whatever happens next, the spare is taken.
		from, flags, j.mu.spare = filepath.Join(j.dir, journalSpareName), os.O_RDWR, false
	}
	f, err := os.OpenFile(from, flags, 0o644)
	if err != nil {
		return fmt.Errorf("disk journal: %w", err)
	}
	h := journalHeader{seq: seq}
	if j.mu.file != nil {
		h.previousEnd = j.mu.size
	}
	header := appendJournalHeader(nil, h)
	if _, err = f.WriteAt(header, 0); err == nil {
		err = f.Sync()
	}
	renamed := false
	if err == nil {
		err = os.Rename(from, path)
		renamed = err == nil
	}
	if err == nil {
		err = fsyncPath(j.dir)
	}
	var st os.FileInfo
	if err == nil {
		// Open again by the name it has now, which errors name.
		f.Close()
		if f, err = os.OpenFile(path, os.O_RDWR, 0); err == nil {
			st, err = f.Stat()
		}
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		if renamed {
			// Not left beside the current file: replay would hold
			// the current one's entries to its header's previous end.
			os.Remove(path)
			fsyncPath(j.dir)
		} else {
			os.Remove(from)
		}
		return fmt.Errorf("disk journal: %s: %w", path, err)
	}
	if j.mu.file != nil {
		j.mu.file.Close()
	}
	j.mu.file, j.mu.seq, j.mu.size, j.mu.written = f, seq, int64(len(header)), st.Size()
	j.mu.live = append(j.mu.live, seq)
	return nil
}

// retireFiles deletes the retired journal files seqs from dir, oldest
// first, the directory synced after each so that a crash leaves the
// newest of them and never a gap (replay refuses one), and keeps file
// keep (0: none) as the spare instead of deleting it. It reports whether
// it kept one.
func retireFiles(dir string, seqs []uint64, keep uint64) (kept bool, err error) {
	for _, seq := range seqs {
		path := filepath.Join(dir, journalName(seq))
		if seq == keep {
			err = os.Rename(path, filepath.Join(dir, journalSpareName))
			kept = err == nil
		} else if err = os.Remove(path); errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		if err == nil {
			err = fsyncPath(dir)
		}
		if err != nil {
			return kept, fmt.Errorf("disk journal: %w", err)
		}
	}
	return kept, nil
}

// largestJournal returns the longest of the journal files seqs in dir,
// the best spare: a file written over it grows, and takes turns, only
// past its length (commitJournal).
func largestJournal(dir string, seqs []uint64) uint64 {
	var largest uint64
	var size int64 = -1
	for _, seq := range seqs {
		if st, err := os.Stat(filepath.Join(dir, journalName(seq))); err == nil && st.Size() > size {
			largest, size = seq, st.Size()
		}
	}
	return largest
}

// closeJournal closes the journal once the disk rounds stopped, and
// unless a call failed retires every file, the current one too: a syncfs,
// then they are deleted, one kept as the spare for the next process.
func (d *DiskSync) closeJournal() error {
	j := d.journal
	j.retirers.Wait()
	j.retireMu.Lock()
	defer j.retireMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	err := j.mu.file.Close()
	if err != nil || d.offline() != nil {
		return err
	}
	if err := d.syncfsAll(); err != nil {
		return err
	}
	var keep uint64
	if !j.mu.spare {
		keep = largestJournal(j.dir, j.mu.live)
	}
	kept, err := retireFiles(j.dir, j.mu.live, keep)
	j.mu.spare = j.mu.spare || kept
	j.mu.live = nil
	return err
}

// journalRound makes a disk round's files durable through the journal:
// an entry per member with new bytes, one write, one fdatasync. taken is
// false, with nothing written, where the round is better served by a
// syncfs (much new data in each file; journalBelowBytes) or the journal
// file has no room (ENOSPC, a quota); the caller then runs it as before.
// A round of one file is taken too: its own fdatasync would cost as much,
// and where calls take turns (SyncfsReportsOnce) it waited behind each
// retirement's syncfs, and every round queued behind it (at 4,000
// partitions, the second around each retirement went from 124-222 ms at
// p99 to 83-142; docs/bench.md). A failed write or fdatasync of the
// journal takes the DiskSync offline, as a failed syncfs does: its file's
// state is unknown.
func (d *DiskSync) journalRound(members []diskMember, files int) (errs []error, taken bool) {
	if d.journal == nil {
		return nil, false
	}
	return d.journalMembers(members, files, &d.journal.buf)
}

// journalOwn makes the new bytes of m, a Log's own flusher round (its
// syncing lock held), durable as a disk round of that one file would:
// taken is false where the journal does not take it (none, too much new
// data, no room), and the caller syncs the file itself. Where calls take
// turns its own fdatasync would wait for a retirement's syncfs to end,
// under the Log's syncing lock, so the disk rounds would leave the Log's
// appenders to this round meanwhile: at 4,000 partitions, with a
// checkpoint round of one partition or another every few milliseconds,
// that cost produce 8-12 ms of p99 (docs/bench.md).
func (d *DiskSync) journalOwn(m diskMember) (taken bool, err error) {
	var scratch []byte
	errs, taken := d.journalMembers([]diskMember{m}, 1, &scratch)
	if !taken {
		return false, nil
	}
	return true, errs[0]
}

// journalMembers is journalRound with scratch, the caller's buffer for the
// entries.
func (d *DiskSync) journalMembers(members []diskMember, files int, scratch *[]byte) (errs []error, taken bool) {
	j := d.journal
	if j == nil || files == 0 {
		return nil, false
	}
	var pending int64
	for _, m := range members {
		if m.file != nil {
			pending += m.tail.size - m.active.syncedSize
		}
	}
	if pending > int64(files)*journalBelowBytes {
		return nil, false
	}
	errs = make([]error, files)
	if err := d.offline(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs, true
	}
	buf := (*scratch)[:0]
	for _, m := range members {
		if m.file == nil {
			continue
		}
		id, err := m.journalID(j.dir)
		if err == nil {
			from := m.active.syncedSize
			buf, err = appendFileEntry(buf, id, m.file, from, int(m.tail.size-from))
		}
		if err != nil {
			// This member's file only: its round fails, the others'
			// entries go on.
			errs[m.call] = err
		}
	}
	*scratch = buf
	seq, taken, err := d.commitJournal(buf)
	if !taken {
		return nil, false
	}
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs, true
	}
	for _, m := range members {
		if m.file != nil && errs[m.call] == nil {
			m.active.journaledIn = seq
		}
	}
	d.hintWriteback(members)
	return errs, true
}

// journalBatch is the entries of the callers of one commit.
type journalBatch struct {
	bufs  [][]byte
	done  chan struct{}
	seq   uint64
	taken bool
	err   error
}

// commitJournal writes buf, whole entries, to the current journal file
// and fdatasyncs it, and returns the sequence number of the file they went
// into. taken is false, with nothing written, where the file has no room
// (ENOSPC, a quota). A failed write or fdatasync takes the DiskSync
// offline, as a failed syncfs does: the file's state is unknown. A file
// that reached its limit is followed by a new one, and the older ones are
// retired in the background.
//
// Commits are grouped: callers who come while a commit is under way join
// the next, whose first caller writes every caller's entries with one
// pwritev and one fdatasync. The disk rounds commit one at a time, but
// flushers' own rounds (journalOwn: seals, checkpoints) and snapshot
// passes (SyncWrites) come from many goroutines: 512 partitions rolling
// together made 512 commits one after another (grouping them moved the
// seconds they rolled in from 0.6-1.1 s at p99 to 0.74-0.89; the
// flushers' other syncs taking a turn each were the rest, callsForEach;
// docs/bench.md). buf must stay unchanged until commitJournal returns.
func (d *DiskSync) commitJournal(buf []byte) (seq uint64, taken bool, err error) {
	g := &d.journal.group
	g.mu.Lock()
	b := g.next
	leads := b == nil
	if leads {
		b = &journalBatch{done: make(chan struct{})}
		g.next = b
	}
	b.bufs = append(b.bufs, buf)
	g.mu.Unlock()
	if !leads {
		<-b.done
		return b.seq, b.taken, b.err
	}
	g.turn <- struct{}{} // the commit under way ends; meanwhile others join b
	g.mu.Lock()
	g.next = nil
	g.mu.Unlock()
	b.seq, b.taken, b.err = d.commitBatch(b.bufs)
	<-g.turn
	close(b.done)
	return b.seq, b.taken, b.err
}

// commitBatch is commitJournal's commit of bufs, each whole entries.
//
// Where calls take turns (SyncfsReportsOnce), a write that makes the file
// longer, or fills it so that the next is started, takes its turn: its
// fsyncs write an inode or a directory, and a failed metadata write that a
// retirement's syncfs took meanwhile would not be reported to them. A
// write over a spare's blocks writes no metadata, and runs beside that
// syncfs.
func (d *DiskSync) commitBatch(bufs [][]byte) (seq uint64, taken bool, err error) {
	j := d.journal
	if err := d.offline(); err != nil {
		return 0, true, err
	}
	j.mu.Lock()
	end := j.mu.size
	for _, buf := range bufs {
		end += int64(len(buf))
	}
	if end > j.mu.written || end >= j.limit {
		defer d.takeTurn()()
	}
	seq, taken, full, err := d.commitLocked(bufs, end)
	j.mu.Unlock()
	if full && !j.retiring.Swap(true) {
		j.retirers.Go(d.retireInBackground)
	}
	return seq, taken, err
}

// retireInBackground retires journal files until only the current one is
// left: files filled while it ran wait for no later rotation. A failure
// took the DiskSync offline, which the rounds report.
func (d *DiskSync) retireInBackground() {
	j := d.journal
	left := func() int {
		j.mu.Lock()
		defer j.mu.Unlock()
		return len(j.mu.live)
	}
	for {
		for left() > 1 {
			if d.retireJournals() != nil {
				break
			}
		}
		j.retiring.Store(false)
		// A rotation between the last look and the store started no
		// retirement of its own: look again.
		if left() <= 1 || d.offline() != nil || j.retiring.Swap(true) {
			return
		}
	}
}

// commitLocked is commitBatch's write, fdatasync and rotation, under
// j.mu; end is where bufs end in the file. full says a new file was
// started.
func (d *DiskSync) commitLocked(bufs [][]byte, end int64) (seq uint64, taken, full bool, err error) {
	j := d.journal
	if err := d.offline(); err != nil {
		return 0, true, false, err
	}
	for _, buf := range bufs {
		sealJournalEntries(buf, journalHeader{version: journalVersion, seq: j.mu.seq})
	}
	err = writeFullyAt(j.mu.file, bufs, j.mu.size)
	if isNoSpace(err) {
		// Cut what did go in, durably, so no later entry follows a
		// torn one.
		if err = j.mu.file.Truncate(j.mu.size); err == nil {
			d.fsyncCalls.Add(1)
			err = d.fsync(j.mu.file)
		}
		if err == nil {
			j.mu.written = min(j.mu.written, j.mu.size)
			return 0, false, false, nil
		}
	}
	j.mu.written = max(j.mu.written, end)
	if err == nil {
		d.fdatasyncCalls.Add(1)
		err = d.fdatasync(j.mu.file)
	}
	if err != nil {
		d.goOffline(fmt.Errorf("disk journal %s: %w", j.mu.file.Name(), err))
		return 0, true, false, d.offline()
	}
	seq = j.mu.seq
	d.journalBytes.Add(end - j.mu.size)
	j.mu.size = end
	// Where the next file cannot be started, rounds go on in the full
	// one and the next round tries again.
	full = j.mu.size >= j.limit && j.startFileLocked(j.mu.seq+1) == nil
	return seq, true, full, nil
}

// FileWrite is a range of a file written in place, for SyncWrites.
type FileWrite struct {
	File     *os.File
	Position int64
	Len      int
}

// SyncWrites makes writes durable and returns each one's error. Where the
// DiskSync keeps a journal, their bytes (read back from the page cache)
// go into it as entries, and one fdatasync makes them all durable, as a
// disk round does for segments: for many small files (replica's producer
// snapshots of every partition), no syncfs that writes every file of the
// disk. Else, and for a write of a file on another file system, as
// SyncAll. Each file must already be durable in its directory: replay
// writes an entry only into the file it was copied from, found at its
// path. Until its journal file is retired, replay also writes an entry
// over whatever a later write of the same range made durable another way
// (an fsync): the caller must accept the older bytes then (replica's
// slots: an older, still valid snapshot).
func (d *DiskSync) SyncWrites(writes []FileWrite) []error {
	errs := make([]error, len(writes))
	var rest []int // the writes SyncAll makes durable
	var buf []byte
	if d.journal != nil && len(writes) > 1 {
		for i, w := range writes {
			if !d.holds(w.File) {
				rest = append(rest, i)
				continue
			}
			id, err := identifyUnder(d.journal.dir, w.File)
			if err == nil {
				buf, err = appendFileEntry(buf, id, w.File, w.Position, w.Len)
			}
			errs[i] = err
		}
		// buf is empty where every file is on another file system, or
		// failed.
		if len(buf) > 0 {
			_, taken, err := d.commitJournal(buf)
			if err != nil {
				for i := range errs {
					errs[i] = err
				}
				return errs
			}
			if !taken {
				rest = rest[:0]
				for i := range writes {
					if errs[i] == nil {
						rest = append(rest, i)
					}
				}
			}
		}
	} else {
		for i := range writes {
			rest = append(rest, i)
		}
	}
	files := make([]*os.File, len(rest))
	for j, i := range rest {
		files[j] = writes[i].File
	}
	for j, err := range d.SyncAll(files) {
		errs[rest[j]] = err
	}
	return errs
}

// journalWritebackBytes is how many whole pages of a segment a journal
// round lets accumulate before it asks the kernel to start writing them
// (hintWriteback). What is not yet hinted is what a retirement's syncfs
// writes at once: at 4,000 partitions and 40 MB/s, 110-160 MB with 64 KiB
// (the second around each retirement at p99 225-290 ms), about 77 MB with
// 16 KiB (133-214 ms), the median unchanged; every page (4 KiB) took the
// median from 12-20 ms to 48 (docs/bench.md).
const journalWritebackBytes = 16 << 10

// hintWriteback starts writeback (sync_file_range, no durability claimed)
// of each journaled member's whole pages each time they pass a mark, one
// every journalWritebackBytes of the file, shifted by the Log's phase.
// Left to itself the kernel writes a segment's pages 30 s after they were
// dirtied, thousands of files in one burst, and a retirement's syncfs
// writes what is left at once; every journal fdatasync's cache flush then
// waits for that burst. Hinted, the pages go out in a steady stream, each
// once. The phase keeps the stream steady where partitions fill at one
// rate: with the marks at the same place in every file, 4,000 partitions
// written round-robin at 40 MB/s all passed one within the same second,
// every 6.5 s at 64 KiB apart, and each burst of 256 MiB of hints took
// produce's p99 of that second from 30-60 ms to 250-500 ms.
func (d *DiskSync) hintWriteback(members []diskMember) {
	for _, m := range members {
		if m.file == nil {
			continue
		}
		s := m.active
		to := m.tail.size &^ (int64(pageSize) - 1)
		// From writebackFrom, not syncedSize as under periodic flushing:
		// journaled bytes count as synced but are not yet in the file.
		if !passesWritebackMark(s.writebackFrom, to, m.log.flusher.writebackPhase) {
			continue
		}
		// A failed hint claims nothing: the retirement's syncfs reports
		// what did not reach the disk.
		if m.log.syncer.writeback(m.file, s.writebackFrom, to-s.writebackFrom) == nil {
			s.writebackFrom = to
		}
	}
}

// passesWritebackMark reports whether a segment's whole pages grew from
// from to to past a writeback mark of a Log of phase.
func passesWritebackMark(from, to, phase int64) bool {
	return (to+phase)/journalWritebackBytes != (from+phase)/journalWritebackBytes
}

// writebackPhase is the shift of a Log of phase (DiskSync.phase) for
// passesWritebackMark: whole pages below journalWritebackBytes.
func writebackPhase(phase float64) int64 {
	return int64(phase*journalWritebackBytes) &^ (int64(pageSize) - 1)
}

// journalID returns the identity of m's segment file, read once per
// segmentFiles. Only the disk rounds' goroutine reads and sets it, under
// the Log's syncing lock, and the Log's own rounds through the journal
// (journalOwn), which hold it too.
func (m diskMember) journalID(dir string) (*fileID, error) {
	files := m.active.files.Load()
	if files.journalID != nil {
		return files.journalID, nil
	}
	id, err := identifyUnder(dir, m.file)
	if err != nil {
		return nil, err
	}
	files.journalID = id
	return id, nil
}

// identifyUnder returns f's identity with its path relative to dir.
func identifyUnder(dir string, f *os.File) (*fileID, error) {
	id, err := identify(f)
	if err != nil {
		return nil, err
	}
	path, err := filepath.Abs(f.Name())
	if err == nil {
		id.rel, err = filepath.Rel(dir, path)
	}
	if err != nil {
		return nil, fmt.Errorf("disk journal: %s: %w", f.Name(), err)
	}
	if len(id.rel) > 1<<16-1 {
		return nil, fmt.Errorf("disk journal: %s: path too long", f.Name())
	}
	return &id, nil
}

// retireJournals retires every journal file but the current one: a syncfs
// (in turn with the Sync rounds' calls, through their descriptor) makes
// every byte they copied durable in its own file, then they are deleted,
// one kept as the spare where there is none, and the directory synced. A
// failed syncfs takes the DiskSync offline.
func (d *DiskSync) retireJournals() error {
	j := d.journal
	j.retireMu.Lock()
	defer j.retireMu.Unlock()
	j.mu.Lock()
	if len(j.mu.live) <= 1 {
		j.mu.Unlock()
		return nil
	}
	old := slices.Clone(j.mu.live[:len(j.mu.live)-1])
	spare := j.mu.spare
	j.mu.Unlock()
	if err := d.syncfsAll(); err != nil {
		return err
	}
	var keep uint64
	if !spare {
		keep = largestJournal(j.dir, old)
	}
	kept, err := retireFiles(j.dir, old, keep)
	if err != nil {
		return d.goOffline(err)
	}
	d.journalRetirements.Add(1)
	j.mu.Lock()
	// Marked only now that its new name is durable: a file written over
	// it before would be found under its old name after a crash.
	j.mu.spare = j.mu.spare || kept
	j.mu.live = slices.DeleteFunc(j.mu.live, func(seq uint64) bool { return slices.Contains(old, seq) })
	maps.DeleteFunc(j.mu.closed, func(_ string, seq uint64) bool { return seq < j.mu.live[0] })
	j.mu.Unlock()
	return nil
}

// journaledAtClose records that the Log in dir, closing, has entries in
// journal file seq and older: should it be opened again in this process
// while that file lives, its segment files are the same files, and a
// truncation must retire the file first (journaledBeforeOpen).
func (d *DiskSync) journaledAtClose(dir string, seq uint64) {
	if d == nil || d.journal == nil || seq == 0 {
		return
	}
	j := d.journal
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.mu.closed == nil {
		j.mu.closed = map[string]uint64{}
	}
	key := journalDirKey(dir)
	j.mu.closed[key] = max(j.mu.closed[key], seq)
}

// journalDirKey is dir as journal.mu.closed names it: absolute, so that
// one directory is one key however a caller spells it.
func journalDirKey(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// journaledBeforeOpen returns the newest live journal file that may hold
// an entry of the segment files of the Log being opened in dir, written
// while it was open before in this process (0: none). An earlier
// process's entries were replayed and deleted when the DiskSync opened.
func (d *DiskSync) journaledBeforeOpen(dir string) uint64 {
	if d == nil || d.journal == nil {
		return 0
	}
	j := d.journal
	j.mu.Lock()
	defer j.mu.Unlock()
	seq := j.mu.closed[journalDirKey(dir)]
	if len(j.mu.live) == 0 || seq < j.mu.live[0] {
		return 0
	}
	return seq
}

// syncfsAll makes everything on the file system durable with one syncfs,
// as a Sync round of its own. A failure takes the DiskSync offline.
func (d *DiskSync) syncfsAll() error {
	done := make(chan struct{})
	d.acquireCall(done)
	defer d.releaseCall(done)
	if err := d.offline(); err != nil {
		return err
	}
	d.syncfsCalls.Add(1)
	if err := d.syncfs(d.dir); err != nil {
		return d.goOffline(fmt.Errorf("hotlog: syncfs: %w", err))
	}
	return nil
}

// journalBarrier returns once no journal entry written before the call is
// left to replay: before a file is cut short in place (TruncateTo), whose
// removed bytes an entry could otherwise bring back after a crash. It
// starts a new journal file if the current one holds entries and retires
// every older one. journaledIn is the newest journal file that holds an
// entry of the file (0: none); where no live file can, there is nothing
// to do. On a full file system, where no new file can be started, the
// current one is emptied in place instead (emptyCurrentLocked).
func (d *DiskSync) journalBarrier(journaledIn uint64) error {
	j := d.journal
	if j == nil || journaledIn == 0 {
		return nil
	}
	j.mu.Lock()
	if len(j.mu.live) == 0 || journaledIn < j.mu.live[0] {
		j.mu.Unlock()
		return nil
	}
	if j.mu.size > journalHeaderSize {
		endTurn := d.takeTurn() // as commitJournal's
		// The current file's end is unknown after a failed round; the
		// next file's header would say where it ends.
		err := d.offline()
		if err == nil {
			err = j.startFileLocked(j.mu.seq + 1)
		}
		endTurn()
		if isNoSpace(err) {
			err = d.emptyCurrentLocked()
		}
		if err != nil {
			j.mu.Unlock()
			return err
		}
	}
	j.mu.Unlock()
	return d.retireJournals()
}

// emptyCurrentLocked cuts the current journal file back to its header,
// once a syncfs made every byte its entries copied durable in its own
// file: a barrier's way where a new file finds no room, since cutting a
// file needs none. Rounds wait for it (j.mu is held). A failed syncfs or
// fsync takes the DiskSync offline.
func (d *DiskSync) emptyCurrentLocked() error {
	j := d.journal
	if err := d.syncfsAll(); err != nil {
		return err
	}
	defer d.takeTurn()() // as commitJournal's: the cut writes the inode
	err := d.offline()
	if err == nil {
		err = j.mu.file.Truncate(journalHeaderSize)
	}
	if err == nil {
		d.fsyncCalls.Add(1)
		err = d.fsync(j.mu.file)
	}
	if err != nil {
		return d.goOffline(fmt.Errorf("disk journal %s: %w", j.mu.file.Name(), err))
	}
	j.mu.size, j.mu.written = journalHeaderSize, journalHeaderSize
	return nil
}
