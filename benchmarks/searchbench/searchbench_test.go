package searchbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
	"github.com/baedal/baedal/searcher"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// TestSmoke runs the benchmark at a tiny size and checks its summary.
func TestSmoke(t *testing.T) {
	st := stacktest.Require(t)
	cfg := Defaults()
	cfg.StateDir = st.StateDir
	cfg.Shops, cfg.Queries, cfg.MaxRateSeconds = 300, 20, 1
	cfg.Bench.ReportDir = t.TempDir()
	var progress bytes.Buffer
	s, err := Run(context.Background(), cfg, slog.New(slog.NewTextHandler(&progress, nil)), &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	var line bytes.Buffer
	if err := bench.PrintSummary(&line, s); err != nil {
		t.Fatal(err)
	}
	t.Logf("summary: %s", line.String())
	parsed, err := bench.ParseSummary(line.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if missing := bench.MissingKeys(parsed, "bench", "queries", "equivalent", "idle.nested_p50_ms", "idle.nested_p99_ms",
		"idle.split_p50_ms", "idle.split_p99_ms", "idle.timeouts_nested", "idle.timeouts_split",
		"under_load.nested_p50_ms", "under_load.split_p99_ms", "p50_ratio_under_load", "p99_ratio_under_load", "clients",
		"rounds", "compared", "compared_under_load", "mismatches_under_load", "under_load.p99_ratio_rounds", "under_load.failed_share_split"); len(missing) > 0 {
		t.Fatalf("summary lacks %v: %s", missing, line.String())
	}
	if problems := bench.IntervalProblems(parsed, "idle.p50_ratio", "idle.p99_ratio", "under_load.p50_ratio", "under_load.p99_ratio",
		"p50_ratio_under_load", "p99_ratio_under_load"); len(problems) > 0 {
		t.Errorf("intervals: %q\n%s", problems, line.String())
	}
	if m := bench.MissingKeys(parsed, "pathological.layouts.nested.p99_ratio", "pathological.layouts.split.p99_ratio",
		"targets.pathological_p99_ratio_nested", "targets.pathological_p99_ratio_split"); len(m) > 0 {
		t.Errorf("summary lacks the pathological figures %v: %s", m, line.String())
	}
	if problems := bench.IntervalProblems(parsed, "pathological.layouts.nested.p99_ratio", "pathological.layouts.split.p99_ratio"); len(problems) > 0 {
		t.Errorf("pathological intervals: %q", problems)
	}
	if len(s.Pathological.ByQuery) != len(PathologicalQueries) || s.Pathological.ByQuery[0].P99Ms["nested"] <= 0 {
		t.Errorf("pathological by_query: %+v, want every costly search timed on every layout", s.Pathological.ByQuery)
	}
	if s.Pathological.Pathological < len(PathologicalQueries) {
		t.Errorf("%d pathological searches, want at least one of each of %d", s.Pathological.Pathological, len(PathologicalQueries))
	}
	if m := bench.MissingKeys(parsed, "relevance.relevance.ndcg10", "relevance.text_then_rating.ndcg10", "relevance.ndcg10_ratio",
		"relevance.relevance.absurd_top10", "targets.ndcg10_ratio", "targets.absurd_top10"); len(m) > 0 {
		t.Errorf("summary lacks the relevance figures %v", m)
	}
	if rel := s.Relevance; rel.Judged == 0 || rel.Relevance.NDCG10 <= 0 || !rel.Equal {
		t.Errorf("relevance check: %+v, want judged queries, a positive NDCG and equal layouts", rel)
	}
	if bench.MissingKeys(parsed, "targets.p99_ratio_under_load", "targets.mismatches", "targets.mismatches_under_load", "targets.failed_share_under_load") != nil {
		t.Errorf("targets: %v", parsed["targets"])
	}
	for _, step := range []string{"nested nested:query+decision+fetch", "split shops:query+decision+fetch", "split menus:fetch"} {
		if f := s.IdleSteps[step]; f.Count == 0 || f.P50Ms <= 0 {
			t.Errorf("idle_steps[%q] = %+v, want timed searches", step, f)
		}
	}
	if s.Mismatches != 0 || s.MismatchesUnderLoad != 0 || s.Compared == 0 || s.ComparedUnderLoad == 0 {
		t.Errorf("a layout disagreed with nested on %d of %d idle pages and %d of %d pages under load", s.Mismatches, s.Compared, s.MismatchesUnderLoad, s.ComparedUnderLoad)
	}
	if s.Equivalent {
		t.Errorf("equivalent on %d compared pages, fewer than %d", s.Compared, MinComparedPages)
	}
	if s.NestedMaxUpdatesPerS <= 0 || s.UnderLoad.NestedUpdatesPerS <= 0 || s.UnderLoad.SplitUpdatesPerS <= 0 {
		t.Errorf("no updates were applied: %+v", s)
	}
	if _, err := os.Stat(s.Report); err != nil {
		t.Errorf("no report: %v", err)
	}
	checkHot(t, st.OpenSearchURLs, parsed, s)
}

// hotKeys are the hot layout's summary keys the smoke test requires when
// the hot layout ran (and forbids when it was skipped).
var hotKeys = []string{"idle.hot_p50_ms", "idle.hot_p99_ms", "idle.timeouts_hot", "idle.rejected_hot", "idle.failed_share_hot", "under_load.p99_ratio_hot_rounds",
	"under_load.hot_p50_ms", "under_load.hot_p99_ms", "under_load.timeouts_hot", "under_load.rejected_hot", "under_load.hot_updates_per_s",
	"p50_ratio_under_load_hot", "p99_ratio_under_load_hot", "p99_ratio_idle_hot", "hot_table_bytes_per_shop"}

// checkHot asks the cluster, apart from the benchmark, whether every node
// has the baedal-hot plugin, and checks the summary agrees (hotProblems).
// In CI the stack has the plugin, so a skipped hot layout fails the test.
func checkHot(t *testing.T, urls []string, parsed map[string]any, s Summary) {
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
	why := s.Skipped[string(layout.Hot)]
	if why != "" && testenv.InCI() {
		t.Fatalf("the hot layout was skipped in CI, where the stack has the %s plugin: %s", layout.HotPlugin, why)
	}
	for _, p := range hotProblems(parsed, s, missing) {
		t.Error(p)
	}
	if why != "" {
		t.Logf("the hot layout was skipped: %s", why)
	} else if f := s.IdleSteps["hot hot_menus:query+decision+fetch"]; f.Count == 0 {
		t.Errorf("no timed idle step of the hot layout: %v", s.IdleSteps)
	}
}

// hotProblems checks a summary against the nodes that lack the plugin.
// Without them, the hot layout must have run, its figures and their
// intervals be there and ordered, its targets judged; with them, the
// summary must say hot was skipped and why, and hold none of its figures.
func hotProblems(parsed map[string]any, s Summary, missing []string) []string {
	var problems []string
	why := s.Skipped[string(layout.Hot)]
	if len(missing) > 0 {
		if !strings.Contains(why, layout.HotPlugin) || !strings.Contains(why, missing[0]) {
			problems = append(problems, fmt.Sprintf("the nodes %v lack the %s plugin, but skipped.hot is %q; want the reason naming the plugin and the nodes", missing, layout.HotPlugin, why))
		}
		for _, key := range hotKeys {
			if bench.MissingKeys(parsed, key) == nil {
				problems = append(problems, "hot was skipped, but the summary has "+key)
			}
		}
		if _, ok := s.Targets["p99_ratio_under_load_hot"]; ok {
			problems = append(problems, fmt.Sprintf("hot was skipped, but the targets judge it: %v", s.Targets))
		}
		return problems
	}
	if why != "" {
		return append(problems, fmt.Sprintf("every node has the %s plugin, but the hot layout was skipped: %s", layout.HotPlugin, why))
	}
	if m := bench.MissingKeys(parsed, hotKeys...); len(m) > 0 {
		return append(problems, fmt.Sprintf("summary lacks %v", m))
	}
	for _, p := range bench.IntervalProblems(parsed, "idle.p50_ratio_hot", "idle.p99_ratio_hot", "under_load.p50_ratio_hot", "under_load.p99_ratio_hot",
		"p50_ratio_under_load_hot", "p99_ratio_under_load_hot", "p99_ratio_idle_hot") {
		problems = append(problems, "hot intervals: "+p)
	}
	if m := bench.MissingKeys(parsed, "targets.p99_ratio_under_load_hot", "targets.p99_ratio_idle_hot", "targets.failed_share_under_load_hot", "targets.failed_share_idle_hot"); len(m) > 0 {
		problems = append(problems, fmt.Sprintf("targets lack %v: %v", m, parsed["targets"]))
	}
	if s.UnderLoad.HotUpdatesPerS <= 0 || s.HotTableBytesPerShop <= 0 {
		problems = append(problems, fmt.Sprintf("hot: %.1f updates/s under load, %.1f table bytes per shop; want both > 0", s.UnderLoad.HotUpdatesPerS, s.HotTableBytesPerShop))
	}
	return problems
}

// TestSummaryOfEveryLayout builds summaries from made-up latencies of the
// three layouts and of two (hot skipped), and checks them the way the smoke
// test does against either kind of cluster: the stack the tests run on
// today lacks the plugin, so the smoke test alone would never check the hot
// keys.
func TestSummaryOfEveryLayout(t *testing.T) {
	// made-up latencies: 2,000 searches around ms milliseconds.
	made := func(ms float64) *bench.LatencyRecorder {
		rec := bench.NewLatencyRecorder()
		for i := range 2000 {
			rec.Record(time.Duration(ms * (0.5 + float64(i%100)/100) * float64(time.Millisecond)))
		}
		return rec
	}
	var status hotTableStatus
	if err := json.Unmarshal([]byte(`{"table": "baedal_hot_shops_v1", "ready": true,
		"nodes": {"n1": {"ready": true, "shops": 20000, "tombstones": 12, "bytes": 1040000, "rebuilds": 1, "last_rebuild_ms": 840},
		          "n2": {"ready": true, "shops": 20000, "tombstones": 12, "bytes": 1100000, "rebuilds": 1, "last_rebuild_ms": 790}}}`), &status); err != nil {
		t.Fatal(err)
	}
	if got := status.bytesPerShop(); got != 55 {
		t.Errorf("bytes per shop %v, want 55 (the larger node's 1,100,000 over 20,000 shops)", got)
	}
	for _, c := range []struct {
		name    string
		kinds   []layout.Kind
		skipped map[string]string
		missing []string
	}{
		{"every layout", layout.Kinds(), map[string]string{}, nil},
		{"hot skipped", []layout.Kind{layout.Nested, layout.Split}, map[string]string{"hot": "the OpenSearch nodes n1 lack the baedal-hot plugin"}, []string{"n1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &run{kinds: c.kinds, skipped: c.skipped}
			r.cfg.Bench.ReportDir = t.TempDir()
			// nested 20 ms, split 30 ms, hot 10 ms; under load nested 40 ms;
			// 8 rounds each.
			rounds := func(ms ...float64) [][]*bench.LatencyRecorder {
				out := make([][]*bench.LatencyRecorder, len(c.kinds))
				for slot := range out {
					for range 8 {
						out[slot] = append(out[slot], made(ms[slot]))
					}
				}
				return out
			}
			idle, load := rounds(20, 30, 10), rounds(40, 30, 10)
			rates := []float64{300, 300, 300}[:len(c.kinds)]
			answered := make([]missed, len(c.kinds))
			for i := range answered {
				answered[i].attempts = 16000
			}
			s := Summary{Bench: "search", Skipped: c.skipped, Equivalent: true, Compared: 16000, ComparedUnderLoad: 512}
			s.Idle = r.figures(idle, answered, make([]float64, len(c.kinds)), 1)
			s.UnderLoad = r.figures(load, answered, rates, 1)
			setHeadline(&s, status.bytesPerShop())
			var line bytes.Buffer
			if err := bench.PrintSummary(&line, s); err != nil {
				t.Fatal(err)
			}
			parsed, err := bench.ParseSummary(line.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range hotProblems(parsed, s, c.missing) {
				t.Errorf("%s\n%s", p, line.String())
			}
			if problems := bench.IntervalProblems(parsed, "idle.p99_ratio", "under_load.p99_ratio", "p99_ratio_under_load"); len(problems) > 0 {
				t.Errorf("intervals: %q", problems)
			}
			for name, want := range map[string]bench.Verdict{"failed_share_under_load": bench.VerdictMet, "mismatches": bench.VerdictMet, "mismatches_under_load": bench.VerdictMet} {
				if got := s.Targets[name].Verdict; got != want {
					t.Errorf("target %s: %s, want %s (%+v)", name, got, want, s.Targets[name])
				}
			}
			if s.UnderLoad.P99RatioRounds.Rounds != 8 {
				t.Errorf("p99 ratio rounds %+v, want 8", s.UnderLoad.P99RatioRounds)
			}
			path, err := r.report(s, pooled(idle), pooled(load))
			if err != nil {
				t.Fatal(err)
			}
			html, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range c.kinds {
				if !strings.Contains(string(html), "<th>"+string(k)+"</th>") {
					t.Errorf("the report has no %s column", k)
				}
			}
			if len(c.kinds) == 2 && strings.Contains(string(html), "<th>hot</th>") {
				t.Errorf("hot was skipped, but the report has a hot column")
			}
			if s.P99RatioUnderLoad < 0.7 || s.P99RatioUnderLoad > 0.8 {
				t.Errorf("p99_ratio_under_load %v, want split/nested = 30/40", s.P99RatioUnderLoad)
			}
			if h := s.HotFigures; h != nil && (h.P99RatioUnderLoadHot > 0.3 || h.P99RatioIdleHot > 0.6 ||
				s.Targets["p99_ratio_under_load_hot"].Verdict != bench.VerdictMet || s.Targets["p99_ratio_idle_hot"].Verdict != bench.VerdictMet) {
				t.Errorf("hot ratios under load %v (want 10/40), idle %v (want 10/20), targets %+v: want both met", h.P99RatioUnderLoadHot, h.P99RatioIdleHot, s.Targets)
			}
			// The checks must also catch a summary that disagrees with the cluster.
			flipped := []string{"n1"}
			if c.missing != nil {
				flipped = nil
			}
			if len(hotProblems(parsed, s, flipped)) == 0 {
				t.Errorf("hotProblems found nothing wrong with %s against missing=%v", c.name, flipped)
			}
		})
	}
}

func TestQueryMixIsRealistic(t *testing.T) {
	qs := QueryMix(1, 1000)
	text, located := 0, 0
	for _, q := range qs {
		if q.Q != "" {
			text++
		}
		if q.HasLocation() {
			located++
		}
		if _, err := query.ParseRequest(q.Encode()); err != nil {
			t.Fatalf("the mix produced an invalid request %v: %v", q.Encode(), err)
		}
	}
	if located != len(qs) {
		t.Errorf("%d of %d searches have a location; every delivery search has one", located, len(qs))
	}
	if text < 700 || text > 950 {
		t.Errorf("%d of 1000 searches have text, want most but not all", text)
	}
}

func TestForEachCallsEveryIndexOnceAndStopsOnError(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	var inFlight, peak atomic.Int64
	err := forEach(3, 100, func(i int) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(time.Millisecond)
		mu.Lock()
		seen[i]++
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if seen[i] != 1 {
			t.Fatalf("index %d called %d times", i, seen[i])
		}
	}
	if p := peak.Load(); p < 2 || p > 3 {
		t.Errorf("peak concurrency %d, want 2..3 of 3 workers", p)
	}
	var calls atomic.Int64
	boom := errors.New("boom")
	err = forEach(2, 1000, func(i int) error {
		calls.Add(1)
		if i == 10 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if c := calls.Load(); c >= 1000 {
		t.Errorf("%d calls after an error at index 10: it should stop early", c)
	}
}

// TestMissedCountsTimeoutsAndRejections: a search past its deadline is a
// timeout, one OpenSearch refused with 429 (a circuit breaker at 1,000,000
// shops on a 512 MB heap) a rejection; both let the run go on. Any other
// error is not counted: it stops the run.
func TestMissedCountsTimeoutsAndRejections(t *testing.T) {
	var m missed
	rejection := fmt.Errorf("searcher: step menus:fetch: %w", &osapi.StatusError{Method: "POST", Path: "/menus/_search", Status: http.StatusTooManyRequests})
	for _, err := range []error{fmt.Errorf("wrapped: %w", searcher.ErrTimeout), rejection, rejection} {
		if !m.count(err) {
			t.Errorf("count(%v) = false, want true", err)
		}
	}
	for _, err := range []error{nil, errors.New("boom"), &osapi.StatusError{Status: http.StatusBadRequest}} {
		if m.count(err) {
			t.Errorf("count(%v) = true, want false", err)
		}
	}
	if m.timeouts != 1 || m.rejected != 2 {
		t.Errorf("counted %+v, want 1 timeout and 2 rejections", m)
	}
}

// A count of differing pages is judged only over enough pages: none of 20
// differing proves nothing; one differing is a miss however few compared.
func TestMismatchTargetNeedsEnoughPages(t *testing.T) {
	for _, c := range []struct {
		mismatches, compared int
		want                 bench.Verdict
	}{
		{0, 20, bench.VerdictUndecided},
		{0, MinComparedPages - 1, bench.VerdictUndecided},
		{0, MinComparedPages, bench.VerdictMet},
		{1, 20, bench.VerdictMissed},
		{1, 20000, bench.VerdictMissed},
	} {
		if got := mismatchTarget(c.mismatches, c.compared).Verdict; got != c.want {
			t.Errorf("%d of %d pages differ: %s, want %s", c.mismatches, c.compared, got, c.want)
		}
	}
}

// TestSamePageComparesWhatAPersonSees: the same shops in the same order
// are not enough; a shop field (a hot one the table serves, a cold one), the
// version, the matched menus or the ETA differing makes the pages differ.
func TestSamePageComparesWhatAPersonSees(t *testing.T) {
	eta, delivers := 35, true
	page := func(edit func(*searcher.ShopHit)) *searcher.Response {
		h := searcher.ShopHit{Shop: catalog.Shop{ID: 7, Name: "치킨집", DeliveryFee: 2000, Rating: 4.5, Tags: []string{"치킨"}},
			Version: 3, ETAMinutes: &eta, Delivers: &delivers, MatchedMenus: []searcher.MatchedMenu{{ID: 7001}}}
		if edit != nil {
			edit(&h)
		}
		return &searcher.Response{Total: 1, Shops: []searcher.ShopHit{h}}
	}
	if !samePage(page(nil), page(nil)) {
		t.Fatal("equal pages differ")
	}
	for name, edit := range map[string]func(*searcher.ShopHit){
		"delivery fee": func(h *searcher.ShopHit) { h.DeliveryFee = 3000 },
		"rating":       func(h *searcher.ShopHit) { h.Rating = 4.4 },
		"open":         func(h *searcher.ShopHit) { h.Open = true },
		"name":         func(h *searcher.ShopHit) { h.Name = "피자집" },
		"version":      func(h *searcher.ShopHit) { h.Version = 4 },
		"menus":        func(h *searcher.ShopHit) { h.MatchedMenus[0].ID = 7002 },
		"eta":          func(h *searcher.ShopHit) { other := 36; h.ETAMinutes = &other },
		"delivers":     func(h *searcher.ShopHit) { other := false; h.Delivers = &other },
	} {
		if samePage(page(nil), page(edit)) {
			t.Errorf("pages whose shop differs in %s are the same", name)
		}
	}
}

// TestMissedSearchesAreStillCompared gives every measured search a
// deadline it cannot meet: each one is counted as missed, and yet every
// idle query and every sampled query under load is compared, untimed, so
// the equivalence targets never go undecided because the node is slow.
func TestMissedSearchesAreStillCompared(t *testing.T) {
	st := stacktest.Require(t)
	cfg := Defaults()
	cfg.StateDir = st.StateDir
	cfg.Shops, cfg.Queries, cfg.MaxRateSeconds = 300, 16, 1
	cfg.Deadline = time.Nanosecond
	cfg.Bench.ReportDir = t.TempDir()
	var progress bytes.Buffer
	s, err := Run(context.Background(), cfg, slog.New(slog.NewTextHandler(&progress, nil)), &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if s.Idle.TimeoutsNested != s.Queries {
		t.Errorf("idle timeouts on nested: %d of %d searches, want all (deadline 1 ns)", s.Idle.TimeoutsNested, s.Queries)
	}
	if s.Compared != s.Queries || s.NotCompared != 0 {
		t.Errorf("idle: %d pages compared, %d not, want all %d compared", s.Compared, s.NotCompared, s.Queries)
	}
	if want := min(s.Queries, s.Rounds*comparedPerRound); s.ComparedUnderLoad != want {
		t.Errorf("under load: %d pages compared, want %d", s.ComparedUnderLoad, want)
	}
	if s.Mismatches != 0 || s.MismatchesUnderLoad != 0 {
		t.Errorf("%d idle and %d loaded pages differ from nested's", s.Mismatches, s.MismatchesUnderLoad)
	}
}
