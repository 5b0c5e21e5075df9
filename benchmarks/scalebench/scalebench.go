// Package scalebench is `baedal bench scale`: the cost curve of the three
// layouts as the catalog grows. At each catalog size (5,000, 20,000,
// 100,000 and 200,000 shops by default) it runs `bench index` (throughput
// only: no freshness) and `bench search`, each with fewer rounds and
// queries than their own profiles, each on fresh indices loaded through the
// bulk path (bulkload: the indexer's own documents, refresh and replicas
// paused), on one local stack. Per size it keeps the indexing throughput
// ratios, every layout's search p50 and p99 idle and under load, the hot
// table's bytes per shop, the node's heap and every layout's disk, and it
// judges every S1 target the two benchmarks judge, prefixed by the size
// (size_200000.throughput_ratio_hot). The HTML report plots each figure
// against the catalog size; Charts draws the same plots from a summary, so
// `baedal bench scale-plots RUN` writes them from a run record as SVG files.
//
// Invariant: each size's figures are what `bench index --bulk-load
// --skip-freshness` and `bench search --bulk-load` measure at that size
// with the configured rounds, unchanged; the summary after each finished
// size is handed to OnSize, so a stopped run keeps its finished sizes.
package scalebench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/benchmarks/indexbench"
	"github.com/baedal/baedal/benchmarks/searchbench"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/localstack"
)

// Config sizes a run; zero fields take the defaults of Defaults.
type Config struct {
	// Sizes are the catalog sizes, in shops, measured in increasing order.
	Sizes Sizes
	Seed  uint64
	// IndexRounds, HotEvents and MixedEvents are bench index's --rounds,
	// --hot-events and --mixed-events at every size.
	IndexRounds, HotEvents, MixedEvents int
	// Queries, SearchRounds and MaxRateSeconds are bench search's
	// --queries, --rounds and --max-rate-seconds at every size.
	Queries, SearchRounds, MaxRateSeconds int
	// UpdateRate is bench search's --update-rate at every size: hot
	// updates/s applied to each layout under load; 0 takes half nested's
	// maximum measured at that size, which moves with the machine's load
	// as well as with the catalog.
	UpdateRate float64
	// StateDir is the local stack to use; if none runs there, a temporary
	// one is started for the whole run and stopped at its end.
	StateDir  string
	ReportDir string
	// Log receives progress (stderr by default).
	Log io.Writer
	// OnSize, if set, gets the summary after each finished size (the
	// command writes the run record with it).
	OnSize func(Summary) error
}

// DefaultSizes are the catalog sizes of issue 39's cost curve.
var DefaultSizes = Sizes{5_000, 20_000, 100_000, 200_000}

// Defaults: bench index's 12 rounds of 10,000 hot updates become 6 of
// 3,000, and bench search's 10,000 queries per phase 576: 72 per round over
// 8 rounds, so that the pages compared after the load rounds (64 a round)
// reach the 500 the equivalence targets need, and the idle pages too when a
// few searches time out (512 left the first run's idle comparison at 490).
// On the shared 2-core machine (2026-11-28) measuring took 5 to 8 minutes a
// size; loading is what grows with the size: 52 to 232 shops/s into the
// three layouts as the machine's load varied, twice per size, so the
// default sizes need from about 1.5 to 4 hours there (BENCHMARKS.md, "S1
// cost as the catalog grows").
func Defaults() Config {
	return Config{
		Sizes: slices.Clone(DefaultSizes), Seed: 1,
		IndexRounds: 6, HotEvents: 3000, MixedEvents: 300,
		Queries: 576, SearchRounds: searchbench.DefaultRounds, MaxRateSeconds: 8,
		StateDir: localstack.Defaults().StateDir, ReportDir: bench.DefaultReportDir,
	}
}

// Flags binds the configuration.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Var(&c.Sizes, "sizes", "catalog sizes in shops, comma-separated, measured smallest first")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "generator seed")
	fs.IntVar(&c.IndexRounds, "index-rounds", c.IndexRounds, "bench index rounds at each size")
	fs.IntVar(&c.HotEvents, "hot-events", c.HotEvents, "hot shop updates per index round and layout")
	fs.IntVar(&c.MixedEvents, "mixed-events", c.MixedEvents, "realistic-mix events per index round and layout")
	fs.IntVar(&c.Queries, "queries", c.Queries, "bench search queries per phase at each size")
	fs.IntVar(&c.SearchRounds, "search-rounds", c.SearchRounds, "bench search rounds per phase at each size")
	fs.IntVar(&c.MaxRateSeconds, "max-rate-seconds", c.MaxRateSeconds, "seconds bench search measures nested's maximum update rate at each size")
	fs.Float64Var(&c.UpdateRate, "update-rate", c.UpdateRate, "hot updates/s applied to each layout under load at every size (0: half nested's maximum measured at that size)")
	fs.StringVar(&c.StateDir, "state-dir", c.StateDir, "local stack to use; a temporary one is started if none runs there")
	fs.StringVar(&c.ReportDir, "report-dir", c.ReportDir, "directory of scale.html (each size's own reports go to scale/size_N/)")
}

