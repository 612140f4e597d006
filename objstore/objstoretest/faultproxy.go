package objstoretest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// FaultProxy is an HTTP reverse proxy to be put between an S3 client and an
// S3 server (a versitygw) that injects faults into matching requests: error
// statuses, stalls, connection resets, truncated, stalled and corrupted
// bodies. It is
// the object store's fault-injection seam: the store under test is real and
// talks HTTP to a real server, only the wire misbehaves.
//
// The proxy keeps the client's Host header, so SigV4 signatures made for
// the proxy's address still verify at the server. Point a store at it with
// S3URL(proxy.URL(), bucket, prefix).
type FaultProxy struct {
	server  *httptest.Server
	proxy   *httputil.ReverseProxy
	closing chan struct{} // closed by Close: ends every stall
	mu      struct {
		sync.Mutex
		rules []*Rule
		// open and peak count the client connections open now and at
		// most at once.
		open, peak int
	}
}

// A Matcher selects the requests a rule applies to.
type Matcher func(*http.Request) bool

// Method matches requests of one HTTP method.
func Method(method string) Matcher {
	return func(r *http.Request) bool { return r.Method == method }
}

// HasQuery matches requests whose URL has a query parameter ("partNumber"
// for UploadPart, "uploads" for CreateMultipartUpload, "uploadId" for every
// call on an upload).
func HasQuery(name string) Matcher {
	return func(r *http.Request) bool { return r.URL.Query().Has(name) }
}

// PathContains matches requests whose URL path contains s (a key, say).
func PathContains(s string) Matcher {
	return func(r *http.Request) bool { return strings.Contains(r.URL.Path, s) }
}

// HasHeader matches requests that carry a header ("Range" for ranged GETs).
func HasHeader(name string) Matcher {
	return func(r *http.Request) bool { return r.Header.Get(name) != "" }
}

// All matches requests every matcher matches.
func All(ms ...Matcher) Matcher {
	return func(r *http.Request) bool {
		for _, m := range ms {
			if !m(r) {
				return false
			}
		}
		return true
	}
}

// A Fault is what the proxy does to a matching request.
type Fault struct {
	kind    faultKind
	status  int
	after   int64
	release <-chan struct{}
	mask    byte // faultCorrupt: the bits flipped
}

type faultKind int

const (
	faultStatus faultKind = iota
	faultStall
	faultReset
	faultTruncate
	faultTruncateUnframed
	faultStallBody
	faultCorrupt
	faultStallResponse
	faultPass
)

// Pass passes the request on untouched. A rule with it only counts and
// records what it matches (Rule.Hits, Rule.Requests): what headers a
// client sent, say.
func Pass() Fault { return Fault{kind: faultPass} }

// Status answers with the HTTP status and an S3 error document, without
// reaching the server (500 InternalError, 503 SlowDown, …).
func Status(code int) Fault { return Fault{kind: faultStatus, status: code} }

// Stall holds the request, unanswered, until release is closed (then it goes
// on to the server), the client gives up, or the proxy closes. A nil
// release holds it until the client gives up.
func Stall(release <-chan struct{}) Fault { return Fault{kind: faultStall, release: release} }

// StallResponse passes the request on to the server, which acts on it (a
// PUT stores its object, a DELETE deletes it), and holds the response,
// unsent, until release is closed, the client gives up, or the proxy
// closes: the client cannot tell whether the call took effect. A nil
// release holds it until the client gives up. Rule.Matched reports the
// request's arrival, not the server's answer: to know the call took
// effect, look at the server.
func StallResponse(release <-chan struct{}) Fault {
	return Fault{kind: faultStallResponse, release: release}
}

// Reset resets the client's connection (TCP RST) without an answer.
func Reset() Fault { return Fault{kind: faultReset} }

// TruncateBody passes the server's response on, headers included (with the
// full Content-Length), but cuts the connection after n body bytes.
func TruncateBody(n int64) Fault { return Fault{kind: faultTruncate, after: n} }

// TruncateBodyUnframed passes the server's response on without its
// Content-Length, re-chunked, and ends the body cleanly after n bytes: a
// short body that only a client checking lengths can tell from a whole one.
func TruncateBodyUnframed(n int64) Fault { return Fault{kind: faultTruncateUnframed, after: n} }

