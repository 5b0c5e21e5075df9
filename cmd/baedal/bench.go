package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/baedal/baedal/app/nodeloss"
	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/benchmarks/benchsuite"
	"github.com/baedal/baedal/benchmarks/feedbench"
	"github.com/baedal/baedal/benchmarks/indexbench"
	"github.com/baedal/baedal/benchmarks/linkbench"
	"github.com/baedal/baedal/benchmarks/reindexbench"
	"github.com/baedal/baedal/benchmarks/replbench"
	"github.com/baedal/baedal/benchmarks/scalebench"
	"github.com/baedal/baedal/benchmarks/searchbench"
	"github.com/baedal/baedal/internal/flaghelp"
	"github.com/baedal/baedal/localstack"
)

// Server kinds a benchmark may use, as named in run records.
const (
	serverOpenSearch = "opensearch"
	serverRedis      = "redis"
	serverPostgres   = "postgresql"
)

// benchmark is one `baedal bench <name>`.
type benchmark struct {
	summary string
	example string
	// servers are the kinds of server the benchmark uses, given its parsed
	// flags.
	servers func(c *flaghelp.Command) []string
	// bind binds the benchmark's flags to c and returns its run.
	bind func(c *flaghelp.Command) benchRun
}

// benchRun is a benchmark with its flags bound: check validates them,
// run runs it and prints its JSON summary as the last line of stdout.
type benchRun struct {
	check func() error
	run   func(ctx context.Context, stdout io.Writer) error
	// given, if set, returns the backend addresses given by flags (after
	// parsing); the benchmark uses those instead of a local stack's.
	given func() backend.Config
	// redisServer, if set, returns the redis-server binary the benchmark
	// starts itself ("" when it uses a given Redis).
	redisServer func() string
	// onPartial, if set, is given before the run a function that writes
	// the run record of a partial summary, for a benchmark that saves its
	// record as it goes; each call replaces the previous record, and the
	// final summary replaces the last.
	onPartial func(save func(summary any) error)
}

func uses(kinds ...string) func(*flaghelp.Command) []string {
	return func(*flaghelp.Command) []string { return kinds }
}

