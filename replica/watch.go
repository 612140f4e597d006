package replica

import "sync"

// Watch is one Fetch long poll waiting for data. The fetch registers it
// with each partition it reads (Partition.Watch); a partition tells it
// how many bytes became readable (for a consumer's fetch: passed by the
// high watermark; for a follower's: appended, at WakeFollowers), and once
// they add up to the fetch's min bytes (or something else changed, such
// as the partition going away) Ready is closed and the fetch answers.
// Nothing polls: the fetch blocks on Ready, its max wait timer, or
// shutdown.
type Watch struct {
	// Ready is closed when the fetch should read again.
	Ready chan struct{}

	mu struct {
		sync.Mutex
		need  int64
		fired bool
	}
}

// NewWatch is a watch that fires once needBytes more bytes are readable.
func NewWatch(needBytes int64) *Watch {
	w := &Watch{Ready: make(chan struct{})}
	w.mu.need = needBytes
	return w
}

// addBytes counts n newly readable bytes towards the fetch's min bytes.
func (w *Watch) addBytes(n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.need -= n
	if w.mu.need <= 0 {
		w.fireLocked()
	}
}

// wake ends the wait whatever the byte count: the partition changed in a
// way the fetch must report (deleted, no longer led, truncated).
func (w *Watch) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fireLocked()
}

// fireLocked closes ready once. w.mu must be held.
func (w *Watch) fireLocked() {
	if !w.mu.fired {
		w.mu.fired = true
		close(w.Ready)
	}
}

// Watchers is the set of fetches waiting on one partition.
type Watchers struct {
	mu       sync.Mutex
	watching map[*Watch]struct{}
	// told is the partition's appended byte count the watches were last
	// told of (appendedTo).
	told int64
}

func (ws *Watchers) add(w *Watch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.watching == nil {
		ws.watching = map[*Watch]struct{}{}
	}
	ws.watching[w] = struct{}{}
}

func (ws *Watchers) remove(w *Watch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(ws.watching, w)
}

// appendedTo tells every waiting fetch of the bytes appended since the
// last call, given the partition's count of appended bytes.
func (ws *Watchers) appendedTo(total int64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if total <= ws.told {
		return
	}
	n := total - ws.told
	ws.told = total
	for w := range ws.watching {
		w.addBytes(n)
	}
}

// nudge tells every waiting fetch of one byte, without counting it as
// told: an advance of the high watermark that ended inside an append's
// mark made some of its bytes readable, how many unknown.
func (ws *Watchers) nudge() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.watching {
		w.addBytes(1)
	}
}

// wakeAll ends every wait on the partition.
func (ws *Watchers) wakeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.watching {
		w.wake()
	}
}

// Watch registers w with the partition until Unwatch: a consumer fetch's
// watch is woken as the high watermark advances, a follower's as the log
// grows.
func (p *Partition) Watch(w *Watch, follower bool) {
	if follower {
		p.replicaWatchers.add(w)
	} else {
		p.watchers.add(w)
	}
}

// WakeFollowers wakes the follower fetches waiting on the partition for
// what was appended since the last call. Append leaves them waiting so
// that a produce request's partitions reach a follower in one fetch, and
// so in one fsync round there: the produce handler calls it once every
// partition of the request is appended. Woken at each append instead, a
// follower's fetch took the first partition alone, and the rest waited
// for its fsync and the next fetch. (A fetch that arrives while the
// request is being appended still reads what is there.)
func (p *Partition) WakeFollowers() {
	p.replicaWatchers.appendedTo(p.appendedBytes.Load())
}

// Unwatch removes w, registered by Watch.
func (p *Partition) Unwatch(w *Watch, follower bool) {
	if follower {
		p.replicaWatchers.remove(w)
	} else {
		p.watchers.remove(w)
	}
}

// Waiting counts the fetches waiting on the partition, consumers' and
// followers'.
func (p *Partition) Waiting() int {
	return p.watchers.count() + p.replicaWatchers.count()
}

func (ws *Watchers) count() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.watching)
}
