package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a batch compression codec, as numbered in the batch attributes.
type Codec int8

// The codecs Kafka defines.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

var codecNames = [...]string{"none", "gzip", "snappy", "lz4", "zstd"}

func (c Codec) known() bool { return c >= 0 && int(c) < len(codecNames) }

// String returns the codec's name as Kafka's compression.type spells it.
func (c Codec) String() string {
	if c.known() {
		return codecNames[c]
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// ParseCodec maps a compression.type name to its codec.
func ParseCodec(name string) (Codec, error) {
	for i, n := range codecNames {
		if n == name {
			return Codec(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown compression %q (want none, gzip, snappy, lz4 or zstd)", ErrInvalid, name)
}

// xerialMagic starts snappy data framed the way the Java client's
// SnappyOutputStream writes it: magic, version, compatible version, then
// blocks each prefixed with a 4-byte big-endian length.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// zstdDecoders pools single-threaded streaming decoders: a zstd decoder is
// expensive to build and cheap to reset.
var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		panic(fmt.Sprintf("record: zstd decoder options are static and valid: %v", err))
	}
	return d
}}

// Decompress returns the records bytes of a compressed batch body. It never
// produces more than limit bytes: a body that would decompress past it fails
// with ErrTooLarge, so a small hostile batch cannot claim a large allocation.
func Decompress(codec Codec, body []byte, limit int) ([]byte, error) {
	var out []byte
	var err error
	switch codec {
	case CodecNone:
		if len(body) > limit {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(body), limit)
		}
		return body, nil
	case CodecGzip:
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(body)); err == nil {
			out, err = readLimited(zr, limit)
		}
	case CodecSnappy:
		out, err = decodeSnappy(body, limit)
	case CodecLZ4:
		out, err = readLimited(lz4.NewReader(bytes.NewReader(body)), limit)
	case CodecZstd:
		d := zstdDecoders.Get().(*zstd.Decoder)
		if err = d.Reset(bytes.NewReader(body)); err == nil {
			out, err = readLimited(d, limit)
		}
		// Drop the reference to body before the decoder goes back to the pool.
		_ = d.Reset(nil)
		zstdDecoders.Put(d)
	default:
		return nil, fmt.Errorf("%w: unknown compression codec %d", ErrInvalid, codec)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", codec, err)
	}
	return out, nil
}

// readLimited reads r to its end, failing once more than limit bytes come out.
func readLimited(r io.Reader, limit int) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if len(out) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return out, nil
}

// decodeSnappy accepts both raw snappy blocks and xerial framing, checking
// each block's claimed length against what is left of the limit before
// decoding it.
func decodeSnappy(body []byte, limit int) ([]byte, error) {
	if len(body) < xerialHeaderSize || !bytes.HasPrefix(body, xerialMagic) {
		return decodeSnappyBlock(nil, body, limit)
	}
	var out []byte
	rest := body[xerialHeaderSize:]
	for len(rest) > 0 {
		if len(rest) < 4 {
			return nil, fmt.Errorf("%w: xerial block length cut short", ErrInvalid)
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, fmt.Errorf("%w: xerial block of %d bytes, %d present", ErrInvalid, n, len(rest))
		}
		var err error
		if out, err = decodeSnappyBlock(out, rest[:n], limit-len(out)); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

// decodeSnappyBlock appends one decoded raw block to dst. It takes S2
// too: Decompress reads stored batches, which an earlier release may have
// taken in S2 (produce validation, openStream, takes standard Snappy only).
func decodeSnappyBlock(dst, block []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if n > limit {
		return nil, fmt.Errorf("%w: block claims %d bytes, %d allowed", ErrTooLarge, n, limit)
	}
	decoded, err := s2.Decode(nil, block)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return append(dst, decoded...), nil
}

// compress encodes records bytes with codec. Snappy is written as one raw
// block, which every Kafka client reads.
func compress(codec Codec, raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	var w io.WriteCloser
	switch codec {
	case CodecNone:
		return raw, nil
	case CodecSnappy:
		return s2.EncodeSnappy(nil, raw), nil
	case CodecGzip:
		w = gzip.NewWriter(&buf)
	case CodecLZ4:
		w = lz4.NewWriter(&buf)
	case CodecZstd:
		zw, err := zstd.NewWriter(&buf)
		if err != nil {
			return nil, err
		}
		w = zw
	default:
		return nil, fmt.Errorf("%w: unknown compression codec %d", ErrInvalid, codec)
	}
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
