package interbroker

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/stratalog/strata/internal/invariants"
)

// Dialer is how one broker connects to another.
type Dialer struct {
	// ClientID names the connecting broker to the other (its logs, quotas).
	ClientID string
	// TLS, when set, wraps every connection; an empty ServerName is taken
	// from the address's host.
	TLS *tls.Config
	// SASL, when set, authenticates every connection with this mechanism.
	SASL sasl.Mechanism
}

// timeout bounds a dial with its TLS handshake and authentication, and
// each request beyond the wait it asks of the broker (a Fetch's
// MaxWaitMillis): kgo's request overhead.
const timeout = 10 * time.Second

// maxResponseBytes refuses a response whose length prefix says more: a
// follower asks for at most a few MiB, so such a length is a broken peer
// (kgo's default limit on reads).
const maxResponseBytes = 100 << 20

// keptBufferBytes is the largest response buffer a Conn keeps for the next
// request; one grown past it by a rare large response is dropped after it.
const keptBufferBytes = 16 << 20

// maxSessionLifetime bounds the SASL session lifetime a broker grants,
// so a huge one cannot overflow the renewal time (kgo bounds it alike).
const maxSessionLifetime = 365 * 24 * time.Hour

// ErrUnsupported is a request the other broker does not take at any
// version this one can send.
var ErrUnsupported = errors.New("interbroker: API not supported by the broker")

// Open returns a connection to the broker at addr, dialed by its first
// request.
func (d Dialer) Open(addr string) *Conn {
	return &Conn{dialer: d, addr: addr, formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID(d.ClientID)), poison: invariants.Enabled}
}

// Conn is a connection to one broker, one request at a time.
type Conn struct {
	dialer    Dialer
	addr      string
	formatter *kmsg.RequestFormatter

	// conn is nil until the first request dials, and again after any
	// failure, so the next request dials anew.
	conn net.Conn
	// versions is the broker's highest version of each API key, -1 where
	// it has none.
	versions    []int16
	correlation int32
	// reauthAt is when the SASL session is renewed, before the broker's
	// lifetime for it ends; zero when it does not end.
	reauthAt time.Time
	// out holds the request being written, in the response being read:
	// both reused.
	out, in []byte
	// poison overwrites the last response before the next is read (built
	// with invariants: internal/invariants), so bytes of it used after
	// the next request read as garbage, not as data that happens to be
	// still there.
	poison bool
}

// Addr is the address the Conn connects to.
func (c *Conn) Addr() string { return c.addr }

// Close closes the connection; a later Request dials again.
func (c *Conn) Close() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}

// Request sends req at the highest version both brokers have and returns
// the response, whose byte fields are valid until the next Request. Any
// failure closes the connection: the next request dials again.
func (c *Conn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resp, err := c.request(ctx, req)
	if ctx.Err() != nil {
		// The context's end may have cut the request part way, or left
		// the connection's deadline in the past: the next request dials
		// anew.
		c.Close()
		if err != nil {
			err = ctx.Err()
		}
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("interbroker: %s to %s: %w", kmsg.NameForKey(req.Key()), c.addr, err)
	}
	return resp, nil
}

func (c *Conn) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if c.conn == nil {
		if err := c.dial(ctx); err != nil {
			return nil, err
		}
	} else if !c.reauthAt.IsZero() && !time.Now().Before(c.reauthAt) {
		if err := c.reauthenticate(ctx); err != nil {
			return nil, err
		}
	}
	if err := c.pickVersion(req); err != nil {
		return nil, err
	}
	wait := time.Duration(0)
	if f, ok := req.(*kmsg.FetchRequest); ok {
		wait = time.Duration(f.MaxWaitMillis) * time.Millisecond
	}
	return c.roundTrip(ctx, req, time.Now().Add(timeout+wait))
}

