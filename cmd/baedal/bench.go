package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/indexer/indexbench"
	"github.com/baedal/baedal/linkstore/linkbench"
	"github.com/baedal/baedal/replbench"
	"github.com/baedal/baedal/searcher/searchbench"
)

// benchmarks maps `baedal bench <name>` to its runner. Every runner prints
// progress on stderr and its JSON summary as the last line of stdout.
func benchmarks() map[string]func(ctx context.Context, args []string) error {
	return map[string]func(ctx context.Context, args []string) error{
		"search":   benchSearch,
		"feed":     benchFeed,
		"index":    benchIndex,
		"replicas": benchReplicas,
		"links":    benchLinks,
	}
}

func runBench(ctx context.Context, args []string) error {
	all := benchmarks()
	var names []string
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("which benchmark? allowed: %s (e.g. baedal bench search --profile quick)", strings.Join(names, ", "))
	}
	run, ok := all[args[0]]
	if !ok {
		return fmt.Errorf("unknown benchmark %q; allowed: %s", args[0], strings.Join(names, ", "))
	}
	return run(ctx, args[1:])
}

func benchSearch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench search", flag.ContinueOnError)
	cfg := searchbench.Defaults()
	cfg.Flags(fs)
	var logs logConfig
	logs.flags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	log, err := logs.logger()
	if err != nil {
		return err
	}
	s, err := searchbench.Run(ctx, cfg, log, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "report: %s\n", s.Report)
	return bench.PrintSummary(os.Stdout, s)
}

func benchIndex(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench index", flag.ContinueOnError)
	cfg := indexbench.Defaults()
	cfg.Flags(fs)
	cfg.Backends.Flags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	_, err := indexbench.Run(ctx, cfg, os.Stdout)
	return err
}

func benchReplicas(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench replicas", flag.ContinueOnError)
	var cfg replbench.Config
	cfg.Flags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	_, err := replbench.Run(ctx, cfg, os.Stdout)
	return err
}

func benchLinks(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench links", flag.ContinueOnError)
	cfg := linkbench.Defaults()
	cfg.Flags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	s, err := linkbench.Run(ctx, cfg, os.Stderr)
	if err != nil {
		return err
	}
	return bench.PrintSummary(os.Stdout, s)
}
