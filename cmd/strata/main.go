package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
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
	{"topic list", topicListSynopsis(), "list topics, or the partitions one report keeps: under-replicated, unavailable, under or at min ISR", runTopicList},
	{"topic describe", "NAME... [flags]", "show a topic's partitions (leader, epoch, replicas, ISR, offline replicas), offsets and configs", runTopicDescribe},
	{"topic alter", "NAME [flags]", "change a topic's configs or add partitions", runTopicAlter},
	{"topic delete", "NAME... [flags]", "delete topics and their data", runTopicDelete},
	{"produce", "TOPIC [flags]", "produce one record per line of standard input", runProduce},
	{"consume", "TOPIC [flags]", "print records from a topic", runConsume},
	{"partition reassign", reassignSynopsis, "move partitions' replicas with kafka-reassign-partitions.sh JSON plans", runPartitionReassign},
	{"partition elect-leaders", "[TOPIC[:PARTITION]...] [--unclean] [flags]", "move leadership to preferred replicas, or elect leaders for leaderless partitions", runPartitionElectLeaders},
	{"group list", "[flags]", "list consumer groups", runGroupList},
	{"group describe", "GROUP... [flags]", "show a group's members, lag per partition and stalled partitions", runGroupDescribe},
	{"group delete", "GROUP... [flags]", "delete groups without members and their offsets", runGroupDelete},
	{"group reset-offsets", "GROUP (--to-earliest|--to-latest|--to-datetime T|--shift-by N) [--execute]", "move a group's committed offsets (a dry run without --execute)", runGroupResetOffsets},
	{"config alter", configSynopsis + " [flags]", "change dynamic broker configs (replication throttles), topic configs or client quotas", runConfigAlter},
	{"config describe", configSynopsis + " [flags]", "show a broker's, topic's or client's configs or quotas", runConfigDescribe},
	{"cluster status", "[flags]", "show the metadata voters, leader and brokers, and count unhealthy partitions", runClusterStatus},
	{"cluster rebalance", "[--execute [--wait]] [flags]", "spread replicas and leaders evenly over the live brokers, a new one included", runClusterRebalance},
	{"broker drain", "ID [flags]", "move leadership, then every replica, off a broker so it can be stopped", runBrokerDrain},
	{"broker undrain", "ID [flags]", "let a drained broker take replicas and leadership again", runBrokerUndrain},
	{"broker unregister", "ID [flags]", "remove a stopped broker that will not come back", runBrokerUnregister},
	{"tier status", "[TOPIC] [flags]", "show each tiered partition's local start, tiered end and upload backlog", runTierStatus},
	{"user create", "NAME --password-file FILE [--mechanism M] [--iterations N] [flags]", "set a user's SCRAM credentials (a new user, or a new password)", runUserCreate},
	{"user list", "[NAME...] [flags]", "show users' SCRAM mechanisms and iteration counts", runUserList},
	{"user delete", "NAME... [--mechanism M] [flags]", "delete users' SCRAM credentials", runUserDelete},
	{"acl create", "(--allow|--deny) PRINCIPAL --operation OP[,OP] RESOURCE [--prefixed] [flags]", "allow or deny principals operations on a topic, group, transactional id or the cluster", runACLCreate},
	{"acl list", "[filters] [flags]", "show ACLs, all or those the filters select, as kafka-acls.sh --list does", runACLList},
	{"acl delete", "(filters|--all) [flags]", "delete the ACLs the filters select, and print them", runACLDelete},
	{"schema register", schemaRegisterSynopsis, "register a schema under a subject in the schema registry, and print its id and version", runSchemaRegister},
	{"schema list", schemaListSynopsis, "list the schema registry's subjects, or a subject's versions with their ids and types", runSchemaList},
	{"schema get", schemaGetSynopsis, "print a schema's metadata and text, by subject and version or by id", runSchemaGet},
	{"schema check", schemaCheckSynopsis, "check a schema against a subject's versions at its compatibility level (exit 1 when incompatible)", runSchemaCheck},
	{"schema delete", schemaDeleteSynopsis, "delete a subject's versions, or one (soft; --permanent for good)", runSchemaDelete},
	{"schema config", schemaConfigSynopsis, "show or set the compatibility level, global or a subject's", runSchemaConfig},
	{"schema mode", schemaModeSynopsis, "show or set the registry's or a subject's mode: READWRITE or READONLY", runSchemaMode},
	{"version", "[flags]", "print the module version, the Go version and the source revision", runVersion},
	{"export", "--bucket URL --topic T --partition P [--from OFFSET|--from-time T] [--to OFFSET] [--format json|raw]", "read old records straight from the bucket, no broker", runExport},
}

