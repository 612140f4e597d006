package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/stratalog/strata/ingest"
	"github.com/stratalog/strata/interbroker"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/sasl"
	"github.com/stratalog/strata/tlsfiles"
)

// securityConfig is the server's listeners and security settings, under
// Kafka's names where Kafka has them.
type securityConfig struct {
	listeners          string
	advertised         string
	protocolMap        string
	interBrokerName    string
	keystore           string
	keystoreType       string
	truststore         string
	truststoreType     string
	clientAuth         string
	mechanisms         string
	reauthMs           int64
	maxReceive         int
	failedAuthDelayMs  int64
	superUsers         string
	allowEveryone      bool
	interBrokerMech    string
	interBrokerUser    string
	interBrokerPassArg string
	adminTokenFile     string
	adminMetricsOpen   bool
	metaProtocol       string
}

func (s *securityConfig) register(fs *flag.FlagSet) {
	d := ingest.DefaultSecurity()
	fs.StringVar(&s.listeners, "listeners", "", "Kafka listeners as `NAME://host:port,...` (listener.security.protocol.map gives each name's protocol); replaces --listen")
	fs.StringVar(&s.advertised, "advertised.listeners", "", "`NAME://host:port,...` clients are told to use, per listener (default: each listener's address); replaces --advertise")
	fs.StringVar(&s.protocolMap, "listener.security.protocol.map", "", "`NAME:PROTOCOL,...` for listener names that are not a protocol's own (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)")
	fs.StringVar(&s.interBrokerName, "inter.broker.listener.name", "", "the listener other brokers' followers fetch from (default: the first)")
	fs.StringVar(&s.keystore, "ssl.keystore.location", "", "PEM `file` with the broker's private key and certificate chain, for SSL and SASL_SSL listeners and the admin address; re-read when it changes")
	fs.StringVar(&s.keystoreType, "ssl.keystore.type", "PEM", "keystore format: PEM only")
	fs.StringVar(&s.truststore, "ssl.truststore.location", "", "PEM `file` of CA certificates: those client certificates must chain to, and those a follower trusts its leaders' certificates by (default: the system's)")
	fs.StringVar(&s.truststoreType, "ssl.truststore.type", "PEM", "truststore format: PEM only")
	fs.StringVar(&s.clientAuth, "ssl.client.auth", "none", "client certificates on TLS listeners: none, requested or required (an SSL client presenting one is User:<subject DN>; without one, under requested, User:ANONYMOUS)")
	fs.StringVar(&s.mechanisms, "sasl.enabled.mechanisms", strings.Join(d.SASLMechanisms, ","), "SASL mechanisms SASL listeners accept: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512")
	fs.Int64Var(&s.reauthMs, "connections.max.reauth.ms", 0, "a SASL session's lifetime, in ms: a client must authenticate again on its connection before it ends (KIP-368); 0: for ever")
	fs.IntVar(&s.maxReceive, "sasl.server.max.receive.size", int(d.MaxReceiveBeforeAuth), "largest request frame accepted before a SASL client has authenticated, in bytes")
	fs.Int64Var(&s.failedAuthDelayMs, "connection.failed.authentication.delay.ms", d.FailedAuthDelay.Milliseconds(), "how long a failed login waits for its answer, in ms; doubled for each further failure from the same host within a minute, up to 5 s")
	fs.StringVar(&s.superUsers, "super.users", "", "principals allowed everything, as `User:name;User:other`")
	fs.BoolVar(&s.allowEveryone, "allow.everyone.if.no.acl.found", true, "let anyone use a resource without ACLs (default: true while no listener authenticates, false once one does: SASL, or ssl.client.auth requested or required)")
	fs.StringVar(&s.interBrokerMech, "sasl.mechanism.inter.broker.protocol", sasl.ScramSHA512, "SASL mechanism this broker's followers log in to leaders with, when the inter-broker listener uses SASL")
	fs.StringVar(&s.interBrokerUser, "sasl.inter.broker.username", "", "the user this broker's followers log in as; created with --sasl.inter.broker.password.file's password if the metadata has no credential for it, and a super user")
	fs.StringVar(&s.interBrokerPassArg, "sasl.inter.broker.password.file", "", "`file` holding the inter-broker user's password (a file, so it never shows in ps)")
	fs.StringVar(&s.adminTokenFile, "admin.token.file", "", "`file` holding the bearer token the admin address takes, once a listener authenticates (a client certificate is the other credential); re-read when it changes")
	fs.BoolVar(&s.adminMetricsOpen, "admin.metrics.open", true, "serve /metrics on the admin address without a credential")
	fs.StringVar(&s.metaProtocol, "meta.security.protocol", "", "the metadata (Raft) port's protocol: SSL (mutual TLS; peers need a certificate from the truststore's CA naming this node's own principal or a super user) or PLAINTEXT (default: SSL when --ssl.keystore.location is set)")
}

