// Package indexbench is the `baedal bench index` workload: the same generated
// catalog and the same stream of shop updates applied to the nested (baseline)
// and the split layout, interleaved in rounds in one process, through the
// indexer's own Apply (coalescing, full-document writes from held state,
// external versions), so it measures the layouts and not Redis. A short run
// through Redis Streams and the stream worker measures split freshness.
//
// Two streams are measured, both from catalog.EventStream and both applied to
// each side in the same order:
//
//   - hot: the hot shop-field updates of the stream (delivery_minutes, open,
//     delivery_fee, rating/review_count; ~85% of the realistic mix). This is
//     the "stream of hot shop updates" and gives throughput_ratio.
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
// that finish during the other side's round count for the side that runs.
//
// Invariant: both sides get the same events in the same order, in ABBA
// rounds, and every reported figure is a ratio or an HDR percentile.
package indexbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/eventlog"
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
	// FreshnessEvents are appended to Redis at FreshnessRate per second for
	// the split freshness run.
	FreshnessEvents, FreshnessRate int
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
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "interleaved rounds (default: 6 quick, 10 full)")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "events per Apply batch (default 1000)")
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
	// 6 rounds: the t interval over 4 rounds multiplies the rounds' spread
	// by 3.18, over 6 by 2.57, over 10 by 2.26.
	set(&c.Rounds, 6, 10)
	set(&c.BatchSize, 1000, 1000)
	set(&c.FreshnessEvents, 3000, 15000)
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
	for name, v := range map[string]int{"shops": c.Shops, "hot-events": c.HotEvents, "mixed-events": c.MixedEvents, "rounds": c.Rounds, "batch-size": c.BatchSize} {
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
	Bench            string  `json:"bench"`
	Profile          string  `json:"profile"`
	Shops            int     `json:"shops"`
	MenusPerShopAvg  float64 `json:"menus_per_shop_avg"`
	Events           int     `json:"events"` // hot events per layout
	MixedEvents      int     `json:"mixed_events"`
	Rounds           int     `json:"rounds"`
	NestedEventsPerS float64 `json:"nested_events_per_s"`
	SplitEventsPerS  float64 `json:"split_events_per_s"`
	ThroughputRatio  float64 `json:"throughput_ratio"`
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
	FreshnessSamples           int64             `json:"freshness_samples"`
	FreshnessP50Ms             float64           `json:"freshness_p50_ms"`
	FreshnessP99Ms             float64           `json:"freshness_p99_ms"`
	// Targets: throughput_ratio >= 20.
	Targets bench.Targets `json:"targets"`
	Report  string        `json:"report"`
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
	// Per round, in round order: hot and mixed events/s and bytes written,
	// the pairs the rounds' ratio intervals come from.
	roundsPerSec      []float64
	roundsMixedPerSec []float64
	roundsBytes       []float64
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

	icfg := indexer.Defaults()
	icfg.Layout.Prefix = "baedal_bench_index_"
	icfg.Log.Prefix = "baedal:bench-index:"
	icfg.BatchSize = cfg.BatchSize
	icfg.CacheEntries = 2*cfg.Shops + 10_000
	cleanup := func() {
		c := context.Background()
		for _, k := range []layout.Kind{layout.Nested, layout.Split} {
			_ = icfg.Layout.DeleteIndices(c, osc, k)
		}
		if keys, err := clients.Redis.Keys(c, icfg.Log.Prefix+"*").Result(); err == nil && len(keys) > 0 {
			clients.Redis.Del(c, keys...)
		}
	}
	cleanup()
	defer cleanup()

	sides := []*side{{kind: layout.Nested}, {kind: layout.Split}}
	for _, s := range sides {
		if err := icfg.Layout.EnsureIndices(ctx, osc, s.kind); err != nil {
			return Summary{}, err
		}
		if s.ix, err = indexer.New(icfg, s.kind, osc, log, nil); err != nil {
			return Summary{}, err
		}
		s.batches = bench.NewLatencyRecorder()
	}

	// Load the catalog into both layouts.
	gen := catalog.NewGenerator(cfg.Seed)
	menus := 0
	versions := make(map[int64]int64, cfg.Shops)
	bar := bench.NewProgress(cfg.Log, "load catalog into both layouts", int64(cfg.Shops))
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
	for _, st := range gen.Shops(cfg.Shops) {
		menus += len(st.Menus)
		versions[st.Shop.ID] = st.Version
		batch = append(batch, st.UpsertEvent())
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return Summary{}, err
			}
		}
	}
	if err := flush(); err != nil {
		return Summary{}, err
	}
	bar.Done()
	if err := refresh(ctx, osc, icfg.Layout); err != nil {
		return Summary{}, err
	}

	hot, mixed, deleted := makeStreams(cfg, versions)
	roundBar := bench.NewProgress(cfg.Log, "interleaved rounds", int64(cfg.Rounds*len(sides)))
	runSide := func(s *side) func(int) error {
		return func(round int) error {
			before, err := indexBytes(ctx, osc, icfg.Layout, s.kind)
			if err != nil {
				return err
			}
			d, docs, err := applyAll(ctx, s, hot[round], cfg.BatchSize)
			if err != nil {
				return err
			}
			s.hotTime += d
			s.hotEvents += len(hot[round])
			s.roundsPerSec = append(s.roundsPerSec, float64(len(hot[round]))/d.Seconds())
			d2, docs2, err := applyAll(ctx, s, mixed[round], cfg.BatchSize)
			if err != nil {
				return err
			}
			s.mixedTime += d2
			s.mixedEvents += len(mixed[round])
			s.roundsMixedPerSec = append(s.roundsMixedPerSec, float64(len(mixed[round]))/d2.Seconds())
			s.docs += docs + docs2
			after, err := indexBytes(ctx, osc, icfg.Layout, s.kind)
			if err != nil {
				return err
			}
			s.bytes += after.writtenSince(before)
			s.roundsBytes = append(s.roundsBytes, float64(after.writtenSince(before)))
			roundBar.Add(1)
			return nil
		}
	}
	if err := bench.Interleave(cfg.Rounds,
		bench.Side{Name: "nested", Run: runSide(sides[0])},
		bench.Side{Name: "split", Run: runSide(sides[1])},
	); err != nil {
		return Summary{}, err
	}
	roundBar.Done()

	fresh, err := freshnessRun(ctx, cfg, icfg, clients, osc, log, versions, deleted)
	if err != nil {
		return Summary{}, err
	}

	n, sp := sides[0], sides[1]
	sum := Summary{
		Bench: "index", Profile: string(cfg.Profile), Shops: cfg.Shops,
		MenusPerShopAvg: round2(float64(menus) / float64(cfg.Shops)),
		Events:          n.hotEvents, MixedEvents: n.mixedEvents, Rounds: cfg.Rounds,
		NestedEventsPerS:  round2(float64(n.hotEvents) / n.hotTime.Seconds()),
		SplitEventsPerS:   round2(float64(sp.hotEvents) / sp.hotTime.Seconds()),
		NestedMixedPerS:   round2(float64(n.mixedEvents) / n.mixedTime.Seconds()),
		SplitMixedPerS:    round2(float64(sp.mixedEvents) / sp.mixedTime.Seconds()),
		NestedDocsWritten: n.docs, SplitDocsWritten: sp.docs,
		NestedBytesWritten: n.bytes, SplitBytesWritten: sp.bytes,
		NestedBatchP50Ms: bench.Ms(n.batches.Quantile(0.5)), NestedBatchP99Ms: bench.Ms(n.batches.Quantile(0.99)),
		SplitBatchP50Ms: bench.Ms(sp.batches.Quantile(0.5)), SplitBatchP99Ms: bench.Ms(sp.batches.Quantile(0.99)),
		FreshnessSamples: fresh.Count(), FreshnessP50Ms: bench.Ms(fresh.Quantile(0.5)), FreshnessP99Ms: bench.Ms(fresh.Quantile(0.99)),
	}
	sum.ThroughputRatio = round2(bench.Ratio(sum.SplitEventsPerS, sum.NestedEventsPerS))
	sum.MixedThroughputRatio = round2(bench.Ratio(sum.SplitMixedPerS, sum.NestedMixedPerS))
	sum.BytesRatio = round2(bench.Ratio(float64(sum.SplitBytesWritten), float64(sum.NestedBytesWritten)))
	sum.ThroughputRatioRounds = bench.PairedRatioCI(n.roundsPerSec, sp.roundsPerSec)
	sum.ThroughputRatioCI95 = sum.ThroughputRatioRounds.IntervalAround(sum.ThroughputRatio)
	sum.MixedThroughputRatioRounds = bench.PairedRatioCI(n.roundsMixedPerSec, sp.roundsMixedPerSec)
	sum.MixedThroughputRatioCI95 = sum.MixedThroughputRatioRounds.IntervalAround(sum.MixedThroughputRatio)
	sum.BytesRatioRounds = bench.PairedRatioCI(n.roundsBytes, sp.roundsBytes)
	sum.BytesRatioCI95 = sum.BytesRatioRounds.IntervalAround(sum.BytesRatio)
	sum.Targets = bench.Targets{"throughput_ratio": ThroughputTarget.Evaluate(sum.ThroughputRatio, sum.ThroughputRatioCI95)}

	rep := bench.NewReport("indexing", "Indexing: nested vs split", bench.CommandLine()) // not "index": bench all writes index.html
	rep.Add(bench.Section{Title: "Setup", Text: fmt.Sprintf(
		"%d shops, %.1f menus per shop on average; per round and layout %d hot shop updates then %d realistic-mix events, in batches of %d through indexer.Apply; %d ABBA rounds. Bytes written: Δ translog + Δ store (≥0) + Δ merged bytes from the indices' _stats.",
		cfg.Shops, sum.MenusPerShopAvg, cfg.HotEvents, cfg.MixedEvents, cfg.BatchSize, cfg.Rounds)})
	rep.Add(bench.Section{Title: "Throughput and writes", Table: &bench.Table{
		Header: []string{"measure", "nested", "split", "split/nested"},
		Rows: [][]string{
			{"hot shop updates/s", f2(sum.NestedEventsPerS), f2(sum.SplitEventsPerS), f2(sum.ThroughputRatio)},
			{"realistic mix events/s", f2(sum.NestedMixedPerS), f2(sum.SplitMixedPerS), f2(sum.MixedThroughputRatio)},
			{"documents written", fmt.Sprint(sum.NestedDocsWritten), fmt.Sprint(sum.SplitDocsWritten), f2(bench.Ratio(float64(sum.SplitDocsWritten), float64(sum.NestedDocsWritten)))},
			{"bytes written", fmt.Sprint(sum.NestedBytesWritten), fmt.Sprint(sum.SplitBytesWritten), f2(sum.BytesRatio)},
		},
	}})
	x := make([]float64, cfg.Rounds)
	for i := range x {
		x[i] = float64(i + 1)
	}
	rep.Add(bench.Section{Title: "Per round", Charts: []bench.Chart{
		{Title: "Hot shop updates per second by round", XLabel: "round", YLabel: "events/s", Kind: bench.LineChart,
			Series: []bench.Series{{Name: "nested", X: x, Y: n.roundsPerSec}, {Name: "split", X: x, Y: sp.roundsPerSec}}},
		bench.LatencyCDF("Apply latency per batch", []string{"nested", "split"}, []*bench.LatencyRecorder{n.batches, sp.batches}),
	}})
	rep.Add(bench.IntervalSection([]bench.Figure{
		{Name: "hot updates/s ratio", Point: sum.ThroughputRatio, CI95: sum.ThroughputRatioCI95, Rounds: &sum.ThroughputRatioRounds},
		{Name: "mix events/s ratio", Point: sum.MixedThroughputRatio, CI95: sum.MixedThroughputRatioCI95, Rounds: &sum.MixedThroughputRatioRounds},
		{Name: "bytes written ratio", Point: sum.BytesRatio, CI95: sum.BytesRatioCI95, Rounds: &sum.BytesRatioRounds},
	}))
	rep.Add(bench.TargetsSection(sum.Targets))
	rep.Add(bench.Section{Title: "Freshness (split, through Redis Streams and the worker)", Text: fmt.Sprintf(
		"%d events appended at %d/s; %d sampled events: append → visible to _search p50 %.1f ms, p99 %.1f ms (refresh interval %s).",
		cfg.FreshnessEvents, cfg.FreshnessRate, sum.FreshnessSamples, sum.FreshnessP50Ms, sum.FreshnessP99Ms, icfg.Layout.Shops.RefreshInterval),
		Charts: []bench.Chart{bench.LatencyCDF("Freshness", []string{"split"}, []*bench.LatencyRecorder{fresh})}})
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

