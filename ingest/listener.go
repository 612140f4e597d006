package ingest

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
)

// SecurityProtocol is a listener's security protocol, Kafka's four.
type SecurityProtocol string

const (
	Plaintext     SecurityProtocol = "PLAINTEXT"
	SSL           SecurityProtocol = "SSL"
	SASLPlaintext SecurityProtocol = "SASL_PLAINTEXT"
	SASLSSL       SecurityProtocol = "SASL_SSL"
)

// SecurityProtocols are the protocols a listener may use.
var SecurityProtocols = []SecurityProtocol{Plaintext, SSL, SASLPlaintext, SASLSSL}

// ParseSecurityProtocol reads a protocol name, as
// listener.security.protocol.map spells it.
func ParseSecurityProtocol(s string) (SecurityProtocol, error) {
	p := SecurityProtocol(strings.ToUpper(s))
	if !slices.Contains(SecurityProtocols, p) {
		return "", fmt.Errorf("security protocol %q: want one of %s", s, strings.Join(func() []string {
			var out []string
			for _, p := range SecurityProtocols {
				out = append(out, string(p))
			}
			return out
		}(), ", "))
	}
	return p, nil
}

// TLS reports whether the protocol runs over TLS.
func (p SecurityProtocol) TLS() bool { return p == SSL || p == SASLSSL }

// SASL reports whether clients authenticate with SASL.
func (p SecurityProtocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }

// Listener is one Kafka listener: an entry of listeners, with its
// advertised address and security protocol.
type Listener struct {
	// Name is the listener's name (PLAINTEXT, INTERNAL, ...): clients are
	// told, in Metadata, each broker's address on the listener they came in on.
	Name     string
	Protocol SecurityProtocol
	// Address is where it binds, host:port.
	Address string
	// Advertised is the host:port clients are told to connect to; empty
	// means Address.
	Advertised string
	// TLS is the server's TLS configuration, for SSL and SASL_SSL.
	TLS *tls.Config
	// ClientCerts says the TLS configuration asks for client certificates
	// (ssl.client.auth requested or required): an SSL listener then
	// authenticates its clients by them.
	ClientCerts bool
}

// authenticates reports whether the listener authenticates its clients:
// by SASL, or by client certificates. With ssl.client.auth=requested a
// client without a certificate is User:ANONYMOUS, which gets what ACLs
// grant that principal: asking for certificates at all means identities
// matter, so the security defaults are the authenticated ones.
func (l Listener) authenticates() bool {
	return l.Protocol.SASL() || (l.Protocol == SSL && l.ClientCerts)
}

// advertised is the listener's advertised host:port.
func (l Listener) advertised() string {
	if l.Advertised != "" {
		return l.Advertised
	}
	return l.Address
}

// validateListeners checks the listeners and inter.broker.listener.name.
func (c Config) validateListeners() error {
	if len(c.Listeners) == 0 {
		return errors.New("listeners: want at least one")
	}
	var errs []error
	names := map[string]bool{}
	for _, l := range c.Listeners {
		switch {
		case l.Name == "":
			errs = append(errs, fmt.Errorf("listener at %q: no name", l.Address))
		case names[l.Name]:
			errs = append(errs, fmt.Errorf("listener %s named twice: listener names are unique", l.Name))
		}
		names[l.Name] = true
		if !slices.Contains(SecurityProtocols, l.Protocol) {
			errs = append(errs, fmt.Errorf("listener %s: security protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", l.Name, l.Protocol))
		}
		if _, _, err := net.SplitHostPort(l.Address); err != nil {
			errs = append(errs, fmt.Errorf("listener %s: address %q: want host:port", l.Name, l.Address))
		}
		if l.Advertised != "" {
			if _, _, err := net.SplitHostPort(l.Advertised); err != nil {
				errs = append(errs, fmt.Errorf("listener %s: advertised address %q: want host:port", l.Name, l.Advertised))
			}
		}
		if l.Protocol.TLS() && l.TLS == nil {
			errs = append(errs, fmt.Errorf("listener %s is %s and has no TLS configuration: set ssl.keystore.location (a PEM file with the key and certificate chain)", l.Name, l.Protocol))
		}
		if !l.Protocol.TLS() && l.TLS != nil {
			errs = append(errs, fmt.Errorf("listener %s is %s and has a TLS configuration it would not use", l.Name, l.Protocol))
		}
	}
	if c.InterBrokerListener != "" && !names[c.InterBrokerListener] {
		errs = append(errs, fmt.Errorf("inter.broker.listener.name %q is not one of the listeners", c.InterBrokerListener))
	}
	return errors.Join(errs...)
}

// listener returns the configured listener called name.
func (c Config) listener(name string) (Listener, bool) {
	i := slices.IndexFunc(c.Listeners, func(l Listener) bool { return l.Name == name })
	if i < 0 {
		return Listener{}, false
	}
	return c.Listeners[i], true
}

// interBrokerListener is the listener followers fetch from.
func (c Config) interBrokerListener() Listener {
	if l, ok := c.listener(c.InterBrokerListener); ok {
		return l
	}
	return c.Listeners[0]
}

// Authenticates reports whether any listener authenticates its clients:
// then allow.everyone.if.no.acl.found is false unless set.
func (c Config) Authenticates() bool {
	return slices.ContainsFunc(c.Listeners, Listener.authenticates)
}
