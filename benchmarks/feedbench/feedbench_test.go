package feedbench

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/benchmarks/internal/clusterbench"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// TestSmoke runs the whole benchmark at a tiny size against the real stack
// and checks the summary line has every key the issue asks for.
func TestSmoke(t *testing.T) {
	st := stacktest.Require(t)
	ns := stacktest.Namespace(t)
	cfg := Config{
		Profile: bench.ProfileQuick, PostgresURL: st.PostgresURL, RedisAddr: st.RedisAddr,
		DatabasePrefix: ns, KeyPrefix: ns + ":", Users: 50, Clients: 4, Rounds: 2,
		ReadDuration: 100 * time.Millisecond, ConsistencyDuration: 300 * time.Millisecond, FanoutRuns: 2,
		ReportDir: t.TempDir(), Command: "go test ./benchmarks/feedbench -run TestSmoke",
	}
	var out, progress bytes.Buffer
	sum, err := Run(context.Background(), cfg, &out, &progress)
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	parsed, err := bench.ParseSummary(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if missing := bench.MissingKeys(parsed, "bench", "read_p50_ms.pull", "read_p50_ms.push", "read_p50_ms.hybrid",
		"read_p99_ms.pull", "read_p99_ms.push", "read_p99_ms.hybrid", "read_speedup_hybrid_vs_pull_user_a",
		"consistency.pull", "consistency.push", "consistency.hybrid", "fanout_10k_ms", "hybrid_p99_ms_user_a_concurrent",
		"read_floor_p99_ms_concurrent", "read_floor_throughput_concurrent", "hybrid_p99_over_floor_user_a_concurrent",
		"inconsistent_polls.hybrid", "targets.hybrid_p99_over_floor_user_a_concurrent", "targets.read_errors"); len(missing) > 0 {
		t.Fatalf("summary lacks %v: %s", missing, out.String())
	}
	if problems := bench.IntervalProblems(parsed, "read_speedup_hybrid_vs_pull_user_a", "hybrid_p99_ms_user_a_concurrent",
		"hybrid_p99_over_floor_user_a_concurrent", "fanout_10k_ms"); len(problems) > 0 {
		t.Errorf("intervals: %q\n%s", problems, out.String())
	}
	if len(sum.Targets) != 5 {
		t.Errorf("targets %v, want 5", sum.Targets)
	}
	if _, ok := sum.Targets["inconsistent_polls.hybrid"]; !ok {
		t.Errorf("no inconsistent_polls.hybrid target: %v", sum.Targets)
	}
	if _, ok := sum.Targets["hybrid_p99_ms_user_a_concurrent"]; ok {
		t.Errorf("the absolute p99 has a verdict: %v", sum.Targets)
	}
	for s, n := range sum.InconsistentPolls {
		if good := sum.Consistency[s] * float64(sum.ConsistencyPolls[s]); math.Abs(float64(sum.ConsistencyPolls[s]-n)-good) > 0.5+1e-4*float64(sum.ConsistencyPolls[s]) {
			t.Errorf("%s: %d inconsistent of %d polls, but the share of consistent ones is %v", s, n, sum.ConsistencyPolls[s], sum.Consistency[s])
		}
	}
	if parsed["bench"] != "feed" {
		t.Errorf("bench = %v, want feed", parsed["bench"])
	}
	if sum.ReadErrors != 0 {
		t.Errorf("%d read requests failed", sum.ReadErrors)
	}
	if sum.FloorThroughput <= 0 || sum.FloorP99MsConcurrent <= 0 || sum.HybridP99OverFloor <= 0 || sum.HybridP99OverFloorRounds.Rounds != cfg.Rounds {
		t.Errorf("floor: %.0f reads/s, p99 %.3f ms, hybrid over floor %.2f over %d rounds; want all > 0 over %d rounds", sum.FloorThroughput, sum.FloorP99MsConcurrent, sum.HybridP99OverFloor, sum.HybridP99OverFloorRounds.Rounds, cfg.Rounds)
	}
	if !sum.FanoutVerified || sum.FanoutFollowers != 52 {
		t.Errorf("fan-out verified %v to %d followers, want true and 52 (users 1..50, A and B)", sum.FanoutVerified, sum.FanoutFollowers)
	}
	for s, v := range sum.Consistency {
		if v < 0 || v > 1 || sum.ConsistencyPolls[s] == 0 {
			t.Errorf("consistency %s = %v over %d polls", s, v, sum.ConsistencyPolls[s])
		}
	}
	if _, err := os.Stat(sum.Report); err != nil {
		t.Errorf("report %q: %v", sum.Report, err)
	}
}

// TestSmokeRedisCluster runs the benchmark tiny with --redis-cluster 3
// against the real stack's PostgreSQL and single Redis: the benchmark starts
// its own 3-master cluster. The summary must hold the redis_cluster object
// (ratios >= 1, not their target: 50 users on 3 masters are not balanced
// to 1.2), the cluster's reads without errors, and its three targets.
func TestSmokeRedisCluster(t *testing.T) {
	st := stacktest.Require(t)
	if _, err := exec.LookPath("redis-cli"); err != nil {
		testenv.Unavailable(t, err)
	}
	ns := stacktest.Namespace(t)
	cfg := Config{
		Profile: bench.ProfileQuick, PostgresURL: st.PostgresURL, RedisAddr: st.RedisAddr,
		DatabasePrefix: ns, KeyPrefix: ns + ":", Users: 50, Clients: 4, Rounds: 2,
		ReadDuration: 100 * time.Millisecond, ConsistencyDuration: 300 * time.Millisecond, FanoutRuns: 2,
		RedisCluster: 3, ReportDir: t.TempDir(), Command: "go test ./benchmarks/feedbench -run TestSmokeRedisCluster",
	}
	var out, progress bytes.Buffer
	sum, err := Run(context.Background(), cfg, &out, &progress)
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	parsed, err := bench.ParseSummary(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if missing := bench.MissingKeys(parsed, "hybrid_p99_ms_user_a_concurrent", "redis_cluster.masters", "redis_cluster.ops_share_max_over_min",
		"redis_cluster.memory_share_max_over_min", "redis_cluster.hybrid_p99_ms_user_a_concurrent", "redis_cluster.read_throughput_user_a_concurrent",
		"redis_cluster.single_hybrid_p99_ms_user_a_concurrent", "redis_cluster.single_read_throughput_user_a_concurrent",
		"redis_cluster.spread_reads", "redis_cluster.ops_share_max_over_min_with_user_a_b_reads", "redis_cluster.hybrid_p99_cluster_over_single"); len(missing) > 0 {
		t.Fatalf("summary lacks %v: %s", missing, out.String())
	}
	c := sum.RedisCluster
	if r := c.OpsShareRounds; r == nil || r.Rounds+r.Dropped != cfg.Rounds-1 {
		t.Errorf("ops share rounds %+v, want one per round of spread reads but the first (%d)", r, cfg.Rounds-1)
	}
	if c.Masters != 3 || c.OpsShareMaxOverMin < 1 || c.MemoryShareMaxOverMin < 1 {
		t.Fatalf("redis_cluster masters %d, ops share %v, memory share %v: want 3 and both >= 1", c.Masters, c.OpsShareMaxOverMin, c.MemoryShareMaxOverMin)
	}
	for addr := range c.OpsByMaster {
		keys := c.LargestKeysByMaster[addr]
		if len(keys) == 0 || len(keys) > clusterbench.ReportedLargestKeys {
			t.Errorf("master %s: largest keys %v, want 1..%d", addr, keys, clusterbench.ReportedLargestKeys)
		}
		for i, k := range keys {
			if !strings.Contains(k.Key, cfg.KeyPrefix) || k.Bytes <= 0 || i > 0 && k.Bytes > keys[i-1].Bytes {
				t.Errorf("master %s: largest keys %v, want keys of prefix %q with positive sizes, largest first", addr, keys, cfg.KeyPrefix)
			}
		}
	}
	if c.SpreadReads == 0 || c.SpreadReadErrors != 0 {
		t.Errorf("spread reads on the cluster: %d, %d failed; want some, none failed", c.SpreadReads, c.SpreadReadErrors)
	}
	if c.ReadErrors != 0 || c.ReadThroughputUserAConcurrent <= 0 || c.HybridP99MsUserAConcurrent <= 0 {
		t.Errorf("cluster reads: %d errors, %.0f reads/s, p99 %.3f ms; want 0 errors and positive figures", c.ReadErrors, c.ReadThroughputUserAConcurrent, c.HybridP99MsUserAConcurrent)
	}
	if want := c.HybridP99MsUserAConcurrent / c.SingleHybridP99MsUserAConcurrent; math.Abs(c.HybridP99ClusterOverSingle-want) > 0.001 || c.HybridP99ClusterOverSingleRounds.Rounds < 1 {
		t.Errorf("hybrid_p99_cluster_over_single %v over %d rounds, want %v (cluster p99 / single p99) over the rounds", c.HybridP99ClusterOverSingle, c.HybridP99ClusterOverSingleRounds.Rounds, want)
	}
	if c.SingleHybridP99MsUserAConcurrent != sum.HybridP99MsUserAConcurrent {
		t.Errorf("single_hybrid_p99_ms_user_a_concurrent %v, want the top-level %v", c.SingleHybridP99MsUserAConcurrent, sum.HybridP99MsUserAConcurrent)
	}
	if _, ok := sum.ReadP50Ms[clusterTarget]; ok {
		t.Errorf("read_p50_ms has %q: the cluster's figures belong in redis_cluster only", clusterTarget)
	}
	if len(sum.Targets) != 7 {
		t.Errorf("targets %v, want the 5 of the single Redis and 2 redis_cluster.*", sum.Targets)
	}
	if html, err := os.ReadFile(sum.Report); err != nil || !strings.Contains(string(html), "Redis Cluster of 3 masters beside the single Redis") {
		t.Errorf("report %q lacks the cluster's section (read error: %v)", sum.Report, err)
	}
	if !strings.Contains(progress.String(), "stopped redis-cluster-3 (pid") {
		t.Errorf("progress does not say the cluster's nodes were stopped:\n%s", progress.String())
	}
}
