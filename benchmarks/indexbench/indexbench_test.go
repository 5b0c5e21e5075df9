package indexbench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/layout"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// TestSmoke runs the benchmark at a tiny size and checks the JSON summary.
// With BAEDAL_INDEXBENCH_PROFILE=quick|full it runs that profile instead
// (a manual run: go test ./benchmarks/indexbench -run TestSmoke -v -timeout 30m).
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
		"throughput_ratio", "nested_bytes_written", "split_bytes_written", "freshness_p99_ms", "freshness_gave_up", "targets.freshness_gave_up"); len(missing) > 0 {
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
var hotKeys = []string{"hot_events_per_s", "throughput_ratio_hot", "throughput_ratio_hot_ci95", "targets.freshness_gave_up_hot",
	"freshness_p99_ms_hot", "freshness_p99_ms_hot_ci95", "mixed_throughput_ratio_hot", "bytes_written_ratio_hot"}

// checkHot asks the cluster, apart from the benchmark, whether every node
// has the baedal-hot plugin, and checks the summary agrees (hotProblems).
// In CI the stack has the plugin, so a skipped hot layout fails the test.
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
	for _, p := range hotProblems(parsed, sum, missing) {
		t.Error(p)
	}
	if why != "" {
		t.Logf("the hot layout was skipped: %s", why)
	}
}

// hotProblems checks a summary against the nodes that lack the plugin.
// Without them, the hot layout must have run, its figures and their
// intervals be there and ordered, its targets judged; with them, the
// summary must say hot was skipped and why, and hold none of its figures.
func hotProblems(parsed map[string]any, sum Summary, missing []string) []string {
	var problems []string
	why := sum.Skipped[string(layout.Hot)]
	if len(missing) > 0 {
		if !strings.Contains(why, layout.HotPlugin) || !strings.Contains(why, missing[0]) {
			problems = append(problems, fmt.Sprintf("the nodes %v lack the %s plugin, but skipped.hot is %q; want the reason naming the plugin and the nodes", missing, layout.HotPlugin, why))
		}
		for _, key := range hotKeys {
			if bench.MissingKeys(parsed, key) == nil {
				problems = append(problems, "hot was skipped, but the summary has "+key)
			}
		}
		if _, ok := sum.Targets["throughput_ratio_hot"]; ok {
			problems = append(problems, fmt.Sprintf("hot was skipped, but the targets judge it: %v", sum.Targets))
		}
		return problems
	}
	if why != "" {
		return append(problems, fmt.Sprintf("every node has the %s plugin, but the hot layout was skipped: %s", layout.HotPlugin, why))
	}
	if m := bench.MissingKeys(parsed, hotKeys...); len(m) > 0 {
		return append(problems, fmt.Sprintf("summary lacks %v", m))
	}
	for _, p := range bench.IntervalProblems(parsed, "throughput_ratio_hot", "mixed_throughput_ratio_hot", "bytes_written_ratio_hot", "freshness_p99_ms_hot") {
		problems = append(problems, "hot intervals: "+p)
	}
	if m := bench.MissingKeys(parsed, "targets.throughput_ratio_hot", "targets.freshness_p99_ms_hot"); len(m) > 0 {
		problems = append(problems, fmt.Sprintf("targets lack %v: %v", m, parsed["targets"]))
	}
	if h := sum.HotFigures; h.HotEventsPerS <= 0 || h.FreshnessSamplesHot == 0 || h.HotDocsWritten <= 0 {
		problems = append(problems, fmt.Sprintf("hot figures %+v: want events applied, documents written and freshness samples", *h))
	}
	return problems
}

