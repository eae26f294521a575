// Command inbox is the operator's command for an inbox table, in the
// style of the AWS CLI: global flags, then a subcommand and its flags.
//
//	inbox [global flags] <command> [command flags]
//
// Commands:
//
//	create-table  create the table (keys, TTL, stream, unread index) with
//	              dynamo.CreateTable; prints the table name and its stream
//	              ARN. Run again, on a table that exists (one created, or
//	              cut short, before), it checks the keys, the stream and
//	              the indexes the flags name, waits until the table is
//	              active and turns TTL on if it is off; a table of that
//	              name that is not such a table is an error, left as it is
//	delete-table  delete the table and wait until it is gone
//	feed          one page of a user's feed: --tenant, --inbox, --user,
//	              [--group G ...] [--unread] [--category C] [--archived]
//	              [--limit N] [--cursor C]; prints the messages and the
//	              cursor of the next page
//	counts        a user's counts (--tenant, --inbox, --user, [--group G ...]);
//	              the unread of the groups the user muted in muted
//	preferences   a user's muted groups, categories and threads and the
//	              categories she opted out of (--tenant, --inbox, --user);
//	              with --set, replace them first with the --mute G,
//	              --mute-category C, --opt-out C and --mute-thread T (a
//	              one-to-one chat) flags (none clears them), or with --reset
//	              drop them for the defaults, and say whether they changed
//	recount       rebuild a user's counters and print the counts after
//	              (--tenant, --inbox, --user, [--group G ...]), or every
//	              partition of an inbox (--tenant, --inbox, --all
//	              [--parallel N]): a Scan finds the inbox's partitions, each
//	              shared and each user partition is recounted once
//	              (inbox.Inbox.RecountPartition, safe while the inbox is in
//	              use), progress goes to stderr and a summary to stdout
//	stream        read the table's stream and feed it to the inbox's stream
//	              handler, as the Lambda function does, until interrupted
//	              (SIGINT, SIGTERM) [--interval D]: each change event goes
//	              to stdout (JSON: one compact object a line; table: rows
//	              per batch), each batch, error and passed record to
//	              stderr. It resumes after the last record the previous
//	              run accepted (its checkpoint in the table, under
//	              --consumer, default inbox-stream), or starts at --from
//	              trim-horizon (the oldest record) or latest (new ones)
//	config        an inbox's tenant settings and inbox config (--tenant,
//	              --inbox); null for a record that does not exist
//	set-tenant    replace a tenant's settings: --tenant [--title S]
//	              [--ttl D] [--by U], and its users' default preferences
//	              [--mute G ...] [--mute-category C ...] [--opt-out C ...];
//	              prints what was written
//	set-inbox     replace an inbox's config: --tenant, --inbox [--title S]
//	              [--description S] [--ttl CATEGORY=D ...] [--by U], and
//	              the default preferences, as set-tenant
//	get           one record as stored, by key: --tenant, --inbox, --id, in
//	              --user U's partition (a direct message or a receipt),
//	              --group G's, or everyone's (neither); with its ledger entry
//	publish       a message to users (--user, repeated), for an operator's
//	              announcement: --title, --body (JSON), --category,
//	              --sender, --host-id, --cta, --label; prints the message
//	              and who got it (delivered), had it (duplicates) or
//	              opted out of its category (opted_out)
//	broadcast     the same to everyone in the inbox, or --group G, stored once
//	redact        remove a message from every inbox that holds it: --id or
//	              --host-id, with --user for each recipient of a direct
//	              message or --group for a group message ($public for
//	              everyone's); prints how many copies went (if it fails
//	              after some went, the error says how many: run it again
//	              for the rest)
//	scheduled     one page of what an inbox has scheduled and not yet due
//	              (publish or broadcast --deliver-at), earliest first: each
//	              copy with its user, a broadcast or group message once,
//	              with its audience: --tenant, --inbox [--limit N]
//	              [--cursor C]
//	due           one page of the scheduled deliveries that came due in
//	              [--from, --to) (RFC 3339 times; --to defaults to now):
//	              --tenant, --inbox, --from [--to] [--limit N] [--cursor C]
//	backfill-scheduled
//	              give the scheduled messages not yet due that an earlier
//	              version wrote without the scheduled index's keys their
//	              keys, so that scheduled and due list them (--tenant,
//	              --inbox [--parallel N]): a Scan finds the inbox's
//	              partitions, a Query of each reads its messages not yet
//	              due, one conditional UpdateItem a message; a summary
//	              goes to stdout
//
// Global flags, accepted before or after the command:
//
//	--endpoint-url URL   DynamoDB (and DynamoDB Streams) endpoint instead of
//	                     AWS's, e.g. http://localhost:8000 for DynamoDB Local
//	--region R           AWS region (default: from the AWS config/environment)
//	--table T            the table (default: $INBOX_TABLE; required)
//	-o, --output F       json (default, pretty-printed, snake_case fields)
//	                     or table (aligned columns)
//	--unread-index N     the table's unread index (default "unread"); "" for
//	                     a table created without it (create-table then
//	                     makes none)
//	--thread-index N     the table's thread index (default "thread"); "" for
//	                     a table created without it, as --unread-index
//	--scheduled-index N  the table's scheduled index (default "scheduled");
//	                     "" for a table without it (scheduled and due then
//	                     fail; create-table makes none)
//	--log-ops            log each library operation the command makes to
//	                     stderr, a JSON line each (inbox.LogHooks): its
//	                     duration, outcome, DynamoDB requests, round trips
//	                     and capacity units, and for recount the counters
//	                     it repaired; never a user ID or a message's content
//	--otel               write the same as OpenTelemetry spans (one per
//	                     operation, Store call and DynamoDB request) and,
//	                     at exit and every minute, metrics, to stderr, a
//	                     JSON object a line (package otelinbox/otelstdout,
//	                     the SDK's stdout exporters); not with --log-ops
//
// The command is a Go module of its own (github.com/stak/inbox/cmd/inbox),
// so that it can link OpenTelemetry while the inbox module's go.mod names
// none: build or install it from its directory (go install .).
//
// recount --all reads the whole table once (a Scan, whose filter does not
// lower its cost) and then every record of the inbox's partitions; it
// writes what it repairs, and each partition's recount time. A partition
// that fails does not stop the others: the summary lists it, and the exit
// status is 1.
//
// The table must use the default attribute names (pk, sk, expiredat).
//
// Credentials and the region come from the environment and the shared AWS
// config files, as for any AWS SDK client. DynamoDB Local takes any
// credentials, but some must be set (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY).
//
// Exit status: 0 on success (stream: also when interrupted); 1 when a
// request or a recount fails; 2 for a usage error, found before any
// request: an unknown command, a missing or malformed flag, no region, or
// a flag value the library refuses (a key with '#' is inbox.ErrInvalidKey,
// a foreign cursor inbox.ErrInvalidCursor, a message too large
// inbox.ErrTooLarge; a few only after a read, such as a redaction that
// names another group than its host ID's claim, and then nothing is
// written). Errors go to stderr, as
// "inbox: <command>: <error>".
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

	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/otelinbox/otelstdout"
)

