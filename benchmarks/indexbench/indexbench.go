// Package indexbench is the `baedal bench index` workload: the same generated
// catalog and the same stream of shop updates applied to every layout the
// cluster runs — the nested baseline, split, and hot when every OpenSearch
// node has the baedal-hot plugin (docs/hot-layout.md) — interleaved in rounds
// in one process, through the indexer's own Apply (coalescing, full-document
// writes from held state, external versions, the hot table's updates), so it
// measures the layouts and not Redis. Short runs through Redis Streams and the
// stream worker measure freshness: split's and, when it runs, hot's.
//
// A layout the cluster cannot run is skipped, never silently: the summary's
// "skipped" names it with the reason, and its keys are absent.
//
// Two streams are measured, both from catalog.EventStream and both applied to
// each layout in the same order:
//
//   - hot: the hot shop-field updates of the stream (delivery_minutes, open,
//     delivery_fee, rating/review_count; ~85% of the realistic mix). This is
//     the "stream of hot shop updates" and gives throughput_ratio
//     (split / nested) and throughput_ratio_hot (hot / nested).
//   - mixed: the whole realistic mix (menus changes, cold fields, new and
//     deleted menus and shops too). It gives mixed_throughput_ratio: every
//     menu event rewrites a shop's whole menu document in split as well, so
//     this ratio is bounded near 1 / (share of menu-touching events).
//
// Both come from catalog.NewEventStream(seed) (a stream must match the
// catalog of the same seed), as two independent instances; the hot stream
// skips shops the mixed stream deleted and shops it created itself. Versions
// are renumbered per shop in the order the events are applied, so every event
// is applied (none is stale).
//
// Bytes written come from the indices' _stats, summed over the layout's
// indices: Δ translog.size_in_bytes + Δ store.size_in_bytes (clamped at 0) +
// Δ merges.total_size_in_bytes — translog appends, new segment bytes and merge
// rewrites. It is an estimate of Lucene + translog writes that, unlike
// _nodes/stats/fs io_stats (the whole block device, shared with every other
// process of the machine), can be attributed to one layout. Background merges
// that finish during the other side's round count for the side that runs. The
// hot table lives in the nodes' memory and writes no bytes.
//
// Freshness is what a user sees: from the event's append to the event log to
// the first search that shows it. For split that is a _search on the index
// the event touched (the worker's probe, 1 s refresh included); for hot it is
// a search on the hot menu index that reads the shop's row from the table,
// which shows an update without a refresh (hotProbe).
//
// Invariant: every layout gets the same events in the same order, in rounds
// whose order alternates (ABC, CBA: bench.Interleave), and every reported
// figure is a ratio over the nested baseline or an HDR percentile.
package indexbench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/benchmarks/internal/bulkload"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/localstack"
)

// Config sizes a run. Zero Shops/HotEvents/... take the profile's value.
type Config struct {
	Profile bench.Profile
	Shops   int
	Seed    uint64
	// HotEvents and MixedEvents are per round and side.
	HotEvents, MixedEvents int
	Rounds                 int
	BatchSize              int
	// FreshnessEvents are posted to the server's POST /v1/events at
	// FreshnessRate per second in each freshness run.
	FreshnessEvents, FreshnessRate int
	// BulkLoad loads the catalog through the bulk path (bulkload: the
	// indexer's own documents, refresh and replicas paused) instead of
	// Apply in batches: the same indices in a fraction of the time, for
	// large catalogs.
	BulkLoad bool
	// SkipFreshness leaves out the freshness runs and their targets (bench
	// scale measures throughput only).
	SkipFreshness bool
	// StateDir of the local stack to reuse (or start, when none runs there)
	// when Backends has no OpenSearch URL.
	StateDir  string
	Backends  backend.Config
	ReportDir string
	// Log receives progress and the workers' logs (stderr by default).
	Log io.Writer
}

// Defaults returns the quick profile on the local stack in .baedal.
func Defaults() Config {
	return Config{Profile: bench.ProfileQuick, Seed: 1, StateDir: ".baedal", Backends: backend.Defaults(), ReportDir: "reports"}
}

// Flags binds the benchmark's flags (backend flags are bound by the caller).
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Var(&c.Profile, "profile", "run size: quick or full")
	fs.IntVar(&c.Shops, "shops", c.Shops, "catalog size (default: 5000 quick, 20000 full)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "generator seed")
	fs.IntVar(&c.HotEvents, "hot-events", c.HotEvents, "hot shop updates per round and layout (default: 10000 quick, 40000 full)")
	fs.IntVar(&c.MixedEvents, "mixed-events", c.MixedEvents, "realistic-mix events per round and layout (default: 3000 quick, 10000 full)")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "interleaved rounds (default: 12 quick, 20 full)")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "events per Apply batch (default 1000)")
	fs.BoolVar(&c.BulkLoad, "bulk-load", c.BulkLoad, "load the catalog through the bulk path (the indexer's documents, refresh and replicas paused) instead of Apply in batches")
	fs.IntVar(&c.FreshnessEvents, "freshness-events", c.FreshnessEvents, "events posted in each layout's freshness run, 10 of them followed per second (default: 30000 quick, 60000 full)")
	fs.IntVar(&c.FreshnessRate, "freshness-rate", c.FreshnessRate, "events per second of the freshness runs (default: 500 quick, 1000 full)")
	fs.BoolVar(&c.SkipFreshness, "skip-freshness", c.SkipFreshness, "leave out the freshness runs and their targets")
	fs.StringVar(&c.StateDir, "state-dir", c.StateDir, "local stack state directory (used when --opensearch-urls is not given)")
	fs.StringVar(&c.ReportDir, "report-dir", c.ReportDir, "directory of the HTML report")
}

