package remotefetch

import (
	"sync"
	"time"

	"github.com/stratalog/strata/segmentobject"
)

// streamsPerPartition bounds the consumers tracked per partition: several
// consumer groups catching up on one partition each get a stream.
const streamsPerPartition = 4

// streamIdleTimeout is how long a stream may go unread before its window is
// reclaimed for others when the read-ahead budget runs short.
const streamIdleTimeout = 30 * time.Second

// readAhead detects sequential consumers and keeps their next blocks ready.
//
// A stream is one consumer's position in a partition: the offset its next
// read would start at if it continues where its last one ended. A read that
// starts there is sequential. Each stream has a window, the blocks it holds:
// those its last read touched that the next one needs, and, once it reads
// sequentially, the next ReadAheadBlocks blocks, prefetched in the
// background (pinned loads, which run to the end whatever happens to the
// stream). The window is what makes read-ahead pay: a prefetched block is
// consumed from the window even if the block cache's admission policy
// refused it, so a sequential consumer makes one GET per block however full
// the cache is.
//
// Windows share a byte budget (ReadAheadBytes); past it, blocks are neither
// held nor prefetched, and reads fall back to the block cache. Streams are
// bounded in number (MaxStreams, and streamsPerPartition per partition): the
// least recently used gives way, releasing its window.
//
// A window holds each of its flights (flight.hold), so a block it holds
// keeps its buffer; every way a flight leaves a window lets go of it.
type readAhead struct {
	blocks     int
	budget     int64
	blockSize  int64
	maxStreams int
	clock      Clock
	mu         struct {
		sync.Mutex
		used    int64 // bytes of blocks in windows, blockSize each
		count   int
		streams map[Partition][]*stream
	}
}

// stream is one consumer's sequential progress. Its fields are guarded by
// readAhead.mu.
type stream struct {
	part Partition
	next int64 // where a sequential continuation starts; -1 until a read ends
	// key and pos locate next's batch: the log position in the object at
	// key where the last read stopped. A continuation scans from there, not
	// from the sparse index's entry, which may lie blocks behind.
	key        string
	pos        int64
	sequential bool
	lastUse    time.Time
	window     map[blockID]*flight[*block]
	// dropped marks a stream forgotten while a read still had it: its
	// window holds nothing from then on.
	dropped bool
}

// target is a block a stream will read, with what loading it needs: the
// segment, and its index when known (nil: the load fetches it).
type target struct {
	id  blockID
	seg segmentobject.ManifestSegment
	ix  *segmentobject.Index
}

func newReadAhead(cfg Config) *readAhead {
	ra := &readAhead{
		blocks:     cfg.ReadAheadBlocks,
		budget:     cfg.ReadAheadBytes,
		blockSize:  cfg.BlockSize,
		maxStreams: cfg.MaxStreams,
		clock:      cfg.clock(),
	}
	ra.mu.streams = make(map[Partition][]*stream)
	return ra
}

// begin finds the stream a read of offset continues, or starts a new one;
// sequential marks a new stream as sequential from its first read (a batch
// job's scan). For a continuation in the object at key it returns the log
// position to scan from (ok).
func (ra *readAhead) begin(p Partition, offset int64, key string, sequential bool) (st *stream, pos int64, ok bool) {
	now := ra.clock.Now()
	ra.mu.Lock()
	defer ra.mu.Unlock()
	streams := ra.mu.streams[p]
	for _, st := range streams {
		if st.next == offset {
			st.sequential = true
			st.lastUse = now
			return st, st.pos, st.key == key
		}
	}
	switch {
	case len(streams) >= streamsPerPartition:
		ra.dropLocked(leastRecent(streams))
	case ra.mu.count >= ra.maxStreams:
		var all []*stream
		for _, ss := range ra.mu.streams {
			all = append(all, leastRecent(ss))
		}
		ra.dropLocked(leastRecent(all))
	}
	st = &stream{part: p, next: -1, sequential: sequential, lastUse: now, window: make(map[blockID]*flight[*block])}
	ra.mu.streams[p] = append(ra.mu.streams[p], st)
	ra.mu.count++
	return st, 0, false
}

func leastRecent(streams []*stream) *stream {
	oldest := streams[0]
	for _, st := range streams[1:] {
		if st.lastUse.Before(oldest.lastUse) {
			oldest = st
		}
	}
	return oldest
}

// dropLocked forgets a stream and releases its window.
func (ra *readAhead) dropLocked(st *stream) {
	ra.emptyLocked(st)
	st.dropped = true
	streams := ra.mu.streams[st.part]
	for i, s := range streams {
		if s == st {
			streams = append(streams[:i], streams[i+1:]...)
			break
		}
	}
	if len(streams) == 0 {
		delete(ra.mu.streams, st.part)
	} else {
		ra.mu.streams[st.part] = streams
	}
	ra.mu.count--
}

