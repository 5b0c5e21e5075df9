package reindexbench

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/internal/stacktest"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// TestSmoke runs the benchmark at a tiny size on the shared stack and checks
// the JSON summary. With BAEDAL_REINDEXBENCH_PROFILE=quick|full it runs that
// profile instead, on a 3-node stack of its own (a manual run:
// BAEDAL_REINDEXBENCH_PROFILE=quick go test ./reindex/reindexbench -run TestSmoke -v -timeout 30m).
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
		"live_updates_applied", "lost_updates", "stale_docs"); len(missing) > 0 {
		t.Fatalf("summary lacks %v", missing)
	}
	if problems := bench.IntervalProblems(parsed, "slices_auto_vs_1", "replicas0_vs_1", "shards6_vs_3"); len(problems) > 0 {
		t.Errorf("intervals: %q", problems)
	}
	if len(sum.Targets) != 2 {
		t.Errorf("targets %v, want lost_updates and stale_docs", sum.Targets)
	}
	if parsed["bench"] != "reindex" || sum.Docs <= 0 || sum.SlicesAutoVs1 <= 0 || sum.Replicas0Vs1 <= 0 || sum.Shards6Vs3 <= 0 {
		t.Errorf("summary %+v", sum)
	}
	if sum.LiveUpdatesApplied == 0 {
		t.Errorf("no live update was applied during the live reindex")
	}
	if sum.LostUpdates != 0 || sum.StaleDocs != 0 {
		t.Errorf("lost %d, stale %d; want 0", sum.LostUpdates, sum.StaleDocs)
	}
}
