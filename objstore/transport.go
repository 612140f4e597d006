package objstore

import (
	"net"
	"net/http"
	"time"
)

// newTransport is the HTTP transport of the minio:// backend.
func newTransport(maxConnections int) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tuneTransport(tr, maxConnections)
	return tr
}

// tuneTransport sets what the S3 backends need of an HTTP transport. It sets
// no overall request or read timeout: the caller's context is the timeout.
// It bounds only connection set-up, keeps enough idle connections for
// parallel ranged reads to reuse them, and never asks for compressed
// responses, whose transparent decoding would hide the body's real length.
// maxConnections (Config.MaxConnections) caps the connections to the
// endpoint, idle ones included; 0 leaves them unbounded.
func tuneTransport(tr *http.Transport, maxConnections int) {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr.DialContext = dialer.DialContext
	tr.TLSHandshakeTimeout = 10 * time.Second
	tr.ExpectContinueTimeout = time.Second
	tr.ResponseHeaderTimeout = 0
	tr.MaxIdleConns = 256
	tr.MaxIdleConnsPerHost = 64
	tr.MaxConnsPerHost = maxConnections
	if maxConnections > 0 {
		tr.MaxIdleConnsPerHost = min(tr.MaxIdleConnsPerHost, maxConnections)
	}
	tr.IdleConnTimeout = 90 * time.Second
	tr.DisableCompression = true
}
