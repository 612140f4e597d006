package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/stratalog/strata/tlsfiles"
)

// errUsage marks a command line that cannot be run as given; it exits 2.
var errUsage = errors.New("usage")

// usageError explains a bad command line in one line.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

// newFlagSet builds a command's flag set; -h prints the synopsis and flags
// on standard output. A bad flag is not printed here: parseFlags returns
// it, and run prints it on one line. The set is kept in e, so that run
// knows whether --json was given when it prints an error.
func newFlagSet(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("strata "+name, flag.ContinueOnError)
	sink := &flagErrorSink{}
	fs.SetOutput(sink)
	fs.Usage = func() {
		if !sink.failed {
			commandHelp(e.stdout, fs, name, synopsis, e.summary)
		}
	}
	e.flags = fs
	return fs
}

// parseFlags parses args allowing flags before, between and after
// positional arguments ("topic create orders --partitions 3"), and returns
// the positional ones. "--" ends flag parsing.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, withFix(fmt.Errorf("%w: %v", errUsage, err), "run `"+fs.Name()+" -h` for its flags")
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// flagGiven reports whether the flag name was set, on the command line or
// from the config file, rather than left at its default.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// clientFlags are the flags every command that talks to a broker has.
type clientFlags struct {
	bootstrap string
	json      bool
	timeout   time.Duration
	security  securityFlags
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	bootstrap := os.Getenv("STRATA_BOOTSTRAP")
	if bootstrap == "" {
		bootstrap = "127.0.0.1:9092"
	}
	fs.StringVar(&c.bootstrap, "bootstrap", bootstrap, "broker `host:port` list, comma-separated (env STRATA_BOOTSTRAP)")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of a table, and errors as JSON on standard error")
	fs.DurationVar(&c.timeout, "timeout", 15*time.Second, "give up after this long")
	c.security.register(fs)
}

// securityFlags are how a command reaches a secured listener: TLS for SSL
// and SASL_SSL, a SASL login for SASL_PLAINTEXT and SASL_SSL. The
// password comes from a file or the environment, never from a flag: a
// flag's value shows in ps and in shell history.
type securityFlags struct {
	tls  tlsFlags
	sasl saslFlags
}

func (s *securityFlags) register(fs *flag.FlagSet) {
	s.tls.register(fs)
	s.sasl.register(fs)
}

// tlsFlags are the client side of TLS, for the Kafka listener and the
// admin address alike.
type tlsFlags struct {
	enabled       bool
	ca, cert, key string
}

func (t *tlsFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&t.enabled, "tls", false, "connect over TLS, trusting the system's CAs (--tls-ca, --tls-cert and --tls-key imply it)")
	fs.StringVar(&t.ca, "tls-ca", os.Getenv("STRATA_TLS_CA"), "PEM `file` of the CA certificates to trust instead of the system's; implies --tls (env STRATA_TLS_CA)")
	fs.StringVar(&t.cert, "tls-cert", os.Getenv("STRATA_TLS_CERT"), "PEM `file` of a client certificate to present, with --tls-key; implies --tls (env STRATA_TLS_CERT)")
	fs.StringVar(&t.key, "tls-key", os.Getenv("STRATA_TLS_KEY"), "PEM `file` of the client certificate's private key, unencrypted (env STRATA_TLS_KEY)")
}

// on reports whether any TLS flag was given.
func (t *tlsFlags) on() bool { return t.enabled || t.ca != "" || t.cert != "" || t.key != "" }

// config is the client TLS configuration the flags give; nil without TLS.
// A file that cannot be read is named with its flag.
func (t *tlsFlags) config() (*tls.Config, error) {
	if !t.on() {
		return nil, nil
	}
	if (t.cert == "") != (t.key == "") {
		return nil, withFix(usageError("--tls-cert and --tls-key go together"), "give the client certificate and its key, or neither")
	}
	for _, f := range []struct{ flag, file string }{{"tls-ca", t.ca}, {"tls-cert", t.cert}, {"tls-key", t.key}} {
		if err := readable(f.flag, f.file); err != nil {
			return nil, err
		}
	}
	cfg, err := tlsfiles.Client(tlsfiles.Files{CAFile: t.ca, CertFile: t.cert, KeyFile: t.key}, "")
	if err != nil {
		return nil, usageError("TLS: %v", strings.TrimPrefix(err.Error(), "tlsfiles: "))
	}
	return cfg, nil
}

// readable checks that the file a flag names ("" for none) can be read.
func readable(flagName, file string) error {
	if file == "" {
		return nil
	}
	f, err := os.Open(file)
	if err != nil {
		return usageError("--%s: %v", flagName, err)
	}
	return f.Close()
}

