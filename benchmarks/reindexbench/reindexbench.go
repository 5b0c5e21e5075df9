// Package reindexbench is the `baedal bench reindex` workload: the same
// generated nested catalog is loaded into a 3-shard and a 6-shard source
// index, and the reindex orchestrator (package reindex) rebuilds them again
// and again, in interleaved ABBA rounds, to compare:
//
//   - slices 1 vs auto (3-shard source): copy throughput ratio;
//   - replicas kept at 1 during the copy vs 0 and added afterwards:
//     end-to-end time ratio, the replica build included;
//   - a 6-shard vs a 3-shard source (slices auto): throughput ratio;
//   - slices = shards (6) vs 40% fewer (4, −33%: 3.6 rounded) on the
//     6-shard source: copy speed and OpenSearch node CPU ratios (the
//     write-up: −40% slices, −25% speed);
//   - one live reindex of the 3-shard source while the real indexer worker
//     applies a steady stream of updates through the event log, with shops
//     deleted, re-created and deleted again while the copy runs; afterwards
//     every document of the new index is compared with the latest event of
//     its shop (lost_updates, stale_docs, resurrected_docs: must be 0). It
//     also reports the verification before the swap (verified_docs,
//     mismatched_docs), the write freeze (live_freeze_seconds: 0 with the
//     dual-write swap) and the freshness of updates appended around the
//     swap (freshness_p99_ms_during_swap: append → visible in a search
//     through the alias, 4 probes a second). A step of the live job that
//     fails (a catch-up bulk out of retries on a loaded host) is resumed,
//     as `baedal reindex resume` would, up to 3 times (live_job_resumes).
//
// Every ratio is reported with its rounds' min and max (<ratio>_min,
// <ratio>_max) beside the 95% interval.
//
// After each measured job the alias is rolled back and the new index
// deleted, so every job copies the same source. On a single-node cluster
// (the CI smoke run) replicas cannot be assigned, so the replica comparison
// runs with 0 replicas on both sides and the summary says nodes=1.
//
// Invariant: both sides of a comparison copy the same source in the same
// process, alternating; the reported figures are ratios and HDR percentiles.
package reindexbench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
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
	"github.com/baedal/baedal/reindex"
)

// Config sizes a run. Zero sizes take the profile's value.
type Config struct {
	Profile bench.Profile
	Shops   int
	Rounds  int
	Seed    uint64
	// LiveRate is the update rate (events/s) during the live reindex.
	LiveRate int
	// StateDir of a running stack to reuse; when none runs there (and
	// Backends has no OpenSearch URL), a 3-node stack is started in a
	// temporary directory and stopped at the end.
	StateDir  string
	Backends  backend.Config
	ReportDir string
	Log       io.Writer
}

// Defaults returns the quick profile.
func Defaults() Config {
	return Config{Profile: bench.ProfileQuick, Seed: 1, Backends: backend.Defaults(), ReportDir: "reports"}
}

// Flags binds the benchmark's flags (backend flags are bound by the caller).
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Var(&c.Profile, "profile", "run size: quick or full")
	fs.IntVar(&c.Shops, "shops", c.Shops, "shops in the source index (default: 30000 quick, 100000 full)")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "interleaved rounds per comparison (default: 4 quick, 6 full)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "generator seed")
	fs.IntVar(&c.LiveRate, "live-rate", c.LiveRate, "updates per second during the live reindex (default: 50 quick, 200 full)")
	fs.StringVar(&c.StateDir, "state-dir", c.StateDir, "running stack to reuse (default: start a 3-node stack in a temporary directory)")
	fs.StringVar(&c.ReportDir, "report-dir", c.ReportDir, "directory of the HTML report")
}

func (c *Config) fill() {
	if c.Profile == "" {
		c.Profile = bench.ProfileQuick
	}
	set := func(v *int, quick, full int) {
		if *v == 0 {
			*v = bench.Pick(c.Profile, quick, full)
		}
	}
	// 30,000 nested shops: a copy takes ~30 s or more on the 2-core
	// machine, so the copy, not the fixed costs (task start, replica
	// allocation, green wait: 3-4 s), decides the ratios.
	set(&c.Shops, 30000, 100000)
	// 4 rounds: a t interval over 2 rounds multiplies their spread by 12.7,
	// over 4 by 3.18.
	set(&c.Rounds, 4, 6)
	// 50 updates/s: at 200 the nested catch-up (every update rewrites a
	// shop with its menus into a target that has its replica by then)
	// did not close the lag in 20 minutes on the 2-core machine, its
	// bulks timing out at load 22 (2026-11-26).
	set(&c.LiveRate, 50, 200)
	if c.ReportDir == "" {
		c.ReportDir = "reports"
	}
	if c.Log == nil {
		c.Log = os.Stderr
	}
}

// Validate names the first invalid field.
func (c *Config) Validate() error {
	if _, err := bench.ParseProfile(string(c.Profile)); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if c.Shops < 1 || c.Shops > 2_000_000 {
		return fmt.Errorf("shops: got %d, allowed: 1..2000000", c.Shops)
	}
	if c.Rounds < 1 || c.Rounds > 100 {
		return fmt.Errorf("rounds: got %d, allowed: 1..100", c.Rounds)
	}
	if c.LiveRate < 1 || c.LiveRate > 100_000 {
		return fmt.Errorf("live-rate: got %d, allowed: 1..100000", c.LiveRate)
	}
	return nil
}

