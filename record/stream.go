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

// LZ4 frame descriptor bits (the frame format's FLG and BD bytes).
const (
	lz4FlagVersion       = 0xc0 // two bits: 01
	lz4FlagIndependent   = 0x20
	lz4FlagBlockChecksum = 0x10
	lz4FlagContentSize   = 0x08
	lz4FlagChecksum      = 0x04
	lz4FlagReserved      = 0x03 // reserved and dictionary id: Kafka refuses both
	lz4BlockUncompressed = 1 << 31
)

// checkLZ4Frame refuses a body that is not one LZ4 frame as Kafka's
// decoder (KafkaLZ4BlockInputStream) reads it, so that no consumer stops
// at a batch the broker acknowledged: the frame magic (pierrec's reader
// also takes the legacy format and skippable frames), version 01,
// independent blocks, no dictionary id, reserved bits clear, a block size
// of 64 KiB to 4 MiB and no block past it, and nothing after the frame's
// end mark (a zero size, with or without the uncompressed flag) and content
// checksum (Kafka's decoder stops there, so records in a second frame are
// lost to it). It walks block sizes only; the decoder checks the rest.
func checkLZ4Frame(body []byte) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: LZ4: "+format, append([]any{ErrInvalid}, args...)...)
	}
	if len(body) < 7 || binary.LittleEndian.Uint32(body) != lz4FrameMagic {
		return bad("not an LZ4 frame, which starts with its magic number")
	}
	flags, bd := body[4], body[5]
	switch {
	case flags&lz4FlagVersion != 0x40:
		return bad("frame version %d, Kafka reads 1", flags>>6)
	case flags&lz4FlagIndependent == 0:
		return bad("dependent blocks, which Kafka does not read (set block independence)")
	case flags&lz4FlagReserved != 0 || bd&0x8f != 0:
		return bad("a dictionary id or reserved bits set in the frame descriptor")
	case bd>>4 < 4:
		return bad("block size code %d, Kafka reads 4 to 7", bd>>4)
	}
	pos := 7 // magic, FLG, BD, header checksum
	if flags&lz4FlagContentSize != 0 {
		pos += 8
	}
	maxBlock := 1 << (8 + 2*(bd>>4)) // 64 KiB, 256 KiB, 1 MiB, 4 MiB
	for {
		if pos+4 > len(body) {
			return bad("the frame ends before its end mark")
		}
		// Kafka's decoder masks the uncompressed flag first, so a block
		// of size 0 marked uncompressed ends its frame too.
		size := int(binary.LittleEndian.Uint32(body[pos:]) &^ lz4BlockUncompressed)
		pos += 4
		if size == 0 {
			break
		}
		if size > maxBlock {
			return bad("a block of %d bytes, past the frame's %d", size, maxBlock)
		}
		pos += size
		if flags&lz4FlagBlockChecksum != 0 {
			pos += 4
		}
	}
	if flags&lz4FlagChecksum != 0 {
		pos += 4
	}
	if pos > len(body) {
		return bad("the frame ends inside its content checksum")
	}
	if pos != len(body) {
		return bad("%d bytes after the frame, which Kafka's decoder does not read", len(body)-pos)
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