// benchmarks maps `baedal bench <name>` to its runner. Every runner prints
// progress on stderr and its JSON summary as the last line of stdout.
func benchmarks() map[string]benchmark {
	return map[string]benchmark{
		"search": {
			summary: "nested vs split (vs hot) search latency, idle and under hot-field update load, with equivalence checks",
			example: "baedal bench search --profile quick --queries 1000",
			servers: uses(serverOpenSearch),
			bind: func(c *flaghelp.Command) benchRun {
				cfg := searchbench.Defaults()
				c.Group("benchmark", cfg.Flags)
				nodeLoss := nodeloss.BenchDefaults()
				c.Group("node loss", nodeLoss.Flags)
				var logs logConfig
				c.Group("log", logs.flags)
				check := func() error { return errors.Join(cfg.Validate(), nodeLoss.Validate()) }
				return benchRun{check: check, run: func(ctx context.Context, stdout io.Writer) error {
					if nodeLoss.Enabled() {
						// The node-loss scenario: a 3-node cluster of its own.
						run := nodeLoss.Config()
						run.Progress = os.Stderr
						res, err := nodeloss.Run(ctx, run, nil)
						if err != nil {
							return err
						}
						s := res.Summary(nodeLoss, "baedal bench search "+strings.Join(os.Args[min(3, len(os.Args)):], " "))
						path, err := nodeloss.WriteJSON(cfg.Bench.WithDefaults().ReportDir, s, res)
						if err != nil {
							return err
						}
						fmt.Fprintf(os.Stderr, "report: %s\n", path)
						return bench.PrintSummary(stdout, s)
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
					return bench.PrintSummary(stdout, s)
				}}
			},
		},
		"index": {
			summary: "indexing throughput, bytes written and freshness of shop updates, nested vs split",
			example: "baedal bench index --profile quick --rounds 2",
			servers: uses(serverOpenSearch, serverRedis),
			bind: func(c *flaghelp.Command) benchRun {
				cfg := indexbench.Defaults()
				c.Group("benchmark", cfg.Flags)
				c.Group("backends", cfg.Backends.Flags)
				return benchRun{check: cfg.Validate, given: func() backend.Config { return cfg.Backends }, run: func(ctx context.Context, stdout io.Writer) error {
					_, err := indexbench.Run(ctx, cfg, stdout)
					return err
				}}
			},
		},
		"replicas": {
			summary: "replica selection: C3 vs every peer policy on Redis replicas and OpenSearch endpoints, OpenSearch ARS on/off",
			example: "baedal bench replicas --profile quick --skip-opensearch --rounds 3 --round-duration 4s --policies c3,round-robin",
			servers: func(c *flaghelp.Command) []string {
				if f := c.FS.Lookup("skip-opensearch"); f != nil && f.Value.String() == "true" {
					return []string{serverRedis}
				}
				if f := c.FS.Lookup("skip-redis"); f != nil && f.Value.String() == "true" {
					return []string{serverOpenSearch}
				}
				return []string{serverRedis, serverOpenSearch}
			},
			bind: func(c *flaghelp.Command) benchRun {
				var cfg replbench.Config
				c.Group("benchmark", cfg.Flags)
				return benchRun{check: cfg.Validate, run: func(ctx context.Context, stdout io.Writer) error {
					_, err := replbench.Run(ctx, cfg, stdout, os.Stderr)
					return err
				}}
			},
		},
		"links": {
			summary: "click record formats in Redis: memory per record, encode and decode time, JSON baseline",
			example: "baedal bench links --profile quick",
			servers: uses(serverRedis),
			bind: func(c *flaghelp.Command) benchRun {
				cfg := linkbench.Defaults()
				c.Group("benchmark", cfg.Flags)
				return benchRun{check: cfg.Validate, given: func() backend.Config {
					var b backend.Config
					b.Redis.Addr = cfg.RedisAddr
					return b
				}, redisServer: func() string {
					if cfg.RedisAddr != "" {
						return ""
					}
					return cfg.RedisServer
				}, run: func(ctx context.Context, stdout io.Writer) error {
					s, err := linkbench.Run(ctx, cfg, os.Stderr)
					if err != nil {
						return err
					}
					return bench.PrintSummary(stdout, s)
				}}
			},
		},
		"feed": {
			summary: "follow feed: pull, push and hybrid fan-out; read latency, consistency, fan-out time",
			example: "baedal bench feed --profile quick",
			servers: uses(serverRedis, serverPostgres),
			bind:    bindBenchFeed,
		},
		"scale": {
			summary: "the cost curve: bench index and bench search on nested, split and hot at growing catalog sizes, with disk, heap and the hot table's size",
			example: "baedal bench scale --sizes 5000,20000",
			servers: uses(serverOpenSearch, serverRedis),
			bind: func(c *flaghelp.Command) benchRun {
				cfg := scalebench.Defaults()
				c.Group("benchmark", cfg.Flags)
				return benchRun{check: cfg.Validate, onPartial: func(save func(any) error) {
					cfg.OnSize = func(s scalebench.Summary) error { return save(s) }
				}, run: func(ctx context.Context, stdout io.Writer) error {
					s, err := scalebench.Run(ctx, cfg, stdout)
					if err == nil {
						fmt.Fprintf(os.Stderr, "report: %s\n", s.Report)
					}
					return err
				}}
			},
		},
		"reindex": {
			summary: "live reindex: replicas, slices and shards of the copy; lost updates and stale documents",
			example: "baedal bench reindex --profile quick",
			servers: uses(serverOpenSearch, serverRedis),
			bind: func(c *flaghelp.Command) benchRun {
				cfg := reindexbench.Defaults()
				c.Group("benchmark", cfg.Flags)
				c.Group("backends", cfg.Backends.Flags)
				// Run checks the flags once the profile has filled them in.
				return benchRun{given: func() backend.Config { return cfg.Backends }, run: func(ctx context.Context, stdout io.Writer) error {
					_, err := reindexbench.Run(ctx, cfg, stdout)
					return err
				}}
			},
		},
	}
}

func bindBenchFeed(c *flaghelp.Command) benchRun {
	cfg := feedbench.Defaults()
	c.Group("benchmark", cfg.Flags)
	backends := backend.Defaults()
	var stateDir *string
	c.Group("backends", func(fs *flag.FlagSet) {
		fs.StringVar(&backends.Redis.Addr, "redis-addr", "", "Redis primary host:port (default: the local stack's)")
		fs.StringVar(&backends.Postgres.URL, "postgres-url", "", "PostgreSQL URL with the right to create databases (default: the local stack's)")
		stateDir = fs.String("state-dir", localstack.Defaults().StateDir, "local stack to use for backends not given by flags")
	})
	check := func() error {
		// As Run checks it, with the addresses it takes from a stack.
		c := cfg
		c.EnsureDefaults()
		c.RedisAddr, c.PostgresURL = "127.0.0.1:1", "postgres://placeholder@127.0.0.1:1/placeholder"
		return c.Validate()
	}
	return benchRun{check: check, given: func() backend.Config { return backends }, run: func(ctx context.Context, stdout io.Writer) error {
		if backends.Redis.Addr == "" || backends.Postgres.URL == "" {
			st, stop, err := localstack.UseOrStart(ctx, *stateDir, os.Stderr)
			if err != nil {
				return err
			}
			defer stop()
			if backends.Redis.Addr == "" {
				backends.Redis.Addr = st.RedisAddr
			}
			if backends.Postgres.URL == "" {
				backends.Postgres.URL = st.PostgresURL
			}
		}
		cfg.PostgresURL, cfg.RedisAddr = backends.Postgres.URL, backends.Redis.Addr
		cfg.Command = bench.CommandLine()
		_, err := feedbench.Run(ctx, cfg, stdout, os.Stderr)
		return err
	}}
}

func benchNames(all map[string]benchmark) []string {
	var names []string
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func runBench(ctx context.Context, args []string) error {
	all := benchmarks()
	names := benchNames(all)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		c := newCommand("bench", "baedal bench all|compare|targets|"+strings.Join(names, "|")+" [flags]",
			"Run a benchmark: baseline and ours interleaved in one process, an HTML report and a JSON\n"+
				"summary (the last stdout line), and a run record in <report-dir>/runs/ to compare later.",
			"baedal bench search --profile quick --check")
		c.Subcommands = append(c.Subcommands, [2]string{"all", "run every benchmark and write reports/index.html"})
		c.Subcommands = append(c.Subcommands, [2]string{"compare", "compare two run records: baedal bench compare RUN_A RUN_B"})
		c.Subcommands = append(c.Subcommands, [2]string{"targets", "the targets of run records as a Markdown table: baedal bench targets RUN..."})
		c.Subcommands = append(c.Subcommands, [2]string{"scale-plots", "the cost curve's plots of a bench scale run record as SVG files: baedal bench scale-plots --out DIR RUN"})
		for _, n := range names {
			c.Subcommands = append(c.Subcommands, [2]string{n, all[n].summary})
		}
		c.Notes = benchCheckNote
		if err := parse(c, args); err != nil {
			return err
		}
		return usageError{fmt.Errorf("which benchmark? allowed: all, compare, targets, %s (see baedal bench -h)", strings.Join(names, ", "))}
	}
	switch args[0] {
	case "all":
		return benchAll(ctx, args[1:], all)
	case "compare":
		return benchCompare(ctx, args[1:])
	case "targets":
		return benchTargets(ctx, args[1:])
	case "scale-plots":
		return benchScalePlots(ctx, args[1:])
	}
	b, ok := all[args[0]]
	if !ok {
		return usageError{fmt.Errorf("unknown benchmark %q; allowed: all, compare, targets, %s", args[0], strings.Join(names, ", "))}
	}
	return benchOne(ctx, args[0], b, args[1:])
}

const benchCheckNote = `--check: the exit status is 1 when a target's verdict is missed (its whole 95% interval on
the bad side). Undecided targets (the interval straddles the target, or there is no interval)
are listed on stderr but do not fail the run: a noisy run should not fail a check that more
rounds could pass; rerun with more --rounds or the full profile to decide them.`

// benchOne runs one benchmark, writes its run record and applies --check.
func benchOne(ctx context.Context, name string, b benchmark, args []string) error {
	c := newCommand("bench "+name, "baedal bench "+name+" [flags]", name+": "+b.summary+".\n"+
		"Prints progress on stderr, the JSON summary as the last stdout line, and writes\n"+
		"<report-dir>/"+name+".html, <report-dir>/"+name+".json and a run record\n"+
		"<report-dir>/runs/<UTC time>-"+name+".json (revision, server versions, load, targets).", b.example)
	r := b.bind(c)
	var check bool
	var runsDir string
	c.Group("run record", func(fs *flag.FlagSet) {
		fs.BoolVar(&check, "check", false, "exit 1 when a target's verdict is missed (undecided: reported, exit 0)")
		fs.StringVar(&runsDir, "runs-dir", "", "directory of run records (default: <report-dir>/runs)")
	})
	c.Notes = benchCheckNote
	if err := parse(c, args); err != nil {
		return err
	}
	if r.check != nil {
		if err := r.check(); err != nil {
			return usageError{err}
		}
	}
	if parseOnly(ctx) {
		return nil
	}
	if runsDir == "" {
		reportDir := bench.DefaultReportDir
		if f := c.FS.Lookup("report-dir"); f != nil && f.Value.String() != "" {
			reportDir = f.Value.String()
		}
		runsDir = filepath.Join(reportDir, bench.DefaultRunsDir)
	}

	servers := newServerVersions(b.servers(c), r, c)
	servers.askGiven(ctx)
	ctx = localstack.WithObserver(ctx, func(st *localstack.State) { servers.askStack(ctx, st) })
	// The revision is read before the run: a commit made while a long run
	// goes on must not be stamped on its record (issue 42's record was).
	revision := sourceRevision(ctx)
	start := time.Now().UTC()
	before, _ := bench.ReadLoadAvg()
	path := "" // the record, once written
	save := func(summary map[string]any) error {
		after, _ := bench.ReadLoadAvg()
		rec := bench.NewRunRecord(name, summary)
		rec.Start, rec.End = start, time.Now().UTC()
		rec.Command = bench.CommandLine()
		rec.Revision = revision
		rec.Go = readBuildVersion(buildInfo()).Go
		rec.Servers = servers.result(ctx)
		rec.LoadBefore, rec.LoadAfter = before, after
		if path != "" {
			return bench.RewriteRun(path, rec)
		}
		var err error
		path, err = bench.WriteRun(runsDir, rec)
		return err
	}
	if r.onPartial != nil {
		r.onPartial(func(v any) error {
			var line bytes.Buffer
			if err := bench.PrintSummary(&line, v); err != nil {
				return err
			}
			summary, err := bench.ParseSummary(line.Bytes())
			if err != nil {
				return fmt.Errorf("run record: %w", err)
			}
			if err := save(summary); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "run record so far: %s\n", path)
			return nil
		})
	}
	var stdout bytes.Buffer
	if err := r.run(ctx, io.MultiWriter(os.Stdout, &stdout)); err != nil {
		return err
	}
	summary, err := bench.ParseSummary(stdout.Bytes())
	if err != nil {
		return fmt.Errorf("run record: %w", err)
	}
	if err := save(summary); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "run record: %s\n", path)
	return checkTargets(os.Stderr, summary, check)
}

