package ledger

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// rec is a record of topic "t".
func rec(partition int32, offset int64, value []byte) *kgo.Record {
	return &kgo.Record{Topic: "t", Partition: partition, Offset: offset, Value: value}
}

var errTimedOut = errors.New("timed out")

// kindsFound is the kinds of the violations Check would report, in order.
func kindsFound(l *Ledger, final []*kgo.Record) []kind {
	l.mu.Lock()
	defer l.mu.Unlock()
	var found []kind
	for _, v := range l.violationsLocked(indexLog(final)) {
		found = append(found, v.kind)
	}
	return found
}

var (
	a0, a1, a2, a3 = Value("a", 0), Value("a", 1), Value("a", 2), Value("a", 3)
	b0, b1         = Value("b", 0), Value("b", 1)
)

// cleanHistory and cleanFinal are a run that kept every promise: producer
// a's records spread over two partitions, and producer b's two failed
// produces, one of which made it into the log and was consumed.
func cleanHistory(l *Ledger) {
	l.Acked(rec(0, 0, a0))
	l.Acked(rec(1, 0, a1))
	l.Acked(rec(0, 1, a2))
	l.Acked(rec(1, 1, a3))
	l.Failed(rec(0, -1, b0), errTimedOut)
	l.Failed(rec(0, -1, b1), errTimedOut)
	l.Consumed(rec(0, 0, a0))
	l.Consumed(rec(0, 0, a0)) // redelivered after a rebalance
	l.Consumed(rec(1, 0, a1))
	l.Consumed(rec(0, 2, b1))
}

var cleanFinal = []*kgo.Record{rec(0, 0, a0), rec(0, 1, a2), rec(0, 2, b1), rec(1, 0, a1), rec(1, 1, a3)}

