package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
)

// The object store's own read throughput from versitygw: ranged GETs of
// aligned blocks at a parallelism and one streaming GET of a whole object.
// The tiering benchmarks do not compare against these figures; each
// measures its own limits in its own run (remotefetch/bench_test.go,
// offload/bench_test.go). Figures are MiB/s of object data.
//
//	go test -run '^$' -bench . ./objstore/

const (
	benchObjectSize = 64 << 20
	benchKey        = "object-64MiB"
)

// benchStore opens a backend's store holding the 64 MiB benchmark object.
func benchStore(b *testing.B, backend backend) objstore.Store {
	b.Helper()
	gw := versityGW(b)
	s := backend.open(b, gw.Endpoint, "bench-"+backend.name)
	if info, err := s.Head(b.Context(), benchKey); err == nil && info.Size == benchObjectSize {
		return s
	}
	data := objstoretest.Data(benchKey, benchObjectSize)
	if err := s.Put(b.Context(), benchKey, bytes.NewReader(data), benchObjectSize); err != nil {
		b.Fatal(err)
	}
	return s
}

func reportMiBps(b *testing.B, bytes int64, elapsed time.Duration) {
	b.ReportMetric(float64(bytes)/(1<<20)/elapsed.Seconds(), "MiB/s")
}

func BenchmarkRangedGet(b *testing.B) {
	for _, backend := range s3Backends {
		b.Run(backend.name, func(b *testing.B) {
			s := benchStore(b, backend)
			for _, block := range []int64{1 << 20, 2 << 20, 4 << 20, 8 << 20} {
				for _, par := range []int{1, 4, 8} {
					b.Run(fmt.Sprintf("block=%dMiB/par=%d", block>>20, par), func(b *testing.B) {
						benchRangedGets(b, s, block, par)
					})
				}
			}
		})
	}
}

// benchRangedGets makes b.N ranged GETs of block bytes, par at a time,
// walking the object's aligned blocks in order.
func benchRangedGets(b *testing.B, s objstore.Store, block int64, par int) {
	blocks := benchObjectSize / block
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	ctx := b.Context()
	b.ResetTimer()
	start := time.Now()
	for range par {
		wg.Go(func() {
			buf := make([]byte, block)
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if err := objstore.ReadAt(ctx, s, benchKey, buf, i%blocks*block); err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	reportMiBps(b, int64(b.N)*block, elapsed)
}

func BenchmarkStreamingGet(b *testing.B) {
	for _, backend := range s3Backends {
		b.Run(backend.name, func(b *testing.B) {
			s := benchStore(b, backend)
			ctx := b.Context()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if err := streamWhole(ctx, s); err != nil {
					b.Fatal(err)
				}
			}
			reportMiBps(b, int64(b.N)*benchObjectSize, time.Since(start))
		})
	}
}

func streamWhole(ctx context.Context, s objstore.Store) error {
	rc, err := s.Get(ctx, benchKey, 0, -1)
	if err != nil {
		return err
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	if err == nil && n != benchObjectSize {
		err = errors.New("short read")
	}
	return err
}
