package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Help goes to standard output, at every level: `strata -h`, `strata
// help`, `strata topic -h`, `strata help topic`, `strata topic create -h`
// all print it and exit 0. A command group named without a command
// (`strata topic`) prints the group's help on standard output too, but
// exits 2: the command line did not say what to do, and a script that
// runs it should notice.

// groupOf is the group a command belongs to: the first of its words when
// it has two ("topic" for "topic create"), else "".
func groupOf(c command) string {
	if words := strings.Fields(c.name); len(words) > 1 {
		return words[0]
	}
	return ""
}

// commandGroups lists the groups in the order help lists their commands.
func commandGroups() []string {
	var out []string
	for _, c := range commands {
		if g := groupOf(c); g != "" && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// usage prints the list of every command.
func usage(w io.Writer) {
	fmt.Fprintln(w, "strata: a Kafka-compatible log service that keeps its data in object storage")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage:")
	printCommandTable(w, commands)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `strata COMMAND -h` for a command's flags; `strata version` prints the build.")
	fmt.Fprintln(w, "Every command takes --json: output, and errors (on standard error), as JSON.")
}

// groupUsage prints the commands of one group.
func groupUsage(w io.Writer, group string) {
	var cmds []command
	for _, c := range commands {
		if groupOf(c) == group {
			cmds = append(cmds, c)
		}
	}
	fmt.Fprintf(w, "Usage: strata %s COMMAND [flags]\n\nCommands:\n", group)
	printCommandTable(w, cmds)
	fmt.Fprintf(w, "\nRun `strata %s COMMAND -h` for a command's flags.\n", group)
}

// printCommandTable prints one line per command. Summaries line up after
// the synopses, except that a synopsis longer than maxWidth (export's,
// reset-offsets') has its summary on the next line instead of pushing
// every other summary off the screen.
func printCommandTable(w io.Writer, cmds []command) {
	const maxWidth = 44
	rows := make([][2]string, 0, len(cmds))
	width := 0
	for _, c := range cmds {
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
}

// commandHelp prints one command's synopsis, summary and flags.
func commandHelp(w io.Writer, fs *flag.FlagSet, name, synopsis, summary string) {
	fmt.Fprintf(w, "Usage: strata %s %s\n", name, synopsis)
	if summary != "" {
		fmt.Fprintf(w, "\n%s.\n", strings.ToUpper(summary[:1])+summary[1:])
	}
	fmt.Fprintf(w, "\nFlags:\n")
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
}

// flagErrorSink is a flag set's output. The flag package writes a parse
// error there before it calls Usage; run prints the error itself, once,
// so the text is dropped and only the fact is kept, for Usage to know it
// is not asked for help.
type flagErrorSink struct{ failed bool }

func (s *flagErrorSink) Write(p []byte) (int, error) {
	s.failed = true
	return len(p), nil
}