// env is what a command reads and writes, so tests can run commands in
// process.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// flags is the command's flag set once it has built it (newFlagSet),
	// for run to see --json.
	flags *flag.FlagSet
	// summary is the running command's line in the command table, for its
	// help.
	summary string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

// Exit codes: 0 done (and help asked for), 1 a command that failed, 2 a
// command line that cannot be run as given, 3 a server that stopped
// because its data directory's disk failed (a service manager should not
// restart it onto the same disk: the shipped systemd unit has
// RestartPreventExitStatus=3).
const (
	exitOK            = 0
	exitFailed        = 1
	exitBadArgs       = 2
	exitDataDirFailed = 3
)

// run finds the command named by the first words of args and runs it. It
// returns the process exit code. Help goes to standard output and errors
// to standard error, one line each; with --json, an error is one JSON
// object (errorJSON) instead.
func run(ctx context.Context, e *env, args []string) int {
	switch {
	case len(args) == 0:
		usage(e.stdout)
		return exitBadArgs
	case args[0] == "--version" || args[0] == "-version":
		args = append([]string{"version"}, args[1:]...)
	case isHelp(args[0]) && len(args) > 1 && !isHelp(args[1]):
		return help(e, args[1:])
	case isHelp(args[0]):
		usage(e.stdout)
		return exitOK
	}
	cmd, rest, ok := findCommand(args)
	if !ok {
		if slices.Contains(commandGroups(), args[0]) && (len(args) == 1 || isHelp(args[1])) {
			groupUsage(e.stdout, args[0])
			if len(args) == 1 {
				return exitBadArgs
			}
			return exitOK
		}
		name := strings.Join(args[:min(2, len(args))], " ")
		if !slices.Contains(commandGroups(), args[0]) {
			name = args[0]
		}
		return fail(e, name, args, usageError("unknown command %q (run `strata help` for the list)", name))
	}
	e.summary = cmd.summary
	err := cmd.run(ctx, e, rest)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return fail(e, cmd.name, rest, err)
}

// help is `strata help COMMAND...`: a group's or a command's help.
func help(e *env, words []string) int {
	if cmd, rest, ok := findCommand(words); ok && len(rest) == 0 {
		return run(context.Background(), e, append(strings.Fields(cmd.name), "-h"))
	}
	if len(words) == 1 && slices.Contains(commandGroups(), words[0]) {
		groupUsage(e.stdout, words[0])
		return exitOK
	}
	return fail(e, "help", words, usageError("no command %q (run `strata help` for the list)", strings.Join(words, " ")))
}

// errorJSON is how an error is printed on standard error under --json.
type errorJSON struct {
	Command  string `json:"command"`
	Error    string `json:"error"`
	Hint     string `json:"hint,omitempty"`
	ExitCode int    `json:"exit_code"`
}

// fail prints err for the command name and returns its exit code.
func fail(e *env, name string, args []string, err error) int {
	code := exitFailed
	if errors.Is(err, errDataDirFailed) {
		code = exitDataDirFailed
	}
	problem, fix := explainParts(err)
	if errors.Is(err, errUsage) {
		code = exitBadArgs
		problem = strings.TrimPrefix(problem, errUsage.Error()+": ")
		if fix == "" && e.flags != nil {
			fix = fmt.Sprintf("run `strata %s -h` for its arguments and flags", name)
		}
	}
	if wantsJSON(e, args) {
		enc := json.NewEncoder(e.stderr)
		enc.Encode(errorJSON{Command: name, Error: problem, Hint: fix, ExitCode: code})
		return code
	}
	if fix != "" {
		problem += " (" + fix + ")"
	}
	fmt.Fprintf(e.stderr, "strata %s: %s\n", name, problem)
	return code
}

// wantsJSON reports whether --json was given: as the command's flag set
// parsed it, or, when parsing stopped before it, as it appears in args.
func wantsJSON(e *env, args []string) bool {
	if e.flags != nil {
		if f := e.flags.Lookup("json"); f != nil && f.Value.String() == "true" {
			return true
		}
	}
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "-json", "--json=true", "-json=true":
			return true
		}
	}
	return false
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