func (c *Config) fill() {
	p := c.Profile
	if p == "" {
		p = bench.ProfileQuick
		c.Profile = p
	}
	set := func(v *int, quick, full int) {
		if *v == 0 {
			*v = bench.Pick(p, quick, full)
		}
	}
	set(&c.Shops, 5000, 20000)
	set(&c.HotEvents, 10000, 40000)
	set(&c.MixedEvents, 3000, 10000)
	// 12 rounds: the half-width of the t interval is t(n-1)·sd/√n, which is
	// 1.05·sd over 6 rounds and 0.64·sd over 12; with the rounds' spread on
	// this machine (sd about 15% of the ratio), 6 rounds gave ±15% and 12
	// give about ±10%.
	set(&c.Rounds, 12, 20)
	set(&c.BatchSize, 1000, 1000)
	// 60 s at 500/s (quick) or 1,000/s (full): 600 followed changes per
	// layout, so the p99 rests on the 6 slowest rather than the 2 slowest
	// of 200.
	set(&c.FreshnessEvents, 30000, 60000)
	set(&c.FreshnessRate, 500, 1000)
	if c.ReportDir == "" {
		c.ReportDir = "reports"
	}
	if c.Log == nil {
		c.Log = os.Stderr
	}
}

// Validate names the first invalid field.
func (c *Config) Validate() error {
	if _, err := bench.ParseProfile(string(c.Profile)); err != nil && c.Profile != "" {
		return fmt.Errorf("profile: %w", err)
	}
	for name, v := range map[string]int{"shops": c.Shops, "hot-events": c.HotEvents, "mixed-events": c.MixedEvents, "rounds": c.Rounds, "batch-size": c.BatchSize, "freshness-events": c.FreshnessEvents, "freshness-rate": c.FreshnessRate} {
		if v < 0 {
			return fmt.Errorf("%s: got %d, allowed: >= 1 (0 = profile default)", name, v)
		}
	}
	if c.Shops > 2_000_000 {
		return fmt.Errorf("shops: got %d, allowed: 1..2000000", c.Shops)
	}
	return nil
}

// Summary is the JSON summary line.
type Summary struct {
	Bench           string  `json:"bench"`
	Profile         string  `json:"profile"`
	Shops           int     `json:"shops"`
	MenusPerShopAvg float64 `json:"menus_per_shop_avg"`
	Events          int     `json:"events"` // hot events per layout
	MixedEvents     int     `json:"mixed_events"`
	Rounds          int     `json:"rounds"`
	// TranslogDurability per layout: "request", or "async" when its rounds
	// include the flush that makes their events durable (side.flush).
	TranslogDurability map[string]string `json:"translog_durability"`
	NestedEventsPerS   float64           `json:"nested_events_per_s"`
	SplitEventsPerS    float64           `json:"split_events_per_s"`
	ThroughputRatio    float64           `json:"throughput_ratio"`
	// 95% interval of throughput_ratio over the paired rounds' ratios, and
	// the rounds' smallest and largest ratio (bench.PairedRatioCI).
	ThroughputRatioCI95        bench.Interval    `json:"throughput_ratio_ci95"`
	ThroughputRatioRounds      bench.RoundRatios `json:"throughput_ratio_rounds"`
	NestedMixedPerS            float64           `json:"nested_mixed_events_per_s"`
	SplitMixedPerS             float64           `json:"split_mixed_events_per_s"`
	MixedThroughputRatio       float64           `json:"mixed_throughput_ratio"`
	MixedThroughputRatioCI95   bench.Interval    `json:"mixed_throughput_ratio_ci95"`
	MixedThroughputRatioRounds bench.RoundRatios `json:"mixed_throughput_ratio_rounds"`
	NestedDocsWritten          int               `json:"nested_docs_written"`
	SplitDocsWritten           int               `json:"split_docs_written"`
	NestedBytesWritten         int64             `json:"nested_bytes_written"`
	SplitBytesWritten          int64             `json:"split_bytes_written"`
	BytesRatio                 float64           `json:"bytes_written_ratio"`
	BytesRatioCI95             bench.Interval    `json:"bytes_written_ratio_ci95"`
	BytesRatioRounds           bench.RoundRatios `json:"bytes_written_ratio_rounds"`
	NestedBatchP50Ms           float64           `json:"nested_batch_p50_ms"`
	NestedBatchP99Ms           float64           `json:"nested_batch_p99_ms"`
	SplitBatchP50Ms            float64           `json:"split_batch_p50_ms"`
	SplitBatchP99Ms            float64           `json:"split_batch_p99_ms"`
	// Freshness of the split layout, open loop: every followed change
	// counts, one not seen within the limit at the limit (and in
	// freshness_gave_up).
	FreshnessSamples int64          `json:"freshness_samples"`
	FreshnessP50Ms   float64        `json:"freshness_p50_ms"`
	FreshnessP99Ms   float64        `json:"freshness_p99_ms"`
	FreshnessP99CI95 bench.Interval `json:"freshness_p99_ms_ci95"`
	FreshnessGaveUp  int64          `json:"freshness_gave_up"`
	// FreshnessLimitMs is how long a change is followed.
	FreshnessLimitMs float64 `json:"freshness_limit_ms"`
	// FreshnessSkipped: the freshness runs were left out (SkipFreshness),
	// so the freshness figures are empty and not judged.
	FreshnessSkipped bool `json:"freshness_skipped,omitempty"`
	// Skipped names each layout this run left out, with the reason (the
	// hot layout when an OpenSearch node lacks the baedal-hot plugin);
	// empty when every layout ran.
	Skipped map[string]string `json:"skipped"`
	// The hot layout's figures; nil (absent from the JSON) when it was
	// skipped.
	*HotFigures
	// Targets: throughput_ratio >= 20 and freshness_gave_up <= 0; with the
	// hot layout also throughput_ratio_hot >= 25, freshness_p99_ms_hot <=
	// 100 and freshness_gave_up_hot <= 0.
	Targets bench.Targets `json:"targets"`
	Report  string        `json:"report"`
}

