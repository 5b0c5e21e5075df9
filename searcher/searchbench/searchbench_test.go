package searchbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
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
		"under_load.nested_p50_ms", "under_load.split_p99_ms", "p50_ratio_under_load", "p99_ratio_under_load", "clients"); len(missing) > 0 {
		t.Fatalf("summary lacks %v: %s", missing, line.String())
	}
	if problems := bench.IntervalProblems(parsed, "idle.p50_ratio", "idle.p99_ratio", "under_load.p50_ratio", "under_load.p99_ratio",
		"p50_ratio_under_load", "p99_ratio_under_load"); len(problems) > 0 {
		t.Errorf("intervals: %q\n%s", problems, line.String())
	}
	if bench.MissingKeys(parsed, "targets.p99_ratio_under_load", "targets.mismatches") != nil {
		t.Errorf("targets: %v", parsed["targets"])
	}
	for _, step := range []string{"nested nested:query+decision+fetch", "split shops:query+decision+fetch", "split menus:fetch"} {
		if f := s.IdleSteps[step]; f.Count == 0 || f.P50Ms <= 0 {
			t.Errorf("idle_steps[%q] = %+v, want timed searches", step, f)
		}
	}
	if !s.Equivalent {
		t.Errorf("layouts disagreed on %d idle pages", s.Mismatches)
	}
	if s.NestedMaxUpdatesPerS <= 0 || s.UnderLoad.NestedUpdatesPerS <= 0 || s.UnderLoad.SplitUpdatesPerS <= 0 {
		t.Errorf("no updates were applied: %+v", s)
	}
	if _, err := os.Stat(s.Report); err != nil {
		t.Errorf("no report: %v", err)
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
