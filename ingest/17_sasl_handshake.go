package ingest

// SaslHandshake: v0-1
//
// Behavior:
//   - On a SASL listener (SASL_PLAINTEXT, SASL_SSL), picks the mechanism
//     the SaslAuthenticate requests that follow speak; the answer lists the
//     enabled mechanisms (sasl.enabled.mechanisms). A mechanism not enabled
//     is UNSUPPORTED_SASL_MECHANISM, and the connection is closed after the
//     answer, as Kafka does.
//   - Before authentication a SASL listener takes only ApiVersions,
//     SaslHandshake and SaslAuthenticate; any other request closes the
//     connection (conn.process), and frames are bounded by
//     sasl.server.max.receive.size.
//   - An authenticated client may shake hands again to re-authenticate
//     (KIP-368), with the mechanism it first used; another is
//     ILLEGAL_SASL_STATE and closes the connection.
//   - On a listener without SASL, and in the middle of an exchange, it is
//     ILLEGAL_SASL_STATE.
//
// Version notes:
//   - v0 is answered as v1: the tokens must then come in SaslAuthenticate
//     requests, as every client does that sees SaslAuthenticate in
//     ApiVersions (librdkafka shakes hands only with a broker that offers
//     v0). Raw token frames, which v0 meant before SaslAuthenticate existed
//     (Kafka 0.10), are not requests: they close the connection unread.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(0, 1, handleSASLHandshake) }

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

func handleSASLHandshake(_ context.Context, b *Broker, req *request, body *kmsg.SASLHandshakeRequest) (reply, error) {
	resp := body.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = b.config.Security.SASLMechanisms
	s := req.session
	switch {
	case s == nil || !s.listener.Protocol.SASL():
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case s.exchange != nil && !s.exchange.Done():
		resp.ErrorCode = kerr.IllegalSaslState.Code
		s.closing = fmt.Errorf("SaslHandshake in the middle of a %s exchange", s.mechanism)
	case !slices.Contains(b.config.Security.SASLMechanisms, body.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		s.closing = fmt.Errorf("SASL mechanism %q is not enabled (sasl.enabled.mechanisms: %v)", body.Mechanism, b.config.Security.SASLMechanisms)
	case s.authenticated.Load() && body.Mechanism != s.mechanism:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		s.closing = fmt.Errorf("re-authentication with %s after %s", body.Mechanism, s.mechanism)
	default:
		s.mechanism, s.exchange = body.Mechanism, nil
	}
	return replyWith(resp), nil
}
