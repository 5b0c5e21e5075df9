package searchbench

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/query"
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
	parsed, err := bench.ParseSummary(line.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if missing := bench.MissingKeys(parsed, "bench", "queries", "equivalent", "idle.nested_p50_ms", "idle.nested_p99_ms",
		"idle.split_p50_ms", "idle.split_p99_ms", "idle.timeouts_nested", "idle.timeouts_split",
		"under_load.nested_p50_ms", "under_load.split_p99_ms", "p50_ratio_under_load", "p99_ratio_under_load"); len(missing) > 0 {
		t.Fatalf("summary lacks %v: %s", missing, line.String())
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
