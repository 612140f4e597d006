package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// command is one row of the command table: its words ("topic create"), a
// synopsis of its arguments, one line saying what it does, and the function
// that runs it. Each command lives in its own file.
type command struct {
	name     string
	synopsis string
	summary  string
	run      func(ctx context.Context, env *env, args []string) error
}

// commands is every command strata has, in the order help lists them.
var commands = []command{
	{"server", "[flags]", "run a broker: Kafka listener, admin HTTP, metadata voter", runServer},
	{"topic create", "NAME [flags]", "create a topic", runTopicCreate},
	{"topic list", "[flags]", "list topics", runTopicList},
	{"topic describe", "NAME... [flags]", "show a topic's partitions, offsets and configs", runTopicDescribe},
	{"topic alter", "NAME [flags]", "change a topic's configs or add partitions", runTopicAlter},
	{"topic delete", "NAME... [flags]", "delete topics and their data", runTopicDelete},
	{"produce", "TOPIC [flags]", "produce one record per line of standard input", runProduce},
	{"consume", "TOPIC [flags]", "print records from a topic", runConsume},
	{"group list", "[flags]", "list consumer groups", runGroupList},
	{"group describe", "GROUP... [flags]", "show a group's members, lag per partition and stalled partitions", runGroupDescribe},
	{"group delete", "GROUP... [flags]", "delete groups without members and their offsets", runGroupDelete},
	{"group reset-offsets", "GROUP (--to-earliest|--to-latest|--to-datetime T|--shift-by N) [--execute]", "move a group's committed offsets (a dry run without --execute)", runGroupResetOffsets},
	{"cluster status", "[flags]", "show the metadata voters, leader and brokers", runClusterStatus},
	{"tier status", "[TOPIC] [flags]", "show each tiered partition's local start, tiered end and upload backlog", runTierStatus},
	{"export", "--bucket URL --topic T --partition P [--from OFFSET|--from-time T] [--to OFFSET] [--format json|raw]", "read old records straight from the bucket, no broker", runExport},
}

// env is what a command reads and writes, so tests can run commands in
// process.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

// run finds the command named by the first words of args and runs it. It
// returns the process exit code: 0, 1 for a failed command, 2 for bad usage.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(e.stdout)
		return 0
	}
	cmd, rest, ok := findCommand(args)
	if !ok {
		fmt.Fprintf(e.stderr, "strata: unknown command %q (run `strata help` for the list)\n", strings.Join(args[:min(2, len(args))], " "))
		return 2
	}
	err := cmd.run(ctx, e, rest)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(e.stderr, "strata %s: %v\n", cmd.name, err)
		return 2
	default:
		fmt.Fprintf(e.stderr, "strata %s: %s\n", cmd.name, explain(err))
		return 1
	}
}

// findCommand matches the longest command name that args start with.
func findCommand(args []string) (command, []string, bool) {
	best, bestWords := command{}, 0
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(words) <= len(args) && len(words) > bestWords && equalWords(words, args[:len(words)]) {
			best, bestWords = c, len(words)
		}
	}
	return best, args[bestWords:], bestWords > 0
}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "strata: a Kafka-compatible log service that keeps its data in object storage")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	// Summaries line up after the synopses, except that a synopsis longer
	// than maxWidth (export's, reset-offsets') has its summary on the next
	// line instead of pushing every other summary off the screen.
	const maxWidth = 44
	rows := make([][2]string, 0, len(commands))
	width := 0
	for _, c := range commands {
		left := "strata " + c.name + " " + c.synopsis
		rows = append(rows, [2]string{left, c.summary})
		if len(left) <= maxWidth {
			width = max(width, len(left))
		}
	}
	for _, r := range rows {
		if len(r[0]) > width {
			fmt.Fprintf(w, "  %s\n  %-*s  %s\n", r[0], width, "", r[1])
			continue
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, r[0], r[1])
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `strata COMMAND -h` for a command's flags.")
}
