package offload

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
	"github.com/stratalog/strata/segmentobject"
)

// faultHarness is a harness whose store is versitygw behind a fault proxy,
// with short retry delays, on the system clock unless fake.
func faultHarness(t *testing.T, segmentBytes int64, fake bool) (*harness, *objstoretest.FaultProxy) {
	t.Helper()
	gw := versityGW(t)
	proxy, err := objstoretest.NewFaultProxy(gw.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	store, err := objstore.Open(t.Context(), objstoretest.S3URL(proxy.URL(), testBucket, topicName(t)+"-"+uuid.NewString()), gw.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var clock Clock = hotlog.SystemClock()
	if fake {
		clock = nil
	}
	h := newHarness(t, harnessOptions{
		store: store, clock: clock, segmentBytes: segmentBytes,
		tweak: func(c *Config) {
			c.RetryBaseDelay, c.RetryMaxDelay = time.Millisecond, 10*time.Millisecond
			c.AttemptTimeout = 10 * time.Second
		},
	})
	return h, proxy
}

// checkNothingLocalLost checks that every offset below the hot log's start
// is in a committed segment.
func (h *harness) checkNothingLocalLost() {
	h.t.Helper()
	if start := h.log.LogStartOffset(); start > 0 && !covered(h.manifest(), 0, start) {
		h.t.Fatalf("local data below %d deleted before its commit: %+v", start, h.manifest())
	}
}

// TestStoreFaults puts each kind of failure between the Manager and a real
// S3 server: uploads succeed once the faults stop, with the expected
// number of PUTs, and nothing local goes before its commit.
func TestStoreFaults(t *testing.T) {
	putObject := objstoretest.All(objstoretest.Method(http.MethodPut), objstoretest.PathContains(".seg"))
	cases := []struct {
		name  string
		match objstoretest.Matcher
		fault objstoretest.Fault
		times int
		puts  int // PUT calls the store sees for the segment
		log   string
	}{
		{"500", putObject, objstoretest.Status(http.StatusInternalServerError), 2, 3, "InternalError"},
		{"503", putObject, objstoretest.Status(http.StatusServiceUnavailable), 1, 2, "SlowDown"},
		{"reset", putObject, objstoretest.Reset(), 1, 2, "segment put failed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, proxy := faultHarness(t, 0, false)
			h.segments(1)
			rule := proxy.Add(c.match, c.fault, c.times)
			h.mustSync()
			if rule.Hits() != int64(c.times) {
				t.Fatalf("fault applied %d times, want %d", rule.Hits(), c.times)
			}
			committed := h.committed()
			if len(committed) != 1 {
				t.Fatalf("committed %+v\n%s", committed, h.logged())
			}
			if n := h.store.putCount(committed[0].ObjectKey); n != c.puts {
				t.Fatalf("%d PUTs, want %d", n, c.puts)
			}
			if !strings.Contains(h.logged(), c.log) {
				t.Fatalf("logs do not mention %q:\n%s", c.log, h.logged())
			}
			h.checkConsistent()
		})
	}
}

// TestStalledPut: a PUT the server never answers is abandoned when its
// attempt times out on the clock, and retried after a backoff.
func TestStalledPut(t *testing.T) {
	h, proxy := faultHarness(t, 0, true)
	h.segments(1)
	put := objstoretest.All(objstoretest.Method(http.MethodPut), objstoretest.PathContains(".seg"))
	rule := proxy.Add(put, objstoretest.Stall(nil), 1)
	done := make(chan error, 1)
	go func() { done <- h.sync() }()
	<-rule.Matched()
	h.clock.Advance(h.cfg.AttemptTimeout + time.Duration(float64(16<<10)/float64(h.cfg.MinUploadRate)*float64(time.Second)))
	waitFor(t, "the retried PUT", func() bool {
		h.clock.Advance(h.cfg.RetryMaxDelay) // the backoff, once it waits
		return h.store.putCount(segmentobject.SegmentKey(h.prefix(), 0, h.manifest().Segments[0].ID)) >= 2
	}, h.logged)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.logged(), "attempt timed out") {
		t.Fatalf("logs do not mention the timeout:\n%s", h.logged())
	}
	h.checkConsistent()
}

// TestMultipartPartFault: a part of a multipart upload fails; the upload
// is aborted and retried whole under the same key.
func TestMultipartPartFault(t *testing.T) {
	h, proxy := faultHarness(t, 8<<20, false)
	h.append(6, 1<<20)
	h.roll()
	part := objstoretest.All(objstoretest.Method(http.MethodPut), objstoretest.HasQuery("partNumber"))
	rule := proxy.Add(part, objstoretest.Status(http.StatusInternalServerError), 1)
	h.mustSync()
	if rule.Hits() != 1 {
		t.Fatalf("part fault applied %d times", rule.Hits())
	}
	committed := h.committed()
	if len(committed) != 1 || h.store.putCount(committed[0].ObjectKey) != 2 {
		t.Fatalf("committed %+v after %d PUTs", committed, h.store.putCount(committed[0].ObjectKey))
	}
	h.checkConsistent()
}

// TestTruncatedManifestRead: after a restart the Manager reads the old
// bucket manifest for tail sizes; a body cut short fails that pass cleanly
// and the next one succeeds.
func TestTruncatedManifestRead(t *testing.T) {
	h, proxy := faultHarness(t, 0, false)
	h.segments(1)
	h.mustSync()
	h.segments(1)
	h.startManager(crashOnce(stepCopyCommitted))
	if err := h.sync(); !errors.Is(err, errCrash) {
		t.Fatal(err)
	}
	h.startManager(nil)
	get := objstoretest.All(objstoretest.Method(http.MethodGet), objstoretest.PathContains(segmentobject.ManifestName))
	rule := proxy.Add(get, objstoretest.TruncateBody(10), 1)
	if err := h.sync(); err == nil {
		t.Fatal("Sync succeeded reading a truncated manifest")
	}
	if rule.Hits() != 1 {
		t.Fatalf("fault applied %d times", rule.Hits())
	}
	h.mustSync()
	h.checkConsistent()
}

// TestStoreDown: while every PUT fails, passes fail cleanly (no hang),
// nothing is committed, and nothing local is deleted, however old; once
// the store is back the segments go up.
func TestStoreDown(t *testing.T) {
	h, proxy := faultHarness(t, 0, false)
	h.segments(2)
	proxy.Add(objstoretest.Method(http.MethodPut), objstoretest.Status(http.StatusServiceUnavailable), 0)
	for range 2 {
		if err := h.sync(); err == nil {
			t.Fatal("Sync succeeded with the store down")
		}
		h.clock.Advance(24 * time.Hour) // far past local retention
		h.checkNothingLocalLost()
	}
	if h.log.LogStartOffset() != 0 {
		t.Fatalf("local start %d with nothing uploaded", h.log.LogStartOffset())
	}
	for _, s := range h.manifest().Segments {
		if s.State == meta.SegmentCommitted {
			t.Fatalf("segment committed with the store down: %+v", s)
		}
	}
	if st := h.mgr.Status().Partitions[0]; !strings.Contains(st.LastError, "SlowDown") {
		t.Fatalf("status error %q", st.LastError)
	}
	proxy.Clear()
	h.mustSync()
	h.checkNothingLocalLost()
	if len(h.committed()) != 2 || h.log.LogStartOffset() == 0 {
		t.Fatalf("after recovery: committed %d, local start %d", len(h.committed()), h.log.LogStartOffset())
	}
	h.checkConsistent()
}
