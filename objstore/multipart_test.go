package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"sync"
	"testing"
)

func TestFitPartSize(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, tt := range []struct{ size, partSize, want int64 }{
		{100, MinPartSize, MinPartSize},
		{MaxParts * MinPartSize, MinPartSize, MinPartSize},
		{MaxParts*MinPartSize + 1, MinPartSize, 6 * mib},
		{MaxParts * 16 * mib * 3, 16 * mib, 48 * mib},
		{5 << 40, 16 * mib, 525 * mib},
	} {
		got := fitPartSize(tt.size, tt.partSize)
		if got != tt.want || (tt.size+got-1)/got > MaxParts {
			t.Errorf("fitPartSize(%d, %d) = %d, want %d", tt.size, tt.partSize, got, tt.want)
		}
	}
}

// recordingUpload is a multipartAPI that keeps what it is sent, to check
// how putMultipart drives the calls. It stands in for the S3 wire only in
// these unit tests; the backends are tested against a real server.
type recordingUpload struct {
	failPart int32         // this part fails (0: none)
	gate     chan struct{} // if set, every part says so on arrived, then waits for gate to close
	arrived  chan struct{}

	mu              sync.Mutex
	inFlight        int
	maxFlight       int
	parts           map[int32][]byte
	partContexts    []context.Context
	completed       []uploadedPart
	aborted         int
	inFlightAtAbort int
	canceledAtAbort int // part contexts already cancelled when the abort came
}

func (u *recordingUpload) createMultipart(context.Context, string) (string, error) {
	return "upload-1", nil
}

func (u *recordingUpload) uploadPart(ctx context.Context, _, _ string, number int32, data []byte, crc string) (string, error) {
	u.mu.Lock()
	u.inFlight++
	u.maxFlight = max(u.maxFlight, u.inFlight)
	u.partContexts = append(u.partContexts, ctx)
	u.mu.Unlock()
	defer func() {
		u.mu.Lock()
		u.inFlight--
		u.mu.Unlock()
	}()
	if u.gate != nil {
		u.arrived <- struct{}{}
		<-u.gate // a server that takes its time, whatever the client does
	}
	if crc != crc32Base64(data) {
		return "", fmt.Errorf("part %d: CRC %s does not match its data", number, crc)
	}
	if number == u.failPart {
		return "", errors.New("injected part failure")
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.parts[number] = bytes.Clone(data)
	return fmt.Sprintf("etag-%d", number), nil
}

func (u *recordingUpload) completeMultipart(_ context.Context, _, _ string, parts []uploadedPart, _ int64) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.completed = parts
	return nil
}

func (u *recordingUpload) abortMultipart(context.Context, string, string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.aborted++
	u.inFlightAtAbort = u.inFlight
	for _, ctx := range u.partContexts {
		if ctx.Err() != nil {
			u.canceledAtAbort++
		}
	}
	return nil
}

func TestPutMultipart(t *testing.T) {
	t.Parallel()
	const partSize = MinPartSize
	data := make([]byte, 4*partSize+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	u := &recordingUpload{parts: map[int32][]byte{}}
	if err := putMultipart(t.Context(), u, slog.New(slog.DiscardHandler), "k", bytes.NewReader(data), int64(len(data)), partSize, 2); err != nil {
		t.Fatal(err)
	}
	if u.aborted != 0 || len(u.completed) != 5 {
		t.Fatalf("completed %d parts, aborted %d times; want 5 parts, no abort", len(u.completed), u.aborted)
	}
	var joined []byte
	for i, p := range u.completed {
		if p.Number != int32(i+1) || p.ETag != fmt.Sprintf("etag-%d", i+1) || p.CRC32 != crc32Base64(u.parts[p.Number]) {
			t.Fatalf("completion part %d = %+v", i, p)
		}
		joined = append(joined, u.parts[p.Number]...)
	}
	if !bytes.Equal(joined, data) || crc32.ChecksumIEEE(joined) != crc32.ChecksumIEEE(data) {
		t.Fatal("the parts do not join to the data")
	}
}

// At most concurrency parts are in flight, and all of them are when the
// server is slow: the gate holds every upload until that many arrived.
func TestPutMultipartConcurrencyBound(t *testing.T) {
	t.Parallel()
	const concurrency = 3
	data := make([]byte, 8*MinPartSize)
	u := &recordingUpload{parts: map[int32][]byte{}, gate: make(chan struct{}), arrived: make(chan struct{}, 8)}
	done := make(chan error)
	go func() {
		done <- putMultipart(t.Context(), u, slog.New(slog.DiscardHandler), "k", bytes.NewReader(data), int64(len(data)), MinPartSize, concurrency)
	}()
	for range concurrency {
		select {
		case <-u.arrived:
		case err := <-done:
			t.Fatalf("finished before %d parts were in flight: %v", concurrency, err)
		}
	}
	close(u.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if u.maxFlight != concurrency {
		t.Fatalf("%d parts in flight at most, want %d", u.maxFlight, concurrency)
	}
}

func TestPutMultipartAbortsOnFailure(t *testing.T) {
	t.Parallel()
	data := make([]byte, 5*MinPartSize)
	u := &recordingUpload{parts: map[int32][]byte{}, failPart: 3}
	err := putMultipart(t.Context(), u, slog.New(slog.DiscardHandler), "k", bytes.NewReader(data), int64(len(data)), MinPartSize, 2)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("part 3 of 5")) {
		t.Fatalf("putMultipart = %v, want the failure of part 3", err)
	}
	if u.aborted != 1 || u.completed != nil {
		t.Fatalf("aborted %d times, completed %v; want one abort and no completion", u.aborted, u.completed)
	}
	if _, ok := u.parts[3]; ok {
		t.Fatal("part 3 was stored")
	}
}

// A failed part stops new parts, but the parts in flight finish (their
// requests are not cancelled) before the abort, so that the server holds no
// part upload still in progress when the abort arrives.
func TestPutMultipartFailureLetsPartsInFlightFinish(t *testing.T) {
	t.Parallel()
	data := make([]byte, 6*MinPartSize)
	u := &recordingUpload{parts: map[int32][]byte{}, failPart: 1, gate: make(chan struct{}), arrived: make(chan struct{}, 8)}
	done := make(chan error)
	go func() {
		done <- putMultipart(t.Context(), u, slog.New(slog.DiscardHandler), "k", bytes.NewReader(data), int64(len(data)), MinPartSize, 2)
	}()
	<-u.arrived // parts 1 and 2 are in flight
	<-u.arrived
	close(u.gate) // part 1 fails, part 2 succeeds
	if err := <-done; err == nil {
		t.Fatal("putMultipart succeeded with a failing part")
	}
	if u.aborted != 1 || u.inFlightAtAbort != 0 || u.canceledAtAbort != 0 {
		t.Fatalf("aborted %d times, with %d parts in flight and %d part requests cancelled; want one abort, none in flight, none cancelled",
			u.aborted, u.inFlightAtAbort, u.canceledAtAbort)
	}
	if _, ok := u.parts[2]; !ok {
		t.Fatal("part 2 did not finish")
	}
}
