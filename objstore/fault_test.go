package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
)

// The S3 backends through a FaultProxy: every injected fault comes out as a
// clean error, never as wrong or short bytes and never as an object that
// should not exist; and once the faults stop, the same store works again.
func TestFaults(t *testing.T) {
	t.Parallel()
	gw := versityGW(t)
	for _, b := range s3Backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			proxy, err := objstoretest.NewFaultProxy(gw.Endpoint)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(proxy.Close)
			prefix := "faults-" + b.name
			f := &faultTest{s: b.open(t, proxy.URL(), prefix), proxy: proxy, gw: gw, prefix: prefix}
			f.data = objstoretest.Data("object", 100_000)
			if err := f.s.Put(t.Context(), "object", bytes.NewReader(f.data), int64(len(f.data))); err != nil {
				t.Fatal(err)
			}
			for _, tt := range []struct {
				name string
				fn   func(t *testing.T)
			}{
				{"GetStatus", f.getStatus},
				{"HeadStatus", f.headStatus},
				{"PutStatus", f.putStatus},
				{"UploadPartStatus", f.uploadPartStatus},
				{"CompleteStatus", f.completeStatus},
				{"ResetGet", f.resetGet},
				{"ResetPut", f.resetPut},
				{"TruncatedBody", f.truncatedBody},
				{"TruncatedUnframedBody", f.truncatedUnframedBody},
				{"StalledResponseCanceled", f.stalledResponseCanceled},
				{"StalledResponseDeadline", f.stalledResponseDeadline},
				{"StalledBody", f.stalledBody},
				{"StallReleased", f.stallReleased},
				{"SuffixRefused", f.suffixRefused},
				{"CorruptWholeObject", f.corruptWholeObject},
			} {
				t.Run(tt.name, func(t *testing.T) {
					t.Cleanup(proxy.Clear)
					tt.fn(t)
					proxy.Clear()
					f.checkHealthy(t)
				})
			}
		})
	}
}

type faultTest struct {
	s      objstore.Store
	proxy  *objstoretest.FaultProxy
	gw     *objstoretest.VersityGW
	prefix string
	data   []byte // the content of "object"
}

// checkHealthy: with the faults gone, "object" reads back whole.
func (f *faultTest) checkHealthy(t *testing.T) {
	t.Helper()
	got, err := readAll(f.s.Get(t.Context(), "object", 0, -1))
	if err != nil || !bytes.Equal(got, f.data) {
		t.Fatalf("after the fault: Get = %d bytes, %v; want the %d-byte object", len(got), err, len(f.data))
	}
}

func readAll(rc io.ReadCloser, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// wantCleanError: an error, and not one that would be mistaken for an
// answer about the object.
func wantCleanError(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want one", what)
	}
	if errors.Is(err, objstore.ErrNotFound) || errors.Is(err, objstore.ErrInvalidRange) {
		t.Fatalf("%s: %v, want an error that says nothing about the object", what, err)
	}
}

func (f *faultTest) wantAbsent(t *testing.T, key string) {
	t.Helper()
	f.proxy.Clear()
	if _, err := f.s.Head(t.Context(), key); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("Head(%q) after the failed Put: %v, want not found", key, err)
	}
	if uploads := pendingUploads(t, f.gw.Client(), f.prefix); len(uploads) != 0 {
		t.Fatalf("multipart uploads left pending: %v", uploads)
	}
}

func (f *faultTest) getStatus(t *testing.T) {
	for _, status := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable} {
		f.proxy.Add(objstoretest.Method(http.MethodGet), objstoretest.Status(status), 0)
		_, err := f.s.Get(t.Context(), "object", 0, 100)
		wantCleanError(t, "Get", err)
		_, _, err = f.s.GetSuffix(t.Context(), "object", 100)
		wantCleanError(t, "GetSuffix", err)
		f.proxy.Clear()
	}
}

