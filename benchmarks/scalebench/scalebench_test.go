package scalebench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/internal/stacktest"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// TestSmoke runs the cost curve at two tiny sizes with minimal rounds and
// checks its JSON summary, the record written after each size, and the
// plots drawn from it.
func TestSmoke(t *testing.T) {
	st := stacktest.Require(t)
	cfg := Defaults()
	cfg.StateDir, cfg.ReportDir = st.StateDir, t.TempDir()
	cfg.Sizes = Sizes{300, 600}
	cfg.IndexRounds, cfg.HotEvents, cfg.MixedEvents = 2, 200, 50
	cfg.Queries, cfg.SearchRounds, cfg.MaxRateSeconds = 16, 2, 1
	var progress bytes.Buffer
	cfg.Log = &progress
	var partial [][]int
	cfg.OnSize = func(s Summary) error {
		partial = append(partial, slices.Clone(s.Done))
		return nil
	}
	var out bytes.Buffer
	sum, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	parsed, err := bench.ParseSummary(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if missing := bench.MissingKeys(parsed, "bench", "sizes", "done", "by_size", "targets", "first_not_met"); len(missing) > 0 {
		t.Fatalf("summary lacks %v: %s", missing, out.String())
	}
	// Every size judges bench index's and bench search's S1 targets.
	targets, _ := parsed["targets"].(map[string]any)
	for _, name := range []string{"size_300.throughput_ratio", "size_600.throughput_ratio", "size_600.p99_ratio_under_load", "size_600.mismatches"} {
		if targets[name] == nil {
			t.Errorf("no target %s: %v", name, targets)
		}
	}
	if want := [][]int{{300}, {300, 600}}; !slices.EqualFunc(partial, want, slices.Equal) {
		t.Errorf("OnSize saw the sizes %v, want %v", partial, want)
	}
	if !slices.Equal(sum.Done, []int{300, 600}) || len(sum.BySize) != 2 {
		t.Fatalf("done %v with %d sizes of figures, want [300 600]", sum.Done, len(sum.BySize))
	}
	for _, f := range sum.BySize {
		for _, k := range kindsIn(sum) {
			if f.StoreBytes[k] <= 0 {
				t.Errorf("%d shops: %s disk %d bytes, want > 0", f.Shops, k, f.StoreBytes[k])
			}
			if f.Search[k].IdleP50Ms <= 0 {
				t.Errorf("%d shops: %s idle p50 %v ms, want > 0", f.Shops, k, f.Search[k].IdleP50Ms)
			}
		}
		if f.HeapUsedBytes <= 0 || f.HeapMaxBytes < f.HeapUsedBytes {
			t.Errorf("%d shops: heap used %d of %d bytes", f.Shops, f.HeapUsedBytes, f.HeapMaxBytes)
		}
		if f.EventsPerS["nested"] <= 0 || f.ThroughputRatio <= 0 || f.LoadSeconds <= 0 {
			t.Errorf("%d shops: events/s %v, throughput ratio %v, load %v s", f.Shops, f.EventsPerS, f.ThroughputRatio, f.LoadSeconds)
		}
	}
	// The larger catalog takes more disk in every layout.
	for _, k := range kindsIn(sum) {
		if sum.BySize[1].StoreBytes[k] <= sum.BySize[0].StoreBytes[k] {
			t.Errorf("%s disk at 600 shops %d, at 300 %d: want more", k, sum.BySize[1].StoreBytes[k], sum.BySize[0].StoreBytes[k])
		}
	}
	if _, err := os.Stat(sum.Report); err != nil {
		t.Errorf("report: %v", err)
	}
	paths, err := WritePlots(t.TempDir(), sum)
	if err != nil || len(paths) != len(Plots(sum)) {
		t.Fatalf("plots %v: %v", paths, err)
	}
	svg, err := os.ReadFile(paths[0])
	if err != nil || !strings.HasPrefix(string(svg), "<svg") {
		t.Errorf("%s is not an SVG: %.80q %v", paths[0], svg, err)
	}
}

func TestParseSizes(t *testing.T) {
	got, err := ParseSizes("20000, 5000,20000,200000")
	if err != nil || !slices.Equal(got, []int{5000, 20000, 200000}) {
		t.Errorf("ParseSizes = %v, %v; want sorted, without repeats", got, err)
	}
	for _, bad := range []string{"", "0", "-5", "5000,", "1e4", "2000001", "abc"} {
		if _, err := ParseSizes(bad); err == nil || !strings.Contains(err.Error(), "allowed") {
			t.Errorf("ParseSizes(%q) = %v; want an error naming what is allowed", bad, err)
		}
	}
}

func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"5000,20000", "1", " 7 , 3", "", ",", "1000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sizes, err := ParseSizes(s)
		if err != nil {
			return
		}
		if len(sizes) == 0 || !slices.IsSorted(sizes) || sizes[0] < 1 || sizes[len(sizes)-1] > 1_000_000 {
			t.Fatalf("ParseSizes(%q) = %v", s, sizes)
		}
		again, err := ParseSizes(sizes.String())
		if err != nil || !slices.Equal(again, sizes) {
			t.Fatalf("ParseSizes(%q) = %v, %v; want %v", sizes.String(), again, err, sizes)
		}
	})
}

