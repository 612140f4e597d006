package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/stratalog/strata/tlsfiles"
)

// adminFlags are how a command reaches a server's admin HTTP address
// (admin_http.go): the address, the bearer token, and TLS. Every command
// that reads the admin address goes through them and adminClient, so a
// secured address (TLS, and a token or a client certificate) works the
// same for all of them.
type adminFlags struct {
	address   string
	tokenFile string
	// tls is shared with the command's Kafka client flags when it has
	// them: the admin address is served with the brokers' certificate.
	tls *tlsFlags
}

// register adds --admin and --admin-token-file. tls is the command's TLS
// flags; nil registers them here, for a command that talks only to the
// admin address.
func (a *adminFlags) register(fs *flag.FlagSet, tls *tlsFlags) {
	address := os.Getenv("STRATA_ADMIN")
	if address == "" {
		address = "127.0.0.1:9644"
	}
	fs.StringVar(&a.address, "admin", address, "a server's admin HTTP `host:port`, over HTTPS when a TLS flag is given; http:// or https:// before it says which (env STRATA_ADMIN)")
	fs.StringVar(&a.tokenFile, "admin-token-file", "", "`file` holding the admin address's bearer token (else env STRATA_ADMIN_TOKEN); a client certificate (--tls-cert, --tls-key) is the other credential")
	if tls == nil {
		tls = &tlsFlags{}
		tls.register(fs)
	}
	a.tls = tls
}

// adminClient calls one server's admin address.
type adminClient struct {
	// address is --admin as given, for messages.
	address string
	// base is the scheme and host:port requests go to.
	base  string
	http  *http.Client
	token string
}

// maxAdminAnswer is the most of an answer's body an adminClient reads.
const maxAdminAnswer = 64 << 20

// client checks the flags and reads the token; nothing is sent yet.
func (a *adminFlags) client() (*adminClient, error) {
	scheme, hostPort := "http", a.address
	if a.tls.on() {
		scheme = "https"
	}
	if s, rest, ok := strings.Cut(a.address, "://"); ok {
		scheme, hostPort = strings.ToLower(s), rest
		if scheme != "http" && scheme != "https" {
			return nil, usageError("--admin %q: the scheme is http or https", a.address)
		}
	}
	hostPort = strings.TrimSuffix(hostPort, "/")
	if hostPort == "" {
		return nil, usageError("--admin is empty: give a server's admin host:port")
	}
	transport, err := httpTransport(a.tls, scheme == "https")
	if err != nil {
		return nil, err
	}
	token, err := secretFrom("admin-token-file", a.tokenFile, "STRATA_ADMIN_TOKEN")
	if err != nil {
		return nil, err
	}
	return &adminClient{
		address: a.address,
		base:    scheme + "://" + hostPort,
		http:    &http.Client{Transport: transport},
		token:   strings.TrimSpace(token), // as the server reads its token file
	}, nil
}

// adminAnswer is an answer from the admin address.
type adminAnswer struct {
	code   int
	status string // "404 Not Found"
	body   []byte
}

// message is the answer's body as one trimmed line.
func (a adminAnswer) message() string { return strings.Join(strings.Fields(string(a.body)), " ") }

// do sends method to path and returns the answer. An answer asking for a
// credential, or saying the address serves HTTPS, is an error with the
// fix; any other status is the caller's to judge.
func (c *adminClient) do(ctx context.Context, method, path string) (adminAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return adminAnswer{}, usageError("--admin %q: %v", c.address, err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return adminAnswer{}, c.reachError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAdminAnswer))
	if err != nil {
		return adminAnswer{}, fmt.Errorf("reading %s %s from the admin address %s: %w", method, path, c.address, err)
	}
	answer := adminAnswer{code: resp.StatusCode, status: resp.Status, body: body}
	switch {
	case resp.StatusCode == http.StatusUnauthorized && c.token == "":
		return answer, withFix(fmt.Errorf("the admin address %s asks for a credential: %s", c.address, answer.message()),
			"give the admin token with --admin-token-file FILE or STRATA_ADMIN_TOKEN (the server's --admin.token.file), or a client certificate with --tls-cert and --tls-key")
	case resp.StatusCode == http.StatusUnauthorized:
		return answer, withFix(fmt.Errorf("the admin address %s refused the token: %s", c.address, answer.message()),
			"check --admin-token-file or STRATA_ADMIN_TOKEN against the server's --admin.token.file")
	case resp.StatusCode == http.StatusBadRequest && strings.Contains(string(body), "HTTP request to an HTTPS server"):
		return answer, withFix(fmt.Errorf("the admin address %s serves HTTPS", c.address),
			"give --tls-ca (or --tls), or --admin https://"+strings.TrimPrefix(c.base, "http://"))
	}
	return answer, nil
}

// getJSON GETs path and decodes a 200 answer into v; what names the
// document in errors.
func (c *adminClient) getJSON(ctx context.Context, path, what string, v any) error {
	answer, err := c.do(ctx, http.MethodGet, path)
	if err != nil {
		return err
	}
	if answer.code != http.StatusOK {
		return fmt.Errorf("%s from %s: %s: %s", what, c.address, answer.status, answer.message())
	}
	if err := json.Unmarshal(answer.body, v); err != nil {
		return fmt.Errorf("%s from %s is not a %s document: %w", what, c.address, what, err)
	}
	return nil
}

// reachError explains a request that got no answer.
func (c *adminClient) reachError(err error) error {
	var unknownCA x509.UnknownAuthorityError
	switch {
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return withFix(fmt.Errorf("the admin address %s serves plain HTTP, not HTTPS", c.address),
			"give --admin http://"+strings.TrimPrefix(c.base, "https://")+" when the TLS flags are for the Kafka listener only")
	case strings.HasPrefix(c.base, "http://") && hungUp(err):
		// The admin address over TLS hangs up on a request in the clear.
		return withFix(fmt.Errorf("cannot reach the admin address %s: it closed the connection (a secured server serves it over HTTPS)", c.address),
			"give --tls-ca (or --tls), or --admin https://"+strings.TrimPrefix(c.base, "http://"))
	case errors.As(err, &unknownCA):
		return withFix(fmt.Errorf("cannot reach the admin address %s: its certificate is not signed by a CA this client trusts", c.address),
			"give the CA that signed the server's certificate with --tls-ca (or STRATA_TLS_CA)")
	}
	return fmt.Errorf("cannot reach the admin address %s: %w", c.address, err)
}

// httpTransport is the transport of an HTTP client of the server (its
// admin address, its schema registry): over https, with the TLS flags'
// configuration, or the system's CAs when no TLS flag is given.
func httpTransport(tls *tlsFlags, https bool) (*http.Transport, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if !https {
		return transport, nil
	}
	cfg, err := tls.config()
	if err != nil {
		return nil, err
	}
	if cfg == nil { // https:// without a TLS flag: the system's CAs
		if cfg, err = tlsfiles.Client(tlsfiles.Files{}, ""); err != nil {
			return nil, err
		}
	}
	transport.TLSClientConfig = cfg
	return transport, nil
}