// TestSummaryOfEveryLayout runs summarize on made-up measurements of the
// three layouts and of two (hot skipped), and checks the summaries the way
// the smoke test does against either kind of cluster: the stack the tests
// run on today lacks the plugin, so the smoke test alone would never check
// the hot keys.
func TestSummaryOfEveryLayout(t *testing.T) {
	cfg := Config{Shops: 100, Rounds: 4, HotEvents: 1000, MixedEvents: 100}
	cfg.fill()
	// made-up sides: per round, speed events/s and bytes written.
	made := func(k layout.Kind, speed, bytes float64) *side {
		s := &side{kind: k, batches: bench.NewLatencyRecorder()}
		for round := range cfg.Rounds {
			jitter := 1 + 0.05*float64(round%3)
			s.roundsPerSec = append(s.roundsPerSec, speed*jitter)
			s.roundsMixedPerSec = append(s.roundsMixedPerSec, speed/10*jitter)
			s.roundsBytes = append(s.roundsBytes, bytes*jitter)
			s.hotTime += time.Duration(float64(cfg.HotEvents) / (speed * jitter) * float64(time.Second))
			s.mixedTime += time.Duration(float64(cfg.MixedEvents) / (speed / 10 * jitter) * float64(time.Second))
			s.hotEvents, s.mixedEvents, s.docs, s.bytes = s.hotEvents+cfg.HotEvents, s.mixedEvents+cfg.MixedEvents, s.docs+500, s.bytes+int64(bytes*jitter)
			s.batches.Record(time.Duration(1000 / speed * float64(time.Second)))
		}
		return s
	}
	fresh := func(ms ...int) freshness {
		f := freshness{Latency: bench.NewLatencyRecorder(), Lag: bench.NewLatencyRecorder()}
		for _, v := range ms {
			f.Latency.Record(time.Duration(v) * time.Millisecond)
			f.Seen++
		}
		f.Followed = f.Seen
		return f
	}
	nested, split, hot := made(layout.Nested, 500, 1e8), made(layout.Split, 15000, 5e6), made(layout.Hot, 20000, 4e6)
	frs := map[layout.Kind]freshness{layout.Split: fresh(900, 1000, 1100, 1200), layout.Hot: fresh(20, 30, 40, 50, 60, 70)}
	// One split change never seen: at the limit in the percentiles, and a
	// missed freshness_gave_up target.
	frs[layout.Split].Latency.Record(followLimit)
	gaveUp := frs[layout.Split]
	gaveUp.GaveUp, gaveUp.Followed = 1, gaveUp.Followed+1
	frs[layout.Split] = gaveUp

	for _, c := range []struct {
		name    string
		sides   []*side
		skipped map[string]string
		missing []string
	}{
		{"every layout", []*side{nested, split, hot}, map[string]string{}, nil},
		{"hot skipped", []*side{nested, split}, map[string]string{"hot": "the OpenSearch nodes n1 lack the baedal-hot plugin"}, []string{"n1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sum := summarize(cfg, 3000, c.sides, frs, c.skipped)
			var line bytes.Buffer
			if err := bench.PrintSummary(&line, sum); err != nil {
				t.Fatal(err)
			}
			parsed, err := bench.ParseSummary(line.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range hotProblems(parsed, sum, c.missing) {
				t.Errorf("%s\n%s", p, line.String())
			}
			if problems := bench.IntervalProblems(parsed, "throughput_ratio", "mixed_throughput_ratio", "bytes_written_ratio"); len(problems) > 0 {
				t.Errorf("intervals: %q", problems)
			}
			html := writeReport(t, report(cfg, indexer.Defaults(), sum, c.sides, frs))
			for _, side := range c.sides {
				if !strings.Contains(html, "<th>"+string(side.kind)+"</th>") {
					t.Errorf("the report has no %s column", side.kind)
				}
			}
			if len(c.sides) == 2 && strings.Contains(html, "<th>hot</th>") {
				t.Errorf("hot was skipped, but the report has a hot column")
			}
			if sum.FreshnessGaveUp != 1 || sum.Targets["freshness_gave_up"].Verdict != bench.VerdictMissed || sum.FreshnessP99Ms < bench.Ms(followLimit) {
				t.Errorf("split freshness gave up %d, p99 %v ms, target %+v: want 1 given up, counted at the %s limit, and the target missed",
					sum.FreshnessGaveUp, sum.FreshnessP99Ms, sum.Targets["freshness_gave_up"], followLimit)
			}
			if h := sum.HotFigures; h != nil && sum.Targets["freshness_gave_up_hot"].Verdict != bench.VerdictMet {
				t.Errorf("freshness_gave_up_hot: %+v, want met (none given up)", sum.Targets["freshness_gave_up_hot"])
			}
			if sum.ThroughputRatio != 30 {
				t.Errorf("throughput_ratio %v, want 30 (15000/500)", sum.ThroughputRatio)
			}
			if h := sum.HotFigures; h != nil && (h.ThroughputRatioHot != 40 || sum.Targets["throughput_ratio_hot"].Verdict != bench.VerdictMet ||
				sum.Targets["freshness_p99_ms_hot"].Verdict != bench.VerdictMet) {
				t.Errorf("hot ratio %v (want 40), targets %+v: want both met", h.ThroughputRatioHot, sum.Targets)
			}
			// The checks must also catch a summary that disagrees with the cluster.
			flipped := []string{"n1"}
			if c.missing != nil {
				flipped = nil
			}
			if len(hotProblems(parsed, sum, flipped)) == 0 {
				t.Errorf("hotProblems found nothing wrong with %s against missing=%v", c.name, flipped)
			}
		})
	}
}

// writeReport writes rep into a temporary directory and returns its HTML.
func writeReport(t *testing.T, rep *bench.Report) string {
	t.Helper()
	path, err := rep.WriteHTML(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