// Exit statuses of run.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand: its name, its flags' synopsis and summary for
// the usage, and setup, which registers its flags on fs and returns the
// function that runs it once they are parsed.
type command struct {
	name     string
	synopsis string
	summary  string
	setup    func(fs *flag.FlagSet) func(ctx context.Context, e *env) error
}

// commands returns the subcommands, in the order the usage lists them.
func commands() []command {
	return []command{
		{"create-table", "", "create the table (keys, TTL, stream), or finish an existing one; print its name and stream ARN", setupCreateTable},
		{"delete-table", "", "delete the table", setupDeleteTable},
		{"feed", "--tenant T --inbox I --user U [--group G ...] [--unread] [--category C] [--archived] [--limit N] [--cursor C]", "print one page of a user's feed", setupFeed},
		{"counts", "--tenant T --inbox I --user U [--group G ...]", "print a user's counts", setupCounts},
		{"preferences", "--tenant T --inbox I --user U [--set [--mute G ...] [--mute-category C ...] [--opt-out C ...] [--mute-thread T ...] | --reset]", "print, or with --set replace, a user's muted groups, categories and threads and the categories opted out of", setupPreferences},
		{"recount", "--tenant T --inbox I (--user U [--group G ...] | --all) [--parallel N]", "rebuild a user's, or a whole inbox's, counters", setupRecount},
		{"stream", "[--from P] [--consumer C] [--interval D]", "feed the table's stream to the inbox's stream handler until interrupted", setupStream},
		{"config", "--tenant T --inbox I", "print an inbox's tenant settings and inbox config", setupConfig},
		{"set-tenant", "--tenant T [--title S] [--ttl D] [--by U] [--mute G ...] [--mute-category C ...] [--opt-out C ...]", "replace a tenant's settings (with its users' default preferences)", setupSetTenant},
		{"set-inbox", "--tenant T --inbox I [--title S] [--description S] [--ttl CATEGORY=D ...] [--by U] [--mute G ...] [--mute-category C ...] [--opt-out C ...]", "replace an inbox's config (with its users' default preferences)", setupSetInbox},
		{"get", "--tenant T --inbox I --id ID [--user U | --group G]", "print one message, receipt or broadcast as it is stored", setupGet},
		{"publish", "--tenant T --inbox I --user U [--user U ...] [--title S] [--body JSON] [--category C] [--host-id H] ...", "send a message to users", setupPublish},
		{"broadcast", "--tenant T --inbox I [--group G] [--title S] [--body JSON] [--category C] [--host-id H] ...", "send a message to everyone, or a group, stored once", setupBroadcast},
		{"redact", "--tenant T --inbox I (--id ID | --host-id H) [--user U ...] [--group G]", "remove a message from every inbox that holds it", setupRedact},
		{"scheduled", "--tenant T --inbox I [--limit N] [--cursor C]", "print what an inbox has scheduled and not yet due", setupScheduled},
		{"due", "--tenant T --inbox I --from TIME [--to TIME] [--limit N] [--cursor C]", "print the scheduled deliveries that came due in a window", setupDue},
		{"backfill-scheduled", "--tenant T --inbox I [--parallel N]", "give scheduled messages an earlier version wrote the scheduled index's keys", setupBackfillScheduled},
	}
}