// errTargetMissed is the error of `bench --check` when a target is missed.
var errTargetMissed = errors.New("a target is missed")

// checkTargets reports missed and undecided targets; with check, a missed
// one is an error (exit 1) and an undecided one is not.
func checkTargets(w io.Writer, summary map[string]any, check bool) error {
	missed := bench.TargetsWith(summary, bench.VerdictMissed)
	undecided := bench.TargetsWith(summary, bench.VerdictUndecided)
	met := bench.TargetsWith(summary, bench.VerdictMet)
	fmt.Fprintf(w, "targets: %d met, %d missed, %d undecided\n", len(met), len(missed), len(undecided))
	if len(missed) > 0 {
		fmt.Fprintf(w, "  missed: %s\n", strings.Join(missed, ", "))
	}
	if len(undecided) > 0 {
		fmt.Fprintf(w, "  undecided (not a failure of --check): %s\n", strings.Join(undecided, ", "))
	}
	if check && len(missed) > 0 {
		return fmt.Errorf("--check: %w: %s", errTargetMissed, strings.Join(missed, ", "))
	}
	return nil
}

// benchCompare is `baedal bench compare RUN_A RUN_B`.
func benchCompare(ctx context.Context, args []string) error {
	c := newCommand("bench compare", "baedal bench compare RUN_A RUN_B",
		"Print the numeric figures of two run records (or two <name>.json summaries) side by side,\n"+
			"by flattened JSON key, with the ratio B/A. Where both runs have a 95% interval for a\n"+
			"figure (<key>_ci95, or a target's ci95), delta says \"differs\" when the intervals do not\n"+
			"overlap and \"~\" when they do (no difference shown, as in benchstat).",
		"baedal bench compare reports/runs/20261124T080000Z-search.json reports/runs/20261124T090000Z-search.json")
	var only string
	c.FS.StringVar(&only, "match", "", "only figures whose key contains this text, e.g. p99")
	positional, err := parseWithArgs(c, args)
	if err != nil {
		return err
	}
	if len(positional) != 2 {
		return usageError{fmt.Errorf("want two run files, got %d (see baedal bench compare -h)", len(positional))}
	}
	if parseOnly(ctx) {
		return nil
	}
	a, err := bench.ReadRunFile(positional[0])
	if err != nil {
		return err
	}
	b, err := bench.ReadRunFile(positional[1])
	if err != nil {
		return err
	}
	rows := bench.CompareRuns(a, b)
	if only != "" {
		kept := rows[:0]
		for _, r := range rows {
			if strings.Contains(r.Key, only) {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	return bench.WriteRunComparison(os.Stdout, positional[0]+" ("+bench.RunHeadline(a)+")", positional[1]+" ("+bench.RunHeadline(b)+")", rows)
}

// benchTargets is `baedal bench targets RUN...`.
func benchTargets(ctx context.Context, args []string) error {
	c := newCommand("bench targets", "baedal bench targets RUN...",
		"Print the targets of run records as one Markdown table (benchmark, figure, target, point,\n"+
			"95% interval, verdict), then each run's date, revision, servers, load and command:\n"+
			"the figures for BENCHMARKS.md, as the runs measured them.",
		"baedal bench targets reports/runs/*.json")
	var only string
	c.FS.StringVar(&only, "match", "", "only targets whose figure name contains this text, e.g. hot")
	positional, err := parseWithArgs(c, args)
	if err != nil {
		return err
	}
	if len(positional) == 0 {
		return usageError{errors.New("want at least one run file (see baedal bench targets -h)")}
	}
	if parseOnly(ctx) {
		return nil
	}
	runs := make([]map[string]any, len(positional))
	for i, p := range positional {
		if runs[i], err = bench.ReadRunFile(p); err != nil {
			return err
		}
		if _, ok := runs[i]["targets"].(map[string]any); !ok {
			return fmt.Errorf("%s: no targets: want a run record from <report-dir>/runs", p)
		}
	}
	return bench.WriteTargetsTable(os.Stdout, runs, only)
}

// benchScalePlots is `baedal bench scale-plots --out DIR RUN`.
func benchScalePlots(ctx context.Context, args []string) error {
	c := newCommand("bench scale-plots", "baedal bench scale-plots --out DIR RUN",
		"Write the plots of a bench scale run record (every figure against the catalog size, as in\n"+
			"its HTML report) as DIR/<figure>.svg, and print its figures by size as a Markdown table:\n"+
			"the table and plots BENCHMARKS.md shows, drawn from the record.",
		"baedal bench scale-plots --out benchmarks/runs/scale reports/runs/20261128T070000Z-scale.json")
	var dir string
	c.FS.StringVar(&dir, "out", "", "directory of the SVG files (required)")
	positional, err := parseWithArgs(c, args)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		return usageError{fmt.Errorf("want one run record, got %d (see baedal bench scale-plots -h)", len(positional))}
	}
	if dir == "" {
		return usageError{errors.New("--out: required: the directory of the SVG files")}
	}
	if parseOnly(ctx) {
		return nil
	}
	s, err := scalebench.ReadRecord(positional[0])
	if err != nil {
		return err
	}
	paths, err := scalebench.WritePlots(dir, s)
	for _, p := range paths {
		fmt.Fprintln(os.Stderr, "plot:", p)
	}
	if err != nil {
		return err
	}
	return scalebench.WriteMarkdown(os.Stdout, s)
}

// benchAll runs every registered benchmark and writes reports/index.html.
func benchAll(ctx context.Context, args []string, registered map[string]benchmark) error {
	c := newCommand("bench all", "baedal bench all [--profile quick|full] [--report-dir DIR]",
		"Run every benchmark, each as a child `baedal bench <name>` (so each writes its run record),\n"+
			"and write <report-dir>/index.html: our figures beside the write-ups' and the targets.",
		"baedal bench all --profile quick")
	cfg := benchsuite.Config{Profile: bench.ProfileQuick, ReportDir: bench.DefaultReportDir}
	c.Group("benchmark", func(fs *flag.FlagSet) {
		fs.Var(&cfg.Profile, "profile", "run size of every benchmark: quick or full")
		fs.StringVar(&cfg.ReportDir, "report-dir", cfg.ReportDir, "directory of the reports and index.html")
	})
	if err := parse(c, args); err != nil || parseOnly(ctx) {
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
