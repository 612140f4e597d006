package objstore_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stratalog/strata/objstore"
)

func TestInstrument(t *testing.T) {
	t.Parallel()
	file, _ := openFile(t)
	reg := prometheus.NewRegistry()
	s := objstore.Instrument(file, reg)
	ctx := t.Context()

	if err := s.Put(ctx, "a", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	_ = s.Put(ctx, "b", strings.NewReader("hi"), 5) // size mismatch
	read := func(rc io.ReadCloser, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(rc); err != nil {
			t.Fatal(err)
		}
		if err := rc.Close(); err != nil {
			t.Fatal(err)
		}
	}
	read(s.Get(ctx, "a", 1, 3))
	rc, _, err := s.GetSuffix(ctx, "a", 2)
	read(rc, err)
	_, _ = s.Get(ctx, "missing", 0, -1)
	_, _ = s.Get(ctx, "a", 4, 2) // past the end
	if _, err := s.Head(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for _, err := range s.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = s.Head(canceled, "a")

	// A get whose body fails mid-way counts as failed when closed.
	if err := s.Put(ctx, "c", strings.NewReader("0123456789"), 10); err != nil {
		t.Fatal(err)
	}
	readCtx, cancelRead := context.WithCancel(ctx)
	rc, err = s.Get(readCtx, "c", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	cancelRead()
	if _, err := io.ReadAll(rc); err == nil {
		t.Fatal("read after cancel succeeded")
	}
	_ = rc.Close()
	_ = rc.Close() // counted once

	want := `
# HELP strata_objstore_read_bytes_total Object bytes read by gets.
# TYPE strata_objstore_read_bytes_total counter
strata_objstore_read_bytes_total 5
# HELP strata_objstore_requests_total Object store calls by operation and outcome. A multipart put counts once; a get counts when its reader is closed, so a body that fails mid-way counts as an error.
# TYPE strata_objstore_requests_total counter
strata_objstore_requests_total{operation="delete",outcome="success"} 1
strata_objstore_requests_total{operation="get",outcome="canceled"} 1
strata_objstore_requests_total{operation="get",outcome="invalid_request"} 1
strata_objstore_requests_total{operation="get",outcome="not_found"} 1
strata_objstore_requests_total{operation="get",outcome="success"} 1
strata_objstore_requests_total{operation="get_suffix",outcome="success"} 1
strata_objstore_requests_total{operation="head",outcome="canceled"} 1
strata_objstore_requests_total{operation="head",outcome="success"} 1
strata_objstore_requests_total{operation="list",outcome="success"} 1
strata_objstore_requests_total{operation="put",outcome="invalid_request"} 1
strata_objstore_requests_total{operation="put",outcome="success"} 2
# HELP strata_objstore_written_bytes_total Object bytes stored by successful puts.
# TYPE strata_objstore_written_bytes_total counter
strata_objstore_written_bytes_total 15
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"strata_objstore_requests_total", "strata_objstore_read_bytes_total", "strata_objstore_written_bytes_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "strata_objstore_request_duration_seconds"); n != 6 {
		t.Fatalf("latency histograms for %d operations, want 6", n)
	}
}
