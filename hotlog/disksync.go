package hotlog

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A DiskSync makes the logs' appended data durable with one system call per
// group commit for every Log on one file system, where each Log would
// otherwise fdatasync its own file. Logs share it through Config.DiskSync.
//
// Under SyncBeforeAck the rounds that release waiting appenders are disk
// rounds, run by the DiskSync's own goroutine for every Log at once (want).
// The rounds a Log's flusher still runs (seals, the directory, checkpoint
// timers) ask Sync for the segment file: the first to ask while no call is
// in flight calls fdatasync on its file alone; while that call runs,
// everyone else who asks joins the next round, and its first member waits
// for the call in flight, then covers the whole round with one syncfs(2):
// every file's written data is then on stable storage, as fdatasync would
// leave it. With 512 partitions each writing 16 KiB per round, one syncfs
// took 16-19 ms where 512 concurrent fdatasyncs took 85-90 ms
// (docs/bench.md), and the calls per second no longer grow with the number
// of partitions. The same flushers' fsyncs (the directory after a roll,
// the sealed segment's index files, the checkpoint's) ask
// SyncFile and share those rounds; 512 partitions rolling at once made
// thousands of fsyncs that the disk took one after another. SyncAll does
// the same for one caller with many small files (replica's producer
// snapshots of every partition). With a journal (journal.go) disk rounds
// with little new data per file go through it instead, and so does a
// flusher's own round's active segment (journalOwn); a Sync round of a
// few files then calls for each, one after another, since a syncfs would
// write every partition's pages, and only a round that many joined (a
// burst of rolls) takes one syncfs (callsForEach); SyncAll fsyncs each
// file on its own, in turn where calls take turns (syncOwn).
//
// syncfs flushes everything on the file system, including other writers'
// data: the data directory is best on a file system of its own.
//
// Errors decide whether and how calls are shared (SyncfsErrors, read from
// the kernel and the file system at OpenDiskSync). Where a syncfs reports
// every failed write, data and metadata, to every descriptor
// (SyncfsReportsAll), it reports each once per descriptor: two calls in
// flight together through one descriptor could each miss the error the
// other saw, so Sync rounds make one call at a time through one
// descriptor and disk rounds theirs, one at a time, through another.
// Where a failed metadata write is reported only once for the whole
// device (SyncfsReportsOnce: ext4 without a journal), every syncfs of the
// DiskSync is made one at a time. Either way a failed syncfs cannot say
// whose write failed, so it fails every file it covered, and it takes
// the DiskSync offline: from then on every call through it fails, and
// every log on the file system with it, until the process restarts, as
// Kafka takes a log directory offline on an I/O error. Under
// SyncfsReportsOnce that is required, since the error may have been a
// file's outside the round, whose own calls would not see it again;
// under SyncfsReportsAll each file's own call could say whose it was,
// but a disk failing one write rarely fails only one, and one rule
// serves both. Where a syncfs may miss a failed write (SyncfsMayMiss),
// every file is synced on its own as asked.
type DiskSync struct {
	// dir is the descriptor of Sync rounds' syncfs calls, roundsDir of
	// disk rounds': syncfs reports an error once per descriptor, so
	// calls through one descriptor must not overlap (one Sync round's
	// call at a time; one goroutine for disk rounds), while calls through
	// the two each see every error (SyncfsReportsAll; for
	// SyncfsReportsOnce disk rounds take their turn with Sync rounds).
	dir, roundsDir *os.File
	device         uint64
	errors         SyncfsErrors // what a syncfs here reports
	// failed is the error of the first syncfs that failed; every call
	// through the DiskSync fails from then on (offline), and offlineCh
	// is closed.
	failed    atomic.Pointer[error]
	offlineCh chan struct{}

	syncfs    func(dir *os.File) error
	fdatasync func(f *os.File) error
	fsync     func(f *os.File) error

	mu struct {
		sync.Mutex
		// next is the round that callers join; nil when none is forming.
		next *syncRound
		// inFlight is closed when the round whose call is in flight ends;
		// nil when no call is.
		inFlight chan struct{}
		// waiting are the calls waiting for their turn, first come
		// first served (releaseCall).
		waiting []waitingCall
	}
	syncfsCalls, fdatasyncCalls, fsyncCalls atomic.Int64
	// journalBytes and journalRetirements count what the journal wrote
	// and its retirement passes (JournalWork).
	journalBytes, journalRetirements atomic.Int64
	// journal, when set, takes disk rounds with little new data per file
	// (journal.go); replayed is what OpenDiskSync replayed of an earlier
	// process's.
	journal  *journal
	replayed JournalReplay
	// reclaims paces the reclaims of deleted segments on this disk
	// (reclaim.go).
	reclaims *reclaimTurn
	// phases counts the Logs given a checkpoint phase; logs is how many
	// are open (from their flusher's start to Close).
	phases atomic.Uint64
	logs   atomic.Int64

	// rounds is the disk rounds' goroutine, started by OpenDiskSync, and
	// its queue of Logs with waiting appenders.
	rounds struct {
		wakeup chan struct{} // buffered 1
		stop   chan struct{}
		done   chan struct{}
		mu     struct {
			sync.Mutex
			queue []*Log
		}
	}
}