// The SASL mechanisms a client can log in with (sasl.enabled.mechanisms).
const (
	mechanismPlain     = "PLAIN"
	mechanismScram256  = "SCRAM-SHA-256"
	mechanismScram512  = "SCRAM-SHA-512"
	saslMechanismNames = mechanismPlain + ", " + mechanismScram256 + " or " + mechanismScram512
)

// saslFlags are a SASL login: mechanism, user, and where the password is.
type saslFlags struct {
	mechanism    string
	user         string
	passwordFile string
}

func (s *saslFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.mechanism, "sasl-mechanism", os.Getenv("STRATA_SASL_MECHANISM"), "log in with SASL `mechanism` "+saslMechanismNames+" (env STRATA_SASL_MECHANISM)")
	fs.StringVar(&s.user, "sasl-user", os.Getenv("STRATA_SASL_USER"), "the `user` to log in as (env STRATA_SASL_USER)")
	fs.StringVar(&s.passwordFile, "sasl-password-file", "", "`file` holding the login's password, trailing newline dropped (else env STRATA_SASL_PASSWORD; no flag takes the password itself, as ps would show it)")
}

// on reports whether a login is asked for.
func (s *saslFlags) on() bool { return s.mechanism != "" || s.user != "" || s.passwordFile != "" }

// login is the franz-go SASL mechanism the flags give; nil without a
// login. The password is read here, from --sasl-password-file or else
// STRATA_SASL_PASSWORD.
func (s *saslFlags) login() (sasl.Mechanism, error) {
	if !s.on() {
		return nil, nil
	}
	name := strings.ToUpper(s.mechanism)
	switch {
	case s.user == "" && s.mechanism == "":
		return nil, withFix(usageError("--sasl-password-file needs a user to log in as"), "give --sasl-user and --sasl-mechanism")
	case s.user == "":
		return nil, withFix(usageError("--sasl-mechanism %s needs a user to log in as", s.mechanism), "give --sasl-user (or STRATA_SASL_USER)")
	case s.mechanism == "":
		return nil, withFix(usageError("--sasl-user %s needs a mechanism to log in with", s.user), "give --sasl-mechanism "+saslMechanismNames)
	case name != mechanismPlain && name != mechanismScram256 && name != mechanismScram512:
		return nil, usageError("--sasl-mechanism %q: want %s", s.mechanism, saslMechanismNames)
	}
	password, err := secretFrom("sasl-password-file", s.passwordFile, "STRATA_SASL_PASSWORD")
	if err != nil {
		return nil, err
	}
	if password == "" {
		return nil, withFix(usageError("--sasl-user %s has no password", s.user), "give --sasl-password-file FILE, or set STRATA_SASL_PASSWORD")
	}
	switch name {
	case mechanismPlain:
		return plain.Auth{User: s.user, Pass: password}.AsMechanism(), nil
	case mechanismScram256:
		return scram.Auth{User: s.user, Pass: password}.AsSha256Mechanism(), nil
	}
	return scram.Auth{User: s.user, Pass: password}.AsSha512Mechanism(), nil
}

// secretFrom reads a secret from the file a flag names, dropping the
// trailing newline as the server does with its password files, or, with
// no file, from the environment variable envName. "" is no secret given;
// a file that holds nothing is an error.
func secretFrom(flagName, file, envName string) (string, error) {
	if file == "" {
		return os.Getenv(envName), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", usageError("--%s: %v", flagName, err)
	}
	secret := strings.TrimRight(string(data), "\r\n")
	if secret == "" {
		return "", usageError("--%s %s is empty", flagName, file)
	}
	return secret, nil
}

// kgoOpts are the franz-go options for TLS and the SASL login.
func (s *securityFlags) kgoOpts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	cfg, err := s.tls.config()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	mechanism, err := s.sasl.login()
	if err != nil {
		return nil, err
	}
	if mechanism != nil {
		opts = append(opts, kgo.SASL(mechanism))
	}
	return opts, nil
}

func (c *clientFlags) brokers() []string {
	var out []string
	for _, b := range strings.Split(c.bootstrap, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// keyValues is a repeatable name=value flag.
type keyValues struct {
	order  []string
	values map[string]string
}

func (kv *keyValues) String() string {
	parts := make([]string, 0, len(kv.order))
	for _, k := range kv.order {
		parts = append(parts, k+"="+kv.values[k])
	}
	return strings.Join(parts, ",")
}

func (kv *keyValues) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q is not name=value", s)
	}
	if kv.values == nil {
		kv.values = map[string]string{}
	}
	if _, dup := kv.values[name]; !dup {
		kv.order = append(kv.order, name)
	}
	kv.values[name] = value
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }
