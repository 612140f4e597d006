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