// TestCheck has one case per kind of violation, each history breaking one
// promise, and the clean run.
func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		history func(l *Ledger)
		final   []*kgo.Record
		want    []kind
	}{{
		name:    "clean",
		history: cleanHistory,
		final:   cleanFinal,
	}, {
		name:    "lost",
		history: func(l *Ledger) { l.Acked(rec(0, 0, a0)) },
		want:    []kind{kindLost},
	}, {
		name: "moved",
		history: func(l *Ledger) {
			l.Acked(rec(0, 0, a0))
			l.Failed(rec(0, -1, b0), errTimedOut)
		},
		final: []*kgo.Record{rec(0, 0, b0), rec(0, 1, a0)},
		want:  []kind{kindMoved},
	}, {
		name: "moved to another partition",
		history: func(l *Ledger) {
			l.Acked(rec(0, 0, a0))
		},
		final: []*kgo.Record{rec(1, 0, a0)},
		want:  []kind{kindMoved},
	}, {
		name: "order",
		history: func(l *Ledger) {
			l.Acked(rec(0, 0, a1))
			l.Acked(rec(0, 1, a0))
		},
		final: []*kgo.Record{rec(0, 0, a1), rec(0, 1, a0)},
		want:  []kind{kindOrder},
	}, {
		name: "acked duplicate",
		history: func(l *Ledger) {
			l.Acked(rec(0, 0, a0))
		},
		final: []*kgo.Record{rec(0, 0, a0), rec(0, 1, a0)},
		want:  []kind{kindDuplicate},
	}, {
		name: "failed duplicate",
		history: func(l *Ledger) {
			l.Failed(rec(0, -1, b0), errTimedOut)
		},
		final: []*kgo.Record{rec(0, 0, b0), rec(1, 0, b0)},
		want:  []kind{kindDuplicate},
	}, {
		name: "gap",
		history: func(l *Ledger) {
			l.Acked(rec(0, 0, a0))
			l.Acked(rec(0, 2, a1))
		},
		final: []*kgo.Record{rec(0, 0, a0), rec(0, 2, a1)},
		want:  []kind{kindGap},
	}, {
		name: "offset read twice",
		history: func(l *Ledger) {
			l.Acked(rec(0, 0, a0))
			l.Acked(rec(0, 1, a1))
		},
		final: []*kgo.Record{rec(0, 0, a0), rec(0, 1, a1), rec(0, 1, a1)},
		want:  []kind{kindGap},
	}, {
		name: "vanished",
		history: func(l *Ledger) {
			l.Acked(rec(0, 0, a0))
			l.Failed(rec(0, -1, b0), errTimedOut)
			l.Consumed(rec(0, 1, b0))
		},
		final: []*kgo.Record{rec(0, 0, a0)},
		want:  []kind{kindVanished},
	}, {
		name: "changed",
		history: func(l *Ledger) {
			l.Acked(rec(0, 0, a0))
			l.Failed(rec(0, -1, b0), errTimedOut)
			l.Consumed(rec(0, 0, b0))
		},
		final: []*kgo.Record{rec(0, 0, a0)},
		want:  []kind{kindChanged},
	}, {
		name: "unproduced",
		history: func(l *Ledger) {
			l.Acked(rec(0, 0, a0))
		},
		final: []*kgo.Record{rec(0, 0, a0), rec(0, 1, []byte("garbled"))},
		want:  []kind{kindUnproduced},
	}, {
		name: "resolved twice",
		history: func(l *Ledger) {
			l.Acked(rec(0, 0, a0))
			l.Failed(rec(0, -1, a0), errTimedOut)
		},
		final: []*kgo.Record{rec(0, 0, a0)},
		want:  []kind{kindTwice},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := New()
			tc.history(l)
			if got := kindsFound(l, tc.final); !slices.Equal(got, tc.want) {
				t.Errorf("violations %v, want %v", got, tc.want)
			}
			err := l.Check(tc.final)
			if (err != nil) != (len(tc.want) > 0) || (err != nil && !errors.Is(err, ErrViolated)) {
				t.Errorf("Check = %v, want violations %v", err, tc.want)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	t.Parallel()
	l := New()
	cleanHistory(l)
	l.Failed(rec(0, -1, Value("c", 0)), kgo.ErrClientClosed)
	got := l.Summary(cleanFinal)
	want := Summary{Acked: 4, Failed: 3, FailedInLog: 1, Consumed: 3, Final: 5,
		Failures: map[string]int{errTimedOut.Error(): 2, kgo.ErrClientClosed.Error(): 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Summary = %+v, want %+v", got, want)
	}
	const line = "acked 4, failed 3 (1 in the final log; 2 × timed out, 1 × client closed), consumed 3, final 5"
	if got.String() != line {
		t.Errorf("Summary.String =\n%s\nwant\n%s", got, line)
	}
}

// TestCheckErrorIsBounded checks that Check counts every violation but
// lists only the first few.
func TestCheckErrorIsBounded(t *testing.T) {
	t.Parallel()
	l := New()
	for seq := range int64(shown + 5) {
		l.Acked(rec(0, seq, Value("a", seq)))
	}
	err := l.Check(nil)
	if !errors.Is(err, ErrViolated) {
		t.Fatalf("Check = %v, want ErrViolated", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if !strings.Contains(lines[0], "25 violations (lost 25) in acked 25") {
		t.Errorf("first line %q does not count the violations", lines[0])
	}
	if len(lines) != 1+shown+1 || lines[len(lines)-1] != "\tand 5 more" {
		t.Errorf("Check's error has %d lines, ending %q; want %d, ending \"\\tand 5 more\"", len(lines), lines[len(lines)-1], 1+shown+1)
	}
}

// TestLedgerConcurrent reports from many goroutines at once, as promises
// and poll loops do, with summaries taken meanwhile; run it with -race.
func TestLedgerConcurrent(t *testing.T) {
	t.Parallel()
	const producers, records = 8, 500
	l := New()
	var final []*kgo.Record
	for p := range int32(producers) {
		for seq := range int64(records) {
			final = append(final, rec(p, seq, Value(fmt.Sprint("producer-", p), seq)))
		}
	}
	var wg sync.WaitGroup
	for p := range int32(producers) {
		wg.Go(func() {
			for _, r := range final[int(p)*records : int(p+1)*records] {
				if r.Offset%10 == 9 {
					l.Failed(r, errTimedOut) // and in the log anyway
				} else {
					l.Acked(r)
				}
				l.Consumed(r)
			}
		})
		wg.Go(func() {
			for range records {
				l.Summary(nil)
			}
		})
	}
	wg.Wait()
	if err := l.Check(final); err != nil {
		t.Fatal(err)
	}
	s := l.Summary(final)
	if s.Acked != producers*records*9/10 || s.FailedInLog != producers*records/10 || s.Consumed != producers*records {
		t.Errorf("Summary = %v", s)
	}
}