// syncRound is the Sync, SyncFile and SyncFiles callers one call covers
// (or, where it calls per file, one turn: join); full[i] says files[i]
// needs fsync where the round calls per file.
type syncRound struct {
	files   []*os.File
	full    []bool
	callers int
	errs    []error
	done    chan struct{}
}

// OpenDiskSync returns a DiskSync for the file system holding dir. Close
// it after every Log using it is closed. It first replays the disk
// journal an earlier process left in dir (Replayed), so it must be opened
// before any Log in dir. journalBytes above 0 starts a journal in dir
// whose files hold that many bytes each (journal.go); it is refused where
// syncfs calls are not shared (Shared) or the file system records no
// birth time for files.
func OpenDiskSync(dir string, journalBytes int64) (*DiskSync, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("hotlog: disk sync: %w", err)
	}
	replayed, lastJournal, err := replayJournals(dir)
	if err != nil {
		return nil, fmt.Errorf("hotlog: disk sync: replaying the disk journal: %w", err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("hotlog: disk sync: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("hotlog: disk sync: stat %s: %w", dir, err)
	}
	roundsDir, err := os.Open(dir)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("hotlog: disk sync: %w", err)
	}
	d := &DiskSync{
		dir:       f,
		roundsDir: roundsDir,
		reclaims:  newReclaimTurn(),
		device:    st.Dev,
		errors:    syncfsErrorsOf(f),
		syncfs:    func(dir *os.File) error { return unix.Syncfs(int(dir.Fd())) },
		fdatasync: func(f *os.File) error { return unix.Fdatasync(int(f.Fd())) },
		fsync:     (*os.File).Sync,
		offlineCh: make(chan struct{}),
		replayed:  replayed,
	}
	if journalBytes > 0 {
		if d.journal, err = openJournal(d, lastJournal+1, journalBytes); err != nil {
			return nil, errors.Join(err, f.Close(), roundsDir.Close())
		}
	} else if err := os.Remove(filepath.Join(dir, journalSpareName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		// A journal turned off leaves no spare behind.
		return nil, errors.Join(fmt.Errorf("hotlog: disk sync: %w", err), f.Close(), roundsDir.Close())
	}
	d.rounds.wakeup = make(chan struct{}, 1)
	d.rounds.stop = make(chan struct{})
	d.rounds.done = make(chan struct{})
	go d.runRounds()
	return d, nil
}

// reclaimTurn returns the pace of reclaims on d's disk; nil (unpaced)
// for a nil d.
func (d *DiskSync) reclaimTurn() *reclaimTurn {
	if d == nil {
		return nil
	}
	return d.reclaims
}

// Close stops the disk rounds and releases the DiskSync's descriptor. With
// a journal it first retires every journal file (unless a call failed), so
// the next open has nothing to replay after a clean shutdown.
func (d *DiskSync) Close() error {
	close(d.rounds.stop)
	<-d.rounds.done
	var err error
	if d.journal != nil {
		err = d.closeJournal()
	}
	return errors.Join(err, d.dir.Close(), d.roundsDir.Close())
}

// Replayed reports what opening the DiskSync replayed of the journal an
// earlier process left.
func (d *DiskSync) Replayed() JournalReplay { return d.replayed }

// Shared reports whether the DiskSync coalesces callers into syncfs
// calls: everywhere but where a syncfs may miss a failed write.
func (d *DiskSync) Shared() bool { return d.errors != SyncfsMayMiss }

// Errors reports what a syncfs on the DiskSync's file system reports.
func (d *DiskSync) Errors() SyncfsErrors { return d.errors }

// SyncfsFailed reports whether a syncfs here, or a write or fdatasync of
// the disk journal, has failed: every call then fails, until the process
// restarts.
func (d *DiskSync) SyncfsFailed() bool { return d.failed.Load() != nil }

// Offline is closed once a syncfs here, or a write or fdatasync of the
// disk journal, has failed (SyncfsFailed): a log that has nothing more
// to sync would not find out by itself.
func (d *DiskSync) Offline() <-chan struct{} { return d.offlineCh }

// Failure is the error every call answers once Offline is closed, nil
// before.
func (d *DiskSync) Failure() error { return d.offline() }

// goOffline takes the DiskSync offline with err, unless an earlier error
// did, and returns err.
func (d *DiskSync) goOffline(err error) error {
	if d.failed.CompareAndSwap(nil, &err) {
		close(d.offlineCh)
	}
	return err
}

// offline is the error every call answers once a syncfs, or the disk
// journal's write or fdatasync, here failed; nil before.
func (d *DiskSync) offline() error {
	if p := d.failed.Load(); p != nil {
		return fmt.Errorf("hotlog: a sync of this file system failed, and every log on it is failed until the process restarts: %w", *p)
	}
	return nil
}

// Calls returns how many syncfs, fdatasync and fsync system calls the
// Sync rounds, the disk rounds and SyncAll have made.
func (d *DiskSync) Calls() (syncfs, fdatasync, fsync int64) {
	return d.syncfsCalls.Load(), d.fdatasyncCalls.Load(), d.fsyncCalls.Load()
}

// JournalWork returns the bytes the disk journal has written (entries,
// their headers included, and journal file headers not counted) and how
// many retirement passes it made (retireJournals: each a syncfs, then
// every file but the current one deleted); both 0 without a journal.
// Each journaled byte of a segment is written again by the segment's
// writeback, so beside the bytes appended they say what the journal adds
// to the disk's load.
func (d *DiskSync) JournalWork() (bytes, retirements int64) {
	return d.journalBytes.Load(), d.journalRetirements.Load()
}

// phase returns the phase of a Log opened now, a fraction in [0, 1), so
// that the Logs on one file system spread periodic work rather than all
// do it at once. Logs open together (a topic's partitions, a broker's at
// start) and, written round-robin, fill at one rate. In phase, their
// recovery-point checkpoints (three files each, made durable one after
// another) came due in the same few seconds of every interval and
// stalled the disk rounds of produce for seconds (docs/bench.md,
// "Recovery-point checkpoints and producer snapshots at 4,000
// partitions"), and their journal writeback hints (hintWriteback) came
// due in the same second every journalWritebackBytes of each. The n-th
// Log's phase is Spread(n): none for the first (the writeback marks,
// whole pages of a 16 KiB stride, in four groups).
func (d *DiskSync) phase() float64 {
	return Spread(d.phases.Add(1) - 1)
}

// Spread is the fractional part of n times the golden ratio, in [0, 1):
// the first n of them lie spread evenly over [0, 1) however large n is,
// 0 for n = 0. It spreads periodic work over Logs by the order they
// open (DiskSync.phase) and first segments' rolls over a topic's
// partitions by index (replica, Config.FirstSegmentCut).
func Spread(n uint64) float64 {
	_, frac := math.Modf(float64(n) * (math.Sqrt(5) - 1) / 2)
	return frac
}

// covers reports whether the directory dir is on the DiskSync's file
// system, so a syncfs through it reaches dir's files.
func (d *DiskSync) covers(dir string) (bool, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return false, err
	}
	return st.Dev == d.device, nil
}

