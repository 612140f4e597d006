package ledger

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Summary counts what a run's clients were told and what the final read
// found, for the test log; a fault test should also insist that it acked
// something.
type Summary struct {
	Acked       int            // produces acknowledged
	Failed      int            // produces failed
	FailedInLog int            // failed produces whose record is in the final log anyway
	Failures    map[string]int // failed produces by error text
	Consumed    int            // distinct positions consumers saw a record at
	Final       int            // records in the final read
}

// Summary counts the ledger against final, a read as Check takes.
func (l *Ledger) Summary(final []*kgo.Record) Summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.summaryLocked(indexLog(final))
}

// summaryLocked is Summary. l.mu should be held.
func (l *Ledger) summaryLocked(log finalLog) Summary {
	s := Summary{
		Failures: maps.Clone(l.mu.failures),
		Consumed: len(l.mu.consumed),
		Final:    len(log.records),
	}
	for value, o := range l.mu.outcomes {
		switch {
		case o.acked:
			s.Acked++
		case len(log.places[value]) > 0:
			s.Failed++
			s.FailedInLog++
		default:
			s.Failed++
		}
	}
	return s
}

// String is one line: the counts and the three commonest failures.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "acked %d, failed %d (%d in the final log", s.Acked, s.Failed, s.FailedInLog)
	reasons := slices.SortedFunc(maps.Keys(s.Failures), func(x, y string) int {
		return cmp.Or(cmp.Compare(s.Failures[y], s.Failures[x]), strings.Compare(x, y))
	})
	for i, reason := range reasons[:min(len(reasons), 3)] {
		sep := "; "
		if i > 0 {
			sep = ", "
		}
		fmt.Fprintf(&b, "%s%d × %s", sep, s.Failures[reason], reason)
	}
	if len(reasons) > 3 {
		fmt.Fprintf(&b, ", %d other errors", len(reasons)-3)
	}
	fmt.Fprintf(&b, "), consumed %d, final %d", s.Consumed, s.Final)
	return b.String()
}
