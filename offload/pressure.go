package offload

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/stratalog/strata/hotlog"
)

// Disk pressure. The disk watch reads the hot disk's usage every
// DiskCheckInterval. At or above DiskHighWaterMark, and while full at or
// above DiskLowWaterMark, it deletes uploaded (committed) segments from the
// hot disk ahead of local retention, oldest first across partitions, until
// usage is below DiskLowWaterMark. If it runs out of uploaded segments
// first, the disk is full: DiskPressure reports true, OnDiskPressure(true)
// is called, and the broker answers Produce with KAFKA_STORAGE_ERROR
// (reads go on). Full clears by itself, with OnDiskPressure(false), once
// usage is back under the low-water mark, because uploads made more
// segments deletable or space came back some other way. Nothing that is
// not in the bucket is ever deleted. Relief counts as free the bytes of
// segments the partitions' logs deleted and have not yet reclaimed
// (hotlog.Log.Unreclaimed): their blocks come back after their readers,
// file.delete.delay.ms and paced cuts, and a statfs right after a delete
// has not moved, so relief reading statfs alone deleted every uploaded
// segment for the one it needed, and set full after all. AdmitWrite's room
// goes by statfs alone: space not yet freed is no room to write into, and
// writes wait (KAFKA_STORAGE_ERROR, retried) the moments until it is.
//
// Between checks the broker asks AdmitWrite before each append, which
// counts the bytes against the room left under the high-water mark at the
// last measurement. A producer faster than the check interval therefore
// meets the mark, not a full disk: the room above it is what the metadata
// log, checkpoints and index pages on the same disk need to keep working
// while the hot logs refuse writes. A write that would cross the mark is
// refused and wakes the watch at once, which frees uploaded segments.

// pressure is the disk watch's state.
type pressure struct {
	mu sync.Mutex
	// full is written under mu, beside ratio, and read without it by
	// DiskPressure, which every append asks, and drainRate: an atomic
	// load where the lock took two atomic writes an append.
	full  atomic.Bool
	ratio float64

	// room is an estimate of the bytes that may still be written before
	// the disk reaches the high-water mark: what the last measurement
	// left, less what AdmitWrite admitted since. Zero before the first.
	room atomic.Int64
	// measuring serializes the measurements AdmitWrite makes when room
	// runs out.
	measuring sync.Mutex
	// wake prompts the disk watch to check now (buffered 1).
	wake chan struct{}
}

// DiskPressure reports whether the hot disk is full: above the high-water
// mark with nothing uploaded left to delete. The broker refuses Produce
// with KAFKA_STORAGE_ERROR while it is.
func (m *Manager) DiskPressure() bool {
	return m.pressure.full.Load()
}

// AdmitWrite reports whether n more bytes may be appended to the hot
// disk: false while the disk is full, and false for a write that would
// take the disk past the high-water mark, which also wakes the disk watch
// to free uploaded segments at once. Refused writes are to be answered
// with KAFKA_STORAGE_ERROR, which clients retry. Without Config.DataDir
// every write is admitted.
//
// The common case is one atomic subtraction; a statfs is made only when
// the room measured last is used up.
func (m *Manager) AdmitWrite(n int64) bool {
	if m.cfg.DataDir == "" {
		return true
	}
	if m.DiskPressure() {
		return false
	}
	if m.pressure.room.Add(-n) >= 0 {
		return true
	}
	m.pressure.measuring.Lock()
	defer m.pressure.measuring.Unlock()
	usage, err := m.cfg.DiskUsage(m.cfg.DataDir)
	if err != nil {
		// The periodic check reports it; an unreadable statfs is no
		// reason to refuse writes.
		return true
	}
	room := m.roomUnderHighWater(usage) - n
	m.pressure.room.Store(room)
	if room >= 0 {
		return true
	}
	select {
	case m.pressure.wake <- struct{}{}:
	default:
	}
	return false
}

// roomUnderHighWater is how many bytes the disk takes before its usage
// reaches the high-water mark; negative above it.
func (m *Manager) roomUnderHighWater(u DiskUsage) int64 {
	floor := math.Ceil(float64(u.Total) * (1 - m.cfg.DiskHighWaterMark))
	return int64(u.Available) - int64(floor)
}

// watchDisk is the disk watch loop. It ends when the Manager closes.
func (m *Manager) watchDisk() {
	for {
		if err := m.checkDisk(); err != nil {
			m.logger.Warn("offload: disk check failed", "dir", m.cfg.DataDir, "err", err)
		}
		select {
		case <-m.ctx.Done():
			return
		case <-m.pressure.wake:
		case <-m.clock.After(m.cfg.DiskCheckInterval):
		}
	}
}

