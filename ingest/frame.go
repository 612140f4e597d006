package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Protocol violations. Each closes the connection: the peer is not speaking
// Kafka, or not a version of it we can parse, and nothing after it in the
// stream can be trusted.
var (
	ErrFrameTooLarge  = errors.New("ingest: frame larger than socket.request.max.bytes")
	ErrFrameInvalid   = errors.New("ingest: invalid frame")
	ErrUnsupportedAPI = errors.New("ingest: unsupported api key or version")
)

// frameSizeBytes is the length of the big-endian size that prefixes every
// request and response.
const frameSizeBytes = 4

// requestHeaderMinBytes is api key, api version and correlation id.
const requestHeaderMinBytes = 8

// readFrameSize reads the size that prefixes a frame and checks it against
// limit. The caller reserves the size from the queued-request budgets
// (conn.reserve) and only then reads the frame with readFrameBody, into a
// buffer of at most twice the size and at most limit (framepool.go), so a
// peer cannot make the broker allocate more than limit bytes for one
// frame, nor more than twice what the budgets allow for all of them.
func readFrameSize(r io.Reader, limit int32) (int32, error) {
	var size [frameSizeBytes]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < requestHeaderMinBytes {
		return 0, fmt.Errorf("%w: size %d is smaller than a request header", ErrFrameInvalid, n)
	}
	if n > limit {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, limit)
	}
	return n, nil
}

// readFrameBody reads the n bytes of a frame whose size readFrameSize
// read under limit into a buffer from frames.
func readFrameBody(r io.Reader, n, limit int32, frames *framePool) ([]byte, error) {
	frame := frames.get(int(n), int(limit))
	if _, err := io.ReadFull(r, frame); err != nil {
		frames.put(frame)
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return frame, nil
}

// requestHeader is the part of a request before its body (request header v1,
// or v2 with tagged fields for flexible versions).
type requestHeader struct {
	key           int16
	version       int16
	correlationID int32
	clientID      string
}

// peekHeader reads the fixed start of a frame: key, version and correlation
// id. It is enough to answer an ApiVersions request whose version we cannot
// parse.
func peekHeader(frame []byte) requestHeader {
	return requestHeader{
		key:           int16(binary.BigEndian.Uint16(frame[0:])),
		version:       int16(binary.BigEndian.Uint16(frame[2:])),
		correlationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}
}

// decodeRequest parses a whole request frame for an API in the table. The
// caller has checked the key and version against the table.
func decodeRequest(frame []byte, h requestHeader) (kmsg.Request, requestHeader, error) {
	req := kmsg.RequestForKey(h.key)
	req.SetVersion(h.version)
	b := kbin.Reader{Src: frame[requestHeaderMinBytes:]}
	if id := b.NullableString(); id != nil {
		h.clientID = *id
	}
	if req.IsFlexible() {
		kmsg.SkipTags(&b)
	}
	if err := b.Complete(); err != nil {
		return nil, h, fmt.Errorf("%w: %s v%d header: %v", ErrFrameInvalid, kmsg.NameForKey(h.key), h.version, err)
	}
	if err := req.ReadFrom(b.Src); err != nil {
		return nil, h, fmt.Errorf("%w: %s v%d body: %v", ErrFrameInvalid, kmsg.NameForKey(h.key), h.version, err)
	}
	return req, h, nil
}

// appendResponseHeader starts a response frame: a size placeholder, the
// correlation id and, for flexible responses other than ApiVersions (whose
// response header is always v0 so a client can read it before it knows our
// versions), an empty tagged-field section.
func appendResponseHeader(dst []byte, correlationID int32, key int16, flexible bool) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, correlationID)
	if flexible && key != apiVersionsKey {
		dst = append(dst, 0)
	}
	return dst
}

// unsupportedError names a request the dispatch table has no row for.
func unsupportedError(h requestHeader) error {
	return fmt.Errorf("%w: %s (key %d) v%d", ErrUnsupportedAPI, kmsg.NameForKey(h.key), h.key, h.version)
}
