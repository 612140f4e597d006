package offload

import (
	"context"
	"io"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
)

// Upload pacing, so that uploads leave the hot disk and the CPU to the
// produce path. Two settings shape one limiter that every upload of the
// broker reads through:
//
//   - Config.CopyMaxBytesPerSecond (Kafka's
//     remote.log.manager.copy.max.bytes.per.second, KIP-956) caps the
//     bytes read for upload per second.
//   - Config.CopyDrainTime paces by the backlog: at most paceInterval
//     apart, the Manager sums the sealed bytes not yet uploaded and lets
//     uploads read that divided by CopyDrainTime per second. When eight
//     partitions roll at once, their gigabyte is read at a pace that falls
//     with what is left (about two thirds of it in CopyDrainTime, all of
//     it in about four) rather than at the disk's full speed; under a steady
//     ingest rate r the backlog settles near r × CopyDrainTime, uploaded
//     at r. The rate never falls below what keeps every upload slot at
//     MinUploadRate (so a small backlog still goes quickly, and no PUT
//     outruns its attempt timeout), never exceeds CopyMaxBytesPerSecond
//     when that is set, and is lifted while the hot disk is past its
//     high-water mark, when uploading is what frees room.
//
// Measured in docs/bench.md ("Produce latency while tiering"): with
// uploads unpaced, a roll of 8 partitions at 41 MB/s took the produce p99
// from 11 ms to 40 ms.

// uploadSlots is how many uploads may be in flight at once: at most
// UploadConcurrency, and under a pace no more than keep each upload's
// share of it at MinUploadRate or above, the rate its attempt timeout
// allows (AttemptTimeout + size/MinUploadRate). Otherwise four uploads
// sharing a pace of 1 MiB/s would each go at 256 KiB/s, time out and
// start again for ever.
func uploadSlots(cfg Config) int {
	if cfg.CopyMaxBytesPerSecond <= 0 {
		return cfg.UploadConcurrency
	}
	return int(max(1, min(int64(cfg.UploadConcurrency), cfg.CopyMaxBytesPerSecond/cfg.MinUploadRate)))
}

// takeUploadSlot waits for one of the slots background copy passes upload
// in (uploadSlots), for a PUT that is not a copy pass's: recompaction's
// replacement, which reads through the same pace. The paced PUTs of
// background passes in flight then never outnumber the slots (Sync's own
// copy passes take none), so each keeps MinUploadRate or better and its
// attempt timeout holds (a replacement beside the uploads of a pace near
// its minimum used to slow both past it, and both timed out and started
// again), and the multipart buffers UploadConcurrency bounds stay
// bounded. It returns the slot's release.
func (m *Manager) takeUploadSlot(ctx context.Context) (release func(), err error) {
	select {
	case m.copySlots <- struct{}{}:
		return func() {
			<-m.copySlots
			m.signal() // a copy pass may wait for the slot
		}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// paceBurst is the most one read takes at once from the pace.
const paceBurst = 1 << 20

// paceInterval is how often, at most, a drain pace is recomputed.
const paceInterval = 500 * time.Millisecond

// newPace returns the limiter for cfg, or nil when uploads are not paced.
func newPace(cfg Config) *rate.Limiter {
	switch {
	case cfg.CopyDrainTime > 0:
		return rate.NewLimiter(rate.Inf, paceBurst) // set by the first repace
	case cfg.CopyMaxBytesPerSecond > 0:
		return rate.NewLimiter(rate.Limit(cfg.CopyMaxBytesPerSecond), paceBurst)
	}
	return nil
}

// drain is the state of a drain pace (Config.CopyDrainTime).
type drain struct {
	mu sync.Mutex
	// next is when the pace is next recomputed; zero before the first.
	next time.Time
}

// repace recomputes a drain pace once paceInterval has passed since the
// last time; uploads call it as they read.
func (m *Manager) repace() {
	if m.cfg.CopyDrainTime <= 0 {
		return
	}
	now := m.clock.Now()
	m.drain.mu.Lock()
	defer m.drain.mu.Unlock()
	if now.Before(m.drain.next) {
		return
	}
	m.drain.next = now.Add(paceInterval)
	m.pace.SetLimit(m.drainRate(m.backlog())) // the limiter keeps time.Now, not the Clock
}

// drainRate is the pace for a backlog of sealed bytes not yet uploaded.
func (m *Manager) drainRate(backlog int64) rate.Limit {
	full := m.pressure.full.Load()
	limit := rate.Inf
	if c := m.cfg.CopyMaxBytesPerSecond; c > 0 {
		limit = rate.Limit(c)
	}
	if full {
		return limit
	}
	floor := float64(uploadSlots(m.cfg)) * float64(m.cfg.MinUploadRate)
	return min(limit, rate.Limit(max(floor, float64(backlog)/m.cfg.CopyDrainTime.Seconds())))
}

// backlog is the bytes of sealed segments not yet uploaded, over every
// partition.
func (m *Manager) backlog() int64 {
	st := m.meta.State()
	var total int64
	for _, p := range m.partitions() {
		man, _ := st.Manifest(p.Topic, p.Partition)
		bytes, _ := awaitingUpload(p.Log.Segments(), man)
		total += bytes
	}
	return total
}

// awaitingUpload is the bytes and count of the sealed local segments that
// man does not yet hold (of one that straddles its end, the part above).
func awaitingUpload(local []hotlog.SegmentInfo, man meta.Manifest) (bytes int64, segments int) {
	end := tieredEnd(man)
	for _, s := range local {
		if s.Sealed && s.NextOffset > end {
			bytes += untieredBytes(s, end)
			segments++
		}
	}
	return bytes, segments
}

// untieredBytes is the size of local segment s at and above the tiered
// end: all of it, none of it, or, for one that straddles the end (a new
// leader's, segment.go), its share by offsets, an estimate that spares
// reading its index.
func untieredBytes(s hotlog.SegmentInfo, end int64) int64 {
	switch {
	case s.BaseOffset >= end:
		return s.Size
	case s.NextOffset <= end:
		return 0
	}
	return int64(float64(s.Size) * float64(s.NextOffset-end) / float64(s.NextOffset-s.BaseOffset))
}

// pacedReader reads from r no faster than pace allows, calling repace
// (when set) before each read.
type pacedReader struct {
	ctx    context.Context
	r      io.Reader
	pace   *rate.Limiter
	repace func()
}

func (p pacedReader) Read(b []byte) (int, error) {
	if len(b) > paceBurst {
		b = b[:paceBurst]
	}
	if p.repace != nil {
		p.repace()
	}
	n, err := p.r.Read(b)
	if n > 0 {
		if werr := p.pace.WaitN(p.ctx, n); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}