// CorruptBody passes the server's response on with the body byte at offset
// n flipped: damage that only a checksum can catch.
func CorruptBody(n int64) Fault { return CorruptBodyBits(n, 0xff) }

// CorruptBodyBits is CorruptBody flipping only the bits of mask.
func CorruptBodyBits(n int64, mask byte) Fault {
	return Fault{kind: faultCorrupt, after: n, mask: mask}
}

// StallBody passes on the response headers and n body bytes, then holds the
// rest until release is closed, the client gives up, or the proxy closes.
// A nil release holds it until the client gives up.
func StallBody(n int64, release <-chan struct{}) Fault {
	return Fault{kind: faultStallBody, after: n, release: release}
}

// A Rule applies a fault to the requests a matcher selects.
type Rule struct {
	match   Matcher
	fault   Fault
	times   int          // 0: every matching request
	hits    atomic.Int64 // written under the proxy's mu
	matched chan struct{}
	mu      struct {
		sync.Mutex
		requests []Request
	}
}

// A Request is what a rule recorded of a request it applied its fault to:
// the request line and headers, as the client sent them.
type Request struct {
	Method string
	URL    *url.URL // path and query
	Header http.Header
}

// Hits reports how many requests the rule has applied its fault to.
func (r *Rule) Hits() int64 { return r.hits.Load() }

// Requests returns the requests the rule has applied its fault to, in the
// order they arrived.
func (r *Rule) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.mu.requests)
}

func (r *Rule) record(req *http.Request) {
	u := *req.URL
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.requests = append(r.mu.requests, Request{Method: req.Method, URL: &u, Header: req.Header.Clone()})
}

// Matched is closed when the rule first applies its fault.
func (r *Rule) Matched() <-chan struct{} { return r.matched }

// NewFaultProxy starts a proxy to the server at target (a base URL).
func NewFaultProxy(target string) (*FaultProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("objstoretest: fault proxy target: %w", err)
	}
	p := &FaultProxy{closing: make(chan struct{})}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host // the signature covers Host
		},
		FlushInterval:  -1, // pass every write on at once, so partial bodies reach the client
		ModifyResponse: p.modifyResponse,
		ErrorLog:       log.New(io.Discard, "", 0), // aborted bodies are the point, not news
	}
	p.server = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.server.Config.ConnState = p.countConnections
	p.server.Start()
	return p, nil
}

// countConnections tracks the client connections open at once.
func (p *FaultProxy) countConnections(_ net.Conn, state http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch state {
	case http.StateNew:
		p.mu.open++
		p.mu.peak = max(p.mu.peak, p.mu.open)
	case http.StateHijacked, http.StateClosed:
		p.mu.open--
	}
}

// PeakConnections is the most client connections that were open to the
// proxy at once.
func (p *FaultProxy) PeakConnections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.peak
}

// URL is the proxy's base URL, to use as an S3 endpoint.
func (p *FaultProxy) URL() string { return p.server.URL }

