package ingest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// section is a byte range of a segment file that a fetch response carries
// without copying it through the broker's memory. The log keeps the range
// readable until release is called (nil: nothing to release). A section
// read from the bucket has no file: data holds its bytes (length of them),
// written from memory.
type section struct {
	file     *os.File
	position int64
	length   int64
	release  func()
	data     []byte
}

// memorySection is a section of bytes already in memory (a remote read),
// readable until release is called.
func memorySection(data []byte, release func()) section {
	return section{data: data, length: int64(len(data)), release: release}
}

// responseWriter writes response frames to one connection. It is owned by
// the connection's processing goroutine; nothing else writes to the socket.
type responseWriter struct {
	conn net.Conn
	// socket is the raw descriptor for sendfile and MSG_MORE; nil when the
	// connection is not a TCP socket (tests over net.Pipe), in which case
	// sections are copied with pread.
	socket  syscall.RawConn
	copy    FetchCopy
	frame   []byte
	written func(n int)
}

func newResponseWriter(conn net.Conn, copy FetchCopy, written func(n int)) *responseWriter {
	w := &responseWriter{conn: conn, copy: copy, written: written}
	if tcp, ok := conn.(*net.TCPConn); ok {
		if raw, err := tcp.SyscallConn(); err == nil {
			w.socket = raw
		}
	}
	if w.socket == nil {
		w.copy = FetchCopyPread
	}
	return w
}

// maxRetainedFrame is the largest framing buffer kept between responses.
const maxRetainedFrame = 1 << 20

// buffer returns an empty buffer to build the next frame in.
func (w *responseWriter) buffer() []byte {
	if cap(w.frame) > maxRetainedFrame {
		w.frame = nil
	}
	return w.frame[:0]
}

// writeFrame finishes frame (its size) and writes it, with each spliced
// section sent from its file at its place.
func (w *responseWriter) writeFrame(frame []byte, splices []splice) error {
	w.frame = frame
	if err := finishFrame(frame, splices); err != nil {
		return err
	}
	from := 0
	for _, s := range splices {
		if err := w.writeBytes(frame[from:s.at], true); err != nil {
			return err
		}
		if err := w.writeSection(s.section); err != nil {
			return err
		}
		from = s.at
	}
	return w.writeBytes(frame[from:], false)
}

// writeBytes writes framing bytes. When more of the frame follows and the
// socket is raw, it sends with MSG_MORE so the framing rides in the same
// segment as the records after it.
func (w *responseWriter) writeBytes(b []byte, more bool) error {
	if len(b) == 0 {
		return nil
	}
	if !more || w.copy != FetchCopySendfile {
		n, err := w.conn.Write(b)
		w.written(n)
		return err
	}
	var sendErr error
	err := w.socket.Write(func(fd uintptr) bool {
		for len(b) > 0 {
			n, err := unix.SendmsgN(int(fd), b, nil, nil, unix.MSG_MORE)
			if n > 0 {
				b = b[n:]
				w.written(n)
			}
			switch {
			case errors.Is(err, unix.EAGAIN):
				return false
			case errors.Is(err, unix.EINTR):
			case err != nil:
				sendErr = err
				return true
			}
		}
		return true
	})
	return errors.Join(err, sendErr)
}

// writeSection sends one file range to the socket.
func (w *responseWriter) writeSection(s section) error {
	if s.file == nil {
		return w.writeBytes(s.data, true)
	}
	if w.copy == FetchCopySendfile {
		return sendfileSection(w.socket, s, w.written)
	}
	return preadSection(w.conn, s, w.written)
}

// sendfileSection moves s from the page cache to the socket with sendfile(2)
// at explicit offsets, so readers never share a file position.
func sendfileSection(socket syscall.RawConn, s section, written func(int)) error {
	file, err := s.file.SyscallConn()
	if err != nil {
		return err
	}
	offset, remaining := s.position, s.length
	var sendErr error
	controlErr := file.Control(func(src uintptr) {
		err := socket.Write(func(dst uintptr) bool {
			for remaining > 0 {
				n, err := unix.Sendfile(int(dst), int(src), &offset, int(min(remaining, 1<<30)))
				if n > 0 {
					remaining -= int64(n)
					written(n)
				}
				switch {
				case errors.Is(err, unix.EAGAIN):
					return false
				case errors.Is(err, unix.EINTR):
				case err != nil:
					sendErr = fmt.Errorf("ingest: sendfile: %w", err)
					return true
				case n == 0:
					sendErr = fmt.Errorf("ingest: sendfile: %w: file ended %d bytes before the section", io.ErrUnexpectedEOF, remaining)
					return true
				}
			}
			return true
		})
		sendErr = errors.Join(err, sendErr)
	})
	return errors.Join(controlErr, sendErr)
}

// copyBuffers pools the buffers of the pread path.
var copyBuffers = sync.Pool{New: func() any {
	b := make([]byte, 1<<20)
	return &b
}}

// preadSection copies s to w through a pooled buffer with pread(2).
func preadSection(w io.Writer, s section, written func(int)) error {
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	offset, remaining := s.position, s.length
	for remaining > 0 {
		chunk := buf[:min(int64(len(buf)), remaining)]
		n, err := s.file.ReadAt(chunk, offset)
		if n < len(chunk) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("ingest: read section: %w", err)
		}
		m, err := w.Write(chunk)
		written(m)
		if err != nil {
			return err
		}
		offset += int64(n)
		remaining -= int64(n)
	}
	return nil
}
