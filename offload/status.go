package offload

import (
	"cmp"
	"slices"
	"time"
)

// Status is the Manager's state, for `strata tier status` and the admin
// HTTP endpoint (JSON tags).
type Status struct {
	// DiskFull is DiskPressure: Produce should be refused.
	DiskFull bool `json:"disk_full"`
	// DiskUsedRatio is the hot disk's used fraction at the last check (0
	// when the disk is not watched).
	DiskUsedRatio float64           `json:"disk_used_ratio"`
	Partitions    []PartitionStatus `json:"partitions"`
}

// PartitionStatus is one partition's tiering state.
type PartitionStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// LocalLogStartOffset is the first offset on the hot disk (ListOffsets
	// -4, earliest local).
	LocalLogStartOffset int64 `json:"local_log_start_offset"`
	// RemoteLogStartOffset is the first offset served from the bucket.
	RemoteLogStartOffset int64 `json:"remote_log_start_offset"`
	// HighestTieredOffset is the last offset in a committed segment, -1
	// when none is (ListOffsets -5, latest tiered).
	HighestTieredOffset int64 `json:"highest_tiered_offset"`
	// BytesAwaitingUpload and SegmentsAwaitingUpload count the sealed
	// segments not yet tiered.
	BytesAwaitingUpload    int64 `json:"bytes_awaiting_upload"`
	SegmentsAwaitingUpload int   `json:"segments_awaiting_upload"`
	// UploadWait is how long the next upload has been possible but not
	// done, and FailedAttempts how many of its PUTs failed. Stalled says
	// the upload needs an operator: it waited Config.StallAlarm, or failed
	// Config.StallAttempts times, or the store refused it in a way no
	// retry can cure (a key or a bucket it will not take); StallReason
	// says which. Offload keeps retrying a stalled upload.
	UploadWait     time.Duration `json:"upload_wait_ns"`
	FailedAttempts int           `json:"failed_attempts"`
	Stalled        bool          `json:"stalled"`
	StallReason    string        `json:"stall_reason,omitempty"`
	// LastUpload is when the last upload was committed (zero: none yet).
	LastUpload time.Time `json:"last_upload,omitzero"`
	// LastError is the last failed pass's error, until a pass of the same
	// task succeeds.
	LastError     string    `json:"last_error,omitempty"`
	LastErrorTime time.Time `json:"last_error_time,omitzero"`
}

// Status reports every partition's tiering state, sorted by topic and
// partition. It reads the hot logs and meta's local state.
func (m *Manager) Status() Status {
	now := m.clock.Now()
	st := m.meta.State()
	m.pressure.mu.Lock()
	out := Status{DiskFull: m.pressure.full.Load(), DiskUsedRatio: m.pressure.ratio, Partitions: []PartitionStatus{}}
	m.pressure.mu.Unlock()
	for _, p := range m.partitions() {
		man, _ := st.Manifest(p.Topic, p.Partition)
		ps := PartitionStatus{
			Topic: p.Topic, Partition: p.Partition,
			LocalLogStartOffset:  p.Log.LogStartOffset(),
			RemoteLogStartOffset: man.RemoteLogStartOffset,
			HighestTieredOffset:  man.HighestTieredOffset(),
		}
		ps.BytesAwaitingUpload, ps.SegmentsAwaitingUpload = awaitingUpload(p.Log.Segments(), man)
		p.status.mu.Lock()
		if !p.status.waitingSince.IsZero() {
			ps.UploadWait = now.Sub(p.status.waitingSince)
		}
		ps.FailedAttempts = p.status.failedPuts
		ps.Stalled, ps.StallReason = p.status.stallLocked(now, &m.cfg)
		ps.LastUpload = p.status.lastUpload
		ps.LastError, ps.LastErrorTime = p.status.lastError, p.status.lastErrorTime
		p.status.mu.Unlock()
		out.Partitions = append(out.Partitions, ps)
	}
	slices.SortFunc(out.Partitions, func(a, b PartitionStatus) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}
