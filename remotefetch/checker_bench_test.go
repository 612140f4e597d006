package remotefetch

import (
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"
)

// Where the checker's CRC pass is cheap: the figures behind checking a
// block's batches as its GET brings them (checker.go, docs/bench.md "Cold
// reads"). Each way is timed beside its limit, pass for pass in the same
// loop, and reported as a ratio to it.
//
//	go test -run '^$' -bench 'CRCOver|CheckAsBytesArrive' -benchtime 3s ./remotefetch/

// checkPiece is the size of the pieces CRC-32C runs over, about a batch.
const checkPiece = 64 << 10

var castagnoliTable = crc32.MakeTable(crc32.Castagnoli)

// BenchmarkCRCOver: CRC-32C of 64 KiB pieces over a buffer of each size,
// again and again: one the size of a block, one far larger than the
// caches. Its limit (x-in-cache) is the same bytes summed over one 64 KiB
// buffer, which stays in the CPU's L2.
func BenchmarkCRCOver(b *testing.B) {
	inCache := filledBuffer(checkPiece)
	for _, size := range []int{8 << 20, 256 << 20} {
		b.Run(fmt.Sprintf("buffer=%dKiB", size>>10), func(b *testing.B) {
			buf := filledBuffer(size)
			var limit time.Duration
			b.SetBytes(int64(size))
			for b.Loop() {
				for off := 0; off < size; off += checkPiece {
					crc32.Update(0, castagnoliTable, buf[off:off+checkPiece])
				}
				b.StopTimer()
				start := time.Now()
				for range size / checkPiece {
					crc32.Update(0, castagnoliTable, inCache)
				}
				limit += time.Since(start)
				b.StartTimer()
			}
			b.ReportMetric(limit.Seconds()/b.Elapsed().Seconds(), "x-in-cache")
		})
	}
}

// BenchmarkCheckAsBytesArrive: 8 MiB blocks read from a loopback socket
// into one buffer, their 64 KiB pieces checked after the whole block, or
// after each read of 256 or 64 KiB. Its limit (x-unchecked, and its rate
// limit-MB/s) is a block read from the same socket into a buffer of its
// own in one go and not checked, beside each block of the way measured,
// before it and after it in turn.
func BenchmarkCheckAsBytesArrive(b *testing.B) {
	const block = 8 << 20
	for _, way := range []struct {
		name  string
		read  int  // bytes per read
		after bool // check after the whole block
	}{
		{"after-block", block, true},
		{"per-256KiB-read", 256 << 10, false},
		{"per-64KiB-read", 64 << 10, false},
	} {
		b.Run(way.name, func(b *testing.B) {
			conn := blockStream(b, block)
			buf, limitBuf := make([]byte, block), make([]byte, block)
			var limit time.Duration
			unchecked := func() {
				b.StopTimer()
				start := time.Now()
				if _, err := io.ReadFull(conn, limitBuf); err != nil {
					b.Fatal(err)
				}
				limit += time.Since(start)
				b.StartTimer()
			}
			read := func() {
				checked := 0
				for n := 0; n < block; {
					m, err := io.ReadFull(conn, buf[n:min(n+way.read, block)])
					if err != nil {
						b.Fatal(err)
					}
					n += m
					for ; !way.after && checked+checkPiece <= n; checked += checkPiece {
						crc32.Update(0, castagnoliTable, buf[checked:checked+checkPiece])
					}
				}
				for ; way.after && checked < block; checked += checkPiece {
					crc32.Update(0, castagnoliTable, buf[checked:checked+checkPiece])
				}
			}
			b.SetBytes(block)
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					unchecked()
				}
				read()
				if i%2 == 1 {
					unchecked()
				}
			}
			b.ReportMetric(float64(b.N)*block/1e6/limit.Seconds(), "limit-MB/s")
			b.ReportMetric(limit.Seconds()/b.Elapsed().Seconds(), "x-unchecked")
		})
	}
}

// filledBuffer is size bytes of a pattern, its pages faulted in.
func filledBuffer(size int) []byte {
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i)
	}
	return buf
}

// blockStream returns a loopback connection on which a goroutine writes
// blocks of size bytes from a 64 MiB source, endlessly, until b ends.
func blockStream(b *testing.B, size int) net.Conn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		src := make([]byte, 64<<20)
		for i := range src {
			src[i] = byte(i * 7)
		}
		for off := 0; ; off = (off + size) % len(src) {
			if _, err := c.Write(src[off : off+size]); err != nil {
				return
			}
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	return conn
}