// dial connects, shakes hands, learns the broker's versions and
// authenticates, all within the timeout.
func (c *Conn) dial(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return err
	}
	if c.dialer.TLS != nil {
		cfg := c.dialer.TLS
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(c.addr)
			if err != nil {
				conn.Close()
				return err
			}
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return fmt.Errorf("TLS handshake: %w", err)
		}
		conn = tc
	}
	c.conn, c.versions, c.reauthAt = conn, nil, time.Time{}
	deadline, _ := ctx.Deadline()
	if err := c.learnVersions(ctx, deadline); err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	if c.dialer.SASL != nil {
		return c.saslExchange(ctx, deadline)
	}
	return nil
}

// learnVersions asks the broker for its versions: ApiVersions at this
// side's newest. A broker without that version answers
// UNSUPPORTED_VERSION at version 0 (decodeResponse reads it so), with
// every key it has, which is all this side needs, or, following KIP-511
// strictly, with ApiVersions' own range alone, and is asked again at the
// newest version of it both have.
func (c *Conn) learnVersions(ctx context.Context, deadline time.Time) error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "strata", "1"
	req.SetVersion(req.MaxVersion())
	resp, err := c.roundTrip(ctx, req, deadline)
	if err != nil {
		return err
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.ErrorCode == kerr.UnsupportedVersion.Code && len(av.ApiKeys) == 1 && av.ApiKeys[0].ApiKey == kmsg.ApiVersions.Int16() {
		req.SetVersion(max(min(av.ApiKeys[0].MaxVersion, req.GetVersion()-1), 0))
		if resp, err = c.roundTrip(ctx, req, deadline); err != nil {
			return err
		}
		av = resp.(*kmsg.ApiVersionsResponse)
	}
	if err := kerr.ErrorForCode(av.ErrorCode); err != nil && (av.ErrorCode != kerr.UnsupportedVersion.Code || len(av.ApiKeys) == 0) {
		return err
	}
	c.versions = make([]int16, kmsg.MaxKey+1)
	for i := range c.versions {
		c.versions[i] = -1
	}
	for _, k := range av.ApiKeys {
		if k.ApiKey >= 0 && int(k.ApiKey) < len(c.versions) {
			c.versions[k.ApiKey] = k.MaxVersion
		}
	}
	return nil
}

// pickVersion sets req's version to the highest both brokers have.
func (c *Conn) pickVersion(req kmsg.Request) error {
	key := req.Key()
	theirs := int16(-1)
	if int(key) < len(c.versions) {
		theirs = c.versions[key]
	}
	version := min(theirs, req.MaxVersion())
	if version < 0 {
		return fmt.Errorf("%w: %s", ErrUnsupported, kmsg.NameForKey(key))
	}
	req.SetVersion(version)
	return nil
}

// reauthenticate runs the SASL exchange again on the connection, within
// the timeout: the broker's session for it is about to end.
func (c *Conn) reauthenticate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	return c.saslExchange(ctx, deadline)
}

// saslExchange authenticates the connection: SaslHandshake names the
// mechanism, then SaslAuthenticate carries each step until the mechanism
// is done (PLAIN and SCRAM end with nothing more to send). A session the
// broker says ends (SessionLifetimeMillis) is renewed at 85% of its
// lifetime, as Kafka's clients do (KIP-368).
func (c *Conn) saslExchange(ctx context.Context, deadline time.Time) error {
	mechanism := c.dialer.SASL
	handshake := kmsg.NewPtrSASLHandshakeRequest()
	handshake.Mechanism = mechanism.Name()
	if err := c.pickVersion(handshake); err != nil {
		return err
	}
	resp, err := c.roundTrip(ctx, handshake, deadline)
	if err != nil {
		return fmt.Errorf("SASL handshake: %w", err)
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return fmt.Errorf("SASL handshake for %s: %w", mechanism.Name(), err)
	}
	host, _, _ := net.SplitHostPort(c.addr)
	session, step, err := mechanism.Authenticate(ctx, host)
	if err != nil {
		return fmt.Errorf("SASL %s: %w", mechanism.Name(), err)
	}
	started := time.Now()
	for {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SASLAuthBytes = step
		if err := c.pickVersion(auth); err != nil {
			return err
		}
		resp, err := c.roundTrip(ctx, auth, deadline)
		if err != nil {
			return fmt.Errorf("SASL %s: %w", mechanism.Name(), err)
		}
		answer := resp.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(answer.ErrorCode); err != nil {
			if answer.ErrorMessage != nil {
				err = fmt.Errorf("%w: %s", err, *answer.ErrorMessage)
			}
			return fmt.Errorf("SASL %s: %w", mechanism.Name(), err)
		}
		done, next, err := session.Challenge(answer.SASLAuthBytes)
		if err != nil {
			return fmt.Errorf("SASL %s: %w", mechanism.Name(), err)
		}
		if done {
			c.reauthAt = time.Time{}
			if ms := answer.SessionLifetimeMillis; ms > 0 {
				lifetime := time.Duration(min(ms, maxSessionLifetime.Milliseconds())) * time.Millisecond
				c.reauthAt = started.Add(lifetime - lifetime/100*15)
			}
			return nil
		}
		step = next
	}
}