// ThroughputTarget is the indexing target: split takes hot shop updates at
// least 20 times as fast as nested.
var ThroughputTarget = bench.AtLeast(20)

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

func refresh(ctx context.Context, osc *osapi.Client, lc layout.Config) error {
	aliases := append(lc.Aliases(layout.Nested), lc.Aliases(layout.Split)...)
	return osc.Do(ctx, http.MethodPost, "/"+strings.Join(aliases, ",")+"/_refresh", nil, nil)
}

// freshnessRun appends hot updates to the event log at a fixed rate while the
// split stream worker runs, and records append → visible for the sampled
// events.
func freshnessRun(ctx context.Context, cfg Config, icfg indexer.Config, clients *backend.Clients, osc *osapi.Client, log *slog.Logger, versions map[int64]int64, deleted map[int64]bool) (*bench.LatencyRecorder, error) {
	rec := bench.NewLatencyRecorder()
	evlog, err := eventlog.New(icfg.Log, clients.Redis, log, nil)
	if err != nil {
		return nil, err
	}
	w, err := indexer.NewWorker(icfg, layout.Split, evlog, osc, log, nil)
	if err != nil {
		return nil, err
	}
	w.OnFreshness = rec.Record
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var werr error
	wg.Go(func() { werr = w.Run(wctx) })
	defer func() { cancel(); wg.Wait() }()

	src := catalog.NewEventStream(cfg.Seed, cfg.Shops)
	bar := bench.NewProgress(cfg.Log, "freshness run (split, via Redis)", int64(cfg.FreshnessEvents))
	const tick = 20 * time.Millisecond
	perTick := max(1, cfg.FreshnessRate*int(tick/time.Millisecond)/1000)
	t := time.NewTicker(tick)
	defer t.Stop()
	sent := 0
	for sent < cfg.FreshnessEvents {
		batch := make([]catalog.Event, 0, perTick)
		for len(batch) < perTick && sent+len(batch) < cfg.FreshnessEvents {
			ev := src.Next()
			if !ev.IsHotShopUpdate() || ev.ID > int64(cfg.Shops) || deleted[ev.ID] {
				continue
			}
			versions[ev.ID]++
			ev.Version = versions[ev.ID]
			batch = append(batch, ev)
		}
		if _, err := evlog.Append(ctx, batch); err != nil {
			return nil, err
		}
		sent += len(batch)
		bar.Add(int64(len(batch)))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	bar.Done()
	// Let the last batches and probes finish.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		done := true
		for p := range icfg.Log.Partitions {
			lag, pending, err := evlog.Consumer(indexer.GroupName(layout.Split), p).Lag(ctx)
			if err != nil || lag != 0 || pending != 0 {
				done = false
			}
		}
		if done {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second + 2*icfg.FreshnessPoll)
	cancel()
	wg.Wait()
	if werr != nil && !errors.Is(werr, context.Canceled) {
		return nil, werr
	}
	return rec, nil
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