// Summary is the JSON summary line.
type Summary struct {
	Bench   string `json:"bench"`
	Profile string `json:"profile"`
	Nodes   int    `json:"nodes"`
	Docs    int    `json:"docs"`
	Rounds  int    `json:"rounds"`
	// Throughput ratios (docs/s of the copy) and the end-to-end time ratio.
	SlicesAutoVs1 float64 `json:"slices_auto_vs_1"`
	Replicas0Vs1  float64 `json:"replicas0_vs_1"` // end-to-end time with replicas kept / with replicas added after
	Shards6Vs3    float64 `json:"shards6_vs_3"`
	// 95% intervals of the three ratios over the paired rounds' ratios
	// (bench.PairedRatioCI), with the rounds' min and max.
	SlicesAutoVs1CI95   bench.Interval    `json:"slices_auto_vs_1_ci95"`
	SlicesAutoVs1Rounds bench.RoundRatios `json:"slices_auto_vs_1_rounds"`
	Replicas0Vs1CI95    bench.Interval    `json:"replicas0_vs_1_ci95"`
	Replicas0Vs1Rounds  bench.RoundRatios `json:"replicas0_vs_1_rounds"`
	Shards6Vs3CI95      bench.Interval    `json:"shards6_vs_3_ci95"`
	Shards6Vs3Rounds    bench.RoundRatios `json:"shards6_vs_3_rounds"`
	// The rounds' smallest and largest ratio (also in *_rounds).
	SlicesAutoVs1Min float64 `json:"slices_auto_vs_1_min"`
	SlicesAutoVs1Max float64 `json:"slices_auto_vs_1_max"`
	Replicas0Vs1Min  float64 `json:"replicas0_vs_1_min"`
	Replicas0Vs1Max  float64 `json:"replicas0_vs_1_max"`
	Shards6Vs3Min    float64 `json:"shards6_vs_3_min"`
	Shards6Vs3Max    float64 `json:"shards6_vs_3_max"`
	// The slices experiment on the 6-shard source: slices 6 vs SlicesFewer
	// (SlicesFewerShare fewer). Speed and node CPU ratios are fewer/6; the
	// write-up: 40% fewer slices, 25% less speed (ratio 0.75).
	SlicesFewer            int               `json:"slices_fewer"`
	SlicesFewerShare       float64           `json:"slices_fewer_share"`
	SlicesFewerSpeedRatio  float64           `json:"slices_fewer_speed_ratio"`
	SlicesFewerSpeedMin    float64           `json:"slices_fewer_speed_ratio_min"`
	SlicesFewerSpeedMax    float64           `json:"slices_fewer_speed_ratio_max"`
	SlicesFewerSpeedRounds bench.RoundRatios `json:"slices_fewer_speed_ratio_rounds"`
	SlicesFewerCPURatio    float64           `json:"slices_fewer_cpu_ratio"`
	SlicesFewerCPUMin      float64           `json:"slices_fewer_cpu_ratio_min"`
	SlicesFewerCPUMax      float64           `json:"slices_fewer_cpu_ratio_max"`
	SlicesFewerCPURounds   bench.RoundRatios `json:"slices_fewer_cpu_ratio_rounds"`
	SlicesShardsCPUCores   float64           `json:"slices_shards_node_cpu_cores"`
	SlicesFewerCPUCores    float64           `json:"slices_fewer_node_cpu_cores"`
	// NodeCPUCores is every side's OpenSearch CPU during its copies (process
	// CPU time summed over the nodes, in cores, mean over the rounds), and
	// MachineCores the cores they share: a side near MachineCores cannot
	// be sped up by more slices, shards or by skipping replicas' work.
	NodeCPUCores map[string]float64 `json:"node_cpu_cores"`
	MachineCores int                `json:"machine_cores"`
	// NodeLoad is every side's load per node during its copies (CPU,
	// indexing, merges, throttling, refresh, bulks, disk), to show what
	// limits a ratio that does not move.
	NodeLoad       map[string]SideLoad `json:"node_load"`
	Slices1DocsS   float64             `json:"slices_1_docs_per_s"`
	SlicesAutoDocS float64             `json:"slices_auto_docs_per_s"`
	Shards6DocsS   float64             `json:"shards6_docs_per_s"`
	// End-to-end seconds per job (p50, p99 over rounds, HDR).
	Replicas1P50S     float64 `json:"replicas1_e2e_p50_s"`
	Replicas0P50S     float64 `json:"replicas0_e2e_p50_s"`
	Replicas0BuildP50 float64 `json:"replicas0_replica_build_p50_s"`
	Slices1CopyP99S   float64 `json:"slices_1_copy_p99_s"`
	SlicesAutoCopyP99 float64 `json:"slices_auto_copy_p99_s"`
	// The live reindex.
	LiveUpdatesApplied int   `json:"live_updates_applied"`
	LiveCatchUpEvents  int64 `json:"live_catchup_events"`
	LiveSkippedNewer   int64 `json:"live_skipped_newer"`
	// LiveFreezeSeconds is how long writes to the old index were blocked
	// around the swap: 0 since the dual-write swap.
	LiveFreezeSeconds float64 `json:"live_freeze_seconds"`
	// LiveJobResumes counts resumptions of the live job after a failed
	// step (liveResumes at most).
	LiveJobResumes int `json:"live_job_resumes"`
	LostUpdates    int `json:"lost_updates"`
	StaleDocs      int `json:"stale_docs"`
	// Deletes and re-creates: shops created before the job, deleted while
	// the copy runs, half re-created, a quarter deleted again; plus the
	// stream's own. ResurrectedDocs counts deleted shops with a document in
	// the new index (also counted in stale_docs).
	LiveShopDeletes   int `json:"live_shop_deletes"`
	LiveShopRecreates int `json:"live_shop_recreates"`
	ResurrectedDocs   int `json:"resurrected_docs"`
	// The verification before the swap (compared = verified + mismatched
	// + explained).
	ComparedDocs   int64 `json:"compared_docs"`
	VerifiedDocs   int64 `json:"verified_docs"`
	MismatchedDocs int64 `json:"mismatched_docs"`
	ExplainedDocs  int64 `json:"explained_docs"`
	// Freshness (event appended → visible in a search through the alias)
	// of the updates appended from the verified step to 1 s after the job
	// ended (the dual-write, the swap and the post-swap pass), and of every
	// probed update of the live run.
	FreshnessP99MsDuringSwap  float64 `json:"freshness_p99_ms_during_swap"`
	FreshnessP50MsDuringSwap  float64 `json:"freshness_p50_ms_during_swap"`
	FreshnessProbesDuringSwap int64   `json:"freshness_probes_during_swap"`
	FreshnessP99MsLive        float64 `json:"freshness_p99_ms_live"`
	FreshnessProbesNeverSeen  int     `json:"freshness_probes_never_seen"`
	DualWriteSeconds          float64 `json:"live_dual_write_seconds"`
	SwapLagSeconds            float64 `json:"live_swap_lag_seconds"`
	// Targets: lost_updates <= 0 and stale_docs <= 0, exact counts. The
	// ratios have no target, only the write-up's figures to compare with.
	Targets bench.Targets `json:"targets"`
	Report  string        `json:"report"`
}