// roundTrip writes req (its version set) and reads its response, by
// deadline or until ctx ends.
func (c *Conn) roundTrip(ctx context.Context, req kmsg.Request, deadline time.Time) (kmsg.Response, error) {
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn := c.conn
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	// A context ending wakes the blocked read or write at once. A cut that
	// has started is waited for, so it cannot land on a later request's
	// deadline (a dial's own timeout ending just after its last reply).
	cut := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		conn.SetDeadline(time.Unix(1, 0))
		close(cut)
	})
	defer func() {
		if !stop() {
			<-cut
		}
	}()

	c.correlation++
	c.out = c.formatter.AppendRequest(c.out[:0], req, c.correlation)
	if _, err := conn.Write(c.out); err != nil {
		return nil, err
	}
	body, err := c.readResponse()
	if err != nil {
		return nil, err
	}
	return decodeResponse(req, c.correlation, body)
}

// decodeResponse decodes body, the response to req sent with correlation:
// its header, then the response at req's version.
func decodeResponse(req kmsg.Request, correlation int32, body []byte) (kmsg.Response, error) {
	if len(body) < 4 {
		return nil, fmt.Errorf("a response of %d bytes has no header", len(body))
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != correlation {
		return nil, fmt.Errorf("response to request %d where %d was sent", got, correlation)
	}
	body = body[4:]
	version := req.GetVersion()
	switch {
	case req.Key() == kmsg.ApiVersions.Int16():
		// Its response header is never flexible, and a broker without
		// the version asked answers UNSUPPORTED_VERSION at version 0
		// (KIP-511).
		if len(body) >= 2 && int16(binary.BigEndian.Uint16(body)) == kerr.UnsupportedVersion.Code {
			version = 0
		}
	case req.IsFlexible():
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, err
		}
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decoding the response: %w", err)
	}
	return resp, nil
}

// readResponse reads one length-prefixed response into the Conn's buffer.
func (c *Conn) readResponse() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > maxResponseBytes {
		return nil, fmt.Errorf("a response of %d bytes (the most taken is %d)", n, maxResponseBytes)
	}
	if c.poison {
		last := c.in[:cap(c.in)]
		for i := range last {
			last[i] = 0xA5
		}
	}
	if cap(c.in) > keptBufferBytes {
		c.in = nil // grown by the last response; not kept
	}
	if cap(c.in) < int(n) {
		c.in = make([]byte, n)
	}
	c.in = c.in[:n]
	if _, err := io.ReadFull(c.conn, c.in); err != nil {
		return nil, err
	}
	return c.in, nil
}

// skipTags returns b past a flexible response header's tagged fields.
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errors.New("a response header's tagged fields are cut short")
	}
	b = b[n:]
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, errors.New("a response header's tag is cut short")
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < size {
			return nil, errors.New("a response header's tagged field is cut short")
		}
		b = b[n+int(size):]
	}
	return b, nil
}
