package meta

import (
	"fmt"
	"sync"
)

// ChangeKind says which part of the state a Change touched.
type ChangeKind uint8

// Change kinds.
const (
	// ChangeSnapshot: the whole state was replaced (a snapshot was restored)
	// or this is the first update of a Watch. Re-read everything.
	ChangeSnapshot        ChangeKind = iota + 1
	ChangeCluster                    // the cluster id
	ChangeBroker                     // Change.BrokerID registered, fenced or unfenced
	ChangeTopic                      // Change.Topic created, deleted or reconfigured
	ChangePartition                  // Change.Topic/Partition's leader, ISR or epochs
	ChangeManifest                   // Change.Topic/Partition's remote segments
	ChangeOffsets                    // Change.Group's committed offsets
	ChangeBrokerConfig               // a broker's or the cluster-wide dynamic broker configs
	ChangeClientQuota                // a client quota
	ChangeScramCredential            // a user's SCRAM credentials
	ChangeACL                        // access control lists
	ChangeSchema                     // the schema registry's schemas, subjects or settings
	maxChangeKind
)

func (k ChangeKind) String() string {
	names := [...]string{ChangeSnapshot: "snapshot", ChangeCluster: "cluster", ChangeBroker: "broker",
		ChangeTopic: "topic", ChangePartition: "partition", ChangeManifest: "manifest", ChangeOffsets: "offsets",
		ChangeBrokerConfig: "broker config", ChangeClientQuota: "client quota",
		ChangeScramCredential: "SCRAM credential", ChangeACL: "ACL", ChangeSchema: "schema"}
	if k >= ChangeSnapshot && k < maxChangeKind {
		return names[k]
	}
	return fmt.Sprintf("ChangeKind(%d)", uint8(k))
}

// Change names one thing an applied command changed; read its new value
// from the State the Change came with. Only the fields its Kind lists are
// set.
type Change struct {
	Kind      ChangeKind
	Index     uint64 // Raft index of the command
	Topic     string
	Partition int32
	BrokerID  int32
	Group     string
}

// Update is what a Watch delivers: the state after one or more applied
// entries, and what they changed (those of the kinds watched).
type Update struct {
	State   *State
	Changes []Change
}

// WatchOptions selects what a Watch delivers.
type WatchOptions struct {
	// Kinds lists the change kinds to deliver; empty means all. Updates
	// with none of them are not delivered. ChangeSnapshot always is.
	Kinds []ChangeKind
	// Buffer is the channel's capacity; 0 means 64. A reader that lets it
	// fill is dropped (see Watch.Err).
	Buffer int
}

// Watch is a subscription to applied changes. Read Updates from C. C is
// closed after Cancel, Close, a fatal error, or when the reader falls a full
// buffer behind; Err then says why. A dropped reader re-subscribes and
// re-reads the state from its first update.
type Watch struct {
	// C delivers updates. The first holds the state as it was when Watch
	// was called, with a single ChangeSnapshot.
	C <-chan Update

	c     chan Update
	kinds uint64 // bit k set: deliver ChangeKind k
	hub   *watchHub

	// Guarded by hub.mu.
	last *State // the state last sent, so a publish of it is not sent twice
	err  error
}

// Cancel ends the subscription and closes C. Err then returns nil.
func (w *Watch) Cancel() {
	w.hub.remove(w, nil)
}

// Err says why C was closed: nil after Cancel, ErrWatchOverflow, ErrClosed,
// or the node's fatal error. It returns nil while C is open.
func (w *Watch) Err() error {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	return w.err
}

// watchHub holds a node's watches. publish runs on the state machine's
// goroutine and never blocks.
type watchHub struct {
	mu struct {
		sync.Mutex
		watches map[*Watch]struct{}
		closed  error // set once the hub is closed: new watches end at once
	}
}

func newWatchHub() *watchHub {
	h := &watchHub{}
	h.mu.watches = make(map[*Watch]struct{})
	return h
}

// watch registers a watch. It reads the current state under the hub's lock,
// so that no publish falls between that read and the registration.
func (h *watchHub) watch(current func() *State, opts WatchOptions) *Watch {
	buffer := opts.Buffer
	if buffer <= 0 {
		buffer = 64
	}
	w := &Watch{c: make(chan Update, buffer), hub: h, kinds: 1 << ChangeSnapshot}
	w.C = w.c
	if len(opts.Kinds) == 0 {
		w.kinds = ^uint64(0)
	}
	for _, k := range opts.Kinds {
		w.kinds |= 1 << k
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.closed != nil {
		w.err = h.mu.closed
		close(w.c)
		return w
	}
	st := current()
	w.last = st
	w.c <- Update{State: st, Changes: []Change{{Kind: ChangeSnapshot, Index: st.index}}}
	h.mu.watches[w] = struct{}{}
	return w
}

// publish delivers an update to every watch that wants some of changes.
func (h *watchHub) publish(st *State, changes []Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.mu.watches {
		if w.last == st {
			continue
		}
		var mine []Change
		for _, c := range changes {
			if w.kinds&(1<<c.Kind) != 0 {
				mine = append(mine, c)
			}
		}
		if len(mine) == 0 {
			continue
		}
		select {
		case w.c <- Update{State: st, Changes: mine}:
			w.last = st
		default:
			h.removeLocked(w, ErrWatchOverflow)
		}
	}
}

func (h *watchHub) remove(w *Watch, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removeLocked(w, err)
}

// removeLocked ends one watch. h.mu must be held.
func (h *watchHub) removeLocked(w *Watch, err error) {
	if _, ok := h.mu.watches[w]; !ok {
		return
	}
	delete(h.mu.watches, w)
	w.err = err
	close(w.c)
}

// close ends every watch with err, and every later one at once.
func (h *watchHub) close(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.closed == nil {
		h.mu.closed = err
	}
	for w := range h.mu.watches {
		h.removeLocked(w, err)
	}
}
