package replica

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Offline partitions. A partition this broker holds a replica of but cannot open (its
// directory is unusable, the descriptors ran out, the disk failed) is not
// left offline until a restart: the partition manager's reconcile loop
// tries again after offlineRetryMin, doubling the wait up to
// offlineRetryMax, until it opens or the broker no longer holds it. Until
// then requests for it answer KAFKA_STORAGE_ERROR, which clients retry, as
// Kafka answers for a replica on an offline log directory; other
// partitions are served as usual, and the broker reports itself not ready
// (/readyz) naming the partitions and why.

const (
	offlineRetryMin = 500 * time.Millisecond
	offlineRetryMax = 30 * time.Second
)

// offlinePartition is a partition that failed to open. Guarded by
// Manager.mu.
type offlinePartition struct {
	topicID  uuid.UUID
	err      error
	attempts int
	retryAt  time.Time
}

// failed records a failed attempt at now and schedules the next one.
func (o *offlinePartition) failed(err error, now time.Time) {
	o.err = err
	o.attempts++
	wait := offlineRetryMin << min(o.attempts-1, 16)
	o.retryAt = now.Add(min(wait, offlineRetryMax))
}

// scheduleRetry sets timer to fire when the first offline partition is
// due, and stops it when none is. Only the run loop calls it, and it owns
// timer.
func (m *Manager) scheduleRetry(timer *time.Timer) {
	m.mu.RLock()
	var first time.Time
	for _, o := range m.mu.offline {
		if first.IsZero() || o.retryAt.Before(first) {
			first = o.retryAt
		}
	}
	m.mu.RUnlock()
	if first.IsZero() {
		timer.Stop()
		return
	}
	timer.Reset(max(time.Until(first), 0))
}

// offlineError names the partitions that failed to open, nil when none.
func (m *Manager) offlineError() error {
	m.mu.RLock()
	var names []string
	for key, o := range m.mu.offline {
		names = append(names, fmt.Sprintf("%s-%d (%d attempts: %v)", key.topic, key.partition, o.attempts, o.err))
	}
	m.mu.RUnlock()
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	count := len(names)
	const shown = 10
	more := ""
	if count > shown {
		more = fmt.Sprintf(" and %d more", count-shown)
		names = names[:shown]
	}
	return fmt.Errorf("%d partitions failed to open and are retried: %s%s", count, strings.Join(names, "; "), more)
}

// Ready returns nil when every partition this broker holds a replica of is
// open, else an error naming those that failed to open and are retried.
func (m *Manager) Ready() error { return m.offlineError() }
