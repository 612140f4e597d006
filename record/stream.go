package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// A stream decompresses one batch's records for validation. Streams are
// pooled per codec, decoder and all, so validating a batch builds no
// decoder: each is reset onto the next body.
type stream struct {
	reader  io.Reader // what validation reads; nil when err is set
	err     error     // the body is not the codec's format at all
	release func()
}

// bodyReader is a body as a plain io.Reader. The zstd decoder decodes a
// reader with a Bytes method whole, in memory, before the first Read; hiding
// it keeps the decode streaming and so bounded by the caller's limit.
type bodyReader struct{ r bytes.Reader }

func (b *bodyReader) Read(p []byte) (int, error) { return b.r.Read(p) }

type gzipStream struct {
	body bytes.Reader
	zr   gzip.Reader
}

type zstdStream struct {
	body bodyReader
	dec  *zstd.Decoder
}

type lz4Stream struct {
	body bytes.Reader
	zr   *lz4.Reader
}

var (
	gzipStreams = sync.Pool{New: func() any { return new(gzipStream) }}
	lz4Streams  = sync.Pool{New: func() any { return &lz4Stream{zr: lz4.NewReader(nil)} }}
	zstdStreams = sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(MaxZstdWindow))
		if err != nil {
			panic(fmt.Sprintf("record: zstd decoder options are static and valid: %v", err))
		}
		return &zstdStream{dec: d}
	}}
	snappyStreams = sync.Pool{New: func() any { return new(snappyReader) }}
)

// openStream starts decompressing body, a batch's records compressed with
// codec, for at most limit bytes. The caller must call release once done.
// It checks produced batches, so it takes only what every Kafka client
// reads: standard Snappy (not S2) and LZ4 frames (not the legacy format,
// nor skippable frames); Decompress, which reads stored batches, takes
// those too, as an earlier release may have stored them.
func openStream(codec Codec, body []byte, limit int) stream {
	switch codec {
	case CodecGzip:
		s := gzipStreams.Get().(*gzipStream)
		s.body.Reset(body)
		release := func() {
			s.body.Reset(nil)
			gzipStreams.Put(s)
		}
		if err := s.zr.Reset(&s.body); err != nil {
			return stream{err: err, release: release}
		}
		return stream{reader: &s.zr, release: release}
	case CodecZstd:
		s := zstdStreams.Get().(*zstdStream)
		s.body.r.Reset(body)
		release := func() {
			// Drop the reference to body before the decoder goes back.
			_ = s.dec.Reset(nil)
			s.body.r.Reset(nil)
			zstdStreams.Put(s)
		}
		if err := s.dec.Reset(&s.body); err != nil {
			return stream{err: err, release: release}
		}
		return stream{reader: s.dec, release: release}
	case CodecLZ4:
		if err := checkLZ4Frame(body); err != nil {
			return stream{err: err, release: func() {}}
		}
		s := lz4Streams.Get().(*lz4Stream)
		s.body.Reset(body)
		s.zr.Reset(&s.body)
		return stream{reader: s.zr, release: func() {
			s.zr.Reset(nil)
			s.body.Reset(nil)
			lz4Streams.Put(s)
		}}
	case CodecSnappy:
		s := snappyStreams.Get().(*snappyReader)
		s.reset(body, limit)
		return stream{reader: s, release: func() {
			s.reset(nil, 0)
			snappyStreams.Put(s)
		}}
	}
	return stream{err: fmt.Errorf("unknown compression codec %d", codec), release: func() {}}
}

// maxPooledSnappyBuffer is the largest decode buffer a pooled snappy reader
// keeps between batches.
const maxPooledSnappyBuffer = 1 << 20

// snappyReader decodes snappy as Kafka clients write it, a raw block or
// xerial-framed blocks, one block at a time into a reused buffer. Snappy
// has no streaming form below the block: a raw block is decoded whole,
// after its claimed length is checked against the limit and against the
// block's size (snappyDecodedLen).
type snappyReader struct {
	rest   []byte // blocks not yet decoded
	xerial bool
	out    []byte // decoded, not yet read
	buf    []byte
	limit  int // what the remaining blocks may decode to
}

func (s *snappyReader) reset(body []byte, limit int) {
	s.rest, s.out, s.limit = body, nil, limit
	s.xerial = len(body) >= xerialHeaderSize && bytes.HasPrefix(body, xerialMagic)
	if s.xerial {
		s.rest = body[xerialHeaderSize:]
	}
	if cap(s.buf) > maxPooledSnappyBuffer {
		s.buf = nil
	}
}

func (s *snappyReader) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if len(s.rest) == 0 {
			return 0, io.EOF
		}
		block := s.rest
		if s.xerial {
			if len(s.rest) < 4 {
				return 0, fmt.Errorf("xerial block length cut short")
			}
			n := binary.BigEndian.Uint32(s.rest)
			if uint64(n) > uint64(len(s.rest)-4) {
				return 0, fmt.Errorf("xerial block of %d bytes, %d present", n, len(s.rest)-4)
			}
			block, s.rest = s.rest[4:4+n], s.rest[4+n:]
		} else {
			s.rest = nil
		}
		n, err := snappyDecodedLen(block)
		if err != nil {
			return 0, err
		}
		if n > s.limit {
			return 0, limitError(fmt.Sprintf("a snappy block claims %d bytes, %d allowed", n, s.limit))
		}
		s.limit -= n
		if cap(s.buf) < n {
			s.buf = make([]byte, n)
		}
		if s.out, err = snappy.DecodeStrict(s.buf[:cap(s.buf)], block); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// lz4FrameMagic starts an LZ4 frame (the frame format's magic number,
// little-endian), the only LZ4 form Kafka's and librdkafka's decoders read.
const lz4FrameMagic = 0x184D2204

// checkLZ4Frame refuses a body that does not start with an LZ4 frame: the
// decoder also takes the legacy format's magic and skippable frames, which
// Kafka's and librdkafka's refuse, so consumers of those clients could not
// read past such a batch.
func checkLZ4Frame(body []byte) error {
	if len(body) < 4 || binary.LittleEndian.Uint32(body) != lz4FrameMagic {
		return fmt.Errorf("%w: not an LZ4 frame, which starts with its magic number", ErrInvalid)
	}
	return nil
}

// snappyDecodedLen is the length a raw Snappy block claims to decode to,
// refused when standard Snappy cannot get there from the block's size:
// its densest op, a 3-byte copy, writes 64 bytes. Such a claim would
// size a buffer from an untrusted field (a 67-byte batch claiming 64 MiB),
// and a block that truly decodes to it is S2, whose repeat codes Kafka's
// and librdkafka's Snappy decoders refuse; snappy.Decode takes S2, so
// produced blocks are decoded with snappy.DecodeStrict.
func snappyDecodedLen(block []byte) (int, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return 0, err
	}
	if int64(n) > int64(len(block))*64/3 {
		return 0, fmt.Errorf("a snappy block of %d bytes claims %d, more than standard Snappy decodes to", len(block), n)
	}
	return n, nil
}
