package remotefetch

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/objstore/objstoretest"
)

// fakeClock is a Clock that moves only when told. Every After it hands out
// is reported on timers, so a test can tell what the code under test is
// waiting for and advance exactly past it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	pending []fakeTimer
	timers  chan time.Duration
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_700_000_000, 0), timers: make(chan time.Duration, 64)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	ch := make(chan time.Time, 1)
	c.pending = append(c.pending, fakeTimer{at: c.now.Add(d), ch: ch})
	c.mu.Unlock()
	c.timers <- d
	return ch
}

// advance moves the clock on by d and fires the timers that are due.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.pending[:0]
	for _, t := range c.pending {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.ch <- c.now
	}
	c.pending = kept
}

// flakyBucket fails the first failures ranged reads with a transient error.
type flakyBucket struct {
	Bucket
	mu       sync.Mutex
	failures int
}

var errFlaky = errors.New("injected: 503 SlowDown")

func (b *flakyBucket) ReadAt(ctx context.Context, key string, p []byte, off int64, filled func(int)) error {
	b.mu.Lock()
	fail := b.failures > 0
	b.failures--
	b.mu.Unlock()
	if fail {
		return errFlaky
	}
	return b.Bucket.ReadAt(ctx, key, p, off, filled)
}

// A transient failure is retried after a backoff that doubles, with
// jitter, timed by the injected clock; every attempt has its timeout on
// the same clock.
func TestRetryBackoffOnInjectedClock(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "flaky", 0, []int{5}, segmentSpec{})
	p.put(t, s)
	clock := newFakeClock()
	cfg := testConfig()
	cfg.Clock = clock
	cfg.RetryBackoff = 100 * time.Millisecond
	cfg.RetryBackoffMax = time.Second
	r := newReader(t, &flakyBucket{Bucket: StoreBucket(s), failures: 2}, p, cfg)

	done := make(chan error, 1)
	go func() {
		_, err := r.Read(context.Background(), Request{Partition: p.part, Offset: 0, MaxBytes: 100})
		done <- err
	}()
	var backoffs []time.Duration
	for len(backoffs) < 2 {
		d := <-clock.timers
		if d == cfg.AttemptTimeout {
			continue // an attempt's watchdog
		}
		backoffs = append(backoffs, d)
		clock.advance(d)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i, d := range backoffs {
		base := cfg.RetryBackoff << i
		if d < base/2 || d >= base {
			t.Errorf("backoff %d = %v, want in [%v, %v)", i, d, base/2, base)
		}
	}
	if m := r.Metrics(); m.Retries != 2 || m.BlockGets != 3 {
		t.Fatalf("%d retries, %d block GETs; want 2 and 3", m.Retries, m.BlockGets)
	}
}

// A stalled GET times out on the injected clock and is retried; when
// every attempt stalls, the read fails with ErrUnavailable.
func TestAttemptTimeoutOnInjectedClock(t *testing.T) {
	t.Parallel()
	s, _ := openFileStore(t)
	p := buildPartition(t, "stall", 0, []int{5}, segmentSpec{})
	p.put(t, s)
	clock := newFakeClock()
	cfg := testConfig()
	cfg.Clock = clock
	cfg.MaxAttempts = 2
	bucket := &stallBucket{countingBucket: newCountingBucket(StoreBucket(s)), stall: "stall", release: make(chan struct{})}
	r := newReader(t, bucket, p, cfg)
	if _, err := r.index(t.Context(), p.segments[0].seg); err != nil { // its GET does not stall
		t.Fatal(err)
	}
	<-clock.timers // the index GET's watchdog, which must not fire
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(context.Background(), Request{Partition: p.part, Offset: 0, MaxBytes: 100})
		done <- err
	}()
	var err error
	for waiting := true; waiting; {
		select {
		case d := <-clock.timers: // an attempt's watchdog, or a backoff
			clock.advance(d)
		case err = <-done:
			waiting = false
		}
	}
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, errAttemptTimeout) {
		t.Fatalf("Read = %v, want ErrUnavailable after attempts that timed out", err)
	}
	if n := r.Metrics().BlockGets; n != int64(cfg.MaxAttempts) {
		t.Fatalf("%d block GETs, want %d attempts", n, cfg.MaxAttempts)
	}
}