// Add installs a rule applying fault to the first times requests that match
// (every one when times is 0). Rules are tried in the order added; the first
// that matches and still has uses applies.
func (p *FaultProxy) Add(match Matcher, fault Fault, times int) *Rule {
	r := &Rule{match: match, fault: fault, times: times, matched: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.rules = append(p.mu.rules, r)
	return r
}

// Clear removes every rule: the proxy passes everything through.
func (p *FaultProxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.rules = nil
}

// Close ends every stall and stops the proxy.
func (p *FaultProxy) Close() {
	close(p.closing)
	p.server.Close()
}

// pick returns the fault for a request, if a rule applies.
func (p *FaultProxy) pick(req *http.Request) (Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.mu.rules {
		if (r.match != nil && !r.match(req)) || (r.times > 0 && r.hits.Load() >= int64(r.times)) {
			continue
		}
		r.record(req)
		if r.hits.Add(1) == 1 {
			close(r.matched)
		}
		return r.fault, true
	}
	return Fault{}, false
}

// faultKey carries a body fault from serve to modifyResponse in the
// request's context.
type faultKey struct{}

func (p *FaultProxy) serve(w http.ResponseWriter, req *http.Request) {
	fault, ok := p.pick(req)
	if !ok {
		p.proxy.ServeHTTP(w, req)
		return
	}
	switch fault.kind {
	case faultPass:
		p.proxy.ServeHTTP(w, req)
	case faultStatus:
		_, _ = io.Copy(io.Discard, req.Body) // answer after the whole request, as a server would
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(fault.status)
		if req.Method != http.MethodHead {
			fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>injected by objstoretest.FaultProxy</Message></Error>", s3Code(fault.status))
		}
	case faultStall:
		select {
		case <-fault.release:
			p.proxy.ServeHTTP(w, req)
		case <-req.Context().Done():
		case <-p.closing:
		}
	case faultReset:
		resetConnection(w)
	case faultStallResponse:
		p.proxy.ServeHTTP(&heldResponse{ResponseWriter: w, ctx: req.Context(), release: fault.release, closing: p.closing}, req)
	default: // body faults act on the server's response
		p.proxy.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), faultKey{}, fault)))
	}
}

func (p *FaultProxy) modifyResponse(resp *http.Response) error {
	fault, ok := resp.Request.Context().Value(faultKey{}).(Fault)
	if !ok {
		return nil
	}
	body := &faultyBody{body: resp.Body, left: fault.after, fault: fault, ctx: resp.Request.Context(), closing: p.closing}
	if fault.kind == faultTruncateUnframed {
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
	}
	resp.Body = body
	return nil
}

// errTruncated makes the reverse proxy abort the response mid-body, which
// closes the client's connection.
var errTruncated = errors.New("objstoretest: body truncated by fault proxy")

// faultyBody passes on left bytes of a response body, then fails, ends or
// stalls as its fault says.
type faultyBody struct {
	body    io.ReadCloser
	left    int64
	fault   Fault
	ctx     context.Context
	closing <-chan struct{}
}

func (b *faultyBody) Read(p []byte) (int, error) {
	if b.fault.kind == faultCorrupt {
		n, err := b.body.Read(p)
		if b.left >= 0 && b.left < int64(n) {
			p[b.left] ^= b.fault.mask
		}
		b.left -= int64(n)
		return n, err
	}
	if b.left <= 0 {
		switch b.fault.kind {
		case faultTruncate:
			return 0, errTruncated
		case faultTruncateUnframed:
			return 0, io.EOF
		}
		select { // faultStallBody
		case <-b.fault.release:
			return b.body.Read(p)
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		case <-b.closing:
			return 0, errTruncated
		}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *faultyBody) Close() error { return b.body.Close() }

// heldResponse holds a response's header, and so all of it, until release
// is closed; if the client or the proxy gives up first, nothing is sent.
type heldResponse struct {
	http.ResponseWriter
	ctx     context.Context
	release <-chan struct{}
	closing <-chan struct{}
	dropped bool
}

func (h *heldResponse) WriteHeader(code int) {
	select {
	case <-h.release:
		h.ResponseWriter.WriteHeader(code)
	case <-h.ctx.Done():
		h.dropped = true
	case <-h.closing:
		h.dropped = true
	}
}

func (h *heldResponse) Write(b []byte) (int, error) {
	if h.dropped {
		return 0, errTruncated
	}
	return h.ResponseWriter.Write(b)
}

// FlushError is what http.ResponseController calls to flush: a dropped
// response stays unsent.
func (h *heldResponse) FlushError() error {
	if h.dropped {
		return errTruncated
	}
	return http.NewResponseController(h.ResponseWriter).Flush()
}

// resetConnection closes the client's connection with a TCP RST.
func resetConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// s3Code is the S3 error code that goes with an injected status.
func s3Code(status int) string {
	switch status {
	case http.StatusServiceUnavailable:
		return "SlowDown"
	case http.StatusInternalServerError:
		return "InternalError"
	case http.StatusForbidden:
		return "AccessDenied"
	case http.StatusNotFound:
		return "NoSuchKey"
	case http.StatusRequestedRangeNotSatisfiable:
		return "InvalidRange"
	}
	return http.StatusText(status)
}
