package offload

import (
	"time"
)

// The scheduler starts each partition's copy and expiry passes when they
// are due, at most UploadConcurrency copy passes and ExpiryConcurrency
// expiry passes at once, serving partitions round-robin so that one busy
// partition cannot starve the others. A background copy pass uploads one
// segment and, if more are waiting, is due again at once, behind the other
// partitions' turns.

// taskSchedule is the scheduling state of one task of one partition.
// Manager.mu guards it.
type taskSchedule struct {
	running bool
	due     time.Time
	// again asks for another pass as soon as the running one ends.
	again    bool
	failures int
}

// requestLocked makes the task due now, or right after its running pass.
func (s *taskSchedule) requestLocked(now time.Time) {
	if s.running {
		s.again = true
		return
	}
	s.due = now
}

// finishLocked schedules the next pass after one that ended with err, or
// that left more work (more).
func (s *taskSchedule) finishLocked(m *Manager, now time.Time, err error, more bool, interval time.Duration) {
	s.running = false
	switch {
	case err != nil:
		s.failures++
		s.due = now.Add(m.backoff(s.failures))
	case more || s.again:
		s.failures = 0
		s.due = now
	default:
		s.failures = 0
		s.due = now.Add(interval)
	}
	s.again = false
}

// run is the scheduler loop. It ends when the Manager closes.
func (m *Manager) run() {
	for {
		wait := m.dispatch()
		select {
		case <-m.ctx.Done():
			return
		case <-m.wake:
		case <-m.clock.After(wait):
		}
	}
}

// dispatch starts the due passes that have a free slot and returns how
// long to wait before the next one falls due.
func (m *Manager) dispatch() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	wait := min(m.cfg.CopyInterval, m.cfg.ExpiryInterval)
	n := len(m.mu.order)
	start := m.mu.next
	resume := -1
	for i := range n {
		k := (start + i) % n
		p := m.mu.order[k]
		if s := &p.copy; !s.running {
			switch {
			case now.Before(s.due):
				wait = min(wait, s.due.Sub(now))
			case m.startLocked(p, s, m.copySlots, m.copyTask):
				resume = (k + 1) % n // the partitions after it go first next time
			case resume < 0:
				resume = k // first in line for the next free slot
			}
		}
		if s := &p.expiry; !s.running {
			if now.Before(s.due) {
				wait = min(wait, s.due.Sub(now))
			} else {
				m.startLocked(p, s, m.expirySlots, m.expiryTask)
			}
		}
	}
	if resume >= 0 {
		m.mu.next = resume
	}
	return wait
}

// startLocked starts a pass of p in a goroutine if a slot is free. The
// pass returns how to schedule the next one, which is applied once its
// slot is free again, so the scheduler, woken then, can use the slot.
// m.mu must be held.
func (m *Manager) startLocked(p *partition, s *taskSchedule, slots chan struct{}, pass func(*partition) func(now time.Time)) bool {
	select {
	case slots <- struct{}{}:
	default:
		return false
	}
	s.running = true
	p.tasks.Add(1)
	m.wg.Go(func() {
		defer p.tasks.Done()
		schedule := pass(p)
		<-slots
		m.mu.Lock()
		schedule(m.clock.Now())
		m.mu.Unlock()
		m.signal()
	})
	return true
}

// copyTask runs one background copy pass and says how to schedule the
// next: at once if it uploaded (more may wait), after CopyInterval if it
// found nothing, after a backoff if it failed.
func (m *Manager) copyTask(p *partition) func(time.Time) {
	uploaded, err := m.copyPass(p.ctx, p, 1)
	m.logFailure(p, "copy", err)
	return func(now time.Time) {
		p.copy.finishLocked(m, now, ignoreStopped(p, err), uploaded > 0, m.cfg.CopyInterval)
		if uploaded > 0 {
			// The upload may let local retention delete files.
			p.expiry.requestLocked(now)
		}
	}
}

// expiryTask runs one background expiry pass and says how to schedule the
// next.
func (m *Manager) expiryTask(p *partition) func(time.Time) {
	err := m.expiryPass(p.ctx, p, false)
	m.logFailure(p, "expiry", err)
	return func(now time.Time) {
		p.expiry.finishLocked(m, now, ignoreStopped(p, err), false, m.cfg.ExpiryInterval)
	}
}

// logFailure logs a failed background pass; the task runs again after a
// backoff.
func (m *Manager) logFailure(p *partition, task string, err error) {
	if err = ignoreStopped(p, err); err != nil {
		m.logger.Warn("offload: pass failed", "task", task, "topic", p.Topic, "partition", p.Partition, "err", err)
	}
}

// ignoreStopped drops the error of a pass that ended because its partition
// was removed or the Manager closed.
func ignoreStopped(p *partition, err error) error {
	if p.ctx.Err() != nil {
		return nil
	}
	return err
}
