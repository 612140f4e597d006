package ingest

// SaslAuthenticate: v0-2
//
// Behavior:
//   - Carries the SASL tokens of the mechanism SaslHandshake chose:
//     PLAIN's one message, SCRAM's two rounds (package sasl). Users and
//     their SCRAM credentials are in the metadata (AlterUserScramCredentials);
//     PLAIN checks a password against the same credentials.
//   - Success makes the connection's principal User:<name>. With
//     connections.max.reauth.ms set, v1+ answers the session's lifetime
//     and the client must authenticate again on the connection before it
//     ends (KIP-368): after that, any request but the re-authentication
//     closes the connection. Re-authentication must name the same user.
//   - A failed login is SASL_AUTHENTICATION_FAILED, whatever the reason
//     (unknown user, wrong password, malformed token), answered after
//     connection.failed.authentication.delay.ms, doubled for each further
//     failure from the same host within a minute (at most 5 s), and the
//     connection is closed. strata_ingest_authentications_total counts
//     logins by mechanism and result.
//   - Without a SaslHandshake first, or on a listener without SASL, it is
//     ILLEGAL_SASL_STATE and the connection is closed.
//
// Version notes:
//   - v1: SessionLifetimeMs. v2: flexible.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/sasl"
)

func init() { register(0, 2, handleSASLAuthenticate) }

func handleSASLAuthenticate(ctx context.Context, b *Broker, req *request, body *kmsg.SASLAuthenticateRequest) (reply, error) {
	resp := body.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	s := req.session
	if s == nil || !s.listener.Protocol.SASL() || s.mechanism == "" {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate without a SaslHandshake first")
		if s != nil {
			s.closing = errors.New("SaslAuthenticate without a SaslHandshake")
		}
		return replyWith(resp), nil
	}
	if s.exchange == nil || s.exchange.Done() {
		exchange, err := sasl.Start(s.mechanism, b.meta.State())
		if err != nil {
			return nil, err // the handshake admitted only enabled mechanisms
		}
		s.exchange = exchange
	}
	challenge, err := s.exchange.Step(body.SASLAuthBytes)
	if err == nil && s.exchange.Done() && s.authenticated.Load() && "User:"+s.exchange.User() != s.principal {
		err = fmt.Errorf("%w: re-authentication as %s on a connection of %s", sasl.ErrAuthenticationFailed, s.exchange.User(), s.principal)
	}
	if err != nil {
		b.metrics.authentications.WithLabelValues(s.mechanism, "failed").Inc()
		delay := b.failedLogins.Delay(s.host, b.config.Security.FailedAuthDelay)
		b.log.Info("SASL authentication failed", "remote", req.remote, "mechanism", s.mechanism, "reason", err, "delay", delay)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
		}
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Authentication failed during authentication due to invalid credentials with SASL mechanism %s", s.mechanism))
		s.closing = fmt.Errorf("SASL authentication failed: %w", err)
		return replyWith(resp), nil
	}
	resp.SASLAuthBytes = challenge
	if !s.exchange.Done() {
		return replyWith(resp), nil
	}
	b.metrics.authentications.WithLabelValues(s.mechanism, "succeeded").Inc()
	s.principal = "User:" + s.exchange.User()
	s.authenticated.Store(true)
	if lifetime := b.config.Security.ReauthMax; lifetime > 0 {
		s.expires = time.Now().Add(lifetime)
		resp.SessionLifetimeMillis = lifetime.Milliseconds()
	}
	return replyWith(resp), nil
}