// HotFigures are the hot layout's figures, its ratios over nested.
type HotFigures struct {
	HotEventsPerS               float64           `json:"hot_events_per_s"`
	ThroughputRatioHot          float64           `json:"throughput_ratio_hot"`
	ThroughputRatioHotCI95      bench.Interval    `json:"throughput_ratio_hot_ci95"`
	ThroughputRatioHotRounds    bench.RoundRatios `json:"throughput_ratio_hot_rounds"`
	HotMixedPerS                float64           `json:"hot_mixed_events_per_s"`
	MixedThroughputRatioHot     float64           `json:"mixed_throughput_ratio_hot"`
	MixedThroughputRatioHotCI95 bench.Interval    `json:"mixed_throughput_ratio_hot_ci95"`
	HotDocsWritten              int               `json:"hot_docs_written"`
	HotBytesWritten             int64             `json:"hot_bytes_written"`
	BytesRatioHot               float64           `json:"bytes_written_ratio_hot"`
	BytesRatioHotCI95           bench.Interval    `json:"bytes_written_ratio_hot_ci95"`
	HotBatchP50Ms               float64           `json:"hot_batch_p50_ms"`
	HotBatchP99Ms               float64           `json:"hot_batch_p99_ms"`
	// Freshness as a user of the hot layout sees it (hotProbe): append →
	// the first search whose hit carries the update, from the table.
	FreshnessSamplesHot   int64          `json:"freshness_samples_hot"`
	FreshnessP50MsHot     float64        `json:"freshness_p50_ms_hot"`
	FreshnessP99MsHot     float64        `json:"freshness_p99_ms_hot"`
	FreshnessP99MsHotCI95 bench.Interval `json:"freshness_p99_ms_hot_ci95"`
	// Followed changes no search showed within the limit; they are in the
	// percentiles at the limit.
	FreshnessGaveUpHot int64 `json:"freshness_gave_up_hot"`
}

// side is one layout's measurements.
type side struct {
	kind        layout.Kind
	ix          *indexer.Indexer
	hotTime     time.Duration
	mixedTime   time.Duration
	hotEvents   int
	mixedEvents int
	docs        int
	bytes       int64
	batches     *bench.LatencyRecorder
	// flush: the layout has an async translog, so its events count as
	// indexed only after a flush, as the worker acknowledges them: the hot
	// and the mixed part of each round end with one, timed with the part
	// (the worker flushes once a second).
	flush bool
	// Per round, in round order: hot and mixed events/s and bytes written,
	// the pairs the rounds' ratio intervals come from.
	roundsPerSec      []float64
	roundsMixedPerSec []float64
	roundsBytes       []float64
}

func (s *side) eventsPerS() float64 { return round2(float64(s.hotEvents) / s.hotTime.Seconds()) }
func (s *side) mixedPerS() float64  { return round2(float64(s.mixedEvents) / s.mixedTime.Seconds()) }

// overBaseline are a layout's ratios over the baseline's: the ratio of the
// totals, and the paired rounds' interval around it.
type overBaseline struct {
	throughput, mixed, bytes                   float64
	throughputRounds, mixedRounds, bytesRounds bench.RoundRatios
}

func ratiosOver(base, s *side) overBaseline {
	return overBaseline{
		throughput:       round2(bench.Ratio(s.eventsPerS(), base.eventsPerS())),
		mixed:            round2(bench.Ratio(s.mixedPerS(), base.mixedPerS())),
		bytes:            round2(bench.Ratio(float64(s.bytes), float64(base.bytes))),
		throughputRounds: bench.PairedRatioCI(base.roundsPerSec, s.roundsPerSec),
		mixedRounds:      bench.PairedRatioCI(base.roundsMixedPerSec, s.roundsMixedPerSec),
		bytesRounds:      bench.PairedRatioCI(base.roundsBytes, s.roundsBytes),
	}
}

