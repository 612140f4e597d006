package offload

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/segmentobject"
)

// BenchmarkUploadCPU: the CPU an upload costs the broker, per GB, for
// the default file:// bucket: a 64 MiB segment in the page cache made
// into an object and put as putObject does (the store reading
// segmentobject's Reader into the object's file and fsyncing it).
// Its limit (x-limit) is the cheaper of two plain copies of the same file
// into a new one in the same directory, each fsynced, in the same loop:
// copy_file_range, the copy that stays in the kernel (limit-cfr-cpu-s/GB),
// and reads into one page-aligned buffer written with O_DIRECT, the copy
// that skips the page cache on the write side (limit-direct-cpu-s/GB);
// neither checksums or frames anything; each writes over its own copy of
// the last pass. On ext4 (this project's machine) copy_file_range copies
// pages; on xfs or btrfs it shares extents and costs next to nothing, and
// on a tmpfs TMPDIR the fsyncs do nothing:
//
//	go test -run '^$' -bench UploadCPU -benchtime 20x ./offload/
func BenchmarkUploadCPU(b *testing.B) {
	const size = 64 << 20
	dir := b.TempDir()
	logPath := filepath.Join(dir, "segment.log")
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(logPath, data, 0o644); err != nil {
		b.Fatal(err)
	}
	store, err := objstore.Open(b.Context(), "file://"+filepath.Join(dir, "bucket"), objstore.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	m := &Manager{store: store}
	var put, cfr, direct time.Duration
	b.SetBytes(size)
	for b.Loop() {
		put += cpuOf(b, func() {
			f, err := os.Open(logPath)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			src := segmentobject.Source{BaseOffset: 0, NextOffset: 1000, Log: f, LogSize: size}
			if err := m.putObject(b.Context(), "object", src); err != nil {
				b.Fatal(err)
			}
		})
		b.StopTimer()
		cfr += cpuOf(b, func() { copyFileRange(b, logPath, filepath.Join(dir, "copy")) })
		direct += cpuOf(b, func() { copyDirect(b, logPath, filepath.Join(dir, "direct-copy")) })
		b.StartTimer()
	}
	perGB := func(cpu time.Duration) float64 { return cpu.Seconds() / (float64(b.N) * size / 1e9) }
	b.ReportMetric(perGB(put), "cpu-s/GB")
	b.ReportMetric(perGB(cfr), "limit-cfr-cpu-s/GB")
	b.ReportMetric(perGB(direct), "limit-direct-cpu-s/GB")
	b.ReportMetric(min(cfr, direct).Seconds()/put.Seconds(), "x-limit")
}

// cpuOf returns the CPU time, user and system, the process spent in f.
func cpuOf(b *testing.B, f func()) time.Duration {
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		b.Fatal(err)
	}
	f()
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		b.Fatal(err)
	}
	return time.Duration(after.Utime.Nano() - before.Utime.Nano() + after.Stime.Nano() - before.Stime.Nano())
}

// copyFileRange copies src into a new file dst (io.Copy between two
// files is copy_file_range on Linux) and fsyncs it.
func copyFileRange(b *testing.B, src, dst string) {
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Sync(); err != nil {
		b.Fatal(err)
	}
}

// copyDirect copies src into a new file dst through one page-aligned
// buffer, writing with O_DIRECT (src's size is a multiple of the buffer),
// and fsyncs it.
func copyDirect(b *testing.B, src, dst string) {
	const bufSize = 1 << 20
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_DIRECT, 0o644)
	if err != nil {
		b.Fatalf("%v (the limit needs O_DIRECT: set TMPDIR to a file system that has it)", err)
	}
	defer out.Close()
	buf, err := syscall.Mmap(-1, 0, bufSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		b.Fatal(err)
	}
	defer syscall.Munmap(buf)
	for {
		n, err := io.ReadFull(in, buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatalf("%s: %v (its size must be a multiple of %d)", src, err, bufSize)
		}
		if _, err := out.Write(buf[:n]); err != nil {
			b.Fatal(err)
		}
	}
	if err := out.Sync(); err != nil {
		b.Fatal(err)
	}
}
