package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
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
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	bootstrap := os.Getenv("STRATA_BOOTSTRAP")
	if bootstrap == "" {
		bootstrap = "127.0.0.1:9092"
	}
	fs.StringVar(&c.bootstrap, "bootstrap", bootstrap, "broker `host:port` list, comma-separated (env STRATA_BOOTSTRAP)")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of a table, and errors as JSON on standard error")
	fs.DurationVar(&c.timeout, "timeout", 15*time.Second, "give up after this long")
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
