package ingest

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/sasl"
	"github.com/stratalog/strata/tlsfiles"
)

// Security is how the broker authenticates clients and authorizes their
// requests. Names in comments are Kafka's broker settings.
type Security struct {
	// SASLMechanisms are the mechanisms SASL listeners accept
	// (sasl.enabled.mechanisms).
	SASLMechanisms []string
	// ReauthMax is connections.max.reauth.ms (KIP-368): a SASL session
	// lasts this long, and a connection that has not authenticated again
	// by then is closed on its next request; 0 lets sessions last for ever.
	ReauthMax time.Duration
	// MaxReceiveBeforeAuth caps a request frame read before the connection
	// has authenticated (sasl.server.max.receive.size), so an
	// unauthenticated client cannot make the broker hold large frames.
	MaxReceiveBeforeAuth int32
	// FailedAuthDelay is how long a failed login waits before its answer
	// (connection.failed.authentication.delay.ms); it doubles with each
	// further failure from the same host within failureWindow, up to
	// maxFailedAuthDelay.
	FailedAuthDelay time.Duration
	// SuperUsers are principals allowed everything (super.users).
	SuperUsers []string
	// AllowEveryoneIfNoACL lets anyone use a resource that has no ACL
	// (allow.everyone.if.no.acl.found).
	AllowEveryoneIfNoACL bool
}

// DefaultSecurity is the embedded defaults: every mechanism, sessions
// without expiry, Kafka's receive bound and failure delay, and resources
// without ACLs open (the default listener does not authenticate; `strata
// server` closes them once a listener does).
func DefaultSecurity() Security {
	return Security{
		SASLMechanisms:       slices.Clone(sasl.Mechanisms),
		MaxReceiveBeforeAuth: 512 << 10,
		FailedAuthDelay:      100 * time.Millisecond,
		AllowEveryoneIfNoACL: true,
	}
}

func (s Security) validate() error {
	var errs []error
	for _, m := range s.SASLMechanisms {
		if !slices.Contains(sasl.Mechanisms, m) {
			errs = append(errs, fmt.Errorf("sasl.enabled.mechanisms: %q is not one strata serves (%s)", m, strings.Join(sasl.Mechanisms, ", ")))
		}
	}
	if s.ReauthMax < 0 {
		errs = append(errs, fmt.Errorf("connections.max.reauth.ms %d: want 0 (sessions do not expire) or more", s.ReauthMax.Milliseconds()))
	}
	if s.MaxReceiveBeforeAuth < 1024 {
		errs = append(errs, fmt.Errorf("sasl.server.max.receive.size %d: want at least 1024", s.MaxReceiveBeforeAuth))
	}
	if s.FailedAuthDelay < 0 {
		errs = append(errs, fmt.Errorf("connection.failed.authentication.delay.ms %d: want 0 or more", s.FailedAuthDelay.Milliseconds()))
	}
	for _, u := range s.SuperUsers {
		if kind, name, ok := strings.Cut(u, ":"); !ok || kind == "" || name == "" {
			errs = append(errs, fmt.Errorf("super.users: %q is not a principal: want Type:name, e.g. User:admin", u))
		}
	}
	return errors.Join(errs...)
}

// anonymous is the principal of a client that has not authenticated.
const anonymous = tlsfiles.AnonymousPrincipal

// session is a connection's security state: the listener it came in on,
// who the client is, and where its SASL exchange stands. The processor
// alone reads and changes it, but for authenticated, which the reader
// reads to bound frames read before authentication.
type session struct {
	listener Listener
	// host is the client's IP, as ACLs name hosts.
	host      string
	principal string
	// authenticated is set once the client has authenticated, or at once
	// on a listener that does not use SASL.
	authenticated atomic.Bool
	// mechanism is what SaslHandshake chose; exchange the SASL exchange
	// SaslAuthenticate is stepping through.
	mechanism string
	exchange  *sasl.Exchange
	// expires is when the SASL session ends (connections.max.reauth.ms);
	// zero for never.
	expires time.Time
	// closing, set by a handler, closes the connection once its reply is
	// written: a failed login, a mechanism not offered.
	closing error
}

// newSession starts the session of a connection from remote on l. For
// TLS, the handshake has completed: an SSL listener's client is who its
// verified certificate says.
func newSession(l Listener, remote string, socket net.Conn) *session {
	s := &session{listener: l, principal: anonymous}
	s.host, _, _ = net.SplitHostPort(remote)
	if tc, ok := socket.(*tls.Conn); ok && l.Protocol == SSL {
		s.principal = tlsfiles.Principal(tc.ConnectionState())
	}
	if !l.Protocol.SASL() {
		s.authenticated.Store(true)
	}
	return s
}

// errUnauthenticated closes a connection that sent a request a SASL
// listener does not take before authentication, as Kafka does.
var errUnauthenticated = errors.New("request before SASL authentication")

// errSessionExpired closes a connection whose SASL session ended without
// re-authentication (KIP-368).
var errSessionExpired = errors.New("SASL session expired (connections.max.reauth.ms) without re-authentication")

// admit checks that a request may be handled in the session's state.
func (s *session) admit(key int16) error {
	switch key {
	case apiVersionsKey, saslHandshakeKey, saslAuthenticateKey:
		return nil
	}
	if !s.authenticated.Load() {
		return fmt.Errorf("%w: %s", errUnauthenticated, kmsg.NameForKey(key))
	}
	if !s.expires.IsZero() && time.Now().After(s.expires) {
		return errSessionExpired
	}
	return nil
}

// frameLimit is the largest frame the reader accepts now.
func (s *session) frameLimit(max int32, beforeAuth int32) int32 {
	if s.authenticated.Load() {
		return max
	}
	return min(max, beforeAuth)
}

// authorize asks the authorizer whether req's principal may perform op on
// the resource.
func (b *Broker) authorize(req *request, op acl.Operation, t acl.ResourceType, name string) bool {
	st := b.meta.State()
	if b.authorizer.AllowIfNoACL && !st.HasACLs() {
		return true
	}
	principal, host := req.principal()
	return b.authorizer.Authorize(st, acl.Request{Principal: principal, Host: host, Operation: op, Type: t, Name: name})
}

// authorizeCluster asks about the cluster resource.
func (b *Broker) authorizeCluster(req *request, op acl.Operation) bool {
	return b.authorize(req, op, acl.Cluster, acl.ClusterName)
}

// authorizeAny asks whether req's principal may perform op on some
// resource of type t (Kafka's authorizeByResourceType).
func (b *Broker) authorizeAny(req *request, op acl.Operation, t acl.ResourceType) bool {
	st := b.meta.State()
	if b.authorizer.AllowIfNoACL && !st.HasACLs() {
		return true
	}
	principal, host := req.principal()
	return b.authorizer.AuthorizeAny(st, principal, host, op, t)
}

// principal is who sent req and from where; a request built without a
// connection (a test calling a handler) is anonymous.
func (r *request) principal() (principal, host string) {
	if r.session == nil {
		return anonymous, ""
	}
	return r.session.principal, r.session.host
}