// Run runs the benchmark, writes the HTML report, prints the summary as the
// last line of out, and returns it.
func Run(ctx context.Context, cfg Config, out io.Writer) (Summary, error) {
	cfg.fill()
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	bc, stop, err := backends(ctx, cfg)
	if err != nil {
		return Summary{}, err
	}
	defer stop()
	clients, err := backend.Open(ctx, bc)
	if err != nil {
		return Summary{}, err
	}
	defer clients.Close()
	osc := osapi.New(clients.OpenSearch)
	log := slog.New(slog.NewTextHandler(cfg.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))

	kinds, skipped, err := runnableKinds(ctx, osc)
	if err != nil {
		return Summary{}, err
	}
	for k, why := range skipped {
		fmt.Fprintf(cfg.Log, "bench index: the %s layout is skipped: %s\n", k, why)
	}

	icfg := indexer.Defaults()
	icfg.Layout.Prefix = "baedal_bench_index_"
	icfg.Log.Prefix = "baedal:bench-index:"
	icfg.BatchSize = cfg.BatchSize
	icfg.CacheEntries = 2*cfg.Shops + 10_000
	cleanup := func() {
		c := context.Background()
		for _, k := range layout.Kinds() {
			_ = icfg.Layout.DeleteIndices(c, osc, k)
		}
		if keys, err := clients.Redis.Keys(c, icfg.Log.Prefix+"*").Result(); err == nil && len(keys) > 0 {
			clients.Redis.Del(c, keys...)
		}
	}
	cleanup()
	defer cleanup()

	// sides[0] is the baseline.
	var sides []*side
	for _, k := range kinds {
		s := &side{kind: k, batches: bench.NewLatencyRecorder(), flush: icfg.Layout.AsyncTranslog(k)}
		if err := icfg.Layout.EnsureIndices(ctx, osc, k); err != nil {
			return Summary{}, err
		}
		if s.ix, err = indexer.New(icfg, k, osc, log, nil); err != nil {
			return Summary{}, err
		}
		sides = append(sides, s)
	}

	// Load the catalog into every layout.
	menus, versions, locations, err := loadCatalog(ctx, cfg, osc, icfg.Layout, sides)
	if err != nil {
		return Summary{}, err
	}

	hot, mixed, deleted := makeStreams(cfg, versions)
	roundBar := bench.NewProgress(cfg.Log, "interleaved rounds", int64(cfg.Rounds*len(sides)))
	runSide := func(s *side) func(int) error {
		return func(round int) error {
			// Bytes written: the growth of translog, store and merges
			// between snapshots, summed, with one snapshot before each
			// flush (which trims the translog it made durable).
			var written int64
			last, err := indexBytes(ctx, osc, icfg.Layout, s.kind)
			if err != nil {
				return err
			}
			snapshot := func() error {
				now, err := indexBytes(ctx, osc, icfg.Layout, s.kind)
				written += now.writtenSince(last)
				last = now
				return err
			}
			apply := func(events []catalog.Event) (time.Duration, int, error) {
				d, docs, err := applyAll(ctx, s, events, cfg.BatchSize)
				if err != nil || !s.flush {
					return d, docs, err
				}
				if err := snapshot(); err != nil {
					return d, docs, err
				}
				t0 := time.Now()
				if _, err := s.ix.Flush(ctx); err != nil {
					return d, docs, err
				}
				return d + time.Since(t0), docs, nil
			}
			d, docs, err := apply(hot[round])
			if err != nil {
				return err
			}
			s.hotTime += d
			s.hotEvents += len(hot[round])
			s.roundsPerSec = append(s.roundsPerSec, float64(len(hot[round]))/d.Seconds())
			d2, docs2, err := apply(mixed[round])
			if err != nil {
				return err
			}
			s.mixedTime += d2
			s.mixedEvents += len(mixed[round])
			s.roundsMixedPerSec = append(s.roundsMixedPerSec, float64(len(mixed[round]))/d2.Seconds())
			s.docs += docs + docs2
			if err := snapshot(); err != nil {
				return err
			}
			s.bytes += written
			s.roundsBytes = append(s.roundsBytes, float64(written))
			roundBar.Add(1)
			return nil
		}
	}
	var benchSides []bench.Side
	for _, s := range sides {
		benchSides = append(benchSides, bench.Side{Name: string(s.kind), Run: runSide(s)})
	}
	if err := bench.Interleave(cfg.Rounds, benchSides...); err != nil {
		return Summary{}, err
	}
	roundBar.Done()

	// Freshness of every layout but the baseline (whose worker falls
	// behind at these rates), one after the other.
	fresh := map[layout.Kind]freshness{}
	for _, s := range sides[1:] {
		if cfg.SkipFreshness {
			fresh[s.kind] = freshness{Latency: bench.NewLatencyRecorder(), Lag: bench.NewLatencyRecorder()}
			continue
		}
		f, err := userFreshnessRun(ctx, cfg, bc, icfg, locations, versions, deleted, s.kind)
		if err != nil {
			return Summary{}, err
		}
		fresh[s.kind] = f
	}

	sum := summarize(cfg, menus, sides, fresh, skipped)
	sum.TranslogDurability = map[string]string{}
	for _, s := range sides {
		sum.TranslogDurability[string(s.kind)] = layout.DurabilityRequest
		if s.flush {
			sum.TranslogDurability[string(s.kind)] = layout.DurabilityAsync
		}
	}
	rep := report(cfg, icfg, sum, sides, fresh)
	rep.SetSummary(sum)
	path, err := rep.WriteHTML(cfg.ReportDir)
	if err != nil {
		return sum, err
	}
	sum.Report = path
	rep.SetSummary(sum)
	if _, err := rep.WriteHTML(cfg.ReportDir); err != nil {
		return sum, err
	}
	return sum, bench.PrintSummary(out, sum)
}