// Through a fault proxy in front of versitygw: 500s and 503s, truncated
// bodies and reset connections are retried to success; a bucket that
// keeps failing gives a clean ErrUnavailable; a stall is cut off by the
// attempt timeout and by the caller's deadline. No read returns bad bytes.
func TestFaultProxy(t *testing.T) {
	t.Parallel()
	gw := versityGW(t)
	proxy, err := objstoretest.NewFaultProxy(gw.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	store := openS3Store(t, proxy.URL())
	p := buildPartition(t, "faults", 0, []int{30}, segmentSpec{bigEvery: 5})
	p.put(t, store)
	want, _ := p.expect(0, 1<<20)
	ranged := objstoretest.All(objstoretest.Method(http.MethodGet), objstoretest.HasHeader("Range"))

	cases := []struct {
		name  string
		fault objstoretest.Fault
		times int
		// minRetries is how many our retrier must make: net/http itself
		// resends a request whose reused connection was reset before any
		// answer, so a reset may never reach us.
		minRetries int64
	}{
		{"503", objstoretest.Status(http.StatusServiceUnavailable), 2, 2},
		{"500", objstoretest.Status(http.StatusInternalServerError), 1, 1},
		{"truncated", objstoretest.TruncateBody(100), 2, 2},
		{"truncated-unframed", objstoretest.TruncateBodyUnframed(100), 1, 1},
		{"reset", objstoretest.Reset(), 1, 0},
	}
	for _, c := range cases {
		proxy.Clear()
		rule := proxy.Add(ranged, c.fault, c.times)
		cfg := testConfig()
		cfg.ReadAheadBlocks = 0
		r := newReader(t, StoreBucket(store), p, cfg)
		res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 0, MaxBytes: 1 << 20})
		if err != nil || !bytes.Equal(res.Records, want) {
			t.Errorf("%s: %d bytes, err %v; want the data after retries", c.name, len(res.Records), err)
		}
		if retries := r.Metrics().Retries; rule.Hits() != int64(c.times) || retries < c.minRetries || retries > int64(c.times) {
			t.Errorf("%s: fault hit %d times, %d retries; want %d, and %d to %d retries", c.name, rule.Hits(), retries, c.times, c.minRetries, c.times)
		}
	}

	proxy.Clear()
	proxy.Add(ranged, objstoretest.Status(http.StatusServiceUnavailable), 0)
	cfg := testConfig()
	cfg.MaxAttempts = 3
	r := newReader(t, StoreBucket(store), p, cfg)
	res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 0, MaxBytes: 1 << 20})
	if !errors.Is(err, ErrUnavailable) || res.Records != nil {
		t.Errorf("a bucket that keeps failing: %d bytes, err %v; want ErrUnavailable and nothing", len(res.Records), err)
	}

	proxy.Clear()
	proxy.Add(ranged, objstoretest.Stall(nil), 0)
	cfg = testConfig()
	cfg.AttemptTimeout = 100 * time.Millisecond
	cfg.MaxAttempts = 2
	r = newReader(t, StoreBucket(store), p, cfg)
	if _, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 0}); !errors.Is(err, ErrUnavailable) || !errors.Is(err, errAttemptTimeout) {
		t.Errorf("stalled GETs: err %v, want ErrUnavailable after attempt timeouts", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	cfg.AttemptTimeout = time.Minute
	r = newReader(t, StoreBucket(store), p, cfg)
	if _, err := r.Read(ctx, Request{Partition: p.part, Offset: 0}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stalled GET under a caller's deadline: err %v, want context.DeadlineExceeded", err)
	}

	proxy.Clear()
	proxy.Add(ranged, objstoretest.StallBody(10, nil), 1)
	cfg = testConfig()
	cfg.AttemptTimeout = 100 * time.Millisecond
	r = newReader(t, StoreBucket(store), p, cfg)
	if res, err := r.Read(t.Context(), Request{Partition: p.part, Offset: 0, MaxBytes: 1 << 20}); err != nil || !bytes.Equal(res.Records, want) {
		t.Errorf("a body that stalls once: %d bytes, err %v; want the data after a retry", len(res.Records), err)
	}
}
