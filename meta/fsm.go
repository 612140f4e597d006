package meta

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// fsm is the state machine Raft drives. It is its own type, apart from the
// Node, and knows nothing of networking: it decodes log entries through the
// command registry, applies them to an immutable State, and publishes each
// new State.
//
// Threading (hashicorp/raft's contract): Apply, ApplyBatch, Snapshot and
// Restore are called from Raft's one FSM goroutine, never concurrently;
// fsmSnapshot.Persist runs on another goroutine while Apply goes on, which is
// safe because it writes a State that never changes. Readers load the
// current State from an atomic pointer.
//
// A fatal error — an entry that does not decode, a command type this binary
// does not know (unless optional), a panic in apply, a snapshot that fails to
// restore — is recorded once. From then on nothing is applied, no snapshot is
// taken (it would claim entries that were not applied), fatalCh is closed,
// and the Node stops Raft.
type fsm struct {
	logger  *slog.Logger
	metrics *metrics

	state atomic.Pointer[State]

	// publish is called on the FSM goroutine after each new State is
	// stored. It must not block. Set before Raft starts.
	publish func(st *State, changes []Change)

	// restored is the index of the last snapshot Restore applied.
	restored atomic.Uint64

	fatalOnce sync.Once
	fatalErr  atomic.Pointer[error]
	fatalCh   chan struct{}
}

var _ raft.BatchingFSM = (*fsm)(nil)

func newFSM(logger *slog.Logger, m *metrics) *fsm {
	f := &fsm{logger: logger, metrics: m, fatalCh: make(chan struct{})}
	f.state.Store(newState())
	return f
}

// applyResult is the outcome of one command: Result.Epoch and the
// precondition error, if any.
type applyResult struct {
	epoch int64
	err   error
}

// current returns the latest published State.
func (f *fsm) current() *State { return f.state.Load() }

// err returns the fatal error, or nil.
func (f *fsm) err() error {
	if p := f.fatalErr.Load(); p != nil {
		return *p
	}
	return nil
}

// fail records the first fatal error.
func (f *fsm) fail(err error) {
	f.fatalOnce.Do(func() {
		f.fatalErr.Store(&err)
		f.metrics.fsmFatal.Inc()
		f.logger.Error("metadata state machine stopped: refusing to run on state it cannot trust", "error", err)
		close(f.fatalCh)
	})
}

// Apply applies one committed entry.
func (f *fsm) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed entries in order and publishes one new State
// for all of them. Each entry's response is an applyResult (one command), a
// []applyResult (a batch) or, once the FSM has failed, the fatal error.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	responses := make([]any, len(logs))
	if err := f.err(); err != nil {
		for i := range responses {
			responses[i] = err
		}
		return responses
	}
	work := *f.current()
	var changes []Change
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		start := time.Now()
		response, err := f.applyEntry(&work, l, &changes)
		f.metrics.applyDuration.Observe(time.Since(start).Seconds())
		if err != nil {
			f.fail(err)
			for j := i; j < len(responses); j++ {
				responses[j] = err
			}
			break
		}
		responses[i] = response
	}
	if work.index != f.current().index {
		f.store(&work, changes)
	}
	return responses
}

// applyEntry applies one command entry to work. The entry is decoded in
// full before anything is applied, so an entry holding a command this binary
// cannot decode is applied not at all. The returned error is fatal.
func (f *fsm) applyEntry(work *State, l *raft.Log, changes *[]Change) (any, error) {
	envelopes, err := decodeEntry(l.Data)
	if err != nil {
		return nil, fmt.Errorf("log index %d: %w", l.Index, err)
	}
	cmds := make([]Command, len(envelopes))
	for i, data := range envelopes {
		cmd, err := decodeCommand(data)
		if errors.Is(err, ErrUnknownCommand) {
			if env, _ := parseEnvelope(data); env.optional() {
				f.logger.Warn("skipping an optional command this version does not know", "index", l.Index, "type", uint8(env.typ), "version", env.version)
				continue
			}
		}
		if err != nil {
			return nil, fmt.Errorf("log index %d command %d: %w", l.Index, i, err)
		}
		cmds[i] = cmd
	}
	results := make([]applyResult, len(cmds))
	for i, cmd := range cmds {
		if cmd == nil {
			f.metrics.appliedIgnored.Inc()
			continue
		}
		res, err := f.applyCommand(work, l.Index, cmd, changes)
		if err != nil {
			return nil, fmt.Errorf("log index %d command %d: %w", l.Index, i, err)
		}
		results[i] = res
	}
	work.index = l.Index
	if CommandType(l.Data[0]) == cmdBatch {
		return results, nil
	}
	return results[0], nil
}

// applyCommand applies one command on a copy of work and keeps the copy only
// if the command succeeds. A panic in apply is returned as a fatal error:
// work is untouched, so nothing half-applied is ever published.
func (f *fsm) applyCommand(work *State, index uint64, cmd Command, changes *[]Change) (res applyResult, fatal error) {
	spec := commandSpecs[cmd.commandType()]
	defer func() {
		if r := recover(); r != nil {
			fatal = fmt.Errorf("meta: %s panicked: %v\n%s", spec.name, r, debug.Stack())
		}
	}()
	tx := txn{st: *work, index: index}
	epoch, err := spec.apply(cmd, &tx)
	if err != nil {
		f.metrics.appliedRejected.Inc()
		return applyResult{err: err}, nil
	}
	f.metrics.appliedOK.Inc()
	*work = tx.st
	*changes = append(*changes, tx.changes...)
	return applyResult{epoch: epoch}, nil
}

// store publishes st as the current State.
func (f *fsm) store(st *State, changes []Change) {
	st.superseded = make(chan struct{})
	prev := f.state.Swap(st)
	close(prev.superseded)
	if f.publish != nil {
		f.publish(st, changes)
	}
}

// Snapshot captures the current State; Persist writes it.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.err(); err != nil {
		return nil, fmt.Errorf("meta: no snapshot after a fatal error: %w", err)
	}
	return &fsmSnapshot{state: f.current(), metrics: f.metrics}, nil
}

// Restore replaces the state with a snapshot's. The snapshot is decoded and
// checked in full before it replaces anything; a bad one is a fatal error.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st, err := readSnapshot(bufio.NewReader(rc))
	if err != nil {
		f.fail(err)
		return err
	}
	// Before the state: whoever sees the state sees the index.
	f.restored.Store(st.index)
	f.store(st, []Change{{Kind: ChangeSnapshot, Index: st.index}})
	return nil
}

// fsmSnapshot is one State being written to a snapshot sink.
type fsmSnapshot struct {
	state   *State
	metrics *metrics
}

// Persist writes the snapshot and closes the sink, or cancels it on error.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	start := time.Now()
	w := bufio.NewWriterSize(sink, 64<<10)
	err := writeSnapshot(w, s.state)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("meta: writing snapshot: %w", err)
	}
	s.metrics.snapshotDuration.Observe(time.Since(start).Seconds())
	return sink.Close()
}

// Release is a no-op: the State needs no cleanup.
func (s *fsmSnapshot) Release() {}