// summarize computes the summary from the layouts' measurements (sides,
// the baseline first) and their freshness runs.
func summarize(cfg Config, menus int, sides []*side, fresh map[layout.Kind]freshness, skipped map[string]string) Summary {
	n, sp := sides[0], sideOf(sides, layout.Split)
	splitFresh := fresh[layout.Split].Latency
	sum := Summary{
		Bench: "index", Profile: string(cfg.Profile), Shops: cfg.Shops,
		MenusPerShopAvg: round2(float64(menus) / float64(cfg.Shops)),
		Events:          n.hotEvents, MixedEvents: n.mixedEvents, Rounds: cfg.Rounds,
		NestedEventsPerS:  n.eventsPerS(),
		SplitEventsPerS:   sp.eventsPerS(),
		NestedMixedPerS:   n.mixedPerS(),
		SplitMixedPerS:    sp.mixedPerS(),
		NestedDocsWritten: n.docs, SplitDocsWritten: sp.docs,
		NestedBytesWritten: n.bytes, SplitBytesWritten: sp.bytes,
		NestedBatchP50Ms: bench.Ms(n.batches.Quantile(0.5)), NestedBatchP99Ms: bench.Ms(n.batches.Quantile(0.99)),
		SplitBatchP50Ms: bench.Ms(sp.batches.Quantile(0.5)), SplitBatchP99Ms: bench.Ms(sp.batches.Quantile(0.99)),
		FreshnessSamples: splitFresh.Count(), FreshnessP50Ms: bench.Ms(splitFresh.Quantile(0.5)), FreshnessP99Ms: bench.Ms(splitFresh.Quantile(0.99)),
		FreshnessP99CI95: bench.QuantileCI(splitFresh, 0.99, cfg.Seed), FreshnessGaveUp: fresh[layout.Split].GaveUp,
		FreshnessLimitMs: bench.Ms(followLimit),
		Skipped:          skipped,
	}
	r := ratiosOver(n, sp)
	sum.ThroughputRatio, sum.MixedThroughputRatio, sum.BytesRatio = r.throughput, r.mixed, r.bytes
	sum.ThroughputRatioRounds = r.throughputRounds
	sum.ThroughputRatioCI95 = r.throughputRounds.IntervalAround(r.throughput)
	sum.MixedThroughputRatioRounds = r.mixedRounds
	sum.MixedThroughputRatioCI95 = r.mixedRounds.IntervalAround(r.mixed)
	sum.BytesRatioRounds = r.bytesRounds
	sum.BytesRatioCI95 = r.bytesRounds.IntervalAround(r.bytes)
	sum.Targets = bench.Targets{
		"throughput_ratio": ThroughputTarget.Evaluate(sum.ThroughputRatio, sum.ThroughputRatioCI95),
		// A count of lost or late-beyond-reason changes: exact.
		"freshness_gave_up": bench.AtMost(0).Evaluate(float64(sum.FreshnessGaveUp), bench.Exact(float64(sum.FreshnessGaveUp))),
	}
	if h := sideOf(sides, layout.Hot); h != nil {
		r := ratiosOver(n, h)
		f := fresh[layout.Hot]
		hf := &HotFigures{
			HotEventsPerS: h.eventsPerS(), HotMixedPerS: h.mixedPerS(),
			ThroughputRatioHot: r.throughput, ThroughputRatioHotRounds: r.throughputRounds,
			ThroughputRatioHotCI95:      r.throughputRounds.IntervalAround(r.throughput),
			MixedThroughputRatioHot:     r.mixed,
			MixedThroughputRatioHotCI95: r.mixedRounds.IntervalAround(r.mixed),
			HotDocsWritten:              h.docs, HotBytesWritten: h.bytes,
			BytesRatioHot: r.bytes, BytesRatioHotCI95: r.bytesRounds.IntervalAround(r.bytes),
			HotBatchP50Ms: bench.Ms(h.batches.Quantile(0.5)), HotBatchP99Ms: bench.Ms(h.batches.Quantile(0.99)),
			FreshnessSamplesHot: f.Latency.Count(), FreshnessP50MsHot: bench.Ms(f.Latency.Quantile(0.5)),
			FreshnessP99MsHot: bench.Ms(f.Latency.Quantile(0.99)), FreshnessGaveUpHot: f.GaveUp,
		}
		hf.FreshnessP99MsHotCI95 = bench.QuantileCI(f.Latency, 0.99, cfg.Seed)
		sum.HotFigures = hf
		sum.Targets["throughput_ratio_hot"] = ThroughputHotTarget.Evaluate(hf.ThroughputRatioHot, hf.ThroughputRatioHotCI95)
		sum.Targets["freshness_p99_ms_hot"] = FreshnessHotTarget.Evaluate(hf.FreshnessP99MsHot, hf.FreshnessP99MsHotCI95)
		sum.Targets["freshness_gave_up_hot"] = bench.AtMost(0).Evaluate(float64(hf.FreshnessGaveUpHot), bench.Exact(float64(hf.FreshnessGaveUpHot)))
	}
	if cfg.SkipFreshness {
		sum.FreshnessSkipped = true
		for _, name := range []string{"freshness_gave_up", "freshness_p99_ms_hot", "freshness_gave_up_hot"} {
			delete(sum.Targets, name)
		}
	}

	return sum
}