func (f *faultTest) headStatus(t *testing.T) {
	f.proxy.Add(objstoretest.Method(http.MethodHead), objstoretest.Status(http.StatusServiceUnavailable), 0)
	_, err := f.s.Head(t.Context(), "object")
	wantCleanError(t, "Head", err)
}

func (f *faultTest) putStatus(t *testing.T) {
	f.proxy.Add(objstoretest.Method(http.MethodPut), objstoretest.Status(http.StatusInternalServerError), 0)
	err := f.s.Put(t.Context(), "put-status", bytes.NewReader(f.data), int64(len(f.data)))
	wantCleanError(t, "Put", err)
	f.wantAbsent(t, "put-status")
}

// largePut puts a three-part object under key.
func (f *faultTest) largePut(t *testing.T, key string) error {
	data := objstoretest.Data(key, 2*objstore.MinPartSize+1)
	return f.s.Put(t.Context(), key, bytes.NewReader(data), int64(len(data)))
}

func (f *faultTest) uploadPartStatus(t *testing.T) {
	// Only part 2 fails; parts 1 and 3 may be up already and must go.
	rule := f.proxy.Add(objstoretest.All(objstoretest.PathContains("part-status"), objstoretest.HasQuery("partNumber"), partNumber("2")),
		objstoretest.Status(http.StatusInternalServerError), 0)
	wantCleanError(t, "Put", f.largePut(t, "part-status"))
	if rule.Hits() == 0 {
		t.Fatal("no part upload reached the fault")
	}
	f.wantAbsent(t, "part-status")
}

func partNumber(n string) objstoretest.Matcher {
	return func(r *http.Request) bool { return r.URL.Query().Get("partNumber") == n }
}

func (f *faultTest) completeStatus(t *testing.T) {
	complete := objstoretest.All(objstoretest.Method(http.MethodPost), objstoretest.HasQuery("uploadId"))
	f.proxy.Add(complete, objstoretest.Status(http.StatusInternalServerError), 0)
	wantCleanError(t, "Put", f.largePut(t, "complete-status"))
	f.wantAbsent(t, "complete-status")
}

func (f *faultTest) resetGet(t *testing.T) {
	f.proxy.Add(objstoretest.Method(http.MethodGet), objstoretest.Reset(), 0)
	_, err := f.s.Get(t.Context(), "object", 0, -1)
	wantCleanError(t, "Get", err)
}

func (f *faultTest) resetPut(t *testing.T) {
	f.proxy.Add(objstoretest.Method(http.MethodPut), objstoretest.Reset(), 0)
	err := f.s.Put(t.Context(), "reset-put", bytes.NewReader(f.data), int64(len(f.data)))
	wantCleanError(t, "Put", err)
	f.wantAbsent(t, "reset-put")
}

// reads are the three kinds of read a body fault can cut short.
func (f *faultTest) reads(t *testing.T, check func(what string, got []byte, err error)) {
	got, err := readAll(f.s.Get(t.Context(), "object", 0, -1))
	check("whole Get", got, err)
	got, err = readAll(f.s.Get(t.Context(), "object", 10_000, 50_000))
	check("ranged Get", got, err)
	rc, _, err := f.s.GetSuffix(t.Context(), "object", 60_000)
	got, err = readAll(rc, err)
	check("GetSuffix", got, err)
}

func (f *faultTest) truncatedBody(t *testing.T) {
	f.proxy.Add(objstoretest.Method(http.MethodGet), objstoretest.TruncateBody(1000), 0)
	f.reads(t, func(what string, got []byte, err error) {
		wantCleanError(t, what+" of a truncated body", err)
	})
}

// A body cut short but framed as complete (no Content-Length, chunked,
// cleanly ended) is caught by the store's own length check.
func (f *faultTest) truncatedUnframedBody(t *testing.T) {
	f.proxy.Add(objstoretest.Method(http.MethodGet), objstoretest.TruncateBodyUnframed(1000), 0)
	f.reads(t, func(what string, got []byte, err error) {
		wantCleanError(t, what+" of a short unframed body", err)
		if !errors.Is(err, io.ErrUnexpectedEOF) && len(got) > 0 {
			t.Fatalf("%s: %v after %d bytes, want io.ErrUnexpectedEOF", what, err, len(got))
		}
	})
}

