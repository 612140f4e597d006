package tlsfiles

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// ClientAuth is ssl.client.auth: whether a server asks its clients for a
// certificate.
type ClientAuth string

const (
	// ClientAuthNone asks for no client certificate (Kafka's default).
	ClientAuthNone ClientAuth = "none"
	// ClientAuthRequested asks for one and verifies it against the CA
	// file when given, but admits a client without one (its principal is
	// then User:ANONYMOUS).
	ClientAuthRequested ClientAuth = "requested"
	// ClientAuthRequired refuses a client without a certificate that
	// chains to the CA file.
	ClientAuthRequired ClientAuth = "required"
)

// ParseClientAuth reads an ssl.client.auth value: none, requested or
// required, in any case; "" is none, Kafka's default.
func ParseClientAuth(s string) (ClientAuth, error) {
	switch a := ClientAuth(strings.ToLower(strings.TrimSpace(s))); a {
	case "":
		return ClientAuthNone, nil
	case ClientAuthNone, ClientAuthRequested, ClientAuthRequired:
		return a, nil
	}
	return "", fmt.Errorf("%w: %q: give none, requested or required", ErrInvalidClientAuth, s)
}

// tlsType is a's crypto/tls setting. Both requested and required verify a
// certificate that is given, so a peer's certificate is either verified
// (ConnectionState.VerifiedChains) or refused, never merely present.
func (a ClientAuth) tlsType() (tls.ClientAuthType, error) {
	switch a {
	case ClientAuthNone, "":
		return tls.NoClientCert, nil
	case ClientAuthRequested:
		return tls.VerifyClientCertIfGiven, nil
	case ClientAuthRequired:
		return tls.RequireAndVerifyClientCert, nil
	}
	return 0, fmt.Errorf("%w: %q: give none, requested or required", ErrInvalidClientAuth, string(a))
}
