package indexbench

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/internal/stacktest"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// TestSmoke runs the benchmark at a tiny size and checks the JSON summary.
// With BAEDAL_INDEXBENCH_PROFILE=quick|full it runs that profile instead
// (a manual run: go test ./indexer/indexbench -run TestSmoke -v -timeout 30m).
func TestSmoke(t *testing.T) {
	st := stacktest.Require(t)
	cfg := Defaults()
	cfg.Backends.OpenSearch.URLs = st.OpenSearchURLs
	cfg.Backends.Redis.Addr = st.RedisAddr
	cfg.Backends.Postgres.URL = st.PostgresURL
	cfg.ReportDir = t.TempDir()
	if p := os.Getenv("BAEDAL_INDEXBENCH_PROFILE"); p != "" {
		profile, err := bench.ParseProfile(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Profile = profile
		cfg.ReportDir = "reports"
	} else {
		cfg.Shops, cfg.HotEvents, cfg.MixedEvents, cfg.Rounds, cfg.BatchSize = 60, 300, 100, 2, 100
		cfg.FreshnessEvents, cfg.FreshnessRate = 200, 400
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
	if missing := bench.MissingKeys(parsed, "bench", "shops", "menus_per_shop_avg", "events", "nested_events_per_s", "split_events_per_s",
		"throughput_ratio", "nested_bytes_written", "split_bytes_written", "freshness_p99_ms"); len(missing) > 0 {
		t.Fatalf("summary lacks %v", missing)
	}
	if problems := bench.IntervalProblems(parsed, "throughput_ratio", "mixed_throughput_ratio", "bytes_written_ratio"); len(problems) > 0 {
		t.Errorf("intervals: %q", problems)
	}
	if r := sum.ThroughputRatioRounds; r.Rounds != sum.Rounds || r.Min > r.Max {
		t.Errorf("throughput_ratio_rounds %+v, want %d ordered rounds", r, sum.Rounds)
	}
	if parsed["targets"].(map[string]any)["throughput_ratio"] == nil {
		t.Errorf("no throughput_ratio target: %v", parsed["targets"])
	}
	if parsed["bench"] != "index" || sum.Events != sum.Rounds*(sum.Events/max(1, sum.Rounds)) || sum.Events == 0 || sum.NestedEventsPerS <= 0 || sum.SplitEventsPerS <= 0 {
		t.Errorf("summary %+v", sum)
	}
	if sum.FreshnessSamples == 0 {
		t.Errorf("no freshness sample")
	}
	if sum.NestedBytesWritten <= 0 || sum.SplitBytesWritten <= 0 {
		t.Errorf("bytes written nested %d split %d, want > 0", sum.NestedBytesWritten, sum.SplitBytesWritten)
	}
}
