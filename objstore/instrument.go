package objstore

import (
	"context"
	"errors"
	"io"
	"iter"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Operation label values of the metrics.
const (
	opPut       = "put"
	opGet       = "get"
	opGetSuffix = "get_suffix"
	opHead      = "head"
	opList      = "list"
	opDelete    = "delete"
)

// Outcome label values of strata_objstore_requests_total.
const (
	outcomeSuccess  = "success"
	outcomeNotFound = "not_found"
	outcomeInvalid  = "invalid_request" // bad key, range or body size: a caller's bug
	outcomeCanceled = "canceled"
	outcomeTimeout  = "timeout"
	outcomeError    = "error"
)

// metrics are the instruments of one instrumented store.
type metrics struct {
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	readBytes    prometheus.Counter
	writtenBytes prometheus.Counter
}

// instrumented is a Store that measures the one it wraps.
type instrumented struct {
	next Store
	m    *metrics
}

// Instrument returns s, measured into reg; doc.go lists the metrics. It
// registers them with promauto, so instrumenting two stores into one
// registry panics: wrap reg with prometheus.WrapRegistererWith to tell
// them apart. A nil reg measures into nothing.
func Instrument(s Store, reg prometheus.Registerer) Store {
	f := promauto.With(reg)
	return &instrumented{next: s, m: &metrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_objstore_requests_total",
			Help: "Object store calls by operation and outcome. A multipart put counts once; a get counts when its reader is closed, so a body that fails mid-way counts as an error.",
		}, []string{"operation", "outcome"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "strata_objstore_request_duration_seconds",
			Help:    "Object store call latency by operation: to the response headers for gets, the whole call for the rest.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"operation"}),
		readBytes: f.NewCounter(prometheus.CounterOpts{
			Name: "strata_objstore_read_bytes_total",
			Help: "Object bytes read by gets.",
		}),
		writtenBytes: f.NewCounter(prometheus.CounterOpts{
			Name: "strata_objstore_written_bytes_total",
			Help: "Object bytes stored by successful puts.",
		}),
	}}
}

// outcome classifies a call's error for the requests counter.
func outcome(err error) string {
	switch {
	case err == nil || err == io.EOF:
		return outcomeSuccess
	case errors.Is(err, ErrNotFound):
		return outcomeNotFound
	case errors.Is(err, ErrInvalidRange), errors.Is(err, ErrInvalidKey), errors.Is(err, ErrSizeMismatch):
		return outcomeInvalid
	case errors.Is(err, context.Canceled):
		return outcomeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return outcomeTimeout
	}
	return outcomeError
}

func (s *instrumented) done(op string, start time.Time, err error) {
	s.m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	s.m.requests.WithLabelValues(op, outcome(err)).Inc()
}

func (s *instrumented) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	start := time.Now()
	err := s.next.Put(ctx, key, r, size)
	s.done(opPut, start, err)
	if err == nil {
		s.m.writtenBytes.Add(float64(size))
	}
	return err
}

func (s *instrumented) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	start := time.Now()
	rc, err := s.next.Get(ctx, key, offset, length)
	return s.body(opGet, start, rc, err)
}

func (s *instrumented) GetSuffix(ctx context.Context, key string, n int64) (io.ReadCloser, int64, error) {
	start := time.Now()
	rc, size, err := s.next.GetSuffix(ctx, key, n)
	rc, err = s.body(opGetSuffix, start, rc, err)
	return rc, size, err
}

// body records a get's latency now and its outcome when its reader closes.
func (s *instrumented) body(op string, start time.Time, rc io.ReadCloser, err error) (io.ReadCloser, error) {
	s.m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		s.m.requests.WithLabelValues(op, outcome(err)).Inc()
		return nil, err
	}
	return &measuredBody{body: rc, op: op, m: s.m}, nil
}

// measuredBody counts the bytes read through it and, on Close, the get.
type measuredBody struct {
	body  io.ReadCloser
	op    string
	m     *metrics
	close sync.Once
	mu    struct {
		sync.Mutex
		err error // the first read error other than io.EOF
	}
}

func (b *measuredBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.m.readBytes.Add(float64(n))
	if err != nil && err != io.EOF {
		b.mu.Lock()
		if b.mu.err == nil {
			b.mu.err = err
		}
		b.mu.Unlock()
	}
	return n, err
}

func (b *measuredBody) Close() error {
	err := b.body.Close()
	b.close.Do(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.m.requests.WithLabelValues(b.op, outcome(b.mu.err)).Inc()
	})
	return err
}

func (s *instrumented) Head(ctx context.Context, key string) (ObjectInfo, error) {
	start := time.Now()
	info, err := s.next.Head(ctx, key)
	s.done(opHead, start, err)
	return info, err
}

func (s *instrumented) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		start := time.Now()
		var err error
		defer func() { s.done(opList, start, err) }()
		for info, lerr := range s.next.List(ctx, prefix) {
			if lerr != nil {
				err = lerr
			}
			if !yield(info, lerr) {
				return
			}
		}
	}
}

func (s *instrumented) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := s.next.Delete(ctx, key)
	s.done(opDelete, start, err)
	return err
}

func (s *instrumented) Close() error { return s.next.Close() }