// globals are the flags every command takes.
type globals struct {
	endpoint    string
	region      string
	table       string
	output      string
	unreadIndex string
	threadIndex string
	scheduled   string // the scheduled index's name
	logOps      bool
	otel        bool
}

// storeOptions are the dynamo options the globals select.
func (g *globals) storeOptions() []dynamo.Option {
	return []dynamo.Option{dynamo.WithUnreadIndex(g.unreadIndex), dynamo.WithThreadIndex(g.threadIndex), dynamo.WithScheduledIndex(g.scheduled)}
}

// isGlobal reports whether name is one of the flags globals registers.
func isGlobal(name string) bool {
	switch name {
	case "endpoint-url", "region", "table", "output", "o", "unread-index", "thread-index", "scheduled-index", "log-ops", "otel":
		return true
	}
	return false
}

// register registers the global flags on fs, bound to g, with g's current
// values as defaults: a command's flag set registers them again, so they
// may follow the command too.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.endpoint, "endpoint-url", g.endpoint, "DynamoDB (and Streams) endpoint `URL` instead of AWS's, e.g. http://localhost:8000")
	fs.StringVar(&g.region, "region", g.region, "AWS `region` (default: from the AWS config and environment)")
	fs.StringVar(&g.table, "table", g.table, "the `table` (default: $INBOX_TABLE)")
	fs.StringVar(&g.output, "output", g.output, "output `format`: json or table")
	fs.StringVar(&g.output, "o", g.output, "shorthand for --output")
	fs.StringVar(&g.unreadIndex, "unread-index", g.unreadIndex, "the table's unread index `name`; \"\" for a table without one")
	fs.StringVar(&g.threadIndex, "thread-index", g.threadIndex, "the table's thread index `name`; \"\" for a table without one")
	fs.StringVar(&g.scheduled, "scheduled-index", g.scheduled, "the table's scheduled index `name`; \"\" for a table without one")
	fs.BoolVar(&g.logOps, "log-ops", g.logOps, "log each library operation (duration, outcome, requests, capacity units) to stderr as JSON")
	fs.BoolVar(&g.otel, "otel", g.otel, "write each library operation's OpenTelemetry spans, and the metrics, to stderr as JSON")
}

// resolve fills in the defaults from the environment and checks g.
func (g *globals) resolve(getenv func(string) string) error {
	if g.table == "" {
		g.table = getenv("INBOX_TABLE")
	}
	if g.table == "" {
		return usagef("no table: pass --table or set INBOX_TABLE")
	}
	switch g.output {
	case outputJSON, outputTable:
	default:
		return usagef("--output %q: want json or table", g.output)
	}
	if g.logOps && g.otel {
		return usagef("--log-ops and --otel: pass one")
	}
	return nil
}

// env is what a running command works with: the global flags and the
// output streams, and with --otel the telemetry its Inbox reports to
// (set by openInbox, shut down by run).
type env struct {
	globals
	stdout, stderr io.Writer
	telemetry      *otelstdout.Telemetry
}

