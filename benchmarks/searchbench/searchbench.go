// Package searchbench is `baedal bench search`: the same delivery-app query
// mix on every layout the cluster runs — the nested baseline, split, and hot
// when every OpenSearch node has the baedal-hot plugin (docs/hot-layout.md) —
// idle and while hot shop updates are applied to each at the same fixed rate,
// in one run on one machine. A layout the cluster cannot run is skipped,
// never silently: the summary's "skipped" names it with the reason, and its
// keys are absent.
//
// Invariant: every layout holds the same data (the same catalog and the same
// event stream, applied through the production indexer) and every query runs
// on each, back to back, in alternating order (ABC, CBA: bench.RoundOrder);
// figures are ratios over the nested baseline and percentiles of that run,
// each ratio's interval covering the spread between the phase's rounds;
// failed searches are counted and never enter the latencies; and
// `equivalent` is true only if at least 500 idle pages were compared and
// every layout's page matched nested's, idle and after each load round.
package searchbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/benchmarks/internal/bulkload"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/localstack"
	"github.com/baedal/baedal/query"
	"github.com/baedal/baedal/searcher"
)

// Config sizes the run.
type Config struct {
	Bench bench.Config
	// Shops in the catalog; 0 picks by profile (quick 20,000, full 200,000).
	Shops int
	// Queries per phase; 0 picks by profile (quick 10,000, full 20,000). A
	// p99 ratio's bootstrap interval narrows as 1/√queries: at 2,000 (each
	// p99 on its 20 slowest searches) it was ±15–30% on this machine, the
	// hot layout's the widest; 10,000 bring it to about ±10%. A quick run
	// takes about 12 minutes.
	Queries int
	// Deadline of one search; slower searches count as timeouts.
	Deadline time.Duration
	// UpdateRate is the hot updates per second applied to EACH layout under
	// load; 0 means half the nested layout's maximum measured in this run.
	UpdateRate float64
	// MaxRateSeconds is how long the nested maximum is measured.
	MaxRateSeconds int
	// StateDir is the local stack to use; if none runs there, a temporary
	// stack is started and stopped.
	StateDir string
	// Clients is how many searches are in flight at once, in both phases.
	Clients int
	// BulkLoad loads the catalog through the bulk path (bulkload: the
	// indexer's own documents, refresh and replicas paused) instead of
	// Apply in batches of 500.
	BulkLoad bool
}

// Defaults returns the quick profile's configuration.
func Defaults() Config {
	return Config{Deadline: 500 * time.Millisecond, MaxRateSeconds: 15, StateDir: localstack.Defaults().StateDir, Clients: DefaultClients}
}

// DefaultClients is one search in flight per core of this 2-core machine:
// searches arrive concurrently in production, and one sequential client can
// never use more than one core of the node, so it cannot show indexing and
// search competing for CPU.
const DefaultClients = 2

// Flags binds the configuration.
func (c *Config) Flags(fs *flag.FlagSet) {
	c.Bench.Flags(fs)
	fs.IntVar(&c.Shops, "shops", c.Shops, "shops in the catalog (0: quick 20000, full 200000)")
	fs.IntVar(&c.Queries, "queries", c.Queries, "queries per phase (0: quick 10000, full 20000)")
	fs.DurationVar(&c.Deadline, "deadline", c.Deadline, "deadline of one search; slower ones count as timeouts")
	fs.Float64Var(&c.UpdateRate, "update-rate", c.UpdateRate, "hot updates/s applied to each layout under load (0: half the nested maximum measured in this run)")
	fs.IntVar(&c.MaxRateSeconds, "max-rate-seconds", c.MaxRateSeconds, "seconds spent measuring the nested layout's maximum update rate")
	fs.StringVar(&c.StateDir, "state-dir", c.StateDir, "local stack to use; a temporary one is started if none runs there")
	fs.IntVar(&c.Clients, "clients", c.Clients, "searches in flight at once, in both phases")
	fs.BoolVar(&c.BulkLoad, "bulk-load", c.BulkLoad, "load the catalog through the bulk path (the indexer's documents, refresh and replicas paused) instead of Apply in batches")
}

// Validate names the first invalid field.
func (c *Config) Validate() error {
	if err := c.Bench.Validate(); err != nil {
		return err
	}
	switch {
	case c.Shops < 0 || c.Shops > 1_000_000:
		return fmt.Errorf("shops: got %d, allowed: 0..1000000 (the indices' max_terms_count)", c.Shops)
	case c.Queries < 0 || c.Queries > 1_000_000:
		return fmt.Errorf("queries: got %d, allowed: 0..1000000", c.Queries)
	case c.Deadline <= 0:
		return fmt.Errorf("deadline: got %s, must be > 0", c.Deadline)
	case c.UpdateRate < 0:
		return fmt.Errorf("update-rate: got %g, must be >= 0", c.UpdateRate)
	case c.MaxRateSeconds < 1:
		return fmt.Errorf("max-rate-seconds: got %d, must be >= 1", c.MaxRateSeconds)
	case c.Clients < 1 || c.Clients > 64:
		return fmt.Errorf("clients: got %d, allowed: 1..64", c.Clients)
	}
	return nil
}

// PhaseFigures are one phase's latencies on every layout; the ratios are
// over nested.
type PhaseFigures struct {
	NestedP50Ms    float64 `json:"nested_p50_ms"`
	NestedP99Ms    float64 `json:"nested_p99_ms"`
	SplitP50Ms     float64 `json:"split_p50_ms"`
	SplitP99Ms     float64 `json:"split_p99_ms"`
	TimeoutsNested int     `json:"timeouts_nested"`
	TimeoutsSplit  int     `json:"timeouts_split"`
	// Searches OpenSearch refused under pressure (HTTP 429: a circuit
	// breaker or a full search queue).
	RejectedNested int     `json:"rejected_nested"`
	RejectedSplit  int     `json:"rejected_split"`
	P50Ratio       float64 `json:"p50_ratio"`
	P99Ratio       float64 `json:"p99_ratio"`
	// 95% intervals of the ratios: the hull of a bootstrap over the
	// latencies and a t interval over the phase's rounds
	// (bench.QuantileRatioOverRounds), whose per-round ratios are in
	// *_rounds.
	P50RatioCI95   bench.Interval    `json:"p50_ratio_ci95"`
	P99RatioCI95   bench.Interval    `json:"p99_ratio_ci95"`
	P50RatioRounds bench.RoundRatios `json:"p50_ratio_rounds"`
	P99RatioRounds bench.RoundRatios `json:"p99_ratio_rounds"`
	// Share of the phase's searches that got no answer (timeouts and
	// rejections; they are left out of the latencies), with its Wilson
	// interval (bench.ShareCI).
	FailedShareNested    float64        `json:"failed_share_nested"`
	FailedShareSplit     float64        `json:"failed_share_split"`
	FailedShareSplitCI95 bench.Interval `json:"failed_share_split_ci95"`
	// Update rates actually achieved during the phase (0 when idle).
	NestedUpdatesPerS float64 `json:"nested_updates_per_s"`
	SplitUpdatesPerS  float64 `json:"split_updates_per_s"`
	// The hot layout's; nil (absent from the JSON) when it was skipped.
	*HotPhaseFigures
}

