package indexbench

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/layout"
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
	checkHot(t, cfg.Backends.OpenSearch.URLs, parsed, sum)
}

// hotKeys are the hot layout's summary keys the smoke test requires when
// the hot layout ran (and forbids when it was skipped).
var hotKeys = []string{"hot_events_per_s", "throughput_ratio_hot", "throughput_ratio_hot_ci95",
	"freshness_p99_ms_hot", "freshness_p99_ms_hot_ci95", "mixed_throughput_ratio_hot", "bytes_written_ratio_hot"}

// checkHot asks the cluster, apart from the benchmark, whether every node
// has the baedal-hot plugin. With it, the hot layout must have run and its
// figures, intervals and targets be there; without it, the summary must say
// hot was skipped and why, and hold none of its figures. In CI the stack
// has the plugin, so a skipped hot layout fails the test.
func checkHot(t *testing.T, urls []string, parsed map[string]any, sum Summary) {
	t.Helper()
	osCfg := backend.Defaults().OpenSearch
	osCfg.URLs = urls
	client, err := backend.OpenOpenSearch(osCfg)
	if err != nil {
		t.Fatal(err)
	}
	missing, err := layout.NodesWithoutHotPlugin(context.Background(), osapi.New(client))
	if err != nil {
		t.Fatal(err)
	}
	why := sum.Skipped[string(layout.Hot)]
	if why != "" && testenv.InCI() {
		t.Fatalf("the hot layout was skipped in CI, where the stack has the %s plugin: %s", layout.HotPlugin, why)
	}
	if len(missing) > 0 {
		if !strings.Contains(why, layout.HotPlugin) || !strings.Contains(why, missing[0]) {
			t.Errorf("the nodes %v lack the %s plugin, but skipped.hot is %q; want the reason naming the plugin and the nodes", missing, layout.HotPlugin, why)
		}
		for _, key := range hotKeys {
			if bench.MissingKeys(parsed, key) == nil {
				t.Errorf("hot was skipped, but the summary has %s", key)
			}
		}
		if _, ok := sum.Targets["throughput_ratio_hot"]; ok {
			t.Errorf("hot was skipped, but the targets judge it: %v", sum.Targets)
		}
		t.Logf("the hot layout was skipped, as it should be on this stack: %s", why)
		return
	}
	if why != "" {
		t.Fatalf("every node has the %s plugin, but the hot layout was skipped: %s", layout.HotPlugin, why)
	}
	if m := bench.MissingKeys(parsed, hotKeys...); len(m) > 0 {
		t.Fatalf("summary lacks %v", m)
	}
	if problems := bench.IntervalProblems(parsed, "throughput_ratio_hot", "mixed_throughput_ratio_hot", "bytes_written_ratio_hot", "freshness_p99_ms_hot"); len(problems) > 0 {
		t.Errorf("hot intervals: %q", problems)
	}
	if m := bench.MissingKeys(parsed, "targets.throughput_ratio_hot", "targets.freshness_p99_ms_hot"); len(m) > 0 {
		t.Errorf("targets lack %v: %v", m, parsed["targets"])
	}
	if h := sum.HotFigures; h.HotEventsPerS <= 0 || h.FreshnessSamplesHot == 0 || h.HotDocsWritten <= 0 {
		t.Errorf("hot figures %+v: want events applied, documents written and freshness samples", *h)
	}
}