// checkDisk reads the disk usage, relieves pressure, and updates the full
// state, by the usage relief left (what the logs have not yet reclaimed
// counted free), and the room AdmitWrite counts against, by statfs alone.
func (m *Manager) checkDisk() error {
	usage, err := m.cfg.DiskUsage(m.cfg.DataDir)
	if err != nil {
		return err
	}
	heading := usage
	// While full, relief goes on down to the low-water mark: uploads that
	// finished meanwhile made more segments deletable, and usage may sit
	// between the marks, where a check that relieved only at the high one
	// would leave Produce refused until local retention.
	if used := usage.UsedRatio(); used >= m.cfg.DiskHighWaterMark || m.pressure.full.Load() && used >= m.cfg.DiskLowWaterMark {
		if heading, err = m.relieve(); err != nil {
			return err
		}
		if usage, err = m.cfg.DiskUsage(m.cfg.DataDir); err != nil {
			return err
		}
	}
	ratio := heading.UsedRatio()
	m.pressure.room.Store(m.roomUnderHighWater(usage))
	m.pressure.mu.Lock()
	was := m.pressure.full.Load()
	m.pressure.ratio = ratio
	switch {
	case ratio >= m.cfg.DiskHighWaterMark:
		m.pressure.full.Store(true)
	case ratio < m.cfg.DiskLowWaterMark:
		m.pressure.full.Store(false)
	}
	full := m.pressure.full.Load()
	m.pressure.mu.Unlock()
	if full != was {
		if full {
			m.logger.Error("offload: hot disk full; produce is refused until space returns", "dir", m.cfg.DataDir, "used", ratio)
		} else {
			m.logger.Info("offload: hot disk pressure cleared", "dir", m.cfg.DataDir, "used", ratio)
		}
		if m.cfg.OnDiskPressure != nil {
			m.cfg.OnDiskPressure(full)
		}
	}
	return nil
}

// deletable is the sealed segments of one partition that committed
// segments cover, oldest first: only such a prefix may leave the hot disk,
// which keeps the hot log contiguous.
type deletable struct {
	p        *partition
	segments []hotlog.SegmentInfo
}

// relieve deletes uploaded local segments, oldest first across partitions
// (by newest record, the partitions' queues merged), until usage, with
// what the logs have not yet reclaimed counted free (unreclaimedUsage),
// falls under the low-water mark or none is left, and returns that usage.
func (m *Manager) relieve() (DiskUsage, error) {
	st := m.meta.State()
	var queues []*deletable
	for _, p := range m.partitions() {
		if !m.hold(p) {
			continue
		}
		defer p.tasks.Done()
		man, ok := st.Manifest(p.Topic, p.Partition)
		if !ok {
			continue
		}
		q := &deletable{p: p}
		for _, s := range p.Log.Segments() {
			if !s.Sealed || !covered(man, s.BaseOffset, s.NextOffset) {
				break
			}
			q.segments = append(q.segments, s)
		}
		if len(q.segments) > 0 {
			queues = append(queues, q)
		}
	}
	for {
		freeing, err := m.unreclaimedUsage()
		if err != nil {
			return DiskUsage{}, err
		}
		if freeing.UsedRatio() < m.cfg.DiskLowWaterMark || len(queues) == 0 {
			return freeing, nil
		}
		i := 0
		for j, q := range queues {
			if q.segments[0].MaxTimestamp < queues[i].segments[0].MaxTimestamp {
				i = j
			}
		}
		q := queues[i]
		info := q.segments[0]
		if q.segments = q.segments[1:]; len(q.segments) == 0 {
			queues = slices.Delete(queues, i, i+1)
		}
		deleted, err := q.p.Log.DeleteBefore(info.NextOffset)
		if err != nil {
			m.logger.Warn("offload: deleting an uploaded segment under disk pressure", "topic", q.p.Topic, "partition", q.p.Partition, "segment", info.BaseOffset, "err", err)
			continue
		}
		for _, s := range deleted {
			m.metrics.localDeletes.WithLabelValues("disk_pressure").Inc()
			m.logger.Info("offload: uploaded segment deleted under disk pressure", "topic", q.p.Topic, "partition", q.p.Partition, "base_offset", s.BaseOffset, "next_offset", s.NextOffset)
		}
	}
}

// unreclaimedUsage reads the hot disk's usage, counting as available the
// bytes the partitions' logs deleted and have not yet reclaimed: space on
// its way back, for which relief must not delete more segments. A reclaim
// that frees bytes between the statfs and the count would have them
// counted as used: the count is read on both sides of the statfs, and
// the reading taken again (a few times at most) until they agree.
func (m *Manager) unreclaimedUsage() (DiskUsage, error) {
	unreclaimed := func() (n uint64) {
		for _, p := range m.partitions() {
			n += uint64(max(p.Log.Unreclaimed(), 0))
		}
		return n
	}
	for attempt := 0; ; attempt++ {
		before := unreclaimed()
		usage, err := m.cfg.DiskUsage(m.cfg.DataDir)
		if err != nil {
			return usage, err
		}
		if after := unreclaimed(); after == before || attempt == 3 {
			usage.Available = min(usage.Total, usage.Available+after)
			return usage, nil
		}
	}
}

// Statfs reads the usage of the file system holding dir.
func Statfs(dir string) (DiskUsage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return DiskUsage{}, fmt.Errorf("offload: statfs %s: %w", dir, err)
	}
	return DiskUsage{Total: st.Blocks * uint64(st.Bsize), Available: st.Bavail * uint64(st.Bsize)}, nil
}
