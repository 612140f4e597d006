package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// progress draws a one-line progress report on a terminal (standard
// error), at most a few times a second, when the output itself goes
// elsewhere (a file, a pipe); otherwise it draws nothing, so scripts get
// clean output and a terminal is not garbled.
type progress struct {
	out      io.Writer // nil: not a terminal
	from, to int64     // the offsets covered
	bytes    int64
	last     time.Time
	began    time.Time
}

// newProgress returns a progress report over [from, to) on w, drawn only
// when w is a terminal and output is not.
func newProgress(w, output io.Writer, from, to int64) *progress {
	p := &progress{from: from, to: to, began: time.Now()}
	if isTerminal(w) && !isTerminal(output) {
		p.out = w
	}
	return p
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// advance notes that the export reached offset, with n more bytes read.
func (p *progress) advance(offset int64, n int) {
	p.bytes += int64(n)
	if p.out == nil || time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.draw(offset)
}

// done draws the final line and ends it.
func (p *progress) done(offset int64) {
	if p.out == nil {
		return
	}
	p.draw(min(offset, p.to))
	fmt.Fprintln(p.out)
}

func (p *progress) draw(offset int64) {
	const width = 30
	total := max(p.to-p.from, 1)
	filled := int(min(max(offset-p.from, 0), total) * width / total)
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = ' '
		if i < filled {
			bar[i] = '#'
		}
	}
	mib := float64(p.bytes) / (1 << 20)
	rate := mib / max(time.Since(p.began).Seconds(), 0.001)
	fmt.Fprintf(p.out, "\r[%s] offset %d of [%d, %d)  %.1f MiB  %.1f MiB/s ", bar, offset, p.from, p.to, mib, rate)
}
