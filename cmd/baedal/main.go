// Command baedal is the single binary of baedal: the local stack, the API
// server and workers, data tools and benchmarks. It only parses flags and
// calls library packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/baedal/baedal/reindex"
)

// command is one subcommand: it parses its own flags from args.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"up":     {"start the local stack (OpenSearch, Redis, PostgreSQL) and the server", runUp},
		"down":   {"stop every process of the local stack", runDown},
		"status": {"show the local stack's processes and their health", runStatus},
		"serve":  {"run the HTTP API and workers against configured backends", runServe},
		"search": {"run one search on the split layout or the nested baseline", runSearch},
		"bench":  {"run a benchmark: baseline and ours interleaved, HTML report, JSON summary", runBench},
		"gen":    {"write the generated catalog as NDJSON change events", runGen},
		"load":   {"append the generated catalog to the event log", runLoad},
		"feed":   {"feed operations: seed --preset experiment|social", runFeed},
		"links":  {"link store operations: mode [--set MODE] (migration)", runLinks},
		"reindex": {"live reindex: start|status|pause|resume|rethrottle|rollback|cleanup", func(ctx context.Context, args []string) error {
			return reindex.CLI(ctx, args, os.Stdout, os.Stderr)
		}},
	}
}

func main() {
	cmds := commands()
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage(cmds)
		os.Exit(2)
	}
	cmd, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "baedal: unknown command %q; allowed: %s\n", os.Args[1], strings.Join(names(cmds), ", "))
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "baedal %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage(cmds map[string]command) {
	fmt.Fprintln(os.Stderr, "usage: baedal <command> [flags]\n\ncommands:")
	for _, n := range names(cmds) {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nEvery flag can also be set by an environment variable: --redis-addr is BAEDAL_REDIS_ADDR.\nRun `baedal <command> -h` for its flags.")
}

func names(cmds map[string]command) []string {
	var out []string
	for n := range cmds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