// HotPhaseFigures are the hot layout's figures of one phase, its ratios
// over nested.
type HotPhaseFigures struct {
	HotP50Ms           float64           `json:"hot_p50_ms"`
	HotP99Ms           float64           `json:"hot_p99_ms"`
	TimeoutsHot        int               `json:"timeouts_hot"`
	RejectedHot        int               `json:"rejected_hot"`
	P50RatioHot        float64           `json:"p50_ratio_hot"`
	P99RatioHot        float64           `json:"p99_ratio_hot"`
	P50RatioHotCI95    bench.Interval    `json:"p50_ratio_hot_ci95"`
	P99RatioHotCI95    bench.Interval    `json:"p99_ratio_hot_ci95"`
	P50RatioHotRounds  bench.RoundRatios `json:"p50_ratio_hot_rounds"`
	P99RatioHotRounds  bench.RoundRatios `json:"p99_ratio_hot_rounds"`
	FailedShareHot     float64           `json:"failed_share_hot"`
	FailedShareHotCI95 bench.Interval    `json:"failed_share_hot_ci95"`
	HotUpdatesPerS     float64           `json:"hot_updates_per_s"`
}

// StepFigures are the times of one plan step over a phase.
type StepFigures struct {
	Count int64   `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// stepTimes records the time of every executed step, by layout and step.
type stepTimes struct {
	mu   sync.Mutex
	recs map[string]*bench.LatencyRecorder
}

func (st *stepTimes) record(k layout.Kind, resp *searcher.Response) {
	if st == nil || resp == nil || resp.Explain == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, step := range resp.Explain.Steps {
		key := string(k) + " " + step.Name
		if st.recs[key] == nil {
			st.recs[key] = bench.NewLatencyRecorder()
		}
		st.recs[key].Record(time.Duration(step.TookMs * float64(time.Millisecond)))
	}
}

func (st *stepTimes) figures() map[string]StepFigures {
	out := map[string]StepFigures{}
	for k, rec := range st.recs {
		sum := rec.Summary()
		out[k] = StepFigures{Count: rec.Count(), P50Ms: sum.P50Ms, P99Ms: sum.P99Ms}
	}
	return out
}

// Summary is the JSON line.
type Summary struct {
	Bench   string `json:"bench"`
	Profile string `json:"profile"`
	Shops   int    `json:"shops"`
	Queries int    `json:"queries"`
	Clients int    `json:"clients"`
	// Rounds per phase: the idle phase's queries and the load phase's
	// turns are cut into this many rounds, the intervals' pairs.
	Rounds int `json:"rounds"`
	// Equivalent: no page differed from nested's, idle or under load, and
	// at least MinComparedPages idle pages were compared.
	Equivalent bool `json:"equivalent"`
	// Mismatches are idle pages that differed from nested's, of Compared.
	Mismatches int `json:"mismatches"`
	Compared   int `json:"compared"`
	// NotCompared counts idle pages one layout did not answer even untimed
	// (within compareDeadline), so they were not compared.
	NotCompared int `json:"not_compared"`
	// Under load, after each round, the layouts are brought to the same
	// state (every layout catches up to the most updates any applied) and,
	// with writes paused, a sample of the round's searches is compared.
	MismatchesUnderLoad  int          `json:"mismatches_under_load"`
	ComparedUnderLoad    int          `json:"compared_under_load"`
	DeadlineMs           float64      `json:"deadline_ms"`
	NestedMaxUpdatesPerS float64      `json:"nested_max_updates_per_s"`
	UpdateRate           float64      `json:"update_rate"`
	Idle                 PhaseFigures `json:"idle"`
	// IdleSteps are the idle phase's per-step times (from explain), keyed
	// "layout step", e.g. "split menus:fetch".
	IdleSteps map[string]StepFigures `json:"idle_steps"`
	UnderLoad PhaseFigures           `json:"under_load"`
	// Pathological compares legal but costly searches with the ordinary
	// mix on each layout, idle (targets pathological_p99_ratio_LAYOUT).
	Pathological PathologicalFigures `json:"pathological"`
	// Relevance is the offline relevance check on the catalog as
	// generated (targets ndcg10_ratio and absurd_top10).
	Relevance         RelevanceFigures `json:"relevance"`
	P50RatioUnderLoad float64          `json:"p50_ratio_under_load"`
	P99RatioUnderLoad float64          `json:"p99_ratio_under_load"`
	// The headline ratios' 95% intervals (copies of under_load's).
	P50RatioUnderLoadCI95 bench.Interval `json:"p50_ratio_under_load_ci95"`
	P99RatioUnderLoadCI95 bench.Interval `json:"p99_ratio_under_load_ci95"`
	// Skipped names each layout this run left out, with the reason (the
	// hot layout when an OpenSearch node lacks the baedal-hot plugin);
	// empty when every layout ran.
	Skipped map[string]string `json:"skipped"`
	// The hot layout's headline figures; nil (absent from the JSON) when
	// it was skipped.
	*HotFigures
	// Targets: p99_ratio_under_load <= 0.7, failed_share_under_load <=
	// 0.001, mismatches <= 0 and mismatches_under_load <= 0 (each judged
	// only over MinComparedPages pages or more); with the hot layout also
	// p99_ratio_under_load_hot <= 0.7, p99_ratio_idle_hot <= 1 and their
	// failed_share_* <= 0.001; on every layout
	// pathological_p99_ratio_LAYOUT <= 3.
	// AfterLoad is the catalog's disk per layout and the nodes' heap,
	// once it is loaded.
	AfterLoad Footprint `json:"after_load"`
	// LoadSeconds is how long the setup took: the fresh indices, the
	// catalog loaded into every layout, refreshed, the hot table ready.
	LoadSeconds float64       `json:"load_seconds"`
	Targets     bench.Targets `json:"targets"`
	Report      string        `json:"report"`
}

// HotFigures are the hot layout's headline ratios over nested (copies of
// idle's and under_load's) and the size of its table.
type HotFigures struct {
	P50RatioUnderLoadHot     float64        `json:"p50_ratio_under_load_hot"`
	P50RatioUnderLoadHotCI95 bench.Interval `json:"p50_ratio_under_load_hot_ci95"`
	P99RatioUnderLoadHot     float64        `json:"p99_ratio_under_load_hot"`
	P99RatioUnderLoadHotCI95 bench.Interval `json:"p99_ratio_under_load_hot_ci95"`
	P99RatioIdleHot          float64        `json:"p99_ratio_idle_hot"`
	P99RatioIdleHotCI95      bench.Interval `json:"p99_ratio_idle_hot_ci95"`
	// HotTableBytesPerShop is the table's heap on one node (the plugin's
	// estimate, GET /_baedal/hot/{table}/_status; the node with the
	// largest) over the shops it holds, read at the end of the run.
	HotTableBytesPerShop float64 `json:"hot_table_bytes_per_shop"`
}

// run holds the state of one benchmark run.
type run struct {
	cfg      Config
	log      *slog.Logger
	progress io.Writer
	osc      *osapi.Client
	idx      layout.Config
	// kinds are the layouts this run measures, the nested baseline first;
	// skipped says why each other layout is not measured.
	kinds    []layout.Kind
	skipped  map[string]string
	indexers map[layout.Kind]*indexer.Indexer
	srch     *searcher.Searcher
	// cmpSrch serves the comparisons only: they are not timed, so its
	// deadline is compareDeadline, and a page the measured search missed
	// is still compared.
	cmpSrch *searcher.Searcher
	// One event stream per layout, same seed: identical sequences.
	streams map[layout.Kind]*catalog.EventStream
	// afterLoad is the footprint once the catalog is loaded, loadTook how
	// long the load took.
	afterLoad Footprint
	loadTook  time.Duration
}

// Run executes the benchmark; progress goes to progress, the report to
// cfg.Bench.ReportDir.
func Run(ctx context.Context, cfg Config, log *slog.Logger, progress io.Writer) (Summary, error) {
	cfg.Bench = cfg.Bench.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := cfg.Bench.Profile
	if cfg.Shops == 0 {
		cfg.Shops = bench.Pick(p, 20_000, 200_000)
	}
	if cfg.Queries == 0 {
		cfg.Queries = bench.Pick(p, 10000, 20000)
	}
	st, stop, err := localstack.UseOrStart(ctx, cfg.StateDir, progress)
	if err != nil {
		return Summary{}, err
	}
	defer stop()
	osCfg := backend.Defaults().OpenSearch
	osCfg.URLs = st.OpenSearchURLs
	client, err := backend.OpenOpenSearch(osCfg)
	if err != nil {
		return Summary{}, err
	}
	r := &run{cfg: cfg, log: log, progress: progress, osc: osapi.New(client), idx: layout.Defaults()}
	// Unique per run: two runs on one stack must not share indices.
	r.idx.Prefix = fmt.Sprintf("bench_search_%d_", os.Getpid())
	if r.kinds, r.skipped, err = runnableKinds(ctx, r.osc); err != nil {
		return Summary{}, err
	}
	for _, k := range slices.Sorted(maps.Keys(r.skipped)) {
		fmt.Fprintf(progress, "bench search: the %s layout is skipped: %s\n", k, r.skipped[k])
	}
	defer func() {
		for _, k := range r.kinds {
			_ = r.idx.DeleteIndices(context.WithoutCancel(ctx), r.osc, k)
		}
	}()
	start := time.Now()
	if err := r.setup(ctx); err != nil {
		return Summary{}, err
	}
	r.loadTook = time.Since(start)
	return r.measure(ctx)
}

// runnableKinds is layout.RunnableKinds with the reasons keyed for the
// summary's "skipped" object.
func runnableKinds(ctx context.Context, osc *osapi.Client) ([]layout.Kind, map[string]string, error) {
	kinds, unavailable, err := layout.RunnableKinds(ctx, osc)
	if err != nil {
		return nil, nil, fmt.Errorf("searchbench: can the cluster run the hot layout? %w", err)
	}
	skipped := map[string]string{}
	for k, why := range unavailable {
		skipped[string(k)] = why
	}
	return kinds, skipped, nil
}

// setup creates fresh indices and loads the catalog into every layout.
func (r *run) setup(ctx context.Context) error {
	icfg := indexer.Defaults()
	icfg.Layout = r.idx
	scfg := searcher.Defaults()
	scfg.Timeout = r.cfg.Deadline
	r.srch = searcher.New(r.osc, r.idx, scfg, nil)
	scfg.Timeout = compareDeadline
	r.cmpSrch = searcher.New(r.osc, r.idx, scfg, nil)
	for k, why := range r.skipped {
		r.srch.SetUnavailable(layout.Kind(k), why)
		r.cmpSrch.SetUnavailable(layout.Kind(k), why)
	}
	seed := uint64(r.cfg.Bench.Seed)
	r.indexers = map[layout.Kind]*indexer.Indexer{}
	r.streams = map[layout.Kind]*catalog.EventStream{}
	for _, k := range r.kinds {
		ix, err := indexer.New(icfg, k, r.osc, r.log, nil)
		if err != nil {
			return err
		}
		r.indexers[k] = ix
		r.streams[k] = catalog.NewEventStream(seed, r.cfg.Shops)
		if err := r.idx.DeleteIndices(ctx, r.osc, k); err != nil {
			return err
		}
		if err := r.idx.EnsureIndices(ctx, r.osc, k); err != nil {
			return err
		}
	}
	if err := r.load(ctx); err != nil {
		return err
	}
	if slices.Contains(r.kinds, layout.Hot) {
		if _, err := r.hotTableStatus(ctx, hotTableReadyTimeout); err != nil {
			return err
		}
	}
	if err := r.refresh(ctx); err != nil {
		return err
	}
	var err error
	r.afterLoad, err = r.footprint(ctx)
	return err
}

// Footprint is what the loaded catalog costs the cluster, read once the
// load is refreshed, before any update.
type Footprint struct {
	// StoreBytes is each layout's disk: the primary store size of its
	// indices (_stats store), by layout.
	StoreBytes map[string]int64 `json:"store_bytes"`
	// HeapUsedBytes is the JVM heap in use on the node that uses the most
	// (_nodes/stats/jvm: garbage not yet collected included, so it moves
	// from one reading to the next), HeapMaxBytes that node's maximum.
	HeapUsedBytes int64 `json:"heap_used_bytes"`
	HeapMaxBytes  int64 `json:"heap_max_bytes"`
}

// footprint reads the layouts' store sizes and the nodes' heap.
func (r *run) footprint(ctx context.Context) (Footprint, error) {
	f := Footprint{StoreBytes: map[string]int64{}}
	for _, k := range r.kinds {
		var stats struct {
			All struct {
				Primaries struct {
					Store struct {
						Size int64 `json:"size_in_bytes"`
					} `json:"store"`
				} `json:"primaries"`
			} `json:"_all"`
		}
		path := "/" + strings.Join(r.idx.Aliases(k), ",") + "/_stats/store"
		if err := r.osc.Do(ctx, http.MethodGet, path, nil, &stats); err != nil {
			return f, fmt.Errorf("searchbench: store size of %s: %w", k, err)
		}
		f.StoreBytes[string(k)] = stats.All.Primaries.Store.Size
	}
	var nodes struct {
		Nodes map[string]struct {
			JVM struct {
				Mem struct {
					HeapUsed int64 `json:"heap_used_in_bytes"`
					HeapMax  int64 `json:"heap_max_in_bytes"`
				} `json:"mem"`
			} `json:"jvm"`
		} `json:"nodes"`
	}
	if err := r.osc.Do(ctx, http.MethodGet, "/_nodes/stats/jvm?filter_path=nodes.*.jvm.mem", nil, &nodes); err != nil {
		return f, fmt.Errorf("searchbench: heap of the nodes: %w", err)
	}
	for _, n := range nodes.Nodes {
		if n.JVM.Mem.HeapUsed > f.HeapUsedBytes {
			f.HeapUsedBytes, f.HeapMaxBytes = n.JVM.Mem.HeapUsed, n.JVM.Mem.HeapMax
		}
	}
	return f, nil
}

// load loads the generated catalog into every layout: through Apply in
// batches of 500, or with BulkLoad through the bulk path.
func (r *run) load(ctx context.Context) error {
	if r.cfg.BulkLoad {
		var indexers []*indexer.Indexer
		for _, k := range r.kinds {
			indexers = append(indexers, r.indexers[k])
		}
		return bulkload.Load(ctx, bulkload.Options{OS: r.osc, Layout: r.idx, Indexers: indexers, Seed: uint64(r.cfg.Bench.Seed), To: r.cfg.Shops, Progress: r.progress})
	}
	gen := catalog.NewGenerator(uint64(r.cfg.Bench.Seed))
	prog := bench.NewProgress(r.progress, "load catalog into "+layout.JoinKinds(r.kinds), int64(r.cfg.Shops))
	defer prog.Done()
	const batch = 500
	events := make([]catalog.Event, 0, batch)
	for i := 0; i < r.cfg.Shops; i++ {
		s := gen.Shop(i)
		events = append(events, s.UpsertEvent())
		if len(events) == batch || i == r.cfg.Shops-1 {
			for _, k := range r.kinds {
				if _, err := r.indexers[k].Apply(ctx, events); err != nil {
					return fmt.Errorf("searchbench: load catalog into %s: %w", k, err)
				}
			}
			prog.Add(int64(len(events)))
			events = events[:0]
		}
	}
	return nil
}

// hotTableReadyTimeout bounds the wait for the hot table to be ready on
// every node (it rebuilds from the shop index after the index is created).
const hotTableReadyTimeout = 2 * time.Minute

// hotTableStatus is the plugin's table status (unchecked: a ready poll
// scans nothing).
type hotTableStatus layout.HotStatus

// hotTableStatus returns the hot table's status once it is ready on every
// node, polling for up to wait.
func (r *run) hotTableStatus(ctx context.Context, wait time.Duration) (hotTableStatus, error) {
	alias := r.idx.Alias(layout.RoleHotShops)
	deadline := time.Now().Add(wait)
	for {
		st, err := layout.FetchHotStatus(ctx, r.osc, alias, false)
		if err != nil {
			return hotTableStatus(st), fmt.Errorf("searchbench: %w", err)
		}
		if st.Ready {
			return hotTableStatus(st), nil
		}
		if time.Now().After(deadline) {
			return hotTableStatus(st), fmt.Errorf("searchbench: the hot table of %s is not ready on every data node after %s: %s", alias, wait, st.Problem())
		}
		select {
		case <-ctx.Done():
			return hotTableStatus(st), ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// bytesPerShop is the table's heap on the node that reports the most, over
// the shops that node holds (0 when no node holds a shop).
func (st hotTableStatus) bytesPerShop() float64 {
	best := 0.0
	for _, n := range st.Nodes {
		if n.Shops > 0 {
			best = max(best, float64(n.Bytes)/float64(n.Shops))
		}
	}
	return round(best)
}

func (r *run) refresh(ctx context.Context) error {
	for _, alias := range r.aliases() {
		if err := r.osc.Do(ctx, http.MethodPost, "/"+alias+"/_refresh", nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// aliases are the indices of every measured layout.
func (r *run) aliases() []string {
	var out []string
	for _, k := range r.kinds {
		out = append(out, r.idx.Aliases(k)...)
	}
	return out
}

// settleTimeout bounds settle's wait for merges.
const settleTimeout = time.Minute

// settle refreshes both layouts and waits until no segment merge runs on
// their indices, so that a phase or round does not pay for the indexing
// before it: the merges that follow a nested round, which rewrote thousands
// of 31-document blocks, would otherwise run during the next round's
// searches, and with the rounds' ABBA order that is a split round half of
// the time. Merges caused by a round's own updates still run in that round.
func (r *run) settle(ctx context.Context) error {
	if err := r.refresh(ctx); err != nil {
		return err
	}
	path := "/" + strings.Join(r.aliases(), ",") + "/_stats/merge?filter_path=_all.total.merges.current"
	deadline := time.Now().Add(settleTimeout)
	for {
		var stats struct {
			All struct {
				Total struct {
					Merges struct {
						Current int `json:"current"`
					} `json:"merges"`
				} `json:"total"`
			} `json:"_all"`
		}
		if err := r.osc.Do(ctx, http.MethodGet, path, nil, &stats); err != nil {
			return fmt.Errorf("searchbench: read merge stats: %w", err)
		}
		merging := stats.All.Total.Merges.Current
		if merging == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(r.progress, "%d merges still running after %s; going on\n", merging, settleTimeout)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// applyNext applies the next n hot shop updates of a layout's stream: the
// changes that arrive by the thousand per second in production (menu and
// cold changes are bench index's mixed stream).
func (r *run) applyNext(ctx context.Context, k layout.Kind, n int) error {
	events := make([]catalog.Event, n)
	s := r.streams[k]
	for i := range events {
		events[i] = s.NextHotShopUpdate()
	}
	_, err := r.indexers[k].Apply(ctx, events)
	return err
}

// updateBatch is how many events one indexer batch applies: a 50 ms batch
// window at a few thousand events per second.
const updateBatch = 100

// maxRateBatch is the batch of the maximum-rate measurement: the indexer's
// full batch, so the maximum is not understated.
const maxRateBatch = 1000

// measureNestedMax applies updates to the nested layout as fast as it takes
// them, then the same events to every other layout (unmeasured) so all hold
// equal data.
func (r *run) measureNestedMax(ctx context.Context) (float64, error) {
	deadline := time.Now().Add(time.Duration(r.cfg.MaxRateSeconds) * time.Second)
	start, applied := time.Now(), 0
	for time.Now().Before(deadline) {
		if err := r.applyNext(ctx, layout.Nested, maxRateBatch); err != nil {
			return 0, err
		}
		applied += maxRateBatch
	}
	rate := float64(applied) / time.Since(start).Seconds()
	for _, k := range r.kinds[1:] {
		for done := 0; done < applied; done += maxRateBatch {
			if err := r.applyNext(ctx, k, maxRateBatch); err != nil {
				return 0, err
			}
		}
	}
	return rate, r.settle(ctx)
}

// phase runs every query on every layout, back to back, the order of the
// layouts alternating between queries (bench.RoundOrder); cfg.Clients
// queries are in flight at once. The queries are cut into `rounds`
// consecutive rounds. It returns per layout of r.kinds the latencies of
// its answered searches, per round ([slot][round]), and its missed
// searches. With compare, every layout's page is compared with nested's;
// a query some layout missed is compared after the phase, untimed
// (compareQueries), as nothing is written during it.
// steps, if not nil, gets the per-step times.
func (r *run) phase(ctx context.Context, name string, queries []query.Request, rounds int, compare bool, steps *stepTimes) (recs [][]*bench.LatencyRecorder, miss []missed, cmp comparison, err error) {
	recs = newRoundRecorders(len(r.kinds), rounds)
	miss = make([]missed, len(r.kinds))
	prog := bench.NewProgress(r.progress, name, int64(len(queries)))
	defer prog.Done()
	var mu sync.Mutex         // guards miss, cmp, again
	var again []query.Request // queries a layout missed, compared after the phase
	err = forEach(r.cfg.Clients, len(queries), func(i int) error {
		q := queries[i]
		q.Explain = steps != nil
		round := i * rounds / len(queries)
		got := make([]*searcher.Response, len(r.kinds))
		for _, slot := range bench.RoundOrder(i, len(r.kinds)) {
			k := r.kinds[slot]
			resp, err := r.search(ctx, q, k, recs[slot][round], &miss[slot], &mu)
			if err != nil {
				return fmt.Errorf("searchbench: %s query %d (%s) on %s: %w", name, i, q.Encode().Encode(), k, err)
			}
			got[slot] = resp
			steps.record(k, resp)
		}
		mu.Lock()
		defer mu.Unlock()
		prog.Add(1)
		switch {
		case !compare:
		case slices.Contains(got, nil):
			again = append(again, q)
		default:
			cmp.add(r.log, r.kinds, q, got)
		}
		return nil
	})
	if err == nil {
		err = r.compareQueries(ctx, again, &cmp)
	}
	if err != nil {
		return nil, nil, comparison{}, err
	}
	return recs, miss, cmp, nil
}

// compareDeadline bounds one comparison search. Comparisons are not timed,
// so a page the measured search missed under its deadline is compared all
// the same; otherwise the slowest queries, where a layout is likeliest to
// differ, would be the ones never compared.
const compareDeadline = 30 * time.Second

// compareQueries runs each query on every layout with the untimed
// searcher (cmpSrch), cfg.Clients at once, and compares the pages with
// nested's. A search that still gets no answer leaves its query not
// compared; any other error stops the run.
func (r *run) compareQueries(ctx context.Context, queries []query.Request, cmp *comparison) error {
	var mu sync.Mutex // guards cmp
	return forEach(r.cfg.Clients, len(queries), func(i int) error {
		got := make([]*searcher.Response, len(r.kinds))
		for slot, k := range r.kinds {
			resp, err := r.cmpSrch.Search(ctx, queries[i], k)
			if err != nil && !new(missed).count(err) {
				return fmt.Errorf("searchbench: comparing query %s on %s: %w", queries[i].Encode().Encode(), k, err)
			}
			got[slot] = resp
		}
		mu.Lock()
		defer mu.Unlock()
		cmp.add(r.log, r.kinds, queries[i], got)
		return nil
	})
}

// newRoundRecorders returns one recorder per layout and round.
func newRoundRecorders(layouts, rounds int) [][]*bench.LatencyRecorder {
	recs := make([][]*bench.LatencyRecorder, layouts)
	for slot := range recs {
		for range rounds {
			recs[slot] = append(recs[slot], bench.NewLatencyRecorder())
		}
	}
	return recs
}

// search runs one search on layout k. An answered search's latency goes
// into rec; a missed one (timeout, rejection) is counted in miss and
// returns a nil response and no error: its latency is never recorded, so
// a layout that fails its slow searches does not look fast. Any other
// error is returned and stops the run. mu guards miss.
func (r *run) search(ctx context.Context, q query.Request, k layout.Kind, rec *bench.LatencyRecorder, miss *missed, mu *sync.Mutex) (*searcher.Response, error) {
	start := time.Now()
	resp, err := r.srch.Search(ctx, q, k)
	took := time.Since(start)
	mu.Lock()
	defer mu.Unlock()
	miss.attempts++
	switch {
	case err == nil:
		rec.Record(took)
		return resp, nil
	case miss.count(err):
		return nil, nil
	}
	return nil, err
}

// MinComparedPages is how many pages must be compared before the
// equivalence targets are judged: fewer leave them undecided.
const MinComparedPages = 500

// comparison counts the pages compared with nested's and those that
// differed.
type comparison struct{ compared, mismatches, notCompared int }

// add compares every layout's page with nested's (got[0]); a nil page (the
// layout missed the search) leaves the query not compared.
func (c *comparison) add(log *slog.Logger, kinds []layout.Kind, q query.Request, got []*searcher.Response) {
	if slices.Contains(got, nil) {
		c.notCompared++
		return
	}
	c.compared++
	var differ []string
	for slot, resp := range got[1:] {
		if !samePage(got[0], resp) {
			differ = append(differ, string(kinds[slot+1]))
		}
	}
	if len(differ) > 0 {
		c.mismatches++
		log.Warn("layouts disagree with nested", "layouts", differ, "query", q.Encode().Encode())
	}
}

// missed counts one layout's searches that got no answer: past the
// deadline, or refused by OpenSearch under pressure (HTTP 429), of the
// attempts made.
type missed struct{ timeouts, rejected, attempts int }

// failedShare is the share of attempts that got no answer, with its
// Wilson interval.
func (m missed) failedShare() (float64, bench.Interval) {
	failed, n := int64(m.timeouts+m.rejected), int64(m.attempts)
	return bench.Share(failed, n), bench.ShareCI(failed, n)
}

func (m *missed) add(o missed) {
	m.timeouts += o.timeouts
	m.rejected += o.rejected
	m.attempts += o.attempts
}

// count counts err if it is a timeout or a rejection and says whether it
// was one.
func (m *missed) count(err error) bool {
	var status *osapi.StatusError
	switch {
	case errors.Is(err, searcher.ErrTimeout):
		m.timeouts++
	case errors.As(err, &status) && status.Status == http.StatusTooManyRequests:
		m.rejected++
	default:
		return false
	}
	return true
}

// forEach calls fn(0) … fn(n-1), in order, from at most workers goroutines
// at once and returns the first error; after an error no new calls start.
func forEach(workers, n int, fn func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(workers)
	var failed atomic.Bool
	for i := 0; i < n && !failed.Load(); i++ {
		g.Go(func() error {
			err := fn(i)
			if err != nil {
				failed.Store(true)
			}
			return err
		})
	}
	return g.Wait()
}

// samePage compares what a person sees: totals, the shops in order with
// every shop field and version (the hot layout reads its hot fields from
// the plugin's table, the others from documents), their matched menus and
// ETAs.
func samePage(a, b *searcher.Response) bool {
	if a.Total != b.Total || len(a.Shops) != len(b.Shops) {
		return false
	}
	for i := range a.Shops {
		x, y := a.Shops[i], b.Shops[i]
		if x.ID != y.ID || x.Version != y.Version || !reflect.DeepEqual(x.Shop, y.Shop) ||
			len(x.MatchedMenus) != len(y.MatchedMenus) || !sameETA(x.ETAMinutes, y.ETAMinutes) || !sameMark(x.Delivers, y.Delivers) {
			return false
		}
		for j := range x.MatchedMenus {
			if x.MatchedMenus[j].ID != y.MatchedMenus[j].ID {
				return false
			}
		}
	}
	return true
}

func sameETA(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func sameMark(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// underLoad measures each layout under its own update load. The layouts
// live on the same OpenSearch node here (in production they would not share
// CPUs), so updating all at once would slow the split and hot layouts'
// searches with the nested layout's heavier indexing. Instead the queries
// are cut into rounds; in each round, in alternating order (ABC, CBA:
// bench.RoundOrder), one layout receives updates at rate while that layout
// alone is searched. After each layout's turn the layouts settle (settle),
// so no turn runs beside the previous one's merges. After each round the
// layouts are brought to the same state and a sample of the round's
// searches is compared across them, writes paused (compareAfterRound). It
// returns, per layout of r.kinds, the latencies per round
// ([slot][round]), the missed searches and the update rate achieved, and
// the comparison.
func (r *run) underLoad(ctx context.Context, rate float64, queries []query.Request, rounds int) (recs [][]*bench.LatencyRecorder, miss []missed, rates []float64, cmp comparison, err error) {
	n := len(r.kinds)
	recs = newRoundRecorders(n, rounds)
	miss, rates = make([]missed, n), make([]float64, n)
	applied, busy := make([]int64, n), make([]time.Duration, n)
	prog := bench.NewProgress(r.progress, "search under load", int64(n*len(queries)))
	defer prog.Done()
	for round := range rounds {
		chunk := queries[round*len(queries)/rounds : (round+1)*len(queries)/rounds]
		for _, slot := range bench.RoundOrder(round, n) {
			updates, took, m, err := r.searchWhileUpdating(ctx, r.kinds[slot], rate, chunk, recs[slot][round], prog)
			if err == nil {
				err = r.settle(ctx)
			}
			if err != nil {
				return nil, nil, nil, cmp, fmt.Errorf("searchbench: round %d of the load phase, %s: %w", round, r.kinds[slot], err)
			}
			applied[slot] += updates
			busy[slot] += took
			miss[slot].add(m)
		}
		if err := r.compareAfterRound(ctx, applied, chunk, &cmp); err != nil {
			return nil, nil, nil, cmp, fmt.Errorf("searchbench: comparing the layouts after load round %d: %w", round, err)
		}
	}
	for i := range rates {
		if busy[i] > 0 {
			rates[i] = float64(applied[i]) / busy[i].Seconds()
		}
	}
	return recs, miss, rates, cmp, nil
}

// comparedPerRound is how many of a load round's searches are compared
// across the layouts after the round: 8 rounds compare 512 pages.
const comparedPerRound = 64

// compareAfterRound brings every layout to the same state, then compares a
// sample of the round's searches across them with writes paused. Each
// layout's stream is the same sequence, and applied[slot] is how far
// layout slot has gone; every layout behind the furthest applies the
// events it lacks (outside the measured turns), then all settle. Pages
// under load are thus compared on the state the load built (its segments,
// merges and hot-table rows), with the versions pinned by the pause.
func (r *run) compareAfterRound(ctx context.Context, applied []int64, chunk []query.Request, cmp *comparison) error {
	furthest := slices.Max(applied)
	for slot, k := range r.kinds {
		for applied[slot] < furthest {
			n := min(int64(maxRateBatch), furthest-applied[slot])
			if err := r.applyNext(ctx, k, int(n)); err != nil {
				return err
			}
			applied[slot] += n
		}
	}
	if err := r.settle(ctx); err != nil {
		return err
	}
	return r.compareQueries(ctx, chunk[:min(len(chunk), comparedPerRound)], cmp)
}

// searchWhileUpdating applies updates to layout k at rate while running the
// queries on k; it returns the updates applied, the time and the searches
// that got no answer. The answered searches' latencies go into rec.
func (r *run) searchWhileUpdating(ctx context.Context, k layout.Kind, rate float64, queries []query.Request, rec *bench.LatencyRecorder, prog *bench.Progress) (int64, time.Duration, missed, error) {
	loadCtx, stopLoad := context.WithCancel(ctx)
	var applied atomic.Int64
	var loadErr error
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		bench.RunAtRate(loadCtx, rate/updateBatch, 1, func(context.Context, int64) error {
			// The batch in flight finishes when the round ends; only the
			// schedule stops.
			if err := r.applyNext(ctx, k, updateBatch); err != nil {
				loadErr = err
				return err
			}
			applied.Add(updateBatch)
			return nil
		})
	}()
	if r.idx.AsyncTranslog(k) {
		// The worker flushes such a layout once a second before it
		// acknowledges; the load does too, so its cost is in the round.
		go func() {
			t := time.NewTicker(indexer.Defaults().FlushEvery)
			defer t.Stop()
			for {
				select {
				case <-loadCtx.Done():
					return
				case <-t.C:
					if _, err := r.indexers[k].Flush(loadCtx); err != nil && loadCtx.Err() == nil {
						r.log.Warn("flush under load failed", "layout", k, "err", err)
					}
				}
			}
		}()
	}
	var mu sync.Mutex
	var miss missed
	searchErr := forEach(r.cfg.Clients, len(queries), func(i int) error {
		q := queries[i]
		_, err := r.search(ctx, q, k, rec, &miss, &mu)
		prog.Add(1)
		if err != nil {
			return fmt.Errorf("searchbench: query %s on %s under load: %w", q.Encode().Encode(), k, err)
		}
		return nil
	})
	took := time.Since(start)
	stopLoad()
	<-done
	return applied.Load(), took, miss, errors.Join(searchErr, loadErr)
}

func (r *run) measure(ctx context.Context) (Summary, error) {
	cfg := r.cfg
	s := Summary{Bench: "search", Profile: string(cfg.Bench.Profile), Shops: cfg.Shops, Queries: cfg.Queries, Clients: cfg.Clients,
		DeadlineMs: bench.Ms(cfg.Deadline), Skipped: r.skipped, AfterLoad: r.afterLoad,
		LoadSeconds: round(r.loadTook.Seconds())}
	// Before any update: the judgments are of the catalog as generated.
	var err error
	if s.Relevance, err = r.relevance(ctx); err != nil {
		return s, err
	}
	fmt.Fprintf(r.progress, "measuring the nested layout's maximum update rate for %ds\n", cfg.MaxRateSeconds)
	maxRate, err := r.measureNestedMax(ctx)
	if err != nil {
		return s, err
	}
	s.NestedMaxUpdatesPerS = round(maxRate)
	s.UpdateRate = cfg.UpdateRate
	if s.UpdateRate == 0 {
		s.UpdateRate = round(maxRate / 2)
	}
	queries := QueryMix(uint64(cfg.Bench.Seed), cfg.Queries)
	seed := uint64(cfg.Bench.Seed)

	// A round needs a query of each phase.
	rounds := min(cfg.Bench.RoundsFor(DefaultRounds, DefaultRounds), len(queries))
	s.Rounds = rounds
	steps := &stepTimes{recs: map[string]*bench.LatencyRecorder{}}
	idle, idleMiss, idleCmp, err := r.phase(ctx, "search idle", queries, rounds, true, steps)
	if err != nil {
		return s, err
	}
	s.Mismatches, s.Compared, s.NotCompared = idleCmp.mismatches, idleCmp.compared, idleCmp.notCompared
	s.Idle = r.figures(idle, idleMiss, make([]float64, len(r.kinds)), seed)
	s.IdleSteps = steps.figures()

	ordinary := queries[:min(len(queries), max(20, len(queries)/10))]
	if s.Pathological, err = r.pathological(ctx, ordinary, rounds); err != nil {
		return s, err
	}

	fmt.Fprintf(r.progress, "searching each layout while it takes %.0f hot updates/s (rounds alternate the layouts)\n", s.UpdateRate)
	load, loadMiss, rates, loadCmp, err := r.underLoad(ctx, s.UpdateRate, queries, rounds)
	if err != nil {
		return s, err
	}
	s.MismatchesUnderLoad, s.ComparedUnderLoad = loadCmp.mismatches, loadCmp.compared
	s.Equivalent = s.Mismatches == 0 && s.MismatchesUnderLoad == 0 && s.Compared >= MinComparedPages
	s.UnderLoad = r.figures(load, loadMiss, rates, seed)
	tableBytesPerShop := 0.0
	if slices.Contains(r.kinds, layout.Hot) {
		table, err := r.hotTableStatus(ctx, hotTableReadyTimeout)
		if err != nil {
			return s, err
		}
		tableBytesPerShop = table.bytesPerShop()
	}
	setHeadline(&s, tableBytesPerShop)
	judgePathological(s.Targets, s.Pathological)
	judgeRelevance(s.Targets, s.Relevance)

	path, err := r.report(s, pooled(idle), pooled(load))
	if err != nil {
		return s, err
	}
	s.Report = path
	return s, nil
}

// DefaultRounds is the rounds per phase when --rounds is not given: the t
// interval over rounds needs about 8 (its multiplier is 2.36 at 8 rounds,
// 2.78 at 5).
const DefaultRounds = 8

// pooled returns each layout's latencies over all rounds.
func pooled(recs [][]*bench.LatencyRecorder) []*bench.LatencyRecorder {
	out := make([]*bench.LatencyRecorder, len(recs))
	for slot, rounds := range recs {
		out[slot] = bench.Pool(rounds)
	}
	return out
}

// setHeadline copies the headline ratios out of the phases and judges the
// targets; tableBytesPerShop is the hot table's size (unused when hot was
// skipped).
func setHeadline(s *Summary, tableBytesPerShop float64) {
	s.P50RatioUnderLoad, s.P99RatioUnderLoad = s.UnderLoad.P50Ratio, s.UnderLoad.P99Ratio
	s.P50RatioUnderLoadCI95, s.P99RatioUnderLoadCI95 = s.UnderLoad.P50RatioCI95, s.UnderLoad.P99RatioCI95
	s.Targets = bench.Targets{
		"p99_ratio_under_load":    P99RatioTarget.Evaluate(s.P99RatioUnderLoad, s.P99RatioUnderLoadCI95),
		"failed_share_under_load": FailedShareTarget.Evaluate(s.UnderLoad.FailedShareSplit, s.UnderLoad.FailedShareSplitCI95),
		"mismatches":              mismatchTarget(s.Mismatches, s.Compared),
		"mismatches_under_load":   mismatchTarget(s.MismatchesUnderLoad, s.ComparedUnderLoad),
	}
	idleHot, loadHot := s.Idle.HotPhaseFigures, s.UnderLoad.HotPhaseFigures
	if idleHot == nil || loadHot == nil {
		return
	}
	s.HotFigures = &HotFigures{
		P50RatioUnderLoadHot: loadHot.P50RatioHot, P50RatioUnderLoadHotCI95: loadHot.P50RatioHotCI95,
		P99RatioUnderLoadHot: loadHot.P99RatioHot, P99RatioUnderLoadHotCI95: loadHot.P99RatioHotCI95,
		P99RatioIdleHot: idleHot.P99RatioHot, P99RatioIdleHotCI95: idleHot.P99RatioHotCI95,
		HotTableBytesPerShop: tableBytesPerShop,
	}
	s.Targets["p99_ratio_under_load_hot"] = P99RatioHotTarget.Evaluate(s.P99RatioUnderLoadHot, s.P99RatioUnderLoadHotCI95)
	s.Targets["p99_ratio_idle_hot"] = P99RatioIdleHotTarget.Evaluate(s.P99RatioIdleHot, s.P99RatioIdleHotCI95)
	s.Targets["failed_share_under_load_hot"] = FailedShareTarget.Evaluate(loadHot.FailedShareHot, loadHot.FailedShareHotCI95)
	s.Targets["failed_share_idle_hot"] = FailedShareTarget.Evaluate(idleHot.FailedShareHot, idleHot.FailedShareHotCI95)
}

// mismatchTarget judges a count of differing pages (exact: no noise moves
// it) against 0, but only over MinComparedPages compared pages or more:
// "no page differed" proves little over a handful, so fewer leave it
// undecided.
func mismatchTarget(mismatches, compared int) bench.TargetResult {
	ci := bench.Exact(float64(mismatches))
	if compared < MinComparedPages && mismatches == 0 {
		ci = bench.NoInterval
	}
	return bench.AtMost(0).Evaluate(float64(mismatches), ci)
}

// FailedShareTarget is the error target beside every latency target: at
// most 0.1% of a layout's searches get no answer (timeout or rejection),
// judged on the share's Wilson interval. Failed searches are left out of
// the latencies, so without it a layout could look fast by failing its
// slow searches.
var FailedShareTarget = bench.AtMost(0.001)

// P99RatioTarget is the search target: split's p99 under load at most 0.7
// of nested's.
var P99RatioTarget = bench.AtMost(0.7)

// P99RatioHotTarget: the hot layout's p99 under load at most 0.7 of
// nested's.
var P99RatioHotTarget = bench.AtMost(0.7)

// P99RatioIdleHotTarget: idle, the hot layout's p99 is no worse than
// nested's.
var P99RatioIdleHotTarget = bench.AtMost(1.0)

// figures are a phase's figures from its per-layout, per-round latencies
// ([slot][round]), missed searches and update rates (in the order of
// r.kinds, nested first).
func (r *run) figures(recs [][]*bench.LatencyRecorder, miss []missed, rates []float64, seed uint64) PhaseFigures {
	slot := func(k layout.Kind) int { return slices.Index(r.kinds, k) }
	n, sp := slot(layout.Nested), slot(layout.Split)
	ns, ss := bench.Pool(recs[n]).Summary(), bench.Pool(recs[sp]).Summary()
	p50 := bench.QuantileRatioOverRounds(recs[n], recs[sp], 0.5, seed)
	p99 := bench.QuantileRatioOverRounds(recs[n], recs[sp], 0.99, seed)
	f := PhaseFigures{
		NestedP50Ms: ns.P50Ms, NestedP99Ms: ns.P99Ms, SplitP50Ms: ss.P50Ms, SplitP99Ms: ss.P99Ms,
		TimeoutsNested: miss[n].timeouts, TimeoutsSplit: miss[sp].timeouts,
		RejectedNested: miss[n].rejected, RejectedSplit: miss[sp].rejected,
		P50Ratio: p50.Point, P99Ratio: p99.Point,
		NestedUpdatesPerS: round(rates[n]), SplitUpdatesPerS: round(rates[sp]),
		P50RatioCI95: p50.CI95, P99RatioCI95: p99.CI95, P50RatioRounds: p50.Rounds, P99RatioRounds: p99.Rounds,
	}
	f.FailedShareNested, _ = miss[n].failedShare()
	f.FailedShareSplit, f.FailedShareSplitCI95 = miss[sp].failedShare()
	if h := slot(layout.Hot); h >= 0 {
		hs := bench.Pool(recs[h]).Summary()
		p50, p99 := bench.QuantileRatioOverRounds(recs[n], recs[h], 0.5, seed), bench.QuantileRatioOverRounds(recs[n], recs[h], 0.99, seed)
		f.HotPhaseFigures = &HotPhaseFigures{
			HotP50Ms: hs.P50Ms, HotP99Ms: hs.P99Ms,
			TimeoutsHot: miss[h].timeouts, RejectedHot: miss[h].rejected,
			P50RatioHot: p50.Point, P99RatioHot: p99.Point,
			P50RatioHotCI95: p50.CI95, P99RatioHotCI95: p99.CI95, P50RatioHotRounds: p50.Rounds, P99RatioHotRounds: p99.Rounds,
			HotUpdatesPerS: round(rates[h]),
		}
		f.FailedShareHot, f.FailedShareHotCI95 = miss[h].failedShare()
	}
	return f
}

func round(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

func (r *run) report(s Summary, idle, load []*bench.LatencyRecorder) (string, error) {
	names := make([]string, len(r.kinds))
	for i, k := range r.kinds {
		names[i] = string(k)
	}
	rep := bench.NewReport("search", "Search latency: "+strings.Join(names, " vs ")+" (nested is the baseline)", bench.CommandLine())
	setup := fmt.Sprintf("%d shops (~30 menus each), %d queries per phase, each run on %s back to back, the order alternating (%s, then %s), %d searches in flight at once. "+
		"Under load, each layout is searched while it alone takes %.0f hot shop updates/s through the production indexer, in rounds of alternating order, each turn starting once the merges of the one before have finished (the layouts share one OpenSearch node here; the nested layout's maximum measured in this run was %.0f/s). "+
		"Each phase is cut into %d rounds; every ratio's interval covers both a bootstrap over the latencies and the spread of the rounds' ratios. "+
		"Searches slower than %.0f ms count as timeouts, searches OpenSearch refused (HTTP 429) as rejections; neither enters the latencies, both are counted (failed_share_*). "+
		"Equivalent: %v. Idle, %d pages compared with nested's, %d differed, %d not compared because a layout timed out or was refused; under load, after each round the layouts were brought to the same state and %d pages compared with writes paused, %d differed.",
		s.Shops, s.Queries, layout.JoinKinds(r.kinds), orderOf(names, 0), orderOf(names, 1), s.Clients, s.UpdateRate, s.NestedMaxUpdatesPerS, s.Rounds, s.DeadlineMs, s.Equivalent,
		s.Compared, s.Mismatches, s.NotCompared, s.ComparedUnderLoad, s.MismatchesUnderLoad)
	for _, k := range slices.Sorted(maps.Keys(s.Skipped)) {
		setup += fmt.Sprintf(" The %s layout was skipped: %s.", k, s.Skipped[k])
	}
	if s.HotFigures != nil {
		setup += fmt.Sprintf(" The hot table holds %.1f bytes per shop on a node (the plugin's estimate).", s.HotTableBytesPerShop)
	}
	rep.Add(bench.Section{Title: "Setup", Text: setup})
	idleTable := bench.CompareLatencies(names, idle)
	loadTable := bench.CompareLatencies(names, load)
	stepTable := &bench.Table{Header: []string{"layout · step", "searches", "p50 ms", "p99 ms"}}
	for _, k := range slices.Sorted(maps.Keys(s.IdleSteps)) {
		f := s.IdleSteps[k]
		stepTable.Rows = append(stepTable.Rows, []string{k, strconv.FormatInt(f.Count, 10), fmt.Sprintf("%.2f", f.P50Ms), fmt.Sprintf("%.2f", f.P99Ms)})
	}
	rep.Add(bench.Section{Title: "Idle, by plan step (explain)", Text: "Client-side time of each request of the plan; a step runs only when the plan needs it.", Table: stepTable})
	rep.Add(bench.Section{Title: "Idle", Table: &idleTable, Charts: []bench.Chart{bench.LatencyCDF("Idle search latency", names, idle)}})
	rep.Add(bench.Section{Title: "Under hot-update load", Table: &loadTable, Charts: []bench.Chart{bench.LatencyCDF("Search latency under load", names, load)}})
	figures := []bench.Figure{
		{Name: "idle p50, split / nested", Point: s.Idle.P50Ratio, CI95: s.Idle.P50RatioCI95, Rounds: &s.Idle.P50RatioRounds},
		{Name: "idle p99, split / nested", Point: s.Idle.P99Ratio, CI95: s.Idle.P99RatioCI95, Rounds: &s.Idle.P99RatioRounds},
		{Name: "under load p50, split / nested", Point: s.UnderLoad.P50Ratio, CI95: s.UnderLoad.P50RatioCI95, Rounds: &s.UnderLoad.P50RatioRounds},
		{Name: "under load p99, split / nested", Point: s.UnderLoad.P99Ratio, CI95: s.UnderLoad.P99RatioCI95, Rounds: &s.UnderLoad.P99RatioRounds},
	}
	if idleHot, loadHot := s.Idle.HotPhaseFigures, s.UnderLoad.HotPhaseFigures; idleHot != nil && loadHot != nil {
		figures = append(figures,
			bench.Figure{Name: "idle p50, hot / nested", Point: idleHot.P50RatioHot, CI95: idleHot.P50RatioHotCI95, Rounds: &idleHot.P50RatioHotRounds},
			bench.Figure{Name: "idle p99, hot / nested", Point: idleHot.P99RatioHot, CI95: idleHot.P99RatioHotCI95, Rounds: &idleHot.P99RatioHotRounds},
			bench.Figure{Name: "under load p50, hot / nested", Point: loadHot.P50RatioHot, CI95: loadHot.P50RatioHotCI95, Rounds: &loadHot.P50RatioHotRounds},
			bench.Figure{Name: "under load p99, hot / nested", Point: loadHot.P99RatioHot, CI95: loadHot.P99RatioHotCI95, Rounds: &loadHot.P99RatioHotRounds},
		)
	}
	pathTable := &bench.Table{Header: []string{"layout", "ordinary p99 ms", "pathological p99 ms", "ratio", "95% interval", "missed (ordinary, pathological)"}}
	for _, k := range names {
		l := s.Pathological.Layouts[k]
		pathTable.Rows = append(pathTable.Rows, []string{k, fmt.Sprintf("%.2f", l.OrdinaryP99Ms), fmt.Sprintf("%.2f", l.PathologicalP99Ms),
			fmt.Sprintf("%.2f", l.P99Ratio), fmt.Sprintf("[%.2f, %.2f]", l.P99RatioCI95.Low, l.P99RatioCI95.High), fmt.Sprintf("%d, %d", l.MissedOrdinary, l.MissedPathological)})
	}
	byQuery := &bench.Table{Header: append([]string{"costly search"}, names...)}
	for _, q := range s.Pathological.ByQuery {
		row := []string{q.Query}
		for _, k := range names {
			row = append(row, fmt.Sprintf("p99 %.1f ms, %d missed", q.P99Ms[k], q.Missed[k]))
		}
		byQuery.Rows = append(byQuery.Rows, row)
	}
	rep.Add(bench.Section{Title: "Pathological searches, idle", Table: pathTable, Text: fmt.Sprintf(
		"%d ordinary searches of the mix and %d legal but costly ones (%s), shuffled together, each on every layout in alternating order. Target: the costly p99 at most %.0fx the ordinary p99 on every layout.",
		s.Pathological.Ordinary, s.Pathological.Pathological, strings.Join(PathologicalQueries, " · "), PathologicalTarget.Value)})
	rep.Add(bench.Section{Title: "Pathological searches, one by one", Table: byQuery})
	rep.Add(relevanceSection(s.Relevance))
	rep.Add(bench.IntervalSection(figures))
	rep.Add(bench.TargetsSection(s.Targets))
	rep.SetSummary(s)
	return rep.WriteHTML(r.cfg.Bench.ReportDir)
}

// orderOf is the order of the layouts in a round, e.g. "nested split hot".
func orderOf(names []string, round int) string {
	var out []string
	for _, i := range bench.RoundOrder(round, len(names)) {
		out = append(out, names[i])
	}
	return strings.Join(out, " ")
}

// Word weights of the query mix: common dishes dominate, as in a delivery app.
var mixWords = []struct {
	word   string
	weight int
}{
	{"치킨", 20}, {"피자", 15}, {"떡볶이", 10}, {"족발", 6}, {"짜장면", 6}, {"초밥", 5}, {"마라탕", 5}, {"커피", 5},
	{"양념치킨", 4}, {"페퍼로니피자", 3}, {"김치찌개", 3}, {"돈까스", 3}, {"햄버거", 3}, {"보쌈", 3}, {"치즈", 2},
	{"떡볶", 2}, {"아메리카노", 2}, {"냉면", 2}, {"삼겹살", 1},
}

// QueryMix draws n realistic delivery-app searches: every one has a user
// location, most have text, some filters, mostly relevance order.
func QueryMix(seed uint64, n int) []query.Request {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b9))
	total := 0
	for _, w := range mixWords {
		total += w.weight
	}
	centres := [][2]float64{{37.4979, 127.0276}, {37.5563, 126.9236}, {37.5172, 127.0473}, {37.5700, 126.9830},
		{37.6542, 127.0568}, {37.4837, 126.9300}, {37.5145, 127.1059}, {37.5387, 127.0823}}
	out := make([]query.Request, n)
	for i := range out {
		c := centres[rng.IntN(len(centres))]
		lat, lon := c[0]+rng.NormFloat64()*0.01, c[1]+rng.NormFloat64()*0.01
		q := query.Request{Lat: &lat, Lon: &lon, Sort: query.SortRelevance, Page: 1, Size: 20}
		if rng.IntN(100) < 85 {
			pick := rng.IntN(total)
			for _, w := range mixWords {
				if pick -= w.weight; pick < 0 {
					q.Q = w.word
					break
				}
			}
		}
		q.OpenNow = rng.IntN(100) < 60
		if rng.IntN(100) < 10 {
			fee := 1000 * rng.IntN(4)
			q.MaxDeliveryFee = &fee
		}
		if rng.IntN(100) < 10 {
			m := 4.0 + float64(rng.IntN(6))/10
			q.MinRating = &m
		}
		if rng.IntN(100) < 5 {
			total := 2000 + 500*rng.IntN(6)
			q.MaxTotalFee = &total
		}
		switch x := rng.IntN(100); {
		case x < 50:
		case x < 65:
			q.Sort = query.SortDistance
		case x < 80:
			q.Sort = query.SortDeliveryMinutes
		case x < 90:
			q.Sort = query.SortETA
		case x < 95:
			q.Sort = query.SortRating
		default:
			q.Sort = query.SortDeliveryFee
		}
		if rng.IntN(100) < 5 {
			q.Page = 2 + rng.IntN(4)
		}
		out[i] = q
	}
	return out
}
