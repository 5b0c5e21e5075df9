// Command baedal is the single binary of baedal: the local stack, the API
// server and workers, data tools and benchmarks. It only parses flags and
// calls library packages.
//
// Every command answers -h and --help with its synopsis, its flags grouped
// by component, one example, and exits 0 (package internal/flaghelp).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/baedal/baedal/benchmarks/replbench"
)

// command is one subcommand: it parses its own flags from args. Under
// flaghelp.WithParseOnly it returns once its flags and arguments are
// checked, before it connects to anything.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"up":      {"start the local stack (OpenSearch, Redis, PostgreSQL) and the server", runUp},
		"down":    {"stop every process of the local stack", runDown},
		"status":  {"show the local stack's processes and their health", runStatus},
		"serve":   {"run the HTTP API and workers against configured backends", runServe},
		"search":  {"run one search on a layout (split, nested, hot)", runSearch},
		"bench":   {"run a benchmark (baseline and ours interleaved), compare two runs", runBench},
		"gen":     {"write the generated catalog as NDJSON change events", runGen},
		"load":    {"append the generated catalog to the event log", runLoad},
		"feed":    {"feed operations: seed --preset experiment|social", runFeed},
		"links":   {"link store operations: mode [--set MODE] (migration)", runLinks},
		"reindex": {"live reindex: start|status|pause|resume|rethrottle|rollback|cleanup", runReindex},
		"version": {"print the version, the git revision and the Go version", runVersion},
	}
}

func main() {
	if replbench.IsClientProcess() {
		// `bench replicas` started this binary as one of its client
		// processes: it answers the benchmark on stdin/stdout, nothing else.
		if err := replbench.ServeClientProcess(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole binary, returning the exit status: 0, 1 when a command
// failed, 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		usage(stderr, cmds)
		return 2
	}
	switch args[0] {
	case "help":
		if len(args) == 1 {
			usage(stdout, cmds)
			return 0
		}
		args = append(args[1:], "-h") // baedal help bench search
	case "-h", "-help", "--help":
		usage(stdout, cmds)
		return 0
	case "-version", "--version":
		args = []string{"version"}
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "baedal: unknown command %q; allowed: %s (see baedal --help)\n", args[0], strings.Join(names(cmds), ", "))
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // the help was printed
		}
		fmt.Fprintf(stderr, "baedal %s: %v\n", args[0], err)
		var ue usageError
		if errors.As(err, &ue) {
			return 2
		}
		return 1
	}
	return 0
}

// usageError is a command line that does not parse (exit status 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: baedal <command> [flags] [arguments]\n       baedal --version\n\nbaedal: real-time shop search, live reindex, replica selection, compact links\nand follow feeds on OpenSearch, Redis and PostgreSQL.\n\ncommands:")
	for _, n := range names(cmds) {
		fmt.Fprintf(w, "  %-8s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nexample:\n  baedal up --demo-shops 20000\n\nRun `baedal <command> -h` (or `baedal help <command>`) for its flags, grouped by\ncomponent. Every flag can also be set by an environment variable: --redis-addr is BAEDAL_REDIS_ADDR.")
}

func names(cmds map[string]command) []string {
	var out []string
	for n := range cmds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
