package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newClient connects a franz-go client to the bootstrap brokers, over TLS
// and logged in when the security flags say so. The client dials lazily;
// ping makes the first failure a clear one.
func newClient(ctx context.Context, flags *clientFlags, opts ...kgo.Opt) (*kgo.Client, error) {
	brokers := flags.brokers()
	if len(brokers) == 0 {
		return nil, usageError("--bootstrap is empty: give at least one host:port")
	}
	security, err := flags.security.kgoOpts()
	if err != nil {
		return nil, err
	}
	opts = append(append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID("strata-cli"),
		kgo.RequestRetries(2),
	}, security...), opts...)
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, usageError("%v", err)
	}
	if err := client.Ping(ctx); err != nil {
		client.Close()
		return nil, connectError(flags, err)
	}
	return client, nil
}

// newAdmin is newClient wrapped for admin requests.
func newAdmin(ctx context.Context, flags *clientFlags) (*kadm.Client, func(), error) {
	client, err := newClient(ctx, flags)
	if err != nil {
		return nil, nil, err
	}
	admin := kadm.NewClient(client)
	return admin, client.Close, nil
}

// connectError explains why the first request to the brokers failed: a
// refused login or mechanism, a TLS handshake that could not succeed, a
// listener that hung up on a client without the security it wants, or
// else that no broker could be reached.
func connectError(flags *clientFlags, err error) error {
	tlsOn, sasl := flags.security.tls.on(), &flags.security.sasl
	var (
		unknownCA   x509.UnknownAuthorityError
		wrongHost   x509.HostnameError
		notTLS      tls.RecordHeaderError
		certInvalid x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return withFix(&loginError{fmt.Sprintf("login failed: %s refused user %q with %s", flags.bootstrap, sasl.user, strings.ToUpper(sasl.mechanism)), err},
			"check the user (--sasl-user), the password (--sasl-password-file or STRATA_SASL_PASSWORD) and the mechanism (--sasl-mechanism); `strata user list` shows the mechanisms each user has a credential for")
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return withFix(&loginError{fmt.Sprintf("login failed: %s does not take SASL mechanism %s", flags.bootstrap, strings.ToUpper(sasl.mechanism)), err},
			"give --sasl-mechanism one the listener enables (the server's --sasl.enabled.mechanisms)")
	case errors.Is(err, kerr.IllegalSaslState):
		return withFix(fmt.Errorf("login failed: %s takes no SASL login on this listener: %w", flags.bootstrap, err),
			"drop --sasl-mechanism and --sasl-user, or point --bootstrap at a SASL_PLAINTEXT or SASL_SSL listener")
	case errors.As(err, &unknownCA):
		return withFix(fmt.Errorf("cannot reach a broker at %s: its certificate is not signed by a CA this client trusts: %w", flags.bootstrap, err),
			"give the CA that signed the brokers' certificates with --tls-ca (or STRATA_TLS_CA)")
	case errors.As(err, &wrongHost):
		return withFix(fmt.Errorf("cannot reach a broker at %s: %w", flags.bootstrap, err),
			"connect with a host name or address that the broker's certificate names")
	case errors.As(err, &certInvalid):
		return withFix(fmt.Errorf("cannot reach a broker at %s: %w", flags.bootstrap, err),
			"the broker's certificate is not valid now (expired, or not for a server); renew it on the broker")
	case errors.As(err, &notTLS):
		return withFix(fmt.Errorf("cannot reach a broker at %s: it does not answer TLS", flags.bootstrap),
			"drop --tls and --tls-ca for a PLAINTEXT or SASL_PLAINTEXT listener, or point --bootstrap at an SSL or SASL_SSL one")
	case hungUp(err) && (!tlsOn || !sasl.on()):
		var fixes []string
		if !tlsOn {
			fixes = append(fixes, "for an SSL or SASL_SSL listener give --tls-ca (or --tls)")
		}
		if !sasl.on() {
			fixes = append(fixes, "for a SASL_PLAINTEXT or SASL_SSL listener log in with --sasl-mechanism and --sasl-user")
		}
		return withFix(fmt.Errorf("cannot reach a broker at %s: it closed the connection: %w", flags.bootstrap, err),
			strings.Join(fixes, "; "))
	}
	return fmt.Errorf("cannot reach a broker at %s: %w", flags.bootstrap, err)
}

// withClusterRightsFix gives a CLUSTER_AUTHORIZATION_FAILED refusal of
// managing what ("ACLs", "users") its fix: who may.
func withClusterRightsFix(err error, what string) error {
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		return err
	}
	return withFix(err, "managing "+what+" needs Alter on the cluster and listing them Describe: log in (--sasl-user) as a super user, such as the brokers' --sasl.inter.broker.username, or as a principal with those ACLs")
}

// hungUp reports whether err is the peer closing the connection, as a
// listener does to a client that does not speak its security protocol.
func hungUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// loginError is a refused SASL login as one line that says so, without
// the Kafka error's own text (which it still matches with errors.Is).
type loginError struct {
	text string
	err  error
}

func (e *loginError) Error() string { return e.text }
func (e *loginError) Unwrap() error { return e.err }
