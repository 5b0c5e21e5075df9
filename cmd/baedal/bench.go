package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/baedal/baedal/app/nodeloss"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/benchsuite"
	"github.com/baedal/baedal/indexer/indexbench"
	"github.com/baedal/baedal/linkstore/linkbench"
	"github.com/baedal/baedal/reindex/reindexbench"
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
		"reindex":  benchReindex,
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
		return fmt.Errorf("which benchmark? allowed: all, %s (e.g. baedal bench search --profile quick)", strings.Join(names, ", "))
	}
	if args[0] == "all" {
		return benchAll(ctx, args[1:], all)
	}
	run, ok := all[args[0]]
	if !ok {
		return fmt.Errorf("unknown benchmark %q; allowed: all, %s", args[0], strings.Join(names, ", "))
	}
	return run(ctx, args[1:])
}

func benchSearch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench search", flag.ContinueOnError)
	cfg := searchbench.Defaults()
	cfg.Flags(fs)
	nodeLoss := nodeloss.BenchDefaults()
	nodeLoss.Flags(fs)
	var logs logConfig
	logs.flags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := nodeLoss.Validate(); err != nil {
		return err
	}
	if nodeLoss.Enabled() {
		run := nodeLoss.Config()
		run.Progress = os.Stderr
		res, err := nodeloss.Run(ctx, run, nil)
		if err != nil {
			return err
		}
		s := res.Summary(nodeLoss, "baedal bench search "+strings.Join(args, " "))
		path, err := nodeloss.WriteJSON(cfg.Bench.WithDefaults().ReportDir, s, res)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "report: %s\n", path)
		return bench.PrintSummary(os.Stdout, s)
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

// benchAll runs every registered benchmark and writes reports/index.html.
func benchAll(ctx context.Context, args []string, registered map[string]func(context.Context, []string) error) error {
	fs := flag.NewFlagSet("bench all", flag.ContinueOnError)
	cfg := benchsuite.Config{Profile: bench.ProfileQuick, ReportDir: bench.DefaultReportDir}
	fs.Var(&cfg.Profile, "profile", "run size of every benchmark: quick or full")
	fs.StringVar(&cfg.ReportDir, "report-dir", cfg.ReportDir, "directory of the reports and index.html")
	if err := parse(fs, args); err != nil {
		return err
	}
	for _, name := range benchsuite.Benchmarks() {
		if _, ok := registered[name]; ok {
			cfg.Only = append(cfg.Only, name)
		}
	}
	results, err := benchsuite.Run(ctx, cfg, os.Stderr)
	if err != nil {
		return err
	}
	path, err := benchsuite.WriteIndex(cfg.ReportDir, bench.CommandLine(), results)
	if err != nil {
		return err
	}
	failed := 0
	summary := map[string]any{"bench": "all", "profile": string(cfg.Profile), "index": path}
	for _, r := range results {
		if r.Err != nil {
			failed++
			summary[r.Bench] = map[string]any{"error": r.Err.Error()}
			continue
		}
		summary[r.Bench] = r.Summary
	}
	fmt.Fprintf(os.Stderr, "index: %s\n", path)
	if err := bench.PrintSummary(os.Stdout, summary); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d benchmark(s) failed; see %s", failed, path)
	}
	return nil
}

func benchReindex(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench reindex", flag.ContinueOnError)
	cfg := reindexbench.Defaults()
	cfg.Flags(fs)
	cfg.Backends.Flags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	_, err := reindexbench.Run(ctx, cfg, os.Stdout)
	return err
}
