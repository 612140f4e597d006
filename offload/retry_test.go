package offload

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stratalog/strata/objstore"
)

// fixedRand always draws the same number.
type fixedRand float64

func (r fixedRand) Float64() float64 { return float64(r) }

func TestBackoff(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RetryBaseDelay, cfg.RetryMaxDelay = 100*time.Millisecond, time.Second
	cases := []struct {
		n        int
		min, max time.Duration
	}{
		{1, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, 200 * time.Millisecond},
		{4, 400 * time.Millisecond, 800 * time.Millisecond},
		{5, 500 * time.Millisecond, time.Second}, // capped
		{1000, 500 * time.Millisecond, time.Second},
	}
	for _, draw := range []fixedRand{0, 0.999999} {
		cfg.Rand = draw
		m, err := New(cfg, testMeta(t), newCountingStore(nil))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			want := c.min
			if draw > 0 {
				want = c.max
			}
			if got := m.backoff(c.n); got < want-time.Millisecond || got > want {
				t.Errorf("draw %v: backoff(%d) = %v, want %v", draw, c.n, got, want)
			}
		}
	}
}

// TestAttemptTimeout: an attempt that outlives its timeout on the clock is
// cancelled, and its error says so; one cancelled by its caller is not a
// timeout.
func TestAttemptTimeout(t *testing.T) {
	clock := newFakeClock()
	cfg := DefaultConfig()
	cfg.Clock = clock
	m, err := New(cfg, testMeta(t), newCountingStore(nil))
	if err != nil {
		t.Fatal(err)
	}
	blocked := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	done := make(chan error, 1)
	go func() { done <- m.attempt(context.Background(), 5*time.Second, blocked) }()
	waitFor(t, "the attempt's watchdog", func() bool { return clock.timers() == 1 })
	clock.Advance(5 * time.Second)
	if err := <-done; !errors.Is(err, ErrAttemptTimeout) {
		t.Fatalf("timed-out attempt: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- m.attempt(ctx, 5*time.Second, blocked) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, ErrAttemptTimeout) {
		t.Fatalf("cancelled attempt: %v", err)
	}
}

// TestRetryBacksOffOnTheClock: failed attempts are retried after the
// backoff, measured on the clock, up to MaxAttempts; a permanent error is
// not retried.
func TestRetryBacksOffOnTheClock(t *testing.T) {
	clock := newFakeClock()
	cfg := DefaultConfig()
	cfg.Clock, cfg.MaxAttempts, cfg.AttemptTimeout = clock, 3, time.Hour
	m, err := New(cfg, testMeta(t), newCountingStore(nil))
	if err != nil {
		t.Fatal(err)
	}
	failing := errors.New("503")
	var failures []int
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := m.retry(context.Background(), time.Hour, func(context.Context) error { return failing },
			func(attempt int, _ error) { failures = append(failures, attempt) })
		done <- result{n, err}
	}()
	// Each attempt leaves its watchdog's timer behind; a backoff adds one.
	for k := 1; k < cfg.MaxAttempts; k++ {
		waitFor(t, "a backoff", func() bool { return clock.timers() == k+1 })
		select {
		case r := <-done:
			t.Fatalf("retry returned %+v before its backoff passed", r)
		default:
		}
		clock.Advance(cfg.RetryMaxDelay)
	}
	r := <-done
	if r.n != 3 || !errors.Is(r.err, failing) || len(failures) != 3 {
		t.Fatalf("retry: %d attempts, %v, failures %v", r.n, r.err, failures)
	}

	n, err := m.retry(context.Background(), time.Hour, func(context.Context) error { return objstore.ErrInvalidKey }, nil)
	if n != 1 || !errors.Is(err, objstore.ErrInvalidKey) {
		t.Fatalf("permanent error: %d attempts, %v", n, err)
	}
}

// TestStallAlarm: an upload that cannot be done for longer than
// StallAlarm is reported stalled, in Status, the metrics and one log line,
// until it succeeds.
func TestStallAlarm(t *testing.T) {
	h := newHarness(t, harnessOptions{tweak: func(c *Config) { c.MaxAttempts = 1 }})
	h.segments(1)
	h.store.setFailPut(func(context.Context, string) error { return errors.New("injected 503") })
	stalled := func(want string) {
		t.Helper()
		expected := "# HELP strata_offload_stalled_partitions Partitions whose next upload is stalled: waiting past the stall alarm, failed too often, or refused by the store.\n" +
			"# TYPE strata_offload_stalled_partitions gauge\nstrata_offload_stalled_partitions " + want + "\n"
		if err := testutil.CollectAndCompare(h.mgr.metrics.gauges, strings.NewReader(expected), "strata_offload_stalled_partitions"); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.sync(); err == nil {
		t.Fatal("Sync succeeded with failing PUTs")
	}
	stalled("0")
	h.clock.Advance(h.cfg.StallAlarm)
	for range 2 {
		if err := h.sync(); err == nil {
			t.Fatal("Sync succeeded with failing PUTs")
		}
	}
	st := h.mgr.Status().Partitions[0]
	if !st.Stalled || st.UploadWait != h.cfg.StallAlarm || !strings.Contains(st.LastError, "injected 503") {
		t.Fatalf("status %+v", st)
	}
	stalled("1")
	if n := strings.Count(h.logged(), "upload stalled"); n != 1 {
		t.Fatalf("%d stall logs, want 1:\n%s", n, h.logged())
	}
	h.store.setFailPut(nil)
	h.mustSync()
	if st := h.mgr.Status().Partitions[0]; st.Stalled || st.LastError != "" {
		t.Fatalf("status after the upload: %+v", st)
	}
	stalled("0")
}