// report builds the HTML report: every layout side by side, with each
// other layout's ratio over the baseline.
func report(cfg Config, icfg indexer.Config, sum Summary, sides []*side, fresh map[layout.Kind]freshness) *bench.Report {
	names := make([]string, len(sides))
	for i, s := range sides {
		names[i] = string(s.kind)
	}
	title := "Indexing: " + strings.Join(names, " vs ")
	rep := bench.NewReport("indexing", title, bench.CommandLine()) // not "index": bench all writes index.html
	setup := fmt.Sprintf(
		"%d shops, %.1f menus per shop on average; per round and layout %d hot shop updates then %d realistic-mix events, in batches of %d through indexer.Apply; %d rounds in alternating order (%s). Bytes written: Δ translog + Δ store (≥0) + Δ merged bytes from the indices' _stats (the hot table is in memory and writes none).",
		cfg.Shops, sum.MenusPerShopAvg, cfg.HotEvents, cfg.MixedEvents, cfg.BatchSize, cfg.Rounds, roundOrders(names))
	for _, k := range slices.Sorted(maps.Keys(sum.Skipped)) {
		setup += fmt.Sprintf(" The %s layout was skipped: %s.", k, sum.Skipped[k])
	}
	rep.Add(bench.Section{Title: "Setup", Text: setup})

	header := append([]string{"measure"}, names...)
	for _, name := range names[1:] {
		header = append(header, name+"/"+names[0])
	}
	row := func(measure string, value func(*side) float64, format func(float64) string) []string {
		out := []string{measure}
		for _, s := range sides {
			out = append(out, format(value(s)))
		}
		for _, s := range sides[1:] {
			out = append(out, f2(bench.Ratio(value(s), value(sides[0]))))
		}
		return out
	}
	count := func(v float64) string { return fmt.Sprint(int64(v)) }
	rep.Add(bench.Section{Title: "Throughput and writes", Table: &bench.Table{
		Header: header,
		Rows: [][]string{
			row("hot shop updates/s", (*side).eventsPerS, f2),
			row("realistic mix events/s", (*side).mixedPerS, f2),
			row("documents written", func(s *side) float64 { return float64(s.docs) }, count),
			row("bytes written", func(s *side) float64 { return float64(s.bytes) }, count),
		},
	}})
	x := make([]float64, cfg.Rounds)
	for i := range x {
		x[i] = float64(i + 1)
	}
	var perRound []bench.Series
	var batches []*bench.LatencyRecorder
	for _, s := range sides {
		perRound = append(perRound, bench.Series{Name: string(s.kind), X: x, Y: s.roundsPerSec})
		batches = append(batches, s.batches)
	}
	rep.Add(bench.Section{Title: "Per round", Charts: []bench.Chart{
		{Title: "Hot shop updates per second by round", XLabel: "round", YLabel: "events/s", Kind: bench.LineChart, Series: perRound},
		bench.LatencyCDF("Apply latency per batch", names, batches),
	}})
	figures := []bench.Figure{
		{Name: "hot shop updates/s, split / nested", Point: sum.ThroughputRatio, CI95: sum.ThroughputRatioCI95, Rounds: &sum.ThroughputRatioRounds},
		{Name: "mix events/s, split / nested", Point: sum.MixedThroughputRatio, CI95: sum.MixedThroughputRatioCI95, Rounds: &sum.MixedThroughputRatioRounds},
		{Name: "bytes written, split / nested", Point: sum.BytesRatio, CI95: sum.BytesRatioCI95, Rounds: &sum.BytesRatioRounds},
	}
	if h := sum.HotFigures; h != nil {
		figures = append(figures,
			bench.Figure{Name: "hot shop updates/s, hot / nested", Point: h.ThroughputRatioHot, CI95: h.ThroughputRatioHotCI95, Rounds: &h.ThroughputRatioHotRounds},
			bench.Figure{Name: "mix events/s, hot / nested", Point: h.MixedThroughputRatioHot, CI95: h.MixedThroughputRatioHotCI95},
			bench.Figure{Name: "bytes written, hot / nested", Point: h.BytesRatioHot, CI95: h.BytesRatioHotCI95},
		)
	}
	rep.Add(bench.IntervalSection(figures))
	rep.Add(bench.TargetsSection(sum.Targets))
	if cfg.SkipFreshness {
		rep.Add(bench.Section{Title: "Freshness", Text: "Not measured in this run (--skip-freshness)."})
		return rep
	}

	var freshNames []string
	var freshRecs []*bench.LatencyRecorder
	text := fmt.Sprintf("Per layout, %d hot shop updates posted to a baedal server's POST /v1/events at %d/s in posts every %s, its own indexer worker running that layout. "+
		"Open loop: the last event of every %dth post is followed, however many are in flight, until a GET /v1/search (sorted by distance from its shop) first answers with the shop at the event's version or newer; "+
		"a change not seen within %s counts at %s and as given up. ", cfg.FreshnessEvents, cfg.FreshnessRate, postTick, followEvery, followLimit, followLimit)
	for _, s := range sides[1:] {
		f := fresh[s.kind]
		freshNames, freshRecs = append(freshNames, string(s.kind)), append(freshRecs, f.Latency)
		text += fmt.Sprintf("%s: %d followed changes, post → first search showing it p50 %.1f ms, p99 %.1f ms, max %.1f ms, %d given up; posts started up to %.1f ms behind schedule. ",
			s.kind, f.Latency.Count(), bench.Ms(f.Latency.Quantile(0.5)), bench.Ms(f.Latency.Quantile(0.99)), bench.Ms(f.Latency.Quantile(1)), f.GaveUp, bench.Ms(f.Lag.Quantile(1)))
	}
	rep.Add(bench.Section{Title: "Freshness as a user sees it (POST /v1/events → GET /v1/search)", Text: text,
		Charts: []bench.Chart{bench.LatencyCDF("Freshness", freshNames, freshRecs)}})
	return rep
}

