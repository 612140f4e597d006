package ledger

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrViolated is what Check's error wraps when the final log breaks a
// promise the run's clients were given.
var ErrViolated = errors.New("ledger: history violated")

// shown is how many violations Check's error lists; it counts them all.
const shown = 20

// kind names a class of violation; kinds is the order Check counts them in.
type kind string

const (
	kindTwice      kind = "resolved twice" // a produce was reported as ending twice
	kindGap        kind = "gap"            // rule 4: offsets not dense in a partition
	kindDuplicate  kind = "duplicate"      // rule 3: one record at several positions
	kindUnproduced kind = "unproduced"     // a record no produce was reported for
	kindOrder      kind = "order"          // rule 2: a producer's records out of order
	kindLost       kind = "lost"           // rule 1: an acked record missing
	kindMoved      kind = "moved"          // rule 1: an acked record somewhere else
	kindVanished   kind = "vanished"       // rule 5: a consumed position now empty
	kindChanged    kind = "changed"        // rule 5: a consumed position now holds another value
)

var kinds = []kind{kindTwice, kindGap, kindDuplicate, kindUnproduced, kindOrder, kindLost, kindMoved, kindVanished, kindChanged}

type violation struct {
	kind   kind
	detail string
}

// finalLog is a final read of the log, indexed.
type finalLog struct {
	records []*kgo.Record
	at      map[position][]byte   // the value at each position, as first read
	places  map[string][]position // every position of each value, in read order, each once
}

func indexLog(final []*kgo.Record) finalLog {
	log := finalLog{records: final, at: make(map[position][]byte), places: make(map[string][]position)}
	for _, r := range final {
		at := positionOf(r)
		if _, ok := log.at[at]; ok {
			continue // read twice: a gap, not a second record
		}
		log.at[at] = r.Value
		log.places[string(r.Value)] = append(log.places[string(r.Value)], at)
	}
	return log
}

