package offload

import (
	"context"
	"io"

	"golang.org/x/time/rate"
)

// Upload pacing: Config.CopyMaxBytesPerSecond (Kafka's
// remote.log.manager.copy.max.bytes.per.second, KIP-956) caps the bytes
// read for upload per second, across every upload of the broker, so that
// sealing and uploading leave the hot disk and the CPU to the produce
// path. Unset, uploads go as fast as the store takes them.

// uploadSlots is how many uploads may be in flight at once: at most
// UploadConcurrency, and under a pace no more than keep each upload's
// share of it at MinUploadRate or above, the rate its attempt timeout
// allows (AttemptTimeout + size/MinUploadRate). Otherwise four uploads
// sharing a pace of 1 MiB/s would each go at 256 KiB/s, time out and
// start again for ever.
func uploadSlots(cfg Config) int {
	if cfg.CopyMaxBytesPerSecond <= 0 {
		return cfg.UploadConcurrency
	}
	return int(max(1, min(int64(cfg.UploadConcurrency), cfg.CopyMaxBytesPerSecond/cfg.MinUploadRate)))
}

// paceBurst is the most one read takes at once from the pace.
const paceBurst = 1 << 20

// newPace returns the limiter for bytesPerSecond, or nil for no limit.
func newPace(bytesPerSecond int64) *rate.Limiter {
	if bytesPerSecond <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(bytesPerSecond), paceBurst)
}

// pacedReader reads from r no faster than pace allows.
type pacedReader struct {
	ctx  context.Context
	r    io.Reader
	pace *rate.Limiter
}

func (p pacedReader) Read(b []byte) (int, error) {
	if len(b) > paceBurst {
		b = b[:paceBurst]
	}
	n, err := p.r.Read(b)
	if n > 0 {
		if werr := p.pace.WaitN(p.ctx, n); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}