// roundOrders describes the order of the layouts in the first two rounds,
// e.g. "nested split hot, then hot split nested".
func roundOrders(names []string) string {
	order := func(round int) string {
		var out []string
		for _, i := range bench.RoundOrder(round, len(names)) {
			out = append(out, names[i])
		}
		return strings.Join(out, " ")
	}
	return order(0) + ", then " + order(1)
}

// ThroughputTarget is the indexing target: split takes hot shop updates at
// least 20 times as fast as nested.
var ThroughputTarget = bench.AtLeast(20)

// ThroughputHotTarget: the hot layout takes hot shop updates at least 25
// times as fast as nested.
var ThroughputHotTarget = bench.AtLeast(25)

// FreshnessHotTarget: on the hot layout, 99% of hot shop updates show in
// search within 100 ms of their append.
var FreshnessHotTarget = bench.AtMost(100)

// runnableKinds is layout.RunnableKinds with the reasons keyed for the
// summary's "skipped" object.
func runnableKinds(ctx context.Context, osc *osapi.Client) ([]layout.Kind, map[string]string, error) {
	kinds, unavailable, err := layout.RunnableKinds(ctx, osc)
	if err != nil {
		return nil, nil, fmt.Errorf("indexbench: can the cluster run the hot layout? %w", err)
	}
	skipped := map[string]string{}
	for k, why := range unavailable {
		skipped[string(k)] = why
	}
	return kinds, skipped, nil
}

