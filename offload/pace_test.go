package offload

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// TestPacedReaderKeepsToItsRate reads 3 MiB through a 4 MiB/s pace with a
// 1 MiB burst: it cannot take less than the 2 MiB past the burst need,
// half a second, and gets every byte.
func TestPacedReaderKeepsToItsRate(t *testing.T) {
	data := bytes.Repeat([]byte("strata"), 3<<20/6)
	r := pacedReader{ctx: context.Background(), r: bytes.NewReader(data), pace: newPace(4 << 20)}
	start := time.Now()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(data))
	}
	floor := time.Duration(float64(len(data)-paceBurst) / float64(4<<20) * float64(time.Second))
	if took := time.Since(start); took < floor-10*time.Millisecond {
		t.Fatalf("3 MiB read in %v through a 4 MiB/s pace, faster than its %v", took, floor)
	}
}

// TestPacedReaderStopsWithItsContext: a cancelled upload does not wait
// out its pace.
func TestPacedReaderStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := pacedReader{ctx: ctx, r: bytes.NewReader(make([]byte, 4<<20)), pace: newPace(1 << 20)}
	if _, err := io.ReadAll(r); !errors.Is(err, context.Canceled) {
		t.Fatalf("read with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestCopyMaxBytesPerSecondBelowMinUploadRateIsRefused(t *testing.T) {
	c := DefaultConfig()
	for _, rate := range []int64{-1, 1, c.MinUploadRate - 1} {
		c.CopyMaxBytesPerSecond = rate
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("CopyMaxBytesPerSecond %d: %v, want ErrInvalidConfig", rate, err)
		}
	}
	for _, rate := range []int64{0, c.MinUploadRate, 100 << 20} {
		c.CopyMaxBytesPerSecond = rate
		if err := c.Validate(); err != nil {
			t.Errorf("CopyMaxBytesPerSecond %d: %v", rate, err)
		}
	}
}
