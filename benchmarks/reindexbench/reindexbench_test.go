package reindexbench

import (
	"bytes"
	"context"
	"math"
	"os"
	"testing"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/internal/stacktest"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// TestSmoke runs the benchmark at a tiny size on the shared stack and checks
// the JSON summary. With BAEDAL_REINDEXBENCH_PROFILE=quick|full it runs that
// profile instead, on a 3-node stack of its own (a manual run:
// BAEDAL_REINDEXBENCH_PROFILE=quick go test ./benchmarks/reindexbench -run TestSmoke -v -timeout 30m).
func TestSmoke(t *testing.T) {
	cfg := Defaults()
	if p := os.Getenv("BAEDAL_REINDEXBENCH_PROFILE"); p != "" {
		profile, err := bench.ParseProfile(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Profile, cfg.ReportDir = profile, "reports"
	} else {
		st := stacktest.Require(t)
		cfg.Backends.OpenSearch.URLs, cfg.Backends.Redis.Addr, cfg.Backends.Postgres.URL = st.OpenSearchURLs, st.RedisAddr, st.PostgresURL
		cfg.ReportDir = t.TempDir()
		cfg.Shops, cfg.Rounds, cfg.LiveRate = 120, 2, 100 // 2 rounds: the least that gives an interval
	}
	var out bytes.Buffer
	sum, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary: %s", out.String())
	parsed, err := bench.ParseSummary(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if missing := bench.MissingKeys(parsed, "bench", "docs", "slices_auto_vs_1", "replicas0_vs_1", "shards6_vs_3",
		"live_updates_applied", "lost_updates", "stale_docs", "live_freeze_seconds", "live_job_resumes", "resurrected_docs", "verified_docs", "mismatched_docs",
		"freshness_p99_ms_during_swap", "slices_auto_vs_1_min", "slices_auto_vs_1_max", "replicas0_vs_1_min", "replicas0_vs_1_max",
		"shards6_vs_3_min", "shards6_vs_3_max", "live_shop_deletes", "live_shop_recreates",
		"slices_fewer_speed_ratio", "slices_fewer_speed_ratio_min", "slices_fewer_speed_ratio_max", "slices_fewer_cpu_ratio",
		"node_cpu_cores.slices_1", "node_cpu_cores.replicas_added_after", "machine_cores",
		"node_load.slices_1.nodes", "node_load.shards_6.disk_busy_share"); len(missing) > 0 {
		t.Fatalf("summary lacks %v", missing)
	}
	if problems := bench.IntervalProblems(parsed, "slices_auto_vs_1", "replicas0_vs_1", "shards6_vs_3"); len(problems) > 0 {
		t.Errorf("intervals: %q", problems)
	}
	if len(sum.Targets) != 8 {
		t.Errorf("targets %v, want lost_updates, stale_docs, resurrected_docs, mismatched_docs, live_freeze_seconds and the 3 ratios", sum.Targets)
	}
	if sum.SlicesFewer != 4 || !(sum.SlicesFewerSpeedRatio > 0) {
		t.Errorf("slices experiment: slices %d, speed ratio %v; want 4 and a positive ratio", sum.SlicesFewer, sum.SlicesFewerSpeedRatio)
	}
	// OpenSearch refreshes process and fs stats at most once a second
	// (monitor.*.refresh_interval), so a smoke copy of 0.2 s may read no
	// CPU on any side (CI at 57f75d9 read none on all 8); indexing
	// statistics are exact, so they are what proves the window.
	totalCores := 0.0
	for side, cores := range sum.NodeCPUCores {
		totalCores += cores
		load := sum.NodeLoad[side]
		if len(load.Nodes) != sum.Nodes || math.Abs(load.cpuCores()-cores) > 1e-6 {
			t.Errorf("node load of %s: %+v; want %d nodes whose CPU sums to node_cpu_cores %v", side, load, sum.Nodes, cores)
		}
		for name, n := range load.Nodes {
			if !(n.IndexShare > 0) {
				t.Errorf("node %s during %s: %+v; every node holds shards of the target, so it spent time indexing", name, side, n)
			}
		}
	}
	if len(sum.NodeCPUCores) != 8 || !(totalCores >= 0) {
		t.Errorf("node CPU %v: want 8 sides and a total of at least 0", sum.NodeCPUCores)
	}
	if parsed["bench"] != "reindex" || sum.Docs <= 0 || sum.SlicesAutoVs1 <= 0 || sum.Replicas0Vs1 <= 0 || sum.Shards6Vs3 <= 0 {
		t.Errorf("summary %+v", sum)
	}
	if sum.LiveUpdatesApplied == 0 {
		t.Errorf("no live update was applied during the live reindex")
	}
	if sum.LostUpdates != 0 || sum.StaleDocs != 0 || sum.ResurrectedDocs != 0 {
		t.Errorf("lost %d, stale %d, resurrected %d; want 0", sum.LostUpdates, sum.StaleDocs, sum.ResurrectedDocs)
	}
	// Every shop the indices hold when the verification scans them is
	// verified, or explained by an event newer than the catch-up (a shop
	// the load kept updating); shops deleted during the copy are in
	// neither index. On a loaded machine more shops are explained.
	checked := sum.VerifiedDocs + sum.ExplainedDocs
	if sum.LiveFreezeSeconds != 0 || sum.MismatchedDocs != 0 || checked != sum.ComparedDocs || sum.ComparedDocs < int64(sum.Docs-sum.LiveShopDeletes) || sum.VerifiedDocs < int64(sum.Docs/2) {
		t.Errorf("freeze %.3fs, mismatched %d, verified %d and explained %d of %d compared, %d shops (%d deleted during the live load): want no freeze, no mismatch, every shop still there compared and verified or explained, most verified",
			sum.LiveFreezeSeconds, sum.MismatchedDocs, sum.VerifiedDocs, sum.ExplainedDocs, sum.ComparedDocs, sum.Docs, sum.LiveShopDeletes)
	}
	if sum.LiveShopDeletes == 0 || sum.LiveShopRecreates == 0 {
		t.Errorf("%d shop deletes, %d re-creates during the live reindex: the load must include both", sum.LiveShopDeletes, sum.LiveShopRecreates)
	}
	if sum.FreshnessProbesDuringSwap == 0 || !(sum.FreshnessP99MsDuringSwap > 0) {
		t.Errorf("freshness during the swap: %d probes, p99 %.0f ms; want some", sum.FreshnessProbesDuringSwap, sum.FreshnessP99MsDuringSwap)
	}
}
