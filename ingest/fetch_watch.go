package ingest

import "sync"

// fetchWatch is one Fetch long poll waiting for data. The fetch registers it
// with each partition it reads; a partition whose high watermark advances
// tells it how many bytes became readable, and once they add up to the
// fetch's min bytes (or something else changed, such as the partition going
// away) ready is closed and the fetch answers. Nothing polls: the fetch
// blocks on ready, its max wait timer, or shutdown.
type fetchWatch struct {
	ready chan struct{}

	mu struct {
		sync.Mutex
		need  int64
		fired bool
	}
}

func newFetchWatch(needBytes int64) *fetchWatch {
	w := &fetchWatch{ready: make(chan struct{})}
	w.mu.need = needBytes
	return w
}

// addBytes counts n newly readable bytes towards the fetch's min bytes.
func (w *fetchWatch) addBytes(n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.need -= n
	if w.mu.need <= 0 {
		w.fireLocked()
	}
}

// wake ends the wait whatever the byte count: the partition changed in a
// way the fetch must report (deleted, no longer led, truncated).
func (w *fetchWatch) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fireLocked()
}

// fireLocked closes ready once. w.mu must be held.
func (w *fetchWatch) fireLocked() {
	if !w.mu.fired {
		w.mu.fired = true
		close(w.ready)
	}
}

// fetchWatchers is the set of fetches waiting on one partition.
type fetchWatchers struct {
	mu       sync.Mutex
	watching map[*fetchWatch]struct{}
}

func (ws *fetchWatchers) add(w *fetchWatch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.watching == nil {
		ws.watching = map[*fetchWatch]struct{}{}
	}
	ws.watching[w] = struct{}{}
}

func (ws *fetchWatchers) remove(w *fetchWatch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(ws.watching, w)
}

// appended tells every waiting fetch that n bytes became readable.
func (ws *fetchWatchers) appended(n int64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.watching {
		w.addBytes(n)
	}
}

// wakeAll ends every wait on the partition.
func (ws *fetchWatchers) wakeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.watching {
		w.wake()
	}
}
