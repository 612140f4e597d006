package ledger

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Ledger is what a run's clients were told: which produces the brokers
// acknowledged and where, which failed, and what consumers saw. It is safe
// for concurrent use, so kgo promises and poll loops can report straight
// into it.
type Ledger struct {
	mu struct {
		sync.Mutex
		outcomes map[string]outcome    // by record value
		consumed map[position][][]byte // the distinct values consumers saw at each position
		failures map[string]int        // failed produces by error text
		twice    []violation           // outcomes reported for a value already resolved
	}
}

// outcome is how one produce ended.
type outcome struct {
	acked bool
	at    position // where the broker put it, if acked
	err   error    // why it failed, if not
}

func (o outcome) String() string {
	if o.acked {
		return "acked at " + o.at.String()
	}
	return "failed: " + o.err.Error()
}

// position is where a record sits in the log.
type position struct {
	topic     string
	partition int32
	offset    int64
}

func positionOf(r *kgo.Record) position {
	return position{r.Topic, r.Partition, r.Offset}
}

func (p position) String() string {
	return fmt.Sprintf("%s/%d@%d", p.topic, p.partition, p.offset)
}

// New returns an empty ledger.
func New() *Ledger {
	l := &Ledger{}
	l.mu.outcomes = make(map[string]outcome)
	l.mu.consumed = make(map[position][][]byte)
	l.mu.failures = make(map[string]int)
	return l
}

// Acked records a produce the broker acknowledged: r is the record its
// promise was given, with the topic, partition and offset filled in.
func (l *Ledger) Acked(r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.resolveLocked(r.Value, outcome{acked: true, at: positionOf(r)})
}

// Failed records a produce whose promise got err. The record may or may not
// be in the log, but never twice.
func (l *Ledger) Failed(r *kgo.Record, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.resolveLocked(r.Value, outcome{err: err}) {
		l.mu.failures[err.Error()]++
	}
}

// resolveLocked keeps the first outcome reported for value, and says if o
// was it; a second is a violation, since each produce ends once. l.mu
// should be held.
func (l *Ledger) resolveLocked(value []byte, o outcome) bool {
	if first, ok := l.mu.outcomes[string(value)]; ok {
		l.mu.twice = append(l.mu.twice, violation{kindTwice,
			fmt.Sprintf("%s %s, then %s", quote(value), first, o)})
		return false
	}
	l.mu.outcomes[string(value)] = o
	return true
}

// Consumed records a record a consumer saw during the run.
func (l *Ledger) Consumed(r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := positionOf(r)
	seen := l.mu.consumed[at]
	if !slices.ContainsFunc(seen, func(v []byte) bool { return bytes.Equal(v, r.Value) }) {
		l.mu.consumed[at] = append(seen, bytes.Clone(r.Value))
	}
}

// quote shows a record value in a message, cut short if long.
func quote(v []byte) string {
	const most = 64
	if len(v) > most {
		return fmt.Sprintf("%q… (%d bytes)", v[:most], len(v))
	}
	return fmt.Sprintf("%q", v)
}