// Check compares the ledger with final, a complete read of the topic from
// the log start to the high watermark of every partition, in offset order
// within each partition, and returns an error wrapping ErrViolated that
// counts every violation (see the package doc) and lists the first few.
// Call it once every produce has resolved (after Load.Stop): a record in
// the log whose produce has not is reported as unproduced.
func (l *Ledger) Check(final []*kgo.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	log := indexLog(final)
	found := l.violationsLocked(log)
	if len(found) == 0 {
		return nil
	}
	counts := make(map[kind]int)
	for _, v := range found {
		counts[v.kind]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d violations (", len(found))
	sep := ""
	for _, k := range kinds {
		if counts[k] > 0 {
			fmt.Fprintf(&b, "%s%s %d", sep, k, counts[k])
			sep = ", "
		}
	}
	fmt.Fprintf(&b, ") in %s:", l.summaryLocked(log))
	for _, v := range found[:min(len(found), shown)] {
		fmt.Fprintf(&b, "\n\t%s: %s", v.kind, v.detail)
	}
	if len(found) > shown {
		fmt.Fprintf(&b, "\n\tand %d more", len(found)-shown)
	}
	return fmt.Errorf("%w: %s", ErrViolated, b.String())
}

// violationsLocked is every violation: those the ledger found as outcomes
// came in, then the final log's in log order, then the acked records' and
// the consumed ones' in position order. l.mu should be held.
func (l *Ledger) violationsLocked(log finalLog) []violation {
	found := slices.Clone(l.mu.twice)
	found = append(found, gaps(log)...)
	found = append(found, l.strangersLocked(log)...)
	found = append(found, l.outOfOrderLocked(log)...)
	found = append(found, l.missingLocked(log)...)
	found = append(found, l.unseenLocked(log)...)
	return found
}

// gaps checks rule 4: within a partition each offset read is one past the
// one before it.
func gaps(log finalLog) []violation {
	var found []violation
	type partition struct {
		topic string
		id    int32
	}
	last := make(map[partition]int64)
	for _, r := range log.records {
		p := partition{r.Topic, r.Partition}
		if prev, ok := last[p]; ok && r.Offset != prev+1 {
			found = append(found, violation{kindGap,
				fmt.Sprintf("%s follows offset %d", positionOf(r), prev)})
		}
		last[p] = r.Offset
	}
	return found
}

// strangersLocked checks rule 3, that no value is in the log twice, and
// that every value in the log was given to a produce. l.mu should be held.
func (l *Ledger) strangersLocked(log finalLog) []violation {
	var found []violation
	reported := make(map[string]bool)
	for _, r := range log.records {
		if reported[string(r.Value)] {
			continue
		}
		reported[string(r.Value)] = true
		places := log.places[string(r.Value)]
		if len(places) > 1 {
			found = append(found, violation{kindDuplicate,
				fmt.Sprintf("%s at %s", quote(r.Value), joinPositions(places))})
		}
		if _, ok := l.mu.outcomes[string(r.Value)]; !ok {
			found = append(found, violation{kindUnproduced,
				fmt.Sprintf("%s at %s was not reported as acked or failed", quote(r.Value), places[0])})
		}
	}
	return found
}

// outOfOrderLocked checks rule 2: in each partition, the acknowledged
// records of one producer come in the order of their sequence numbers.
// l.mu should be held.
func (l *Ledger) outOfOrderLocked(log finalLog) []violation {
	var found []violation
	type stream struct {
		producer  string
		topic     string
		partition int32
	}
	type previous struct {
		seq int64
		at  position
	}
	last := make(map[stream]previous)
	for _, r := range log.records {
		producer, seq, ok := ParseValue(r.Value)
		if !ok || !l.mu.outcomes[string(r.Value)].acked {
			continue
		}
		s, at := stream{producer, r.Topic, r.Partition}, positionOf(r)
		if prev, ok := last[s]; ok && seq < prev.seq {
			found = append(found, violation{kindOrder,
				fmt.Sprintf("%s seq %d at %s follows seq %d at %s", producer, seq, at, prev.seq, prev.at)})
		}
		last[s] = previous{seq, at}
	}
	return found
}

// missingLocked checks rule 1: every acknowledged record is where it was
// acknowledged at. l.mu should be held.
func (l *Ledger) missingLocked(log finalLog) []violation {
	var found []violation
	for _, value := range l.ackedLocked() {
		at := l.mu.outcomes[value].at
		if bytes.Equal(log.at[at], []byte(value)) {
			continue
		}
		if places := log.places[value]; len(places) > 0 {
			found = append(found, violation{kindMoved,
				fmt.Sprintf("%s acked at %s is at %s", quote([]byte(value)), at, joinPositions(places))})
		} else {
			found = append(found, violation{kindLost,
				fmt.Sprintf("%s acked at %s is not in the log", quote([]byte(value)), at)})
		}
	}
	return found
}

// ackedLocked is the acknowledged values, by where they were acknowledged.
// l.mu should be held.
func (l *Ledger) ackedLocked() []string {
	var acked []string
	for value, o := range l.mu.outcomes {
		if o.acked {
			acked = append(acked, value)
		}
	}
	slices.SortFunc(acked, func(a, b string) int {
		return comparePositions(l.mu.outcomes[a].at, l.mu.outcomes[b].at)
	})
	return acked
}

// unseenLocked checks rule 5: every record a consumer saw is still in the
// log, where it was seen. l.mu should be held.
func (l *Ledger) unseenLocked(log finalLog) []violation {
	var found []violation
	seen := slices.SortedFunc(maps.Keys(l.mu.consumed), comparePositions)
	for _, at := range seen {
		now, ok := log.at[at]
		for _, v := range l.mu.consumed[at] {
			switch {
			case !ok:
				found = append(found, violation{kindVanished,
					fmt.Sprintf("%s consumed at %s, which the log no longer holds", quote(v), at)})
			case !bytes.Equal(v, now):
				found = append(found, violation{kindChanged,
					fmt.Sprintf("%s consumed at %s, where the log now holds %s", quote(v), at, quote(now))})
			}
		}
	}
	return found
}

func comparePositions(a, b position) int {
	return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition), cmp.Compare(a.offset, b.offset))
}

func joinPositions(places []position) string {
	s := make([]string, len(places))
	for i, p := range places {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
