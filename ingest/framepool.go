package ingest

import (
	"math/bits"
	"sync"
)

// Frames of more than 1<<(minPooledFrameShift-1) bytes and at most
// 1<<maxPooledFrameShift are read into recycled buffers, one size class
// per power of two from 1<<minPooledFrameShift, so a buffer is at most
// twice its frame, and never larger than the frame size limit. A smaller
// frame costs little to allocate; a larger one is rare (a client's
// batches are 1 MiB by default, a request carries one per partition) and
// would pin a lot of memory in the pool. Sixteen producers spread over 64
// partitions send many requests of one-record batches; when only frames
// above 32 KiB were pooled, the fresh ones of 32 KiB and less were 15% of
// the bytes the broker allocated (docs/bench.md). Every request's frame is
// read into such a buffer, so another request of 2-32 KiB (a Fetch of
// many partitions, a SyncGroup) now holds a buffer of up to twice its
// size, and one that aliases its frame (a group member's metadata) keeps
// that buffer: the same trade as above 32 KiB before.
const (
	minPooledFrameShift = 12 // 4 KiB: frames of 2 KiB and less are not pooled
	maxPooledFrameShift = 25 // 32 MiB
)

// framePool recycles the frames of produce requests. A fresh frame is
// zeroed by the runtime before the socket overwrites it: at 289 MB/s of
// produce into 8 partitions that zeroing took 11.7% of the broker's CPU,
// as much as the batches' CRC check (docs/bench.md, "Produce frames
// recycled").
//
// Only a produce frame goes back (conn.release, once its request is
// answered or dropped), because only there is it known that nothing
// outlives the request: its batches are validated, written to the
// partitions' files (pwrite copies them) and their headers copied into the
// producer state; a recompressed batch is a new buffer. Other requests'
// decoded byte fields alias their frame and may be kept (a group member's
// metadata and assignment, a SASL exchange), so their frames are left to
// the garbage collector.
//
// The request budgets (conn.reserve) count a frame's length, and its
// buffer is at most twice that, so the frames in flight hold at most twice
// what the budgets allow (a client sending frames just past a power of two
// gets there); reserving whole buffers would change what
// socket.request.max.bytes admits beside a long poll. A buffer in the pool
// is counted by no budget; sync.Pool lets the collector drop the buffers
// the broker no longer cycles through, so the pool holds about what
// recent load had in flight.
type framePool struct {
	classes [maxPooledFrameShift - minPooledFrameShift + 1]sync.Pool // of *[]byte
	// poison overwrites every frame put back, so that a read of it after
	// its request was released shows as corrupt data: on in builds with
	// invariants (internal/invariants) and set by ingest's tests.
	poison bool
}

// frameClass returns the size class of a buffer for a frame of n bytes
// under a frame size limit of limit, and whether such frames are pooled:
// a buffer is never larger than the limit.
func frameClass(n, limit int) (int, bool) {
	shift := bits.Len(uint(n - 1)) // the least shift with 1<<shift >= n, for n > 0
	if n <= 0 || shift < minPooledFrameShift || shift > maxPooledFrameShift || 1<<shift > limit {
		return 0, false
	}
	return shift - minPooledFrameShift, true
}

// get returns a frame of n bytes under the frame size limit limit, whose
// contents are undefined.
func (p *framePool) get(n, limit int) []byte {
	class, pooled := frameClass(n, limit)
	if !pooled {
		return make([]byte, n)
	}
	if b, ok := p.classes[class].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, 1<<(class+minPooledFrameShift))
}

// put gives back a frame get returned. The caller holds no slice of it
// afterwards, nor does anything the caller handed it to.
func (p *framePool) put(frame []byte) {
	class, pooled := frameClass(cap(frame), cap(frame))
	if !pooled || cap(frame) != 1<<(class+minPooledFrameShift) {
		return // not one of ours: a frame too small or too large to pool
	}
	frame = frame[:cap(frame)]
	if p.poison {
		for i := range frame {
			frame[i] = 0xA5
		}
	}
	p.classes[class].Put(&frame)
}
