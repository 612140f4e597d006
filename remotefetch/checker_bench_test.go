package remotefetch

import (
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"testing"
)

// Where the checker's CRC pass is cheap: the figures behind checking a
// block's batches as its GET brings them (checker.go, docs/bench.md "Cold
// reads").
//
//	go test -run '^$' -bench 'CRCOver|CheckAsBytesArrive' -benchtime 3s ./remotefetch/

// checkPiece is the size of the pieces CRC-32C runs over, about a batch.
const checkPiece = 64 << 10

var castagnoliTable = crc32.MakeTable(crc32.Castagnoli)

// BenchmarkCRCOver: CRC-32C of 64 KiB pieces over a buffer of each size,
// again and again: one that stays in L2, one the size of a block, one far
// larger than the caches.
func BenchmarkCRCOver(b *testing.B) {
	for _, size := range []int{checkPiece, 8 << 20, 256 << 20} {
		b.Run(fmt.Sprintf("buffer=%dKiB", size>>10), func(b *testing.B) {
			buf := make([]byte, size)
			for i := range buf {
				buf[i] = byte(i)
			}
			b.SetBytes(int64(size))
			for b.Loop() {
				for off := 0; off < size; off += checkPiece {
					crc32.Update(0, castagnoliTable, buf[off:off+checkPiece])
				}
			}
		})
	}
}

// BenchmarkCheckAsBytesArrive: 8 MiB blocks read from a loopback socket
// into one buffer, their 64 KiB pieces checked after the whole block, or
// after each read of 256 or 64 KiB, or not at all (the limit).
func BenchmarkCheckAsBytesArrive(b *testing.B) {
	const block = 8 << 20
	for _, way := range []struct {
		name  string
		read  int // bytes per read
		check bool
		after bool // check after the whole block
	}{
		{"unchecked", block, false, false},
		{"after-block", block, true, true},
		{"per-256KiB-read", 256 << 10, true, false},
		{"per-64KiB-read", 64 << 10, true, false},
	} {
		b.Run(way.name, func(b *testing.B) {
			conn := blockStream(b, block)
			buf := make([]byte, block)
			b.SetBytes(block)
			for b.Loop() {
				checked := 0
				for n := 0; n < block; {
					m, err := io.ReadFull(conn, buf[n:min(n+way.read, block)])
					if err != nil {
						b.Fatal(err)
					}
					n += m
					for ; way.check && !way.after && checked+checkPiece <= n; checked += checkPiece {
						crc32.Update(0, castagnoliTable, buf[checked:checked+checkPiece])
					}
				}
				for ; way.after && checked < block; checked += checkPiece {
					crc32.Update(0, castagnoliTable, buf[checked:checked+checkPiece])
				}
			}
		})
	}
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