// run runs the command line args (without the program name), writing
// results to stdout and errors and progress to stderr, and returns the
// exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := globals{output: outputJSON, unreadIndex: dynamo.DefaultUnreadIndex, threadIndex: dynamo.DefaultThreadIndex, scheduled: dynamo.DefaultScheduledIndex}
	top := flag.NewFlagSet("inbox", flag.ContinueOnError)
	g.register(top)
	if code, ok := parseFlags(top, args, stdout, stderr, func(w io.Writer) { mainUsage(w, top) }); !ok {
		return code
	}
	if top.NArg() == 0 {
		fmt.Fprintln(stderr, "inbox: no command")
		mainUsage(stderr, top)
		return exitUsage
	}
	name := top.Arg(0)
	if name == "help" && top.NArg() == 1 {
		mainUsage(stdout, top)
		return exitOK
	}
	if name == "help" {
		// help <command> is <command> --help.
		return run(ctx, []string{top.Arg(1), "--help"}, stdout, stderr)
	}
	var cmd *command
	for _, c := range commands() {
		if c.name == name {
			cmd = &c
			break
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "inbox: unknown command %q\n", name)
		fmt.Fprintln(stderr, "Run 'inbox help' for the commands.")
		return exitUsage
	}
	fs := flag.NewFlagSet("inbox "+name, flag.ContinueOnError)
	exec := cmd.setup(fs)
	g.register(fs)
	if code, ok := parseFlags(fs, top.Args()[1:], stdout, stderr, func(w io.Writer) { commandUsage(w, *cmd, fs) }); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return report(stderr, name, usagef("unexpected argument %q", fs.Arg(0)))
	}
	if err := g.resolve(os.Getenv); err != nil {
		return report(stderr, name, err)
	}
	e := &env{globals: g, stdout: stdout, stderr: stderr}
	err := exec(ctx, e)
	if e.telemetry != nil {
		// The last metrics, and the spans still buffered.
		err = errors.Join(err, e.telemetry.Shutdown(context.WithoutCancel(ctx)))
	}
	return report(stderr, name, err)
}

// parseFlags parses args into fs. On --help it prints the usage to stdout
// and returns exitOK, false; on a bad flag the error and a hint to stderr,
// and exitUsage, false.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, usage func(io.Writer)) (int, bool) {
	fs.SetOutput(io.Discard) // errors and usage are printed here
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(stdout)
		return exitOK, false
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", strings.Replace(fs.Name(), " ", ": ", 1), err)
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", fs.Name())
		return exitUsage, false
	}
	return exitOK, true
}

// usageError is an error in the command line, found before any request
// is made. It wraps the library's error for an argument the library
// refuses (an invalid key, say), for errors.Is.
type usageError struct {
	flag string // the flag at fault, if it is not in err's message
	err  error
}

// Error returns the message, led by the flag at fault if set.
func (e *usageError) Error() string {
	if e.flag == "" {
		return e.err.Error()
	}
	return "--" + e.flag + ": " + strings.TrimPrefix(e.err.Error(), "inbox: ")
}

// Unwrap returns the error wrapped.
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usageError.
func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// asUsage returns err, if not nil, as a usageError: for the library's
// validation of a flag's value.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err: err}
}

// isUsage reports whether err is the caller's fault (exit status 2).
func isUsage(err error) bool {
	var u *usageError
	return errors.As(err, &u)
}

// report prints err, if any, to stderr as "inbox: <command>: <error>"
// and returns the exit status for it.
func report(stderr io.Writer, name string, err error) int {
	if err == nil {
		return exitOK
	}
	// The library's errors start with its package name: say it once.
	fmt.Fprintf(stderr, "inbox: %s: %s\n", name, strings.TrimPrefix(err.Error(), "inbox: "))
	if !isUsage(err) {
		return exitError
	}
	fmt.Fprintf(stderr, "Run 'inbox %s --help' for usage.\n", name)
	return exitUsage
}

// mainUsage prints the usage of the command line as a whole.
func mainUsage(w io.Writer, top *flag.FlagSet) {
	fmt.Fprintln(w, "Usage: inbox [global flags] <command> [flags]")
	fmt.Fprintln(w, "\nCommands:")
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.name))
	}
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-*s %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w, "\nGlobal flags (also accepted after the command):")
	printFlags(w, top, isGlobal)
	fmt.Fprintln(w, "\nRun 'inbox <command> --help' for a command's flags.")
	fmt.Fprintln(w, "Exit status: 0 success, 1 failure, 2 usage error or invalid argument.")
}

// commandUsage prints c's usage; fs holds its flags and the global ones.
func commandUsage(w io.Writer, c command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: inbox [global flags] %s %s\n\n%s%s.\n", c.name, c.synopsis, strings.ToUpper(c.summary[:1]), c.summary[1:])
	own := false
	fs.VisitAll(func(f *flag.Flag) { own = own || !isGlobal(f.Name) })
	if own {
		fmt.Fprintln(w, "\nFlags:")
		printFlags(w, fs, func(name string) bool { return !isGlobal(name) })
	}
	fmt.Fprintln(w, "\nGlobal flags:")
	printFlags(w, fs, isGlobal)
}

// printFlags prints the flags of fs that keep selects, AWS CLI style:
// --name, and -o with --output.
func printFlags(w io.Writer, fs *flag.FlagSet, keep func(string) bool) {
	fs.VisitAll(func(f *flag.Flag) {
		if !keep(f.Name) || f.Name == "o" {
			return
		}
		arg, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if f.Name == "output" {
			line = "  -o, --output"
		}
		if arg != "" {
			line += " " + arg
		}
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "0s" {
			usage += " (default " + d + ")"
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, usage)
	})
}