func TestValidateNamesTheField(t *testing.T) {
	cfg := Defaults()
	cfg.Queries = 3
	if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "queries:") {
		t.Errorf("3 queries over 8 rounds: %v", err)
	}
	cfg = Defaults()
	cfg.Sizes = nil
	if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "sizes:") {
		t.Errorf("no sizes: %v", err)
	}
}

// A target not met at some size is named with the smallest such size; one
// met everywhere is not named.
func TestFirstNotMet(t *testing.T) {
	met, missed := bench.TargetResult{Verdict: bench.VerdictMet}, bench.TargetResult{Verdict: bench.VerdictMissed}
	undecided := bench.TargetResult{Verdict: bench.VerdictUndecided}
	s := Summary{Done: []int{5000, 20000, 100000}, Targets: bench.Targets{
		"size_5000.throughput_ratio_hot": met, "size_20000.throughput_ratio_hot": undecided, "size_100000.throughput_ratio_hot": missed,
		"size_5000.mismatches": met, "size_20000.mismatches": met, "size_100000.mismatches": met,
		"size_5000.p99_ratio_idle_hot": met, "size_20000.p99_ratio_idle_hot": met, "size_100000.p99_ratio_idle_hot": missed,
	}}
	got := firstNotMet(s)
	want := map[string]int{"throughput_ratio_hot": 20000, "p99_ratio_idle_hot": 100000}
	if len(got) != len(want) || got["throughput_ratio_hot"] != 20000 || got["p99_ratio_idle_hot"] != 100000 {
		t.Errorf("firstNotMet = %v, want %v", got, want)
	}
}

// The plots come from the summary's figures: one point per size, at the
// size, in every layout's series.
func TestPlotsFollowTheFigures(t *testing.T) {
	s := Summary{Bench: "scale", Done: []int{5000, 20000}, BySize: []SizeFigures{
		{Shops: 5000, StoreBytes: map[string]int64{"nested": 3 << 20, "split": 2 << 20, "hot": 2 << 20},
			Search: map[string]Latencies{"nested": {IdleP99Ms: 40}, "split": {IdleP99Ms: 50}, "hot": {IdleP99Ms: 30}}},
		{Shops: 20000, StoreBytes: map[string]int64{"nested": 12 << 20, "split": 8 << 20, "hot": 9 << 20},
			Search: map[string]Latencies{"nested": {IdleP99Ms: 80}, "split": {IdleP99Ms: 90}, "hot": {IdleP99Ms: 60}}},
	}}
	byFile := map[string]bench.Chart{}
	for _, p := range Plots(s) {
		byFile[p.File] = p.Chart
	}
	disk := byFile["disk"]
	if len(disk.Series) != 3 || disk.Series[0].Name != "nested" || !slices.Equal(disk.Series[0].X, []float64{5000, 20000}) ||
		!slices.Equal(disk.Series[0].Y, []float64{3, 12}) || !slices.Equal(disk.Series[2].Y, []float64{2, 9}) {
		t.Errorf("disk plot %+v", disk.Series)
	}
	p99 := byFile["search-p99-idle"]
	if len(p99.Series) != 3 || !slices.Equal(p99.Series[1].Y, []float64{50, 90}) {
		t.Errorf("idle p99 plot %+v", p99.Series)
	}
	dir := t.TempDir()
	record := filepath.Join(dir, "run.json")
	var line bytes.Buffer
	if err := bench.PrintSummary(&line, map[string]any{"bench": "scale", "summary": s}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(record, line.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadRecord(record)
	if err != nil || len(back.BySize) != 2 || back.BySize[1].StoreBytes["nested"] != 12<<20 {
		t.Fatalf("ReadRecord = %+v, %v", back, err)
	}
	if !strings.Contains(Plots(back)[0].Chart.SVG(), "<svg") {
		t.Error("a plot of the record is not an SVG")
	}
}