// Sync returns once f's written data is on stable storage, or with the
// error fdatasync(f) would have returned.
func (d *DiskSync) Sync(f *os.File) error {
	return d.SyncFiles([]*os.File{f}, []bool{false})[0]
}

// SyncFile returns once f's data and metadata (a directory's entries, an
// index file's new length) are on stable storage, or with the error
// fsync(f) would have returned: the flushers' seals, checkpoints and
// directories share the Sync rounds, so when many partitions roll at once
// their thousands of fsyncs become a few syncfs calls. Where syncfs is
// not shared, f is fsynced on its own, at once.
func (d *DiskSync) SyncFile(f *os.File) error {
	return d.SyncFiles([]*os.File{f}, []bool{true})[0]
}

// SyncFiles makes files durable together, each as SyncFile (full[i]) or
// Sync would, and returns each one's error. Where calls are shared they
// all join one round, so a flusher that must sync a rolled segment, the
// directory and the active segment waits for one call rather than three
// in turn (64 partitions rolling together put 10-20 ms on produce's p99
// in the second they rolled; docs/bench.md); elsewhere each file is
// synced on its own, in order. full must be as long as files.
func (d *DiskSync) SyncFiles(files []*os.File, full []bool) []error {
	if len(full) != len(files) {
		panic(fmt.Sprintf("hotlog: SyncFiles of %d files with %d full flags", len(files), len(full)))
	}
	errs := make([]error, len(files))
	if len(files) == 0 {
		return errs
	}
	if err := d.offline(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if !d.Shared() {
		for i, f := range files {
			errs[i] = d.syncOwn(f, full[i])
		}
		return errs
	}
	return d.join(files, full)
}

// syncOwn makes f durable with a call of its own, fsync where full, else
// fdatasync: where syncfs is not shared, and for SyncAll's files under a
// journal. Where calls take turns (SyncfsReportsOnce), it takes its turn,
// beside no retirement's syncfs, and looks for an earlier failure only
// then: a syncfs that ran meanwhile may have taken a failed metadata
// write of f's (an index's new length, a directory's entries), which f's
// own call would not see.
func (d *DiskSync) syncOwn(f *os.File, full bool) error {
	defer d.takeTurn()()
	if err := d.offline(); err != nil {
		return err
	}
	if full {
		return d.fsyncOne(f)
	}
	return d.fdatasyncOne(f)
}

// join adds files to the forming Sync round (full[i]: fsync rather than
// fdatasync where the round calls per file) and returns their answers.
// The round's first caller makes its call once no other is in flight:
// one syncfs, or, for a round of one caller or with a journal a round of
// few files (callsForEach), a call for each file, one after another in
// one turn. Split into turns of 8 calls, so others' calls could go
// between, the seconds that 512 partitions rolled in with a journal went
// from 85-366 ms at p99 to 174-431 (two runs each, docs/bench.md): the
// rounds took turns about, and each ended later.
func (d *DiskSync) join(files []*os.File, full []bool) []error {
	d.mu.Lock()
	r := d.mu.next
	leads := r == nil
	if leads {
		r = &syncRound{done: make(chan struct{})}
		d.mu.next = r
	}
	first := len(r.files)
	r.files = append(r.files, files...)
	r.full = append(r.full, full...)
	r.callers++
	d.mu.Unlock()
	if leads {
		d.acquireCall(r.done) // meanwhile others join r
		r.errs = d.run(d.dir, r.files, r.full, r.callers == 1 || d.callsForEach(len(r.files)))
		d.releaseCall(r.done)
	} else {
		<-r.done
	}
	return r.errs[first : first+len(files) : first+len(files)]
}

// SyncAll makes files durable, data and metadata (a directory's entries
// too, as fsync would), and returns each file's error. Where Sync serves
// one file per caller, SyncAll is for one caller with many small files
// (replica's producer snapshots of every partition): the files on the
// DiskSync's file system take one syncfs, a call through the descriptor
// of Sync rounds and in turn with them, as a round of its own (run), and
// the rest an fsync each. Where the DiskSync does not share (Shared),
// every file is fsynced; once a syncfs failed, every file it holds
// fails. Its syncfs writes out everything dirty on the file system, so
// flushers' Sync rounds may wait behind it. With a journal every file is
// fsynced too, as the flushers' are: a syncfs would write every
// partition's pages, the burst the journal keeps the disk rounds from.
func (d *DiskSync) SyncAll(files []*os.File) []error {
	errs := make([]error, len(files))
	var covered []int
	var shared []*os.File
	for i, f := range files {
		switch {
		case !d.Shared() || !d.holds(f):
			errs[i] = d.fsyncOne(f)
		case d.journal == nil:
			covered, shared = append(covered, i), append(shared, f)
		default:
			// Each file on its own, and none once the disk is offline:
			// a failed write another call saw may not be reported again.
			errs[i] = d.syncOwn(f, true)
		}
	}
	if len(shared) == 0 {
		return errs
	}
	full := make([]bool, len(shared))
	for i := range full {
		full[i] = true
	}
	done := make(chan struct{})
	d.acquireCall(done)
	// run looks for an earlier failure only now that no call is in
	// flight: a round's syncfs that failed meanwhile took the error with
	// it, which this call through the same descriptor would not see again.
	sharedErrs := d.run(d.dir, shared, full, false)
	d.releaseCall(done)
	for j, i := range covered {
		errs[i] = sharedErrs[j]
	}
	return errs
}

// holds reports whether f is on the DiskSync's file system.
func (d *DiskSync) holds(f *os.File) bool {
	var st unix.Stat_t
	return unix.Fstat(int(f.Fd()), &st) == nil && st.Dev == d.device
}

func (d *DiskSync) fsyncOne(f *os.File) error {
	d.fsyncCalls.Add(1)
	return d.fsync(f)
}

// waitingCall is a call waiting for its turn: done will end it, and
// ready is closed when the turn is its.
type waitingCall struct {
	done, ready chan struct{}
}

// acquireCall waits until no Sync round's call is in flight and every
// call that asked before has had its turn, then ends the forming round,
// so later callers form the next, and marks its call, which done ends,
// as in flight. A round's leader calls for its members whoever ended it
// (SyncAll ends rounds it does not lead): they joined before it ended,
// and its call comes after. Turns are first come, first served: a
// flusher syncing file after file, each in its turn, would otherwise take
// the next turn before a waiting retirement's syncfs woke up to take it.
func (d *DiskSync) acquireCall(done chan struct{}) {
	d.mu.Lock()
	if d.mu.inFlight == nil {
		d.startCallLocked(done)
		d.mu.Unlock()
		return
	}
	ready := make(chan struct{})
	d.mu.waiting = append(d.mu.waiting, waitingCall{done: done, ready: ready})
	d.mu.Unlock()
	<-ready
}

// startCallLocked marks the call done ends as in flight, and ends the
// forming round. d.mu must be held.
func (d *DiskSync) startCallLocked(done chan struct{}) {
	d.mu.next = nil
	d.mu.inFlight = done
}

// releaseCall ends the call acquired with done, gives the turn to the
// call that has waited longest, and closes done.
func (d *DiskSync) releaseCall(done chan struct{}) {
	d.mu.Lock()
	d.mu.inFlight = nil
	if len(d.mu.waiting) > 0 {
		next := d.mu.waiting[0]
		d.mu.waiting[0] = waitingCall{}
		d.mu.waiting = d.mu.waiting[1:]
		d.startCallLocked(next.done)
		close(next.ready)
	}
	d.mu.Unlock()
	close(done)
}

// want queues l for the next disk round, unless it is queued already.
//
// Disk rounds serve the appenders waiting under SyncBeforeAck. Where each
// Log's flusher would run a round of its own and join a Sync round with
// it, one goroutine per DiskSync takes every queued Log, begins each
// one's round (joinDiskRound), makes all their files durable with one
// call (run), and ends the rounds (finish). With 512 partitions in every
// produce request, the flushers' way woke 512 goroutines at the end of
// each call, and the last of them ran milliseconds later on two cores:
// the scheduling delay at the end of Sync was 95% of the broker's
// (docs/bench.md). Group commit is the queue itself: Logs queued while a
// call runs share the next. Rounds that must seal segments or fsync the
// directory stay with the Log's flusher, which joins Sync rounds as
// before.
func (d *DiskSync) want(l *Log) {
	if l.flusher.queued.Swap(true) {
		return
	}
	d.rounds.mu.Lock()
	d.rounds.mu.queue = append(d.rounds.mu.queue, l)
	d.rounds.mu.Unlock()
	select {
	case d.rounds.wakeup <- struct{}{}:
	default:
	}
}

// runRounds runs disk rounds until Close.
func (d *DiskSync) runRounds() {
	defer close(d.rounds.done)
	var (
		queue   []*Log
		members []diskMember
		files   []*os.File
	)
	for {
		select {
		case <-d.rounds.stop:
			return
		case <-d.rounds.wakeup:
		}
		d.rounds.mu.Lock()
		queue, d.rounds.mu.queue = d.rounds.mu.queue, queue[:0]
		d.rounds.mu.Unlock()
		members, files = members[:0], files[:0]
		for _, l := range queue {
			// Unqueued before its round begins, so a wait registered
			// after the round began queues the Log again.
			l.flusher.queued.Store(false)
			if m, ok := l.joinDiskRound(); ok {
				if m.file != nil {
					m.call = len(files)
					files = append(files, m.file)
				}
				members = append(members, m)
			}
		}
		clear(queue)
		start := time.Now()
		errs, journaled := d.journalRound(members, len(files))
		if !journaled && len(files) > 0 {
			// A round of nothing new makes no call, and takes no turn
			// behind another's (syncRound).
			errs = d.syncRound(files)
		}
		took := time.Since(start)
		for _, m := range members {
			var err error
			if m.file != nil {
				err = errs[m.call]
			}
			m.finish(err, took)
		}
		clear(members)
	}
}

// syncRound makes a disk round's files durable without the journal.
func (d *DiskSync) syncRound(files []*os.File) []error {
	// In turn with the Sync rounds: the device reports a failed metadata
	// write to one syncfs only.
	defer d.takeTurn()()
	return d.run(d.roundsDir, files, nil, false)
}

// takeTurn waits, where calls take turns (SyncfsReportsOnce), for its
// turn (acquireCall: after every call that asked before), and returns
// what ends the turn.
func (d *DiskSync) takeTurn() (end func()) {
	if d.errors != SyncfsReportsOnce {
		return func() {}
	}
	turn := make(chan struct{})
	d.acquireCall(turn)
	return func() { d.releaseCall(turn) }
}

// run makes a round's files durable through the descriptor dir, on which
// no other call is in flight (on no descriptor, for SyncfsReportsOnce):
// one call of its own for a single file, one syncfs for several, unless
// ownCalls asks for a call for each file. A failed syncfs fails every
// file it covered and takes the DiskSync offline (see DiskSync). The call
// of its own is fdatasync, or fsync where full (nil: none) says so.
func (d *DiskSync) run(dir *os.File, files []*os.File, full []bool, ownCalls bool) []error {
	errs := make([]error, len(files))
	if err := d.offline(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if len(files) > 1 && !ownCalls {
		d.syncfsCalls.Add(1)
		err := d.syncfs(dir)
		if err != nil {
			d.goOffline(err)
			for i := range errs {
				errs[i] = unattributed(err, len(files))
			}
		}
		return errs
	}
	for i, f := range files {
		if full != nil && full[i] {
			errs[i] = d.fsyncOne(f)
		} else {
			errs[i] = d.fdatasyncOne(f)
		}
	}
	return errs
}

func (d *DiskSync) fdatasyncOne(f *os.File) error {
	d.fdatasyncCalls.Add(1)
	if err := d.fdatasync(f); err != nil {
		return fmt.Errorf("fdatasync: %w", err)
	}
	return nil
}

// callsForEach says whether a Sync round of n files makes a call for each,
// one after another, rather than one syncfs, where several callers
// joined it (join calls for each of a lone caller's files). Without a
// journal a syncfs is the cheaper. With one it writes every partition's
// pages (up to journalBelowBytes each, which the disk rounds leave to
// writeback), so a round of a few files (a checkpoint, a seal) calls for
// each; but where
// calls take turns, 512 partitions rolling together made thousands of
// calls one at a time, a second at p99, where a round that many joined
// takes one syncfs (docs/bench.md). Many is more than
// journalRoundOwnCalls files and more than a quarter of the open Logs:
// at 4,000 partitions the flushers' checkpoints, spread by phase, can
// make rounds of tens of files, whose own calls cost less than a syncfs
// of every partition's pages.
func (d *DiskSync) callsForEach(n int) bool {
	return d.journal != nil && (n <= journalRoundOwnCalls || 4*int64(n) <= d.logs.Load())
}

// journalRoundOwnCalls is the most files a Sync round makes durable with
// a call each however few Logs are open, with a journal (callsForEach).
const journalRoundOwnCalls = 8

// SyncfsErrors says what a syncfs(2) on a file system reports of the
// writes that failed under it, which decides how a DiskSync there shares
// its calls.
type SyncfsErrors int

const (
	// SyncfsMayMiss: a syncfs may return success over a failed write
	// (Linux before 5.8; xfs, btrfs and ext4 with a journal before 5.17,
	// when sync_filesystem ignored what the file system's sync_fs
	// returned; a file system not named below), so each file is synced
	// on its own.
	SyncfsMayMiss SyncfsErrors = iota
	// SyncfsReportsOnce: ext4 without a journal, Linux 5.8 and later.
	// A failed data write reaches every descriptor, but a failed metadata
	// write (an inode's new size, a directory entry) stays on the block
	// device, where the first syncfs to look clears it, and the owner's
	// own fsync, finding its inode already written, would not see it.
	// Calls are shared one at a time, and a failed one fails every file
	// it covered. Another process's sync(1) on the same file system
	// could still take such an error first: journaled file systems do
	// not have that hole.
	SyncfsReportsOnce
	// SyncfsReportsAll: xfs, btrfs and ext4 with a journal on Linux 5.17
	// and later (a failed journal commit aborts it for every later
	// caller), tmpfs (nothing to write) on 5.8 and later: every failed
	// write reaches every descriptor's next syncfs.
	SyncfsReportsAll
)

func (e SyncfsErrors) String() string {
	switch e {
	case SyncfsReportsOnce:
		return "reported once per device"
	case SyncfsReportsAll:
		return "reported to every caller"
	}
	return "may be missed"
}

// SyncfsErrorsOn reports what a syncfs on the file system holding the
// directory dir reports.
func SyncfsErrorsOn(dir string) (SyncfsErrors, error) {
	f, err := os.Open(dir)
	if err != nil {
		return SyncfsMayMiss, err
	}
	defer f.Close()
	return syncfsErrorsOf(f), nil
}

// syncfsErrorsOf reads the kernel and dir's file system for
// syncfsErrorsFor.
func syncfsErrorsOf(dir *os.File) SyncfsErrors {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return SyncfsMayMiss
	}
	major, minor, ok := kernelVersion(unix.ByteSliceToString(u.Release[:]))
	if !ok {
		return SyncfsMayMiss
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(int(dir.Fd()), &fs); err != nil {
		return SyncfsMayMiss
	}
	journal := journalUnknown
	if fs.Type == unix.EXT4_SUPER_MAGIC {
		var st unix.Stat_t
		if err := unix.Fstat(int(dir.Fd()), &st); err == nil {
			journal = ext4Journal(unix.Major(st.Dev), unix.Minor(st.Dev))
		}
	}
	return syncfsErrorsFor(major, minor, int64(fs.Type), journal)
}

// syncfsErrorsFor decides SyncfsErrors from the kernel's version, the
// file system's magic number (statfs) and, for ext4, its journal.
func syncfsErrorsFor(major, minor int, fsType int64, journal journalState) SyncfsErrors {
	atLeast := func(wantMajor, wantMinor int) bool {
		return major > wantMajor || major == wantMajor && minor >= wantMinor
	}
	if !atLeast(5, 8) {
		return SyncfsMayMiss
	}
	switch fsType {
	case unix.TMPFS_MAGIC:
		return SyncfsReportsAll
	case unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC:
		if atLeast(5, 17) {
			return SyncfsReportsAll
		}
	case unix.EXT4_SUPER_MAGIC:
		switch journal {
		case journalOn:
			if atLeast(5, 17) {
				return SyncfsReportsAll
			}
		case journalOff:
			return SyncfsReportsOnce
		}
	}
	return SyncfsMayMiss
}

// unattributed is every covered file's error when a syncfs over n files
// failed: it cannot say whose write it was.
func unattributed(err error, n int) error {
	return fmt.Errorf("hotlog: syncfs over %d files: %w (a syncfs cannot say whose write failed, and a file's own call may not see it again, so it fails them all)", n, err)
}

// journalState is whether an ext4 file system runs a journal, as
// /sys/fs/ext4 says; unknown where it cannot be read.
type journalState int

const (
	journalUnknown journalState = iota
	journalOn
	journalOff
)

// ext4Journal reads whether the ext4 file system on device major:minor
// runs a journal (its journal_task in /sys/fs/ext4 is "<none>" without).
func ext4Journal(major, minor uint32) journalState {
	device, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", major, minor))
	if err != nil {
		return journalUnknown
	}
	task, err := os.ReadFile(filepath.Join("/sys/fs/ext4", filepath.Base(device), "journal_task"))
	if err != nil {
		return journalUnknown
	}
	if strings.TrimSpace(string(task)) == "<none>" {
		return journalOff
	}
	return journalOn
}

// kernelVersion parses the major and minor numbers of a kernel release
// such as "6.18.44-fc-v1045".
func kernelVersion(release string) (major, minor int, ok bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err := strconv.Atoi(parts[0])
	if err != nil {
		return 0, 0, false
	}
	digits := strings.IndexFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	if digits >= 0 {
		parts[1] = parts[1][:digits]
	}
	minor, err = strconv.Atoi(parts[1])
	if err != nil {
		return 0, 0, false
	}
	return major, minor, true
}
