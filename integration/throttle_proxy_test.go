package integration

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// throttleProxy forwards TCP connections to a target, at a byte rate the
// test sets (0: unlimited), in both directions: a slow network path for
// one kind of traffic (followers' fetches, through a broker's
// --inter-broker-advertise), while everything else goes direct.
type throttleProxy struct {
	ln     net.Listener
	target string
	// rate is bytes per second per direction and connection; 0 is none.
	rate atomic.Int64
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]struct{}
}

func newThrottleProxy(t *testing.T, target string) *throttleProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &throttleProxy{ln: ln, target: target, open: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *throttleProxy) addr() string { return p.ln.Addr().String() }

// throttle sets the rate in bytes per second; 0 lifts it.
func (p *throttleProxy) throttle(bytesPerSecond int64) { p.rate.Store(bytesPerSecond) }

func (p *throttleProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.track(client, server)
		p.wg.Add(2)
		go p.pipe(server, client)
		go p.pipe(client, server)
	}
}

func (p *throttleProxy) track(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		p.open[c] = struct{}{}
	}
}

// pipe copies from src to dst in chunks, sleeping after each as long as the
// rate asks; either side closing closes both.
func (p *throttleProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 4096)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if rate := p.rate.Load(); rate > 0 {
				time.Sleep(time.Duration(int64(n) * int64(time.Second) / rate))
			}
		}
		if err != nil {
			return // io.EOF or a closed side: either ends the pipe
		}
	}
}

func (p *throttleProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