// security is what the security settings build: the broker's listeners
// and Security, how its followers dial leaders, the admin address's.
type security struct {
	listeners         []ingest.Listener
	interBroker       string
	settings          ingest.Security
	interBrokerDialer interbroker.Dialer
	admin             adminSecurity
	// user and password are the inter-broker credential to create when
	// the metadata has none.
	user, password string
	tls            *tlsfiles.Server
	// meta is the metadata port's mutual TLS; nil for PLAINTEXT.
	meta *meta.PeerTLS
}

// build reads the settings; fs says which were given. listen and
// advertise are --listen and --advertise, the one-listener form.
func (s *securityConfig) build(fs *flag.FlagSet, listen, advertise string, log *slog.Logger) (*security, error) {
	out := &security{interBroker: s.interBrokerName}
	if s.keystoreType != "PEM" || s.truststoreType != "PEM" {
		return nil, usageError("--ssl.keystore.type %q, --ssl.truststore.type %q: strata reads PEM files only (convert a JKS or PKCS12 store with keytool -importkeystore and openssl pkcs12)", s.keystoreType, s.truststoreType)
	}
	listeners, err := s.parseListeners(fs, listen, advertise)
	if err != nil {
		return nil, err
	}
	clientAuth, err := tlsfiles.ParseClientAuth(s.clientAuth)
	if err != nil {
		return nil, usageError("--ssl.client.auth: %v", err)
	}
	anyTLS := slices.ContainsFunc(listeners, func(l ingest.Listener) bool { return l.Protocol.TLS() })
	if anyTLS {
		if s.keystore == "" {
			return nil, usageError("a TLS listener needs --ssl.keystore.location: a PEM file with the private key and certificate chain")
		}
		out.tls, err = tlsfiles.NewServer(tlsfiles.Files{CertFile: s.keystore, KeyFile: s.keystore, CAFile: s.truststore}, clientAuth, func(err error) {
			log.Error("reloading the TLS keystore or truststore failed; serving the previous certificate", "error", err)
		})
		if err != nil {
			return nil, usageError("TLS: %v", err)
		}
		for i := range listeners {
			if listeners[i].Protocol.TLS() {
				listeners[i].TLS = out.tls.Config()
				listeners[i].ClientCerts = clientAuth != tlsfiles.ClientAuthNone
			}
		}
	} else if s.keystore != "" || clientAuth != tlsfiles.ClientAuthNone {
		return nil, usageError("--ssl.keystore.location and --ssl.client.auth are for SSL and SASL_SSL listeners, and no listener uses TLS: add one to --listeners, or drop them")
	}
	out.listeners = listeners

	set := ingest.DefaultSecurity()
	set.SASLMechanisms = splitList(s.mechanisms, ",")
	set.ReauthMax = time.Duration(s.reauthMs) * time.Millisecond
	set.MaxReceiveBeforeAuth = int32(min(s.maxReceive, 1<<31-1))
	set.FailedAuthDelay = time.Duration(s.failedAuthDelayMs) * time.Millisecond
	set.SuperUsers = splitList(s.superUsers, ";")
	authenticates := ingest.Config{Listeners: listeners}.Authenticates()
	set.AllowEveryoneIfNoACL = s.allowEveryone
	if !flagGiven(fs, "allow.everyone.if.no.acl.found") {
		set.AllowEveryoneIfNoACL = !authenticates
	}
	if s.interBrokerUser != "" {
		if s.interBrokerPassArg == "" {
			return nil, usageError("--sasl.inter.broker.username needs --sasl.inter.broker.password.file")
		}
		data, err := os.ReadFile(s.interBrokerPassArg)
		if err != nil {
			return nil, usageError("--sasl.inter.broker.password.file: %v", err)
		}
		out.user, out.password = s.interBrokerUser, strings.TrimRight(string(data), "\r\n")
		if out.password == "" {
			return nil, usageError("--sasl.inter.broker.password.file %s is empty", s.interBrokerPassArg)
		}
		set.SuperUsers = append(set.SuperUsers, "User:"+s.interBrokerUser)
	} else if s.interBrokerPassArg != "" {
		return nil, usageError("--sasl.inter.broker.password.file needs --sasl.inter.broker.username")
	}
	out.settings = set

	interBroker := listeners[0]
	if s.interBrokerName != "" {
		i := slices.IndexFunc(listeners, func(l ingest.Listener) bool { return l.Name == s.interBrokerName })
		if i < 0 {
			return nil, usageError("--inter.broker.listener.name %q is not one of the listeners", s.interBrokerName)
		}
		interBroker = listeners[i]
	}
	if out.interBrokerDialer, err = s.interBrokerDialer(interBroker, out); err != nil {
		return nil, err
	}
	if out.meta, err = s.metaTLS(set.SuperUsers, log); err != nil {
		return nil, err
	}
	out.admin = adminSecurity{TokenFile: s.adminTokenFile, OpenMetrics: s.adminMetricsOpen, Required: authenticates, FailedAuthDelay: set.FailedAuthDelay}
	if anyTLS {
		out.admin.TLS = out.tls.Config()
	}
	if authenticates && s.adminTokenFile == "" && clientAuth == tlsfiles.ClientAuthNone {
		log.Warn("a listener authenticates and the admin address has no credential to accept (--admin.token.file, or client certificates with --ssl.client.auth): only /healthz, /readyz and /metrics answer there")
	}
	return out, nil
}