// side accumulates one contender's jobs.
type side struct {
	name    string
	docs    int64
	copyS   float64 // summed copy seconds
	e2e     *bench.LatencyRecorder
	copy    *bench.LatencyRecorder
	build   *bench.LatencyRecorder
	e2eSecs float64
	// Per job (one per round), in order: copy docs/s and end-to-end s.
	roundDocsS, roundE2E []float64
	// Per job: what each OpenSearch node did during the copy (see roundCPUCores).
	roundLoads []SideLoad
}

// roundCPUCores is, per job, the OpenSearch nodes' CPU (process CPU time
// summed over the nodes, in cores) averaged over the copy.
func (s *side) roundCPUCores() []float64 {
	cores := make([]float64, len(s.roundLoads))
	for i, l := range s.roundLoads {
		cores[i] = l.cpuCores()
	}
	return cores
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

func newSide(name string) *side {
	return &side{name: name, e2e: bench.NewLatencyRecorder(), copy: bench.NewLatencyRecorder(), build: bench.NewLatencyRecorder()}
}

func (s *side) docsPerS() float64 {
	if s.copyS <= 0 {
		return 0
	}
	return float64(s.docs) / s.copyS
}

// env is the run's clients and names.
type env struct {
	cfg     Config
	os      *osapi.Client
	clients *backend.Clients
	log     *slog.Logger
	ns      string
	nodes   int
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
	e := &env{cfg: cfg, os: osapi.New(clients.OpenSearch), clients: clients,
		log: slog.New(slog.NewTextHandler(cfg.Log, &slog.HandlerOptions{Level: slog.LevelWarn})),
		ns:  "rbench" + strconv.FormatInt(time.Now().UnixNano()%1_000_000, 36)}
	defer e.cleanup()
	if e.nodes, err = nodeCount(ctx, e.os); err != nil {
		return Summary{}, err
	}
	fmt.Fprintf(cfg.Log, "reindex bench: %d shops, %d rounds, %d node(s)\n", cfg.Shops, cfg.Rounds, e.nodes)

	s3, err := e.source(ctx, "s3", 3)
	if err != nil {
		return Summary{}, err
	}
	s6, err := e.source(ctx, "s6", 6)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Bench: "reindex", Profile: string(cfg.Profile), Nodes: e.nodes, Docs: cfg.Shops, Rounds: cfg.Rounds}
	replicas := min(1, e.nodes-1)

	slices1, slicesAuto := newSide("slices 1"), newSide("slices auto")
	err = bench.Interleave(cfg.Rounds,
		bench.Side{Name: slices1.name, Run: func(int) error { return e.job(ctx, s3, "1", 0, 0, slices1) }},
		bench.Side{Name: slicesAuto.name, Run: func(int) error { return e.job(ctx, s3, "auto", 0, 0, slicesAuto) }})
	if err != nil {
		return sum, err
	}
	rep1, rep0 := newSide(fmt.Sprintf("replicas %d during copy", replicas)), newSide("replicas 0, added after")
	err = bench.Interleave(cfg.Rounds,
		bench.Side{Name: rep1.name, Run: func(int) error { return e.job(ctx, s3, "auto", replicas, replicas, rep1) }},
		bench.Side{Name: rep0.name, Run: func(int) error { return e.job(ctx, s3, "auto", 0, replicas, rep0) }})
	if err != nil {
		return sum, err
	}
	shards3, shards6 := newSide("3-shard source"), newSide("6-shard source")
	err = bench.Interleave(cfg.Rounds,
		bench.Side{Name: shards3.name, Run: func(int) error { return e.job(ctx, s3, "auto", 0, 0, shards3) }},
		bench.Side{Name: shards6.name, Run: func(int) error { return e.job(ctx, s6, "auto", 0, 0, shards6) }})
	if err != nil {
		return sum, err
	}
	// The write-up's slices experiment: slices = shards vs 40% fewer, on
	// the 6-shard source (6 vs 4: 40% fewer rounds to 3.6, so 4, −33%).
	const fewer = 4 // 6 × 0.6 = 3.6, rounded
	slicesShards, slicesFewer := newSide("slices = 6 shards"), newSide(fmt.Sprintf("slices %d (fewer)", fewer))
	err = bench.Interleave(cfg.Rounds,
		bench.Side{Name: slicesShards.name, Run: func(int) error { return e.job(ctx, s6, "6", 0, 0, slicesShards) }},
		bench.Side{Name: slicesFewer.name, Run: func(int) error { return e.job(ctx, s6, strconv.Itoa(fewer), 0, 0, slicesFewer) }})
	if err != nil {
		return sum, err
	}
	live, err := e.live(ctx, s3)
	if err != nil {
		return sum, err
	}

	sum.Slices1DocsS, sum.SlicesAutoDocS = slices1.docsPerS(), slicesAuto.docsPerS()
	sum.SlicesAutoVs1 = bench.Ratio(sum.SlicesAutoDocS, sum.Slices1DocsS)
	sum.Replicas0Vs1 = bench.Ratio(rep1.e2eSecs, rep0.e2eSecs)
	sum.Shards6DocsS = shards6.docsPerS()
	sum.Shards6Vs3 = bench.Ratio(sum.Shards6DocsS, shards3.docsPerS())
	sum.Replicas1P50S = rep1.e2e.Summary().P50Ms / 1000
	sum.Replicas0P50S = rep0.e2e.Summary().P50Ms / 1000
	sum.Replicas0BuildP50 = rep0.build.Summary().P50Ms / 1000
	sum.Slices1CopyP99S = slices1.copy.Summary().P99Ms / 1000
	sum.SlicesAutoCopyP99 = slicesAuto.copy.Summary().P99Ms / 1000
	sum.LiveUpdatesApplied, sum.LiveCatchUpEvents, sum.LiveSkippedNewer = live.applied, live.status.CatchUpEvents, live.status.Copy.VersionConflicts
	sum.LiveFreezeSeconds, sum.LostUpdates, sum.StaleDocs = live.status.FreezeSeconds, live.lost, live.stale
	sum.LiveShopDeletes, sum.LiveShopRecreates, sum.ResurrectedDocs = live.deletes, live.recreates, live.resurrected
	sum.ComparedDocs, sum.LiveJobResumes = live.status.ComparedDocs, live.resumes
	sum.VerifiedDocs, sum.MismatchedDocs, sum.ExplainedDocs = live.status.VerifiedDocs, live.status.MismatchedDocs, live.status.ExplainedDocs
	sum.DualWriteSeconds, sum.SwapLagSeconds = live.status.DualWriteSeconds, live.status.SwapLagSeconds
	duringSwap := live.freshSwap.Summary()
	sum.FreshnessP99MsDuringSwap, sum.FreshnessP50MsDuringSwap, sum.FreshnessProbesDuringSwap = duringSwap.P99Ms, duringSwap.P50Ms, duringSwap.Count
	sum.FreshnessP99MsLive, sum.FreshnessProbesNeverSeen = live.freshAll.Summary().P99Ms, live.neverSeen
	sum.SlicesAutoVs1Rounds = bench.PairedRatioCI(slices1.roundDocsS, slicesAuto.roundDocsS)
	sum.SlicesAutoVs1CI95 = sum.SlicesAutoVs1Rounds.IntervalAround(sum.SlicesAutoVs1)
	sum.Replicas0Vs1Rounds = bench.PairedRatioCI(rep0.roundE2E, rep1.roundE2E)
	sum.Replicas0Vs1CI95 = sum.Replicas0Vs1Rounds.IntervalAround(sum.Replicas0Vs1)
	sum.Shards6Vs3Rounds = bench.PairedRatioCI(shards3.roundDocsS, shards6.roundDocsS)
	sum.Shards6Vs3CI95 = sum.Shards6Vs3Rounds.IntervalAround(sum.Shards6Vs3)
	sum.SlicesFewer, sum.SlicesFewerShare = fewer, 1-float64(fewer)/6
	sum.SlicesFewerSpeedRatio = bench.Ratio(slicesFewer.docsPerS(), slicesShards.docsPerS())
	sum.SlicesFewerSpeedRounds = bench.PairedRatioCI(slicesShards.roundDocsS, slicesFewer.roundDocsS)
	sum.SlicesFewerSpeedMin, sum.SlicesFewerSpeedMax = sum.SlicesFewerSpeedRounds.Min, sum.SlicesFewerSpeedRounds.Max
	sum.SlicesFewerCPURatio = bench.Ratio(mean(slicesFewer.roundCPUCores()), mean(slicesShards.roundCPUCores()))
	sum.SlicesShardsCPUCores, sum.SlicesFewerCPUCores = mean(slicesShards.roundCPUCores()), mean(slicesFewer.roundCPUCores())
	sum.SlicesFewerCPURounds = bench.PairedRatioCI(slicesShards.roundCPUCores(), slicesFewer.roundCPUCores())
	sum.SlicesFewerCPUMin, sum.SlicesFewerCPUMax = sum.SlicesFewerCPURounds.Min, sum.SlicesFewerCPURounds.Max
	sum.MachineCores = runtime.NumCPU()
	sum.NodeCPUCores, sum.NodeLoad = map[string]float64{}, map[string]SideLoad{}
	sideKeys := []struct {
		key string
		s   *side
	}{{"slices_1", slices1}, {"slices_auto", slicesAuto}, {"replicas_kept", rep1}, {"replicas_added_after", rep0},
		{"shards_3", shards3}, {"shards_6", shards6}, {"slices_6", slicesShards}, {"slices_fewer", slicesFewer}}
	var loadTable [][]string
	for _, k := range sideKeys {
		sum.NodeCPUCores[k.key] = mean(k.s.roundCPUCores())
		sum.NodeLoad[k.key] = meanLoad(k.s.roundLoads)
		loadTable = append(loadTable, loadRows(k.key, sum.NodeLoad[k.key])...)
	}
	sum.SlicesAutoVs1Min, sum.SlicesAutoVs1Max = sum.SlicesAutoVs1Rounds.Min, sum.SlicesAutoVs1Rounds.Max
	sum.Replicas0Vs1Min, sum.Replicas0Vs1Max = sum.Replicas0Vs1Rounds.Min, sum.Replicas0Vs1Rounds.Max
	sum.Shards6Vs3Min, sum.Shards6Vs3Max = sum.Shards6Vs3Rounds.Min, sum.Shards6Vs3Rounds.Max
	sum.Targets = bench.Targets{
		"lost_updates":        bench.AtMost(0).Evaluate(float64(sum.LostUpdates), bench.Exact(float64(sum.LostUpdates))),
		"stale_docs":          bench.AtMost(0).Evaluate(float64(sum.StaleDocs), bench.Exact(float64(sum.StaleDocs))),
		"resurrected_docs":    bench.AtMost(0).Evaluate(float64(sum.ResurrectedDocs), bench.Exact(float64(sum.ResurrectedDocs))),
		"mismatched_docs":     bench.AtMost(0).Evaluate(float64(sum.MismatchedDocs), bench.Exact(float64(sum.MismatchedDocs))),
		"live_freeze_seconds": bench.AtMost(0).Evaluate(sum.LiveFreezeSeconds, bench.Exact(sum.LiveFreezeSeconds)),
		// The targets for the quick profile (issue 20).
		"replicas0_vs_1":   bench.AtLeast(1.5).Evaluate(sum.Replicas0Vs1, sum.Replicas0Vs1CI95),
		"slices_auto_vs_1": bench.AtLeast(1.3).Evaluate(sum.SlicesAutoVs1, sum.SlicesAutoVs1CI95),
		"shards6_vs_3":     bench.AtLeast(1.1).Evaluate(sum.Shards6Vs3, sum.Shards6Vs3CI95),
	}

	rep := bench.NewReport("reindex", "Live reindex: slices, replicas during the copy, shard count, and zero lost updates", bench.CommandLine())
	row := func(s *side) []string {
		return []string{s.name, fmt.Sprintf("%.0f", s.docsPerS()), fmt.Sprintf("%.2f", s.copy.Summary().P50Ms/1000),
			fmt.Sprintf("%.2f", s.build.Summary().P50Ms/1000), fmt.Sprintf("%.2f", s.e2e.Summary().P50Ms/1000), fmt.Sprintf("%.2f", s.e2e.Summary().P99Ms/1000),
			fmt.Sprintf("%.2f", mean(s.roundCPUCores()))}
	}
	header := []string{"side", "copy docs/s", "copy p50 s", "replica build p50 s", "end-to-end p50 s", "end-to-end p99 s", fmt.Sprintf("OpenSearch CPU, cores of %d", sum.MachineCores)}
	for _, c := range []struct {
		title, text string
		a, b        *side
		ratio       float64
	}{
		{"Slices 1 vs auto", fmt.Sprintf("Same %d-document 3-shard source; slices=auto is one slice per shard. Throughput ratio auto/1 = %.2f.", cfg.Shops, sum.SlicesAutoVs1), slices1, slicesAuto, sum.SlicesAutoVs1},
		{"Replicas during the copy", fmt.Sprintf("Kept at %d during the copy vs 0 during the copy and %d added afterwards (the replica build is timed and included). End-to-end ratio kept/added-after = %.2f. On one node replicas cannot be assigned and both sides run with 0.", replicas, replicas, sum.Replicas0Vs1), rep1, rep0, sum.Replicas0Vs1},
		{"Source shards 3 vs 6", fmt.Sprintf("Same documents in a 3-shard and a 6-shard source, slices=auto. Throughput ratio 6/3 = %.2f.", sum.Shards6Vs3), shards3, shards6, sum.Shards6Vs3},
	} {
		rep.Add(bench.Section{Title: c.title, Text: c.text, Table: &bench.Table{Header: header, Rows: [][]string{row(c.a), row(c.b)}},
			Charts: []bench.Chart{bench.LatencyCDF("End-to-end job time", []string{c.a.name, c.b.name}, []*bench.LatencyRecorder{c.a.e2e, c.b.e2e})}})
	}
	rep.Add(bench.Section{Title: "Slices = shards vs fewer", Text: fmt.Sprintf(
		"6-shard source, slices 6 vs %d (%.0f%% fewer). Copy speed ratio fewer/6 = %.2f (rounds %.2f..%.2f); OpenSearch CPU during the copy %.2f vs %.2f cores, ratio %.2f (rounds %.2f..%.2f). The write-up: 40%% fewer slices, 25%% less speed.",
		fewer, 100*sum.SlicesFewerShare, sum.SlicesFewerSpeedRatio, sum.SlicesFewerSpeedMin, sum.SlicesFewerSpeedMax,
		sum.SlicesShardsCPUCores, sum.SlicesFewerCPUCores, sum.SlicesFewerCPURatio, sum.SlicesFewerCPUMin, sum.SlicesFewerCPUMax),
		Table: &bench.Table{Header: header, Rows: [][]string{row(slicesShards), row(slicesFewer)}}})
	rep.Add(bench.Section{Title: "What the nodes did during each side's copies", Text: "Per node, as shares of the copy task's wall time (mean over the rounds): " +
		"CPU in cores; indexing, merge and refresh thread time (1 = one thread busy throughout); the time OpenSearch throttled merges and indexing; " +
		"requests the write pool rejected per copy; the disk's busy share (one disk for all nodes).",
		Table: &bench.Table{Header: loadHeader, Rows: loadTable}})
	rep.Add(bench.IntervalSection([]bench.Figure{
		{Name: "throughput slices auto / 1", Point: sum.SlicesAutoVs1, CI95: sum.SlicesAutoVs1CI95, Rounds: &sum.SlicesAutoVs1Rounds},
		{Name: "end-to-end replicas kept / added after", Point: sum.Replicas0Vs1, CI95: sum.Replicas0Vs1CI95, Rounds: &sum.Replicas0Vs1Rounds},
		{Name: "throughput 6 / 3 shards", Point: sum.Shards6Vs3, CI95: sum.Shards6Vs3CI95, Rounds: &sum.Shards6Vs3Rounds},
	}))
	rep.Add(bench.TargetsSection(sum.Targets))
	rep.Add(bench.Section{Title: "Live reindex under updates", Text: fmt.Sprintf(
		"%d updates were appended at ~%d/s through the event log and applied by the real indexer worker while the 3-shard source was reindexed (slices auto; the job was resumed %d times after a failed step). "+
			"The catch-up replayed %d log entries; the copy skipped %d documents that were already newer; the swap froze writes for %.3f s (dual-write %.2f s, catch-up lag at the swap %.3f s). "+
			"%d shop deletes and %d re-creates (most during the copy); %d deleted shops came back. The verification before the swap compared %d documents: %d equal, %d mismatched, %d explained by newer events. "+
			"Freshness (appended → visible through the alias) of %d updates around the swap: p50 %.0f ms, p99 %.0f ms (all probed updates: p99 %.0f ms; %d never seen). "+
			"Every shop's document in the new index was compared with the state after its latest event: %d lost, %d stale.",
		sum.LiveUpdatesApplied, cfg.LiveRate, sum.LiveJobResumes, sum.LiveCatchUpEvents, sum.LiveSkippedNewer, sum.LiveFreezeSeconds, sum.DualWriteSeconds, sum.SwapLagSeconds,
		sum.LiveShopDeletes, sum.LiveShopRecreates, sum.ResurrectedDocs, sum.ComparedDocs, sum.VerifiedDocs, sum.MismatchedDocs, sum.ExplainedDocs,
		sum.FreshnessProbesDuringSwap, sum.FreshnessP50MsDuringSwap, sum.FreshnessP99MsDuringSwap, sum.FreshnessP99MsLive, sum.FreshnessProbesNeverSeen,
		sum.LostUpdates, sum.StaleDocs)})
	rep.SetSummary(&sum)
	path, err := rep.WriteHTML(cfg.ReportDir)
	if err != nil {
		return sum, err
	}
	sum.Report = path
	rep.SetSummary(&sum)
	if err := bench.PrintSummary(out, sum); err != nil {
		return sum, err
	}
	if sum.LostUpdates != 0 || sum.StaleDocs != 0 || sum.ResurrectedDocs != 0 {
		return sum, fmt.Errorf("reindexbench: the live reindex lost %d updates and left %d stale documents (%d resurrected)", sum.LostUpdates, sum.StaleDocs, sum.ResurrectedDocs)
	}
	return sum, nil
}