// Validate names the first invalid field.
func (c *Config) Validate() error {
	if len(c.Sizes) == 0 {
		return errors.New("sizes: none given; allowed: one or more sizes 1..1000000, e.g. 5000,20000")
	}
	for name, v := range map[string]int{"index-rounds": c.IndexRounds, "hot-events": c.HotEvents, "mixed-events": c.MixedEvents,
		"queries": c.Queries, "search-rounds": c.SearchRounds, "max-rate-seconds": c.MaxRateSeconds} {
		if v < 1 || v > 1_000_000 {
			return fmt.Errorf("%s: got %d, allowed: 1..1000000", name, v)
		}
	}
	if c.UpdateRate < 0 {
		return fmt.Errorf("update-rate: got %g, allowed: >= 0 (0: half nested's measured maximum)", c.UpdateRate)
	}
	if c.Queries < c.SearchRounds {
		return fmt.Errorf("queries: got %d, allowed: at least search-rounds (%d), a query per round", c.Queries, c.SearchRounds)
	}
	return nil
}

// Sizes is the --sizes flag: catalog sizes, sorted, without repeats.
type Sizes []int

// String returns the sizes comma-separated.
func (s *Sizes) String() string {
	var out []string
	for _, n := range *s {
		out = append(out, strconv.Itoa(n))
	}
	return strings.Join(out, ",")
}

// Set parses a comma-separated list of sizes.
func (s *Sizes) Set(v string) error {
	sizes, err := ParseSizes(v)
	if err != nil {
		return err
	}
	*s = sizes
	return nil
}