// interBrokerDialer is how this broker's followers connect to l on
// leaders.
func (s *securityConfig) interBrokerDialer(l ingest.Listener, out *security) (interbroker.Dialer, error) {
	var d interbroker.Dialer
	if l.Protocol.TLS() {
		files := tlsfiles.Files{CAFile: s.truststore}
		if l.Protocol == ingest.SSL {
			files.CertFile, files.KeyFile = s.keystore, s.keystore // its own certificate is who it is
		}
		cfg, err := tlsfiles.Client(files, "")
		if err != nil {
			return interbroker.Dialer{}, usageError("inter-broker TLS: %v", err)
		}
		d.TLS = cfg
	}
	if !l.Protocol.SASL() {
		return d, nil
	}
	if out.user == "" {
		return interbroker.Dialer{}, usageError("the inter-broker listener %s uses SASL: give --sasl.inter.broker.username and --sasl.inter.broker.password.file", l.Name)
	}
	switch s.interBrokerMech {
	case sasl.Plain:
		d.SASL = plain.Auth{User: out.user, Pass: out.password}.AsMechanism()
	case sasl.ScramSHA256:
		d.SASL = scram.Auth{User: out.user, Pass: out.password}.AsSha256Mechanism()
	case sasl.ScramSHA512:
		d.SASL = scram.Auth{User: out.user, Pass: out.password}.AsSha512Mechanism()
	default:
		return interbroker.Dialer{}, usageError("--sasl.mechanism.inter.broker.protocol %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.interBrokerMech)
	}
	return d, nil
}

// parseListeners reads listeners, advertised.listeners and
// listener.security.protocol.map, or the one PLAINTEXT listener --listen
// and --advertise describe.
func (s *securityConfig) parseListeners(fs *flag.FlagSet, listen, advertise string) ([]ingest.Listener, error) {
	if s.listeners == "" {
		if s.advertised != "" {
			return nil, usageError("--advertised.listeners goes with --listeners; with --listen, use --advertise")
		}
		return []ingest.Listener{{Name: "PLAINTEXT", Protocol: ingest.Plaintext, Address: listen, Advertised: advertise}}, nil
	}
	if flagGiven(fs, "listen") || flagGiven(fs, "advertise") {
		return nil, usageError("--listeners replaces --listen and --advertise: give one form")
	}
	protocols := map[string]ingest.SecurityProtocol{}
	for _, p := range ingest.SecurityProtocols {
		protocols[string(p)] = p
	}
	for _, entry := range splitList(s.protocolMap, ",") {
		name, protocol, ok := strings.Cut(entry, ":")
		p, err := ingest.ParseSecurityProtocol(protocol)
		if !ok || name == "" || err != nil {
			return nil, usageError("--listener.security.protocol.map: %q is not NAME:PROTOCOL with PROTOCOL one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", entry)
		}
		protocols[strings.ToUpper(name)] = p
	}
	var out []ingest.Listener
	for _, entry := range splitList(s.listeners, ",") {
		name, address, err := splitListener(entry)
		if err != nil {
			return nil, usageError("--listeners: %v", err)
		}
		p, ok := protocols[name]
		if !ok {
			return nil, usageError("--listeners: listener %s has no security protocol: name it after one (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) or map it in --listener.security.protocol.map", name)
		}
		out = append(out, ingest.Listener{Name: name, Protocol: p, Address: address})
	}
	for _, entry := range splitList(s.advertised, ",") {
		name, address, err := splitListener(entry)
		if err != nil {
			return nil, usageError("--advertised.listeners: %v", err)
		}
		i := slices.IndexFunc(out, func(l ingest.Listener) bool { return l.Name == name })
		if i < 0 {
			return nil, usageError("--advertised.listeners names %s, which is not in --listeners", name)
		}
		out[i].Advertised = address
	}
	return out, nil
}

// splitListener reads NAME://host:port.
func splitListener(entry string) (name, address string, err error) {
	name, address, ok := strings.Cut(entry, "://")
	if !ok || name == "" {
		return "", "", fmt.Errorf("%q is not NAME://host:port", entry)
	}
	if _, _, err := net.SplitHostPort(address); err != nil {
		return "", "", fmt.Errorf("%q: want NAME://host:port: %v", entry, err)
	}
	return strings.ToUpper(name), address, nil
}

// splitList splits a setting's list, dropping blanks.
func splitList(s, sep string) []string {
	var out []string
	for _, part := range strings.Split(s, sep) {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// ensureBrokerCredential creates the inter-broker user's credentials when
// the metadata has none for it, so a new cluster's brokers can log in to
// each other. An existing user is never changed: a broker given the wrong
// password cannot follow.
func (s *security) ensureBrokerCredential(ctx context.Context, node *meta.Node, log *slog.Logger) error {
	if s.user == "" {
		return nil
	}
	st := node.State()
	for _, m := range sasl.ScramMechanisms {
		if _, ok := st.ScramCredential(s.user, m); ok {
			return nil
		}
	}
	cmd := &meta.AlterScramCredential{User: s.user}
	for _, m := range sasl.ScramMechanisms {
		c, err := sasl.FromPassword(m, s.password, sasl.DefaultIterations)
		if err != nil {
			return err
		}
		cmd.Upsert = append(cmd.Upsert, c)
	}
	if _, err := node.Propose(ctx, cmd); err != nil {
		return fmt.Errorf("creating the inter-broker user %q: %w", s.user, err)
	}
	log.Info("created the inter-broker user's SCRAM credentials", "user", s.user)
	return nil
}

// metaTLS is the metadata port's mutual TLS, unless it is PLAINTEXT. Its
// listener requires a certificate from the truststore's CA whose
// principal is this node's own (brokers sharing one identity) or one of
// superUsers (brokers with identities of their own, each a super user as
// Kafka requires of brokers); it dials peers with the keystore's
// certificate.
func (s *securityConfig) metaTLS(superUsers []string, log *slog.Logger) (*meta.PeerTLS, error) {
	protocol := s.metaProtocol
	if protocol == "" {
		protocol = "PLAINTEXT"
		if s.keystore != "" {
			protocol = "SSL"
		}
	}
	switch strings.ToUpper(protocol) {
	case "PLAINTEXT":
		return nil, nil
	case "SSL":
	default:
		return nil, usageError("--meta.security.protocol %q: want SSL or PLAINTEXT", protocol)
	}
	if s.keystore == "" || s.truststore == "" {
		return nil, usageError("--meta.security.protocol SSL (the default with a keystore) needs --ssl.keystore.location and --ssl.truststore.location: the metadata port admits only peers whose certificates the truststore's CA signed (or give --meta.security.protocol PLAINTEXT on a private network)")
	}
	files := tlsfiles.Files{CertFile: s.keystore, KeyFile: s.keystore, CAFile: s.truststore}
	server, err := tlsfiles.NewServer(files, tlsfiles.ClientAuthRequired, func(err error) {
		log.Error("reloading the metadata port's TLS files failed; serving the previous certificate", "error", err)
	})
	if err != nil {
		return nil, usageError("metadata port TLS: %v", err)
	}
	own := tlsfiles.Principal(tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{server.Leaf()}}})
	verify := func(cs tls.ConnectionState) error {
		if p := tlsfiles.Principal(cs); p != own && !slices.Contains(superUsers, p) {
			return fmt.Errorf("%s is neither this node's principal (%s) nor a super user", p, own)
		}
		return nil
	}
	client, err := tlsfiles.Client(files, "")
	if err != nil {
		return nil, usageError("metadata port TLS: %v", err)
	}
	return &meta.PeerTLS{Server: server.ConfigVerifying(verify), Client: client}, nil
}
