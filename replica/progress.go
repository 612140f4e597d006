package replica

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// followers is what a leader knows of its followers, by Kafka's rules: each
// follower's log end, learned from the offset it fetches at, and when it
// was last caught up. Under fsync before ack the follower holds everything
// below that offset durably: it fetches there only once its log is durable
// to it (Partition.fetchOffset), a tail it wrote as leader included.
//
// A follower is caught up at a fetch when the offset reaches the leader's
// log end at that moment, and also, as of its previous fetch, when the
// offset reaches the log end the leader had then: a follower under steady
// load always trails the newest append by one round, and is in sync all the
// same. A follower not caught up within replica.lag.time.max.ms leaves the
// ISR.
//
// A follower proposed for the ISR counts towards the high watermark from
// the proposal on (Kafka's maximal ISR), so the high watermark cannot pass
// it while the change commits, nor after, until the leader's metadata
// shows the change; otherwise it could become a member that lacks
// committed records. It counts until the leader's metadata settles the
// question: the follower is in the ISR, or the partition epoch moved past
// the one the proposal was built on, after which it can never commit. A
// refusal the state machine answered settles it too; an answer that never
// came (the proposal may have committed) does not.
type followers struct {
	mu   sync.Mutex
	self int32
	byID map[int32]*follower
	// adding holds the followers proposed for the ISR whose addition the
	// leader's metadata has not settled, each with the partition epoch its
	// proposal was built on.
	adding map[int32]int32
	// altering is set while an AlterPartition for the partition is in
	// flight: one at a time, at the partition epoch it was built on.
	altering bool
}

// follower is one follower's progress as its leader sees it.
type follower struct {
	logEnd int64 // -1 until it fetches under this leadership
	// lastCaughtUp is when it was last caught up (see followers).
	lastCaughtUp time.Time
	// lastFetch and leaderEndAtLastFetch are its previous fetch.
	lastFetch            time.Time
	leaderEndAtLastFetch int64
}

// reset starts a leadership: nothing is known of any follower's log, and
// each gets a full replica.lag.time.max.ms to catch up.
func (f *followers) reset(replicas []int32, self int32, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.self = self
	f.byID = map[int32]*follower{}
	for _, r := range replicas {
		if r != self {
			f.byID[r] = &follower{logEnd: -1, lastCaughtUp: now, leaderEndAtLastFetch: -1}
		}
	}
	f.adding = map[int32]int32{}
	f.altering = false
}

// track follows a change of the replica list within a leadership (a
// reassignment): a replica joining is known from now on, with a full
// replica.lag.time.max.ms to catch up, and one that left is forgotten.
func (f *followers) track(replicas []int32, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := range f.byID {
		if !slices.Contains(replicas, id) {
			delete(f.byID, id)
			delete(f.adding, id)
		}
	}
	for _, r := range replicas {
		if r != f.self && f.byID[r] == nil {
			f.byID[r] = &follower{logEnd: -1, lastCaughtUp: now, leaderEndAtLastFetch: -1}
		}
	}
}

// fetched records a fetch by follower id at offset, the leader's log end
// being leaderEnd. It reports false for a broker that is not a follower.
func (f *followers) fetched(id int32, offset, leaderEnd int64, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.byID[id]
	if r == nil {
		return false
	}
	switch {
	case offset >= leaderEnd:
		r.lastCaughtUp = now
	case r.leaderEndAtLastFetch >= 0 && offset >= r.leaderEndAtLastFetch:
		r.lastCaughtUp = r.lastFetch
	}
	r.logEnd = offset
	r.lastFetch, r.leaderEndAtLastFetch = now, leaderEnd
	return true
}

// committed is the high watermark the ISR allows: the smallest log end over
// the members (and those being added) other than the leader, at most
// leaderEnd. It is -1 while a member has not fetched under this leadership.
func (f *followers) committed(isr []int32, leaderEnd int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	end := leaderEnd
	consider := func(id int32) {
		if id == f.self {
			return
		}
		r := f.byID[id]
		if r == nil {
			end = -1
			return
		}
		end = min(end, r.logEnd)
	}
	for _, id := range isr {
		consider(id)
	}
	for id := range f.adding {
		if !slices.Contains(isr, id) {
			consider(id)
		}
	}
	return end
}

// lagging returns the ISR members other than the leader not caught up
// since now-lagMax.
func (f *followers) lagging(isr []int32, now time.Time, lagMax time.Duration) []int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int32
	for _, id := range isr {
		if r := f.byID[id]; id != f.self && (r == nil || now.Sub(r.lastCaughtUp) > lagMax) {
			out = append(out, id)
		}
	}
	return out
}

// logEnd is what the leader knows of follower id's log end, -1 if nothing.
func (f *followers) logEnd(id int32) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.byID[id]; r != nil {
		return r.logEnd
	}
	return -1
}

// lastCaughtUp is when follower id was last caught up.
func (f *followers) lastCaughtUp(id int32) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.byID[id]; r != nil {
		return r.lastCaughtUp, true
	}
	return time.Time{}, false
}

// beginAlter claims the partition's one ISR change in flight, built on
// partition epoch base; adding names a follower the change adds, counted
// in the high watermark from now on. A follower already counted keeps the
// base of the proposal that added it first: a retry built on metadata
// that does not show that addition yet is refused as stale, yet the
// follower may be in the ISR.
func (f *followers) beginAlter(adding int32, add bool, base int32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.altering {
		return false
	}
	f.altering = true
	if _, known := f.adding[adding]; add && !known {
		f.adding[adding] = base
	}
	return true
}

// endAlter ends the change in flight. refused says the state machine
// refused an addition for a reason other than a stale partition epoch (an
// ineligible replica, say): it never committed, and the follower stops
// counting. Any other outcome leaves the follower counted until the
// leader's metadata settles it (committedISR): committed, refused as
// stale (an earlier proposal may have added it), or unknown.
func (f *followers) endAlter(adding int32, add, refused bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.altering = false
	if add && refused {
		delete(f.adding, adding)
	}
}

// additions returns the ISR additions counted, by the partition epoch
// each proposal was built on.
func (f *followers) additions() map[int32]int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.adding)
}

// keepAdditions counts additions that the partition's previous Partition
// proposed (additions): a partition reopened on the same log must not let
// its high watermark pass a follower whose addition may yet commit.
func (f *followers) keepAdditions(adding map[int32]int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.adding == nil { // not leading: a leadership starts from nothing
		return
	}
	for id, base := range adding {
		if _, known := f.adding[id]; !known && f.byID[id] != nil {
			f.adding[id] = base
		}
	}
}

// committedISR forgets the additions the metadata at partitionEpoch
// settles: those it shows in the ISR, and those whose proposal was built
// on an earlier epoch, which can no longer commit (or did, and a later
// change took the follower out again).
func (f *followers) committedISR(isr []int32, partitionEpoch int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, base := range f.adding {
		if slices.Contains(isr, id) || partitionEpoch > base {
			delete(f.adding, id)
		}
	}
}
