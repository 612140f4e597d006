package tlsfiles

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// checkInterval is how often, at most, a Server reads its files again.
var checkInterval = time.Second

// Server is a server-side TLS configuration whose certificate and CA pool
// are read again when their files change (checked at most once a second,
// on handshakes), so a renewed certificate is served without a restart. A
// reload that fails keeps the previous material and is reported through
// the onError callback given to NewServer (and Err()).
//
// The handshake that finds the check due reads the files, on its own
// goroutine; the others go on with the material loaded so far and never
// wait for it.
type Server struct {
	files   Files
	auth    ClientAuth
	onError func(error)
	now     func() time.Time // the clock
	every   time.Duration    // the check interval

	// current is the material handshakes use, replaced whole on a reload.
	current atomic.Pointer[material]
	// nextCheck is when the files are next read, in Unix nanoseconds; the
	// handshake that moves it on reads them.
	nextCheck atomic.Int64
	mu        struct {
		sync.Mutex
		// err is the last check's failure, nil once a check succeeds.
		err error
	}
}

// material is one load of the files: the configuration handshakes get, and
// the sum of the bytes it was made from.
type material struct {
	config *tls.Config
	sum    [sha256.Size]byte
}

// NewServer loads f once, failing with an error that names the file and
// what is wrong with it: a missing or unreadable file, no certificate, no
// key or an encrypted one, a key that is not the certificate's, an expired
// certificate, a CA file with no certificate. auth requested or required
// needs a CAFile. onError, which may be nil, is called on the handshake's
// goroutine with each new reload failure, so it must not block; a failure
// that repeats at later checks is reported once.
func NewServer(f Files, auth ClientAuth, onError func(error)) (*Server, error) {
	return newServer(f, auth, onError, time.Now)
}

// newServer is NewServer on the clock now.
func newServer(f Files, auth ClientAuth, onError func(error), now func() time.Time) (*Server, error) {
	if _, err := auth.tlsType(); err != nil {
		return nil, err
	}
	if f.CertFile == "" || f.KeyFile == "" {
		return nil, fmt.Errorf("%w: a TLS server needs a certificate and its key (ssl.keystore.location names both in one PEM file)", ErrMissingFile)
	}
	if auth != ClientAuthNone && auth != "" && f.CAFile == "" {
		return nil, fmt.Errorf("%w: ssl.client.auth=%s needs a CA file (ssl.truststore.location) that client certificates chain to", ErrMissingFile, auth)
	}
	s := &Server{files: f, auth: auth, onError: onError, now: now, every: checkInterval}
	c, err := f.read()
	if err != nil {
		return nil, err
	}
	loaded := s.now()
	m, err := s.load(c, loaded)
	if err != nil {
		return nil, err
	}
	s.current.Store(m)
	s.nextCheck.Store(loaded.Add(s.every).UnixNano())
	return s, nil
}

// Config is the configuration to serve with (tls.NewListener, tls.Server).
// Each handshake takes its settings from GetConfigForClient, which returns
// the material of the latest successful load: MinVersion TLS 1.2, the
// certificate, and the client authentication (requested:
// VerifyClientCertIfGiven, required: RequireAndVerifyClientCert) against
// the CA pool. A client's certificate is thus verified or refused, and a
// verified one is in ConnectionState.VerifiedChains (see Principal). Only
// GetConfigForClient matters: other fields set on the returned config
// (NextProtos, for one) are not used; the Kafka protocol and the admin
// HTTP/1.1 need none.
//
// Each load has its own session ticket key, so a client resumes no session
// from before a reload: a CA taken out of the CA file admits no client
// through a resumed session.
func (s *Server) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.material().config, nil
		},
	}
}

// ConfigVerifying is Config with verify run on each handshake once the
// peer's certificate is verified (tls.Config.VerifyConnection): to admit
// only some principals, as the metadata port admits only brokers.
func (s *Server) ConfigVerifying(verify func(tls.ConnectionState) error) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			config := s.material().config.Clone()
			config.VerifyConnection = verify
			return config, nil
		},
	}
}

// Err is the last check's failure to read or load the files, nil when
// the files last read are the ones served.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.err
}

// Leaf is the certificate served now, for logging its subject and expiry.
func (s *Server) Leaf() *x509.Certificate {
	return s.current.Load().config.Certificates[0].Leaf
}

// material is what a handshake uses: the current material, after reading
// the files again when the check is due and this handshake is the one
// that takes it.
func (s *Server) material() *material {
	now := s.now()
	next := s.nextCheck.Load()
	if now.UnixNano() >= next && s.nextCheck.CompareAndSwap(next, now.Add(s.every).UnixNano()) {
		s.check(now)
	}
	return s.current.Load()
}

// check reads the files and loads them when they changed. A check that
// cannot read or load them keeps the current material and reports why.
func (s *Server) check(now time.Time) {
	c, err := s.files.read()
	if err == nil && c.sum() != s.current.Load().sum {
		var m *material
		if m, err = s.load(c, now); err == nil {
			s.current.Store(m)
		}
	}
	if err != nil {
		err = fmt.Errorf("tlsfiles: reload failed, still serving the certificate loaded before: %w", err)
	}
	s.report(err)
}

// report records the check's outcome and calls onError with a failure
// that is not the one already reported.
func (s *Server) report(err error) {
	s.mu.Lock()
	prev := s.mu.err
	s.mu.err = err
	s.mu.Unlock()
	if err == nil || s.onError == nil || (prev != nil && prev.Error() == err.Error()) {
		return
	}
	s.onError(err)
}

// load parses the files' contents c into the material handshakes use.
func (s *Server) load(c contents, now time.Time) (*material, error) {
	cert, err := keyPair(s.files.CertFile, c.cert, s.files.KeyFile, c.key, now)
	if err != nil {
		return nil, err
	}
	var pool *x509.CertPool
	if s.files.CAFile != "" {
		if pool, err = parsePool(s.files.CAFile, c.ca); err != nil {
			return nil, err
		}
	}
	auth, err := s.auth.tlsType()
	if err != nil {
		return nil, err
	}
	config := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   auth,
		ClientCAs:    pool,
	}
	var ticketKey [32]byte
	rand.Read(ticketKey[:])
	config.SetSessionTicketKeys([][32]byte{ticketKey})
	return &material{config: config, sum: c.sum()}, nil
}