// source is one generated source: its layout config (alias) and log.
type source struct {
	layout layout.Config
	rcfg   reindex.Config
	evlog  *eventlog.Log
	alias  string
}

func (e *env) source(ctx context.Context, name string, shards int) (*source, error) {
	lc := layout.Defaults()
	lc.Prefix = e.ns + "_" + name + "_"
	lc.Nested.Shards, lc.Nested.Replicas = shards, "0"
	if err := lc.EnsureIndices(ctx, e.os, layout.Nested); err != nil {
		return nil, err
	}
	rcfg := reindex.Defaults()
	rcfg.Layout = lc
	rcfg.Log.Prefix = e.ns + ":" + name + ":"
	rcfg.StatePrefix = e.ns + ":" + name + ":reindex:"
	rcfg.PollEvery = 200 * time.Millisecond
	rcfg.LeaseTTL = 5 * time.Second
	evlog, err := eventlog.New(rcfg.Log, e.clients.Redis, nil, nil)
	if err != nil {
		return nil, err
	}
	ix, err := indexer.New(e.indexerConfig(lc, rcfg.Log), layout.Nested, e.os, nil, nil)
	if err != nil {
		return nil, err
	}
	bar := bench.NewProgress(e.cfg.Log, "load "+name, int64(e.cfg.Shops))
	var batch []catalog.Event
	flush := func() error {
		if _, err := ix.Apply(ctx, batch); err != nil {
			return err
		}
		bar.Add(int64(len(batch)))
		batch = batch[:0]
		return nil
	}
	for _, st := range catalog.NewGenerator(e.cfg.Seed).Shops(e.cfg.Shops) {
		if batch = append(batch, st.UpsertEvent()); len(batch) == 500 {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	bar.Done()
	alias := lc.Alias(layout.RoleNested)
	if err := e.os.Do(ctx, http.MethodPost, "/"+alias+"/_refresh", nil, nil); err != nil {
		return nil, err
	}
	return &source{layout: lc, rcfg: rcfg, evlog: evlog, alias: alias}, nil
}

func (e *env) indexerConfig(lc layout.Config, logCfg eventlog.Config) indexer.Config {
	icfg := indexer.Defaults()
	icfg.Layouts = []layout.Kind{layout.Nested}
	icfg.Layout, icfg.Log = lc, logCfg
	icfg.BatchSize = 500
	icfg.LagEvery = time.Second
	return icfg
}

// job reindexes src once with the given slices and replicas, records the
// copy, replica build and end-to-end times on s, then rolls back and deletes
// the new index so the next job copies the same source.
func (e *env) job(ctx context.Context, src *source, slices string, replicasDuringCopy, replicasAfter int, s *side) error {
	o, err := reindex.New(src.rcfg, e.os, e.clients.Redis, e.log, nil)
	if err != nil {
		return err
	}
	// The nodes' counters are read when the copy task starts and when it
	// ends, so that the load is the copy's alone: over the whole job, the
	// catch-up and verification would dilute it.
	var before, after nodeSnapshot
	var copyStarted, copyFinished time.Time
	var snapErr error
	o.OnPhase = func(_, phase string) {
		switch phase {
		case "copy_started":
			before, snapErr = readNodeSnapshot(ctx, e.os)
			copyStarted = time.Now()
		case "copy_finished":
			if snapErr == nil {
				after, snapErr = readNodeSnapshot(ctx, e.os)
				copyFinished = time.Now()
			}
		}
	}
	st, err := e.reindex(ctx, src, slices, replicasDuringCopy, replicasAfter, o)
	if err != nil {
		return err
	}
	if snapErr != nil {
		return snapErr
	}
	if copyStarted.IsZero() || copyFinished.IsZero() {
		return fmt.Errorf("reindexbench: job %s: the copy's start and end were not both seen", st.ID)
	}
	s.roundLoads = append(s.roundLoads, after.loadSince(before, copyFinished.Sub(copyStarted)))
	s.docs += st.Copy.Done()
	s.copyS += st.CopySeconds
	s.copy.Record(time.Duration(st.CopySeconds * float64(time.Second)))
	s.build.Record(time.Duration(st.ReplicaBuildSeconds * float64(time.Second)))
	e2e := st.CopySeconds + st.ReplicaBuildSeconds
	s.e2eSecs += e2e
	s.e2e.Record(time.Duration(e2e * float64(time.Second)))
	if st.CopySeconds > 0 {
		s.roundDocsS = append(s.roundDocsS, float64(st.Copy.Done())/st.CopySeconds)
	} else {
		s.roundDocsS = append(s.roundDocsS, 0) // no ratio for this round
	}
	s.roundE2E = append(s.roundE2E, e2e)
	fmt.Fprintf(e.cfg.Log, "  %-26s copy %.2fs (%d docs), replica build %.2fs\n", s.name, st.CopySeconds, st.Copy.Done(), st.ReplicaBuildSeconds)
	return e.undo(ctx, src, st.ID)
}

func (e *env) reindex(ctx context.Context, src *source, slices string, replicasDuringCopy, replicasAfter int, o *reindex.Orchestrator) (reindex.Status, error) {
	if o == nil {
		var err error
		if o, err = reindex.New(src.rcfg, e.os, e.clients.Redis, e.log, nil); err != nil {
			return reindex.Status{}, err
		}
	}
	opts := reindex.DefaultOptions()
	opts.Alias, opts.Slices = src.alias, slices
	opts.ReplicasDuringCopy, opts.Replicas = replicasDuringCopy, replicasAfter
	st, err := o.Start(ctx, opts)
	if err != nil {
		return st, err
	}
	if err := o.Run(ctx, st.ID); err != nil {
		return st, err
	}
	return o.Status(ctx, st.ID)
}

func (e *env) undo(ctx context.Context, src *source, id string) error {
	o, err := reindex.New(src.rcfg, e.os, e.clients.Redis, e.log, nil)
	if err != nil {
		return err
	}
	if err := o.Rollback(ctx, id); err != nil {
		return err
	}
	_, err = o.Cleanup(ctx, id)
	return err
}

type liveResult struct {
	status              reindex.Status
	applied             int
	lost, stale         int
	deletes, recreates  int
	resurrected         int
	freshSwap, freshAll *bench.LatencyRecorder
	neverSeen           int
	resumes             int
}

// liveResumes is how many times the live job is resumed after a failed
// step, as `baedal reindex resume` would: on a loaded host a catch-up bulk
// can run out of retries. A verification that refused the swap is not
// resumed.
const liveResumes = 3

// churnFirstID is the first id of the shops the live run creates before
// the job and deletes and re-creates while the copy runs (outside the
// generated catalog and the event stream's new shops).
const churnFirstID = 900_000_001

// freshnessProbe waits until an appended upsert is visible in a search
// through alias (the shop at a version >= the event's), polling every
// 50 ms for up to 15 s, and returns how long after the append that was.
func freshnessProbe(ctx context.Context, osc *osapi.Client, alias string, ev catalog.Event, appended time.Time) (time.Duration, bool) {
	body, _ := json.Marshal(map[string]any{"size": 0, "track_total_hits": true, "query": map[string]any{"bool": map[string]any{"filter": []any{
		map[string]any{"ids": map[string]any{"values": []string{strconv.FormatInt(ev.AggregateID(), 10)}}},
		map[string]any{"range": map[string]any{"version": map[string]any{"gte": ev.Version}}},
	}}}})
	deadline := appended.Add(15 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var resp struct {
			Hits struct {
				Total struct {
					Value int `json:"value"`
				} `json:"total"`
			} `json:"hits"`
		}
		if err := osc.Do(ctx, http.MethodPost, "/"+alias+"/_search", body, &resp); err == nil && resp.Hits.Total.Value > 0 {
			return time.Since(appended), true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, false
}

type probe struct {
	appended time.Time
	took     time.Duration
	seen     bool
}

// live reindexes src while the real indexer worker applies a steady stream
// of updates through the event log, with shops deleted and re-created
// during the copy and the freshness of 4 updates a second probed
// throughout, then compares every document.
func (e *env) live(ctx context.Context, src *source) (liveResult, error) {
	res := liveResult{freshSwap: bench.NewLatencyRecorder(), freshAll: bench.NewLatencyRecorder()}
	w, err := indexer.NewWorker(e.indexerConfig(src.layout, src.rcfg.Log), layout.Nested, src.evlog, e.os, e.log, nil)
	if err != nil {
		return res, err
	}
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() { workerDone <- w.Run(wctx) }()
	defer func() {
		stopWorker()
		<-workerDone
	}()

	// Churn shops exist in the source before the copy starts.
	creates, churn := catalog.ChurnShops(e.cfg.Seed+1, churnFirstID, max(20, e.cfg.Shops/100))
	if _, err := src.evlog.Append(ctx, creates); err != nil {
		return res, err
	}
	if err := waitDrained(ctx, src, 3*time.Minute); err != nil {
		return res, err
	}

	stream := catalog.NewEventStream(e.cfg.Seed, e.cfg.Shops)
	var mu sync.Mutex
	events := slices.Clone(creates)
	var probes []*probe
	var probing sync.WaitGroup
	appendErr := make(chan error, 1)
	stopAppend := make(chan struct{})
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		per := max(1, e.cfg.LiveRate/20)
		for tickN := 0; ; tickN++ {
			select {
			case <-stopAppend:
				appendErr <- nil
				return
			case <-tick.C:
			}
			batch := make([]catalog.Event, per)
			for i := range batch {
				batch[i] = stream.Next()
			}
			mu.Lock()
			if _, err := src.evlog.Append(ctx, batch); err != nil {
				mu.Unlock()
				appendErr <- err
				return
			}
			at := time.Now()
			events = append(events, batch...)
			mu.Unlock()
			// One probe every 5th append (4/s): more searches would load the
			// cluster they measure.
			if ev := batch[len(batch)-1]; ev.Op == catalog.OpUpsert && tickN%5 == 0 {
				p := &probe{appended: at}
				probes = append(probes, p)
				probing.Go(func() { p.took, p.seen = freshnessProbe(ctx, e.os, src.alias, ev, at) })
			}
		}
	}()
	time.Sleep(time.Second)
	o, err := reindex.New(src.rcfg, e.os, e.clients.Redis, e.log, nil)
	if err != nil {
		return res, err
	}
	var churnOnce sync.Once
	churned := false
	o.OnProgress = func(st reindex.Status) {
		if st.Step == reindex.StepCopying && st.Copy.Done() > 0 {
			churnOnce.Do(func() {
				mu.Lock()
				defer mu.Unlock()
				if _, err := src.evlog.Append(ctx, churn); err == nil {
					events, churned = append(events, churn...), true
				}
			})
		}
	}
	st, err := e.reindex(ctx, src, "auto", 0, min(1, e.nodes-1), o)
	for err != nil && st.ID != "" && !errors.Is(err, reindex.ErrMismatch) && ctx.Err() == nil && res.resumes < liveResumes {
		res.resumes++
		fmt.Fprintf(e.cfg.Log, "live reindex: job %s failed (%v); resuming it (%d of %d)\n", st.ID, err, res.resumes, liveResumes)
		if err = o.Run(ctx, st.ID); err == nil {
			st, err = o.Status(ctx, st.ID)
		}
	}
	time.Sleep(time.Second) // updates after the swap go to the new index through the alias
	close(stopAppend)
	if aerr := <-appendErr; err == nil {
		err = aerr
	}
	probing.Wait()
	if err != nil {
		return res, err
	}
	if !churned {
		return res, errors.New("reindexbench: the churn of deletes and re-creates was not appended during the copy")
	}
	res.status = st
	if err := waitDrained(ctx, src, 3*time.Minute); err != nil {
		return res, err
	}
	// The swap's window: from the verified step (the dual-write begins) to
	// 1 s after the job ended.
	from, to := st.StepTimes[reindex.StepVerified], st.StepTimes[reindex.StepDone].Add(time.Second)
	for _, p := range probes {
		if !p.seen {
			res.neverSeen++
			continue
		}
		res.freshAll.Record(p.took)
		if !p.appended.Before(from) && !p.appended.After(to) {
			res.freshSwap.Record(p.took)
		}
	}
	mu.Lock()
	res.applied = len(events)
	want, deletes, recreates := expected(e.cfg.Seed, e.cfg.Shops, events)
	mu.Unlock()
	res.deletes, res.recreates = deletes, recreates
	res.lost, res.stale, res.resurrected, err = compare(ctx, e.os, st.Target, want)
	fmt.Fprintf(e.cfg.Log, "  live: %d updates (%d shop deletes, %d re-creates), catch-up %d, freeze %.3fs, verified %d (mismatched %d), freshness p99 around the swap %.0f ms: %d lost, %d stale, %d resurrected\n",
		res.applied, deletes, recreates, st.CatchUpEvents, st.FreezeSeconds, st.VerifiedDocs, st.MismatchedDocs, res.freshSwap.Summary().P99Ms, res.lost, res.stale, res.resurrected)
	return res, err
}

func waitDrained(ctx context.Context, src *source, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		drained := true
		for p := range src.rcfg.Log.Partitions {
			lag, pending, err := src.evlog.Consumer(indexer.GroupName(layout.Nested), p).Lag(ctx)
			if err != nil || lag != 0 || pending != 0 {
				drained = false
			}
		}
		if drained {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("reindexbench: the indexer did not drain the log in %s", timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// expected applies the events in order to the generated shops, and counts
// the shop deletes and the re-creates (a shop upsert on a deleted shop).
func expected(seed uint64, numShops int, events []catalog.Event) (want map[int64]*catalog.ShopState, deletes, recreates int) {
	out := make(map[int64]*catalog.ShopState)
	for i, st := range catalog.NewGenerator(seed).Shops(numShops) {
		out[catalog.ShopID(i)] = &st
	}
	for _, ev := range events {
		st := out[ev.AggregateID()]
		if st == nil {
			st = &catalog.ShopState{}
			out[ev.AggregateID()] = st
		}
		wasDeleted := st.Deleted
		applied, _ := st.Apply(ev) // an event the stream cannot apply is not applied by the indexer either
		switch {
		case !applied || ev.Type != catalog.EntityShop:
		case ev.Op == catalog.OpDelete:
			deletes++
		case wasDeleted:
			recreates++
		}
	}
	return out, deletes, recreates
}

// compare reads every expected shop's document from index and counts the
// missing or older ones (lost) and those that should not exist or differ at
// an older version (stale).
func compare(ctx context.Context, osc *osapi.Client, index string, want map[int64]*catalog.ShopState) (lost, stale, resurrected int, err error) {
	ids := make([]int64, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		strIDs := make([]string, len(chunk))
		for i, id := range chunk {
			strIDs[i] = strconv.FormatInt(id, 10)
		}
		body, _ := json.Marshal(map[string]any{"ids": strIDs})
		var resp struct {
			Docs []struct {
				ID     string         `json:"_id"`
				Found  bool           `json:"found"`
				Source map[string]any `json:"_source"`
			} `json:"docs"`
		}
		if err := osc.Do(ctx, http.MethodPost, "/"+index+"/_mget?realtime=true", body, &resp); err != nil {
			return lost, stale, resurrected, err
		}
		for _, d := range resp.Docs {
			id, _ := strconv.ParseInt(d.ID, 10, 64)
			st := want[id]
			switch {
			case st.Deleted && d.Found:
				stale++
				resurrected++
			case st.Deleted:
			case !d.Found:
				lost++
			default:
				var wantDoc map[string]any
				raw, _ := json.Marshal(layout.BuildNested(st, st.Version))
				_ = json.Unmarshal(raw, &wantDoc)
				if !reflect.DeepEqual(d.Source, wantDoc) {
					if v, _ := d.Source["version"].(float64); int64(v) < st.Version {
						stale++
					} else {
						lost++
					}
				}
			}
		}
	}
	return lost, stale, resurrected, nil
}

func nodeCount(ctx context.Context, osc *osapi.Client) (int, error) {
	var resp struct {
		Nodes int `json:"number_of_nodes"`
	}
	if err := osc.Do(ctx, http.MethodGet, "/_cluster/health", nil, &resp); err != nil {
		return 0, err
	}
	if resp.Nodes < 1 {
		return 0, errors.New("reindexbench: the cluster reports no node")
	}
	return resp.Nodes, nil
}

func (e *env) cleanup() {
	ctx := context.Background()
	_ = e.os.Do(ctx, http.MethodDelete, "/"+e.ns+"_*?expand_wildcards=all&allow_no_indices=true", nil, nil)
	if keys, err := e.clients.Redis.Keys(ctx, e.ns+":*").Result(); err == nil && len(keys) > 0 {
		e.clients.Redis.Del(ctx, keys...)
	}
}

// backends returns the servers to use: the given ones, a running stack in
// StateDir, or a new 3-node stack in a temporary directory (stopped by the
// returned function).
func backends(ctx context.Context, cfg Config) (backend.Config, func(), error) {
	bc := cfg.Backends
	if len(bc.OpenSearch.URLs) > 0 && bc.Redis.Addr != "" {
		return bc, func() {}, nil
	}
	if cfg.StateDir != "" {
		st, err := localstack.Load(cfg.StateDir)
		if err != nil {
			return bc, func() {}, fmt.Errorf("state-dir: %w", err)
		}
		bc.OpenSearch.URLs, bc.Redis.Addr, bc.Postgres.URL = st.OpenSearchURLs, st.RedisAddr, st.PostgresURL
		return bc, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "baedal-reindexbench-")
	if err != nil {
		return bc, func() {}, err
	}
	if err := os.Chmod(dir, 0o755); err != nil { // PostgreSQL runs as the postgres user
		return bc, func() {}, err
	}
	lc := localstack.Defaults()
	lc.StateDir, lc.PortBase, lc.OpenSearchNodes = dir, 0, 3
	fmt.Fprintf(cfg.Log, "starting a 3-node stack in %s\n", dir)
	st, err := localstack.Up(ctx, lc, cfg.Log)
	if err != nil {
		_ = localstack.Down(dir, cfg.Log)
		return bc, func() {}, fmt.Errorf("reindexbench: start a 3-node stack in %s: %w", dir, err)
	}
	stop := func() {
		_ = localstack.Down(dir, cfg.Log)
		_ = os.RemoveAll(dir)
	}
	bc.OpenSearch.URLs, bc.Redis.Addr, bc.Postgres.URL = st.OpenSearchURLs, st.RedisAddr, st.PostgresURL
	return bc, stop, nil
}