// A stalled request ends when the caller cancels; the rule's Matched
// channel says the request is held, so no timing is involved.
func (f *faultTest) stalledResponseCanceled(t *testing.T) {
	rule := f.proxy.Add(objstoretest.Method(http.MethodGet), objstoretest.Stall(nil), 0)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-rule.Matched()
		cancel()
	}()
	_, err := f.s.Get(ctx, "object", 0, -1)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Get of a stalled response: %v, want context.Canceled", err)
	}
}

// The caller's deadline is the timeout of a stalled request.
func (f *faultTest) stalledResponseDeadline(t *testing.T) {
	f.proxy.Add(objstoretest.Method(http.MethodHead), objstoretest.Stall(nil), 0)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := f.s.Head(ctx, "object")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Head of a stalled response: %v, want context.DeadlineExceeded", err)
	}
}

// A body that stalls after its first bytes fails its reader when the
// caller cancels.
func (f *faultTest) stalledBody(t *testing.T) {
	f.proxy.Add(objstoretest.Method(http.MethodGet), objstoretest.StallBody(1000, nil), 0)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rc, err := f.s.Get(ctx, "object", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 1000)
	if _, err := io.ReadFull(rc, head); err != nil {
		t.Fatalf("reading the bytes before the stall: %v", err)
	}
	if !bytes.Equal(head, f.data[:1000]) {
		t.Fatal("the bytes before the stall are wrong")
	}
	cancel()
	if n, err := io.Copy(io.Discard, rc); err == nil {
		t.Fatalf("read %d more bytes and no error after cancelling a stalled body", n)
	}
}

// A stall that ends lets the request through unharmed.
func (f *faultTest) stallReleased(t *testing.T) {
	release := make(chan struct{})
	rule := f.proxy.Add(objstoretest.Method(http.MethodGet), objstoretest.Stall(release), 1)
	go func() {
		<-rule.Matched()
		close(release)
	}()
	got, err := readAll(f.s.Get(t.Context(), "object", 0, -1))
	if err != nil || !bytes.Equal(got, f.data) {
		t.Fatalf("Get through a released stall: %d bytes, %v", len(got), err)
	}
}

// Amazon S3 refuses every range of an empty object (416), suffixes
// included; a suffix read of one is still empty, not an error.
func (f *faultTest) suffixRefused(t *testing.T) {
	if err := f.s.Put(t.Context(), "empty", bytes.NewReader(nil), 0); err != nil {
		t.Fatal(err)
	}
	f.proxy.Add(objstoretest.All(objstoretest.Method(http.MethodGet), objstoretest.HasHeader("Range")),
		objstoretest.Status(http.StatusRequestedRangeNotSatisfiable), 0)
	rc, size, err := f.s.GetSuffix(t.Context(), "empty", 100)
	got, err := readAll(rc, err)
	if err != nil || size != 0 || len(got) != 0 {
		t.Fatalf("GetSuffix of an empty object answered 416: %d bytes, size %d, %v; want nothing, size 0", len(got), size, err)
	}
	// For an object that is not empty, a 416 stays an error.
	_, _, err = f.s.GetSuffix(t.Context(), "object", 100)
	if !errors.Is(err, objstore.ErrInvalidRange) {
		t.Fatalf("GetSuffix answered 416: %v, want ErrInvalidRange", err)
	}
}

// A whole-object GET checks the object's stored CRC-32: a flipped byte
// fails the read at the end of the body.
func (f *faultTest) corruptWholeObject(t *testing.T) {
	f.proxy.Add(objstoretest.Method(http.MethodGet), objstoretest.CorruptBody(50_000), 0)
	got, err := readAll(f.s.Get(t.Context(), "object", 0, -1))
	if err == nil {
		t.Fatalf("Get of a corrupted body returned %d bytes and no error (equal to the object: %v)", len(got), bytes.Equal(got, f.data))
	}
}