// ParseSizes parses "5000,20000": positive shop counts up to 1,000,000
// (bench search's limit), returned sorted without repeats.
func ParseSizes(v string) (Sizes, error) {
	var out Sizes
	for f := range strings.SplitSeq(v, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 1_000_000 {
			return nil, fmt.Errorf("size %q: allowed: whole numbers of shops 1..1000000, comma-separated, e.g. 5000,20000", f)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Summary is the JSON summary line.
type Summary struct {
	Bench string `json:"bench"`
	// Sizes are the sizes asked for; Done are the sizes measured, in
	// order, each with its figures in BySize.
	Sizes       []int          `json:"sizes"`
	Done        []int          `json:"done"`
	BySize      []SizeFigures  `json:"by_size"`
	IndexRounds int            `json:"index_rounds"`
	HotEvents   int            `json:"hot_events"`
	Queries     int            `json:"queries"`
	Rounds      int            `json:"search_rounds"`
	Skipped     map[string]any `json:"skipped"`
	// FirstNotMet names, for each target that is not met at every measured
	// size, the smallest size where it is not (missed or undecided).
	FirstNotMet map[string]int `json:"first_not_met"`
	// Targets are every size's targets, "size_N." + the target's name in
	// bench index or bench search.
	Targets bench.Targets `json:"targets"`
	Report  string        `json:"report"`
}

// SizeFigures are one catalog size's figures.
type SizeFigures struct {
	Shops           int     `json:"shops"`
	MenusPerShopAvg float64 `json:"menus_per_shop_avg"`
	// LoadSeconds is how long bench search's bulk load of the catalog into
	// every layout took (its refresh and the hot table's readiness
	// included: the whole setup).
	LoadSeconds float64 `json:"load_seconds"`
	// Indexing, from bench index: hot shop updates/s per layout and the
	// ratios over nested.
	EventsPerS             map[string]float64 `json:"events_per_s"`
	ThroughputRatio        float64            `json:"throughput_ratio"`
	ThroughputRatioCI95    bench.Interval     `json:"throughput_ratio_ci95"`
	ThroughputRatioHot     float64            `json:"throughput_ratio_hot,omitempty"`
	ThroughputRatioHotCI95 bench.Interval     `json:"throughput_ratio_hot_ci95"`
	// Search, from bench search: every layout's percentiles, idle and
	// under load, and the hot/nested and split/nested p99 ratios.
	Search   map[string]Latencies `json:"search"`
	P99Ratio map[string]Ratio     `json:"p99_ratio"`
	// UpdateRate is the hot updates/s each layout took while searched.
	UpdateRate float64 `json:"update_rate"`
	// Cost of the catalog: the hot table's bytes per shop (the plugin's
	// estimate), the node's heap and every layout's disk after the load.
	HotTableBytesPerShop float64          `json:"hot_table_bytes_per_shop,omitempty"`
	HeapUsedBytes        int64            `json:"heap_used_bytes"`
	HeapMaxBytes         int64            `json:"heap_max_bytes"`
	StoreBytes           map[string]int64 `json:"store_bytes"`
	// Reports are the two benchmarks' HTML reports of this size.
	Reports []string `json:"reports"`
}

// Latencies are one layout's search percentiles, in ms.
type Latencies struct {
	IdleP50Ms float64 `json:"idle_p50_ms"`
	IdleP99Ms float64 `json:"idle_p99_ms"`
	LoadP50Ms float64 `json:"under_load_p50_ms"`
	LoadP99Ms float64 `json:"under_load_p99_ms"`
	// FailedShareUnderLoad is the share of its searches under load that
	// timed out or were refused (not in the percentiles).
	FailedShareUnderLoad float64 `json:"failed_share_under_load"`
}

// Ratio is one layout's p99 over nested's, idle and under load, with
// their 95% intervals.
type Ratio struct {
	Idle          float64        `json:"idle"`
	IdleCI95      bench.Interval `json:"idle_ci95"`
	UnderLoad     float64        `json:"under_load"`
	UnderLoadCI95 bench.Interval `json:"under_load_ci95"`
}

// Run measures every size, writes the HTML report, prints the summary as
// the last line of out and returns it. A failed size fails the run; the
// sizes before it were handed to OnSize.
func Run(ctx context.Context, cfg Config, out io.Writer) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	if cfg.ReportDir == "" {
		cfg.ReportDir = bench.DefaultReportDir
	}
	st, stop, err := localstack.UseOrStart(ctx, cfg.StateDir, cfg.Log)
	if err != nil {
		return Summary{}, fmt.Errorf("scalebench: local stack: %w", err)
	}
	defer stop()
	sum := Summary{Bench: "scale", Sizes: cfg.Sizes, IndexRounds: cfg.IndexRounds, HotEvents: cfg.HotEvents,
		Queries: cfg.Queries, Rounds: cfg.SearchRounds, Skipped: map[string]any{}, Targets: bench.Targets{}}
	for _, n := range cfg.Sizes {
		fmt.Fprintf(cfg.Log, "bench scale: %d shops\n", n)
		f, targets, skipped, err := measureSize(ctx, cfg, st.StateDir, n)
		if err != nil {
			return sum, fmt.Errorf("scalebench: %d shops: %w", n, err)
		}
		sum.Done = append(sum.Done, n)
		sum.BySize = append(sum.BySize, f)
		for name, t := range targets {
			sum.Targets[SizeKey(n)+"."+name] = t
		}
		for k, why := range skipped {
			sum.Skipped[k] = why
		}
		sum.FirstNotMet = firstNotMet(sum)
		if cfg.OnSize != nil {
			if err := cfg.OnSize(sum); err != nil {
				return sum, err
			}
		}
	}
	path, err := writeReport(cfg, sum)
	if err != nil {
		return sum, err
	}
	sum.Report = path
	return sum, bench.PrintSummary(out, sum)
}

// SizeKey is the prefix of a size's targets: "size_200000".
func SizeKey(shops int) string { return "size_" + strconv.Itoa(shops) }

// measureSize runs bench index and bench search at one size, each on
// fresh indices of the stack in stateDir, and returns the size's figures,
// its targets and the layouts that were skipped.
func measureSize(ctx context.Context, cfg Config, stateDir string, shops int) (SizeFigures, bench.Targets, map[string]string, error) {
	reportDir := filepath.Join(cfg.ReportDir, "scale", SizeKey(shops))
	icfg := indexbench.Defaults()
	icfg.Shops, icfg.Seed, icfg.Rounds, icfg.HotEvents, icfg.MixedEvents = shops, cfg.Seed, cfg.IndexRounds, cfg.HotEvents, cfg.MixedEvents
	icfg.BulkLoad, icfg.SkipFreshness = true, true
	icfg.StateDir, icfg.ReportDir, icfg.Log = stateDir, reportDir, cfg.Log
	idx, err := indexbench.Run(ctx, icfg, io.Discard)
	if err != nil {
		return SizeFigures{}, nil, nil, fmt.Errorf("bench index: %w", err)
	}

	scfg := searchbench.Defaults()
	scfg.Shops, scfg.Queries, scfg.MaxRateSeconds, scfg.UpdateRate, scfg.BulkLoad = shops, cfg.Queries, cfg.MaxRateSeconds, cfg.UpdateRate, true
	scfg.Bench.Seed, scfg.Bench.Rounds, scfg.Bench.ReportDir = int64(cfg.Seed), cfg.SearchRounds, reportDir
	scfg.StateDir = stateDir
	srch, err := searchbench.Run(ctx, scfg, nil, cfg.Log)
	if err != nil {
		return SizeFigures{}, nil, nil, fmt.Errorf("bench search: %w", err)
	}
	f := figures(idx, srch)
	targets := bench.Targets{}
	for _, name := range []string{"throughput_ratio", "throughput_ratio_hot"} {
		if t, ok := idx.Targets[name]; ok {
			targets[name] = t
		}
	}
	maps.Copy(targets, srch.Targets)
	skipped := map[string]string{}
	maps.Copy(skipped, idx.Skipped)
	maps.Copy(skipped, srch.Skipped)
	return f, targets, skipped, nil
}

// figures copies one size's figures out of the two benchmarks' summaries.
func figures(idx indexbench.Summary, srch searchbench.Summary) SizeFigures {
	f := SizeFigures{
		Shops: idx.Shops, MenusPerShopAvg: idx.MenusPerShopAvg,
		EventsPerS:      map[string]float64{string(layout.Nested): idx.NestedEventsPerS, string(layout.Split): idx.SplitEventsPerS},
		ThroughputRatio: idx.ThroughputRatio, ThroughputRatioCI95: idx.ThroughputRatioCI95,
		UpdateRate: srch.UpdateRate, LoadSeconds: srch.LoadSeconds,
		HeapUsedBytes: srch.AfterLoad.HeapUsedBytes, HeapMaxBytes: srch.AfterLoad.HeapMaxBytes, StoreBytes: srch.AfterLoad.StoreBytes,
		Reports: []string{idx.Report, srch.Report},
	}
	if h := idx.HotFigures; h != nil {
		f.EventsPerS[string(layout.Hot)] = h.HotEventsPerS
		f.ThroughputRatioHot, f.ThroughputRatioHotCI95 = h.ThroughputRatioHot, h.ThroughputRatioHotCI95
	}
	i, l := srch.Idle, srch.UnderLoad
	f.Search = map[string]Latencies{
		string(layout.Nested): {IdleP50Ms: i.NestedP50Ms, IdleP99Ms: i.NestedP99Ms, LoadP50Ms: l.NestedP50Ms, LoadP99Ms: l.NestedP99Ms, FailedShareUnderLoad: l.FailedShareNested},
		string(layout.Split):  {IdleP50Ms: i.SplitP50Ms, IdleP99Ms: i.SplitP99Ms, LoadP50Ms: l.SplitP50Ms, LoadP99Ms: l.SplitP99Ms, FailedShareUnderLoad: l.FailedShareSplit},
	}
	f.P99Ratio = map[string]Ratio{string(layout.Split): {Idle: i.P99Ratio, IdleCI95: i.P99RatioCI95, UnderLoad: l.P99Ratio, UnderLoadCI95: l.P99RatioCI95}}
	if ih, lh := i.HotPhaseFigures, l.HotPhaseFigures; ih != nil && lh != nil {
		f.Search[string(layout.Hot)] = Latencies{IdleP50Ms: ih.HotP50Ms, IdleP99Ms: ih.HotP99Ms, LoadP50Ms: lh.HotP50Ms, LoadP99Ms: lh.HotP99Ms, FailedShareUnderLoad: lh.FailedShareHot}
		f.P99Ratio[string(layout.Hot)] = Ratio{Idle: ih.P99RatioHot, IdleCI95: ih.P99RatioHotCI95, UnderLoad: lh.P99RatioHot, UnderLoadCI95: lh.P99RatioHotCI95}
	}
	if srch.HotFigures != nil {
		f.HotTableBytesPerShop = srch.HotTableBytesPerShop
	}
	return f
}

// firstNotMet returns, for every target not met at some measured size,
// the smallest such size.
func firstNotMet(s Summary) map[string]int {
	out := map[string]int{}
	for _, n := range s.Done {
		prefix := SizeKey(n) + "."
		for key, t := range s.Targets {
			name, ok := strings.CutPrefix(key, prefix)
			if !ok || t.Verdict == bench.VerdictMet {
				continue
			}
			if _, seen := out[name]; !seen {
				out[name] = n
			}
		}
	}
	return out
}