// emptyLocked releases every block of a stream's window.
func (ra *readAhead) emptyLocked(st *stream) {
	ra.mu.used -= ra.blockSize * int64(len(st.window))
	for id, f := range st.window {
		f.unhold()
		delete(st.window, id)
	}
}

// close forgets every stream, releasing their windows.
func (ra *readAhead) close() {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	var all []*stream
	for _, streams := range ra.mu.streams {
		all = append(all, streams...)
	}
	for _, st := range all {
		ra.dropLocked(st)
	}
}

// held returns the stream's flight for a block, if its window has one,
// held once for the caller, who must wait for it (or unhold it).
func (ra *readAhead) held(st *stream, id blockID) *flight[*block] {
	if st == nil {
		return nil
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	f := st.window[id]
	if f != nil {
		f.hold()
	}
	return f
}

// hold puts a block a read is using into the stream's window, budget
// permitting, replacing what the window held for it. It takes over the
// caller's hold of f, which it lets go if the window does not keep f.
func (ra *readAhead) hold(st *stream, id blockID, f *flight[*block]) {
	if st == nil {
		f.unhold()
		return
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	old, ok := st.window[id]
	switch {
	case st.dropped:
		f.unhold()
		return
	case ok:
		old.unhold()
	case !ra.reserveLocked():
		f.unhold()
		return
	}
	st.window[id] = f
}

// release drops a block from every window: it failed verification, or its
// prefetch failed, and must be fetched afresh.
func (ra *readAhead) release(id blockID) {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	for _, streams := range ra.mu.streams {
		for _, st := range streams {
			if f, ok := st.window[id]; ok {
				f.unhold()
				delete(st.window, id)
				ra.mu.used -= ra.blockSize
			}
		}
	}
}

// reserveLocked takes one block's worth of budget, reclaiming the windows
// of idle streams if it must. It reports whether it could.
func (ra *readAhead) reserveLocked() bool {
	if ra.mu.used+ra.blockSize > ra.budget {
		cutoff := ra.clock.Now().Add(-streamIdleTimeout)
		for _, streams := range ra.mu.streams {
			for _, st := range streams {
				if st.lastUse.Before(cutoff) {
					ra.emptyLocked(st)
				}
			}
		}
		if ra.mu.used+ra.blockSize > ra.budget {
			return false
		}
	}
	ra.mu.used += ra.blockSize
	return true
}

// finish records where the stream's read ended (offset next, at log
// position pos of the object at key) and reshapes its window to the blocks
// it reads next (plan's targets): others are released, and for a
// sequential stream the missing ones are started with prefetch, which
// returns nil when it has nothing to hold, else a flight held once for the
// window.
func (ra *readAhead) finish(st *stream, next int64, key string, pos int64, targets []target, prefetch func(target) *flight[*block]) {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	st.next, st.key, st.pos = next, key, pos
	st.lastUse = ra.clock.Now()
	for id, f := range st.window {
		keep := false
		for _, t := range targets {
			keep = keep || t.id == id
		}
		if !keep {
			f.unhold()
			delete(st.window, id)
			ra.mu.used -= ra.blockSize
		}
	}
	if !st.sequential || st.dropped {
		return
	}
	for _, t := range targets {
		if _, ok := st.window[t.id]; ok {
			continue
		}
		if !ra.reserveLocked() {
			return
		}
		f := prefetch(t)
		if f == nil {
			ra.mu.used -= ra.blockSize
			continue
		}
		st.window[t.id] = f
	}
}

// plan lists the blocks a sequential consumer reads next, once it is at log
// position pos of segment si: the block holding pos, then n more, following
// into the next segments. A next segment's blocks are counted from its log
// size; when the manifest does not record it, planning stops after that
// segment's first block.
func plan(m segmentobject.Manifest, si int, ix *segmentobject.Index, pos, blockSize int64, n int) []target {
	var targets []target
	seg := m.Segments[si]
	for b := pos / blockSize; b*blockSize < ix.LogLength() && len(targets) <= n; b++ {
		targets = append(targets, target{id: blockID{seg.Key, b}, seg: seg, ix: ix})
	}
	for _, seg := range m.Segments[si+1:] {
		if seg.LogBytes == 0 && len(targets) <= n {
			return append(targets, target{id: blockID{seg.Key, 0}, seg: seg})
		}
		for b := int64(0); b*blockSize < seg.LogBytes; b++ {
			if len(targets) > n {
				return targets
			}
			targets = append(targets, target{id: blockID{seg.Key, b}, seg: seg})
		}
	}
	return targets
}