func sideOf(sides []*side, k layout.Kind) *side {
	for _, s := range sides {
		if s.kind == k {
			return s
		}
	}
	return nil
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
func f2(v float64) string      { return fmt.Sprintf("%.2f", v) }

// applyAll applies events in batches and returns the time spent in Apply.
func applyAll(ctx context.Context, s *side, events []catalog.Event, batchSize int) (time.Duration, int, error) {
	var total time.Duration
	docs := 0
	for start := 0; start < len(events); start += batchSize {
		b := events[start:min(start+batchSize, len(events))]
		t0 := time.Now()
		st, err := s.ix.Apply(ctx, b)
		d := time.Since(t0)
		if err != nil {
			return total, docs, err
		}
		if len(st.Rejected) > 0 {
			return total, docs, fmt.Errorf("%s rejected event of shop %d: %s", s.kind, st.Rejected[0].ShopID, st.Rejected[0].Reason)
		}
		total += d
		docs += st.Docs
		s.batches.Record(d)
	}
	return total, docs, nil
}

// loadCatalog loads the generated catalog into every layout, through Apply
// in batches of cfg.BatchSize or, with cfg.BulkLoad, through the bulk path
// (bulkload: the same documents, refresh and replicas paused), and returns
// the menus loaded and every shop's version and location. Either way each
// side's indexer holds every shop's state afterwards, and the indices are
// refreshed.
func loadCatalog(ctx context.Context, cfg Config, osc *osapi.Client, lc layout.Config, sides []*side) (menus int, versions map[int64]int64, locations map[int64]catalog.GeoPoint, err error) {
	versions = make(map[int64]int64, cfg.Shops)
	locations = make(map[int64]catalog.GeoPoint, cfg.Shops)
	seen := func(st catalog.ShopState) {
		menus += len(st.Menus)
		versions[st.Shop.ID] = st.Version
		locations[st.Shop.ID] = st.Shop.Location
	}
	kinds := make([]layout.Kind, len(sides))
	indexers := make([]*indexer.Indexer, len(sides))
	for i, s := range sides {
		kinds[i], indexers[i] = s.kind, s.ix
	}
	if cfg.BulkLoad {
		err := bulkload.Load(ctx, bulkload.Options{OS: osc, Layout: lc, Indexers: indexers, Seed: cfg.Seed, To: cfg.Shops, Each: seen, Progress: cfg.Log})
		return menus, versions, locations, err
	}
	bar := bench.NewProgress(cfg.Log, "load catalog into "+layout.JoinKinds(kinds), int64(cfg.Shops))
	batch := make([]catalog.Event, 0, cfg.BatchSize)
	flush := func() error {
		for _, s := range sides {
			if st, err := s.ix.Apply(ctx, batch); err != nil {
				return err
			} else if len(st.Rejected) > 0 {
				return fmt.Errorf("load: %s rejected shop %d: %s", s.kind, st.Rejected[0].ShopID, st.Rejected[0].Reason)
			}
		}
		bar.Add(int64(len(batch)))
		batch = batch[:0]
		return nil
	}
	for _, st := range catalog.NewGenerator(cfg.Seed).Shops(cfg.Shops) {
		seen(st)
		batch = append(batch, st.UpsertEvent())
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return 0, nil, nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return 0, nil, nil, err
	}
	bar.Done()
	return menus, versions, locations, refresh(ctx, osc, lc, kinds)
}

// makeStreams pre-generates, per round, the hot and the mixed events, with
// versions renumbered per shop in application order (round r: hot then mixed).
func makeStreams(cfg Config, versions map[int64]int64) (hot, mixed [][]catalog.Event, deleted map[int64]bool) {
	hotSrc := catalog.NewEventStream(cfg.Seed, cfg.Shops)
	mixSrc := catalog.NewEventStream(cfg.Seed, cfg.Shops)
	deleted = map[int64]bool{}
	next := func(ev catalog.Event) catalog.Event {
		id := ev.AggregateID()
		versions[id]++
		ev.Version = versions[id]
		return ev
	}
	for range cfg.Rounds {
		var h []catalog.Event
		for len(h) < cfg.HotEvents {
			ev := hotSrc.Next()
			// Shops the hot source created itself were never applied (its
			// create events are not hot), so only the catalog's shops count.
			if !ev.IsHotShopUpdate() || deleted[ev.ID] || ev.ID > int64(cfg.Shops) {
				continue
			}
			h = append(h, next(ev))
		}
		m := make([]catalog.Event, 0, cfg.MixedEvents)
		for len(m) < cfg.MixedEvents {
			ev := mixSrc.Next()
			if ev.Type == catalog.EntityShop {
				deleted[ev.ID] = ev.Op == catalog.OpDelete
			}
			m = append(m, next(ev))
		}
		hot, mixed = append(hot, h), append(mixed, m)
	}
	return hot, mixed, deleted
}

// writeStats are the cumulative figures bytes written are computed from.
type writeStats struct{ translog, store, merged int64 }

func (a writeStats) writtenSince(b writeStats) int64 {
	return max(0, a.translog-b.translog) + max(0, a.store-b.store) + max(0, a.merged-b.merged)
}

func indexBytes(ctx context.Context, osc *osapi.Client, lc layout.Config, k layout.Kind) (writeStats, error) {
	var resp struct {
		All struct {
			Primaries struct {
				Store struct {
					Size int64 `json:"size_in_bytes"`
				} `json:"store"`
				Merges struct {
					Total int64 `json:"total_size_in_bytes"`
				} `json:"merges"`
				Translog struct {
					Size int64 `json:"size_in_bytes"`
				} `json:"translog"`
			} `json:"primaries"`
		} `json:"_all"`
	}
	path := "/" + strings.Join(lc.Aliases(k), ",") + "/_stats/store,merge,translog"
	if err := osc.Do(ctx, http.MethodGet, path, nil, &resp); err != nil {
		return writeStats{}, fmt.Errorf("indexbench: %s stats: %w", k, err)
	}
	p := resp.All.Primaries
	return writeStats{translog: p.Translog.Size, store: p.Store.Size, merged: p.Merges.Total}, nil
}

func refresh(ctx context.Context, osc *osapi.Client, lc layout.Config, kinds []layout.Kind) error {
	var aliases []string
	for _, k := range kinds {
		aliases = append(aliases, lc.Aliases(k)...)
	}
	return osc.Do(ctx, http.MethodPost, "/"+strings.Join(aliases, ",")+"/_refresh", nil, nil)
}

// backends returns the backend configuration: the given one when it names
// OpenSearch, else the local stack in StateDir, or a temporary one.
func backends(ctx context.Context, cfg Config) (backend.Config, func(), error) {
	bc := cfg.Backends
	if len(bc.OpenSearch.URLs) > 0 {
		return bc, func() {}, nil
	}
	st, stop, err := localstack.UseOrStart(ctx, cfg.StateDir, cfg.Log)
	if err != nil {
		return bc, func() {}, fmt.Errorf("indexbench: local stack: %w", err)
	}
	bc.OpenSearch.URLs, bc.Redis.Addr, bc.Postgres.URL = st.OpenSearchURLs, st.RedisAddr, st.PostgresURL
	return bc, stop, nil
}
