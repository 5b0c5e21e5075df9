package bench

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// withinPrecision reports whether got is within HDR precision (3
// significant digits: 0.1% plus one bucket) of want.
func withinPrecision(got, want time.Duration) bool {
	return math.Abs(float64(got-want)) <= float64(want)*0.002+float64(time.Microsecond)
}

func TestLatencyRecorderQuantilesOfUniformMilliseconds(t *testing.T) {
	r := NewLatencyRecorder()
	for ms := 1; ms <= 1000; ms++ {
		r.Record(time.Duration(ms) * time.Millisecond)
	}
	if got := r.Count(); got != 1000 {
		t.Fatalf("Count = %d, want 1000", got)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{
		{0, 1 * time.Millisecond},
		{0.5, 500 * time.Millisecond},
		{0.9, 900 * time.Millisecond},
		{0.99, 990 * time.Millisecond},
		{0.999, 999 * time.Millisecond},
		{1, 1000 * time.Millisecond},
		{-3, 1 * time.Millisecond},   // clamped to 0
		{7, 1000 * time.Millisecond}, // clamped to 1
	} {
		if got := r.Quantile(c.q); !withinPrecision(got, c.want) {
			t.Errorf("Quantile(%v) = %v, want %v within 0.2%%", c.q, got, c.want)
		}
	}
	got := r.Quantiles(0.5, 0.99)
	if !withinPrecision(got[0], 500*time.Millisecond) || !withinPrecision(got[1], 990*time.Millisecond) {
		t.Errorf("Quantiles(0.5, 0.99) = %v, want [500ms 990ms]", got)
	}

	s := r.Summary()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"mean", s.MeanMs, 500.5},
		{"p50", s.P50Ms, 500},
		{"p90", s.P90Ms, 900},
		{"p99", s.P99Ms, 990},
		{"p99.9", s.P999Ms, 999},
		{"max", s.MaxMs, 1000},
	} {
		if math.Abs(c.got-c.want) > c.want*0.002 {
			t.Errorf("Summary %s = %v ms, want %v ms within 0.2%%", c.name, c.got, c.want)
		}
	}
	if s.Count != 1000 {
		t.Errorf("Summary count = %d, want 1000", s.Count)
	}
}

func TestLatencySummaryJSONKeys(t *testing.T) {
	r := NewLatencyRecorder()
	r.Record(2 * time.Millisecond)
	data, err := json.Marshal(r.Summary())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"count", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms"}
	if missing := MissingKeys(m, want...); len(missing) > 0 || len(m) != len(want) {
		t.Errorf("summary JSON %s: missing %v, want exactly %v", data, missing, want)
	}
}

func TestLatencyRecorderEmptyAndNil(t *testing.T) {
	var nilRecorder *LatencyRecorder
	for name, r := range map[string]*LatencyRecorder{"empty": NewLatencyRecorder(), "nil": nilRecorder} {
		if r.Count() != 0 || r.Quantile(0.99) != 0 || r.Summary() != (LatencySummary{}) || r.Clamped() != 0 {
			t.Errorf("%s recorder: Count %d, p99 %v, Summary %+v; want all zero", name, r.Count(), r.Quantile(0.99), r.Summary())
		}
	}
}

func TestLatencyRecorderClampsOutOfRange(t *testing.T) {
	r := NewLatencyRecorder()
	r.Record(-time.Second)
	r.Record(10 * time.Minute)
	if r.Count() != 2 {
		t.Fatalf("Count = %d, want 2: out-of-range values must still be counted", r.Count())
	}
	if r.Clamped() != 1 {
		t.Errorf("Clamped = %d, want 1", r.Clamped())
	}
	if got := r.Quantile(0); got != 0 {
		t.Errorf("min = %v, want 0 for a negative duration", got)
	}
	if got := r.Quantile(1); !withinPrecision(got, 60*time.Second) {
		t.Errorf("max = %v, want 60s (clamped)", got)
	}
}

func TestLatencyRecorderMerge(t *testing.T) {
	low, high := NewLatencyRecorder(), NewLatencyRecorder()
	for ms := 1; ms <= 500; ms++ {
		low.Record(time.Duration(ms) * time.Millisecond)
	}
	for ms := 501; ms <= 1000; ms++ {
		high.Record(time.Duration(ms) * time.Millisecond)
	}
	high.Record(2 * time.Minute) // clamped
	all := NewLatencyRecorder()
	all.Merge(low)
	all.Merge(high)
	all.Merge(nil)
	if all.Count() != 1001 || all.Clamped() != 1 {
		t.Fatalf("merged Count %d Clamped %d, want 1001 and 1", all.Count(), all.Clamped())
	}
	if got := all.Quantile(0.5); !withinPrecision(got, 501*time.Millisecond) {
		t.Errorf("merged p50 = %v, want 501ms", got)
	}
	if low.Count() != 500 || high.Count() != 501 {
		t.Errorf("sources changed by Merge: %d and %d, want 500 and 501", low.Count(), high.Count())
	}

	all.Merge(all)
	if all.Count() != 2002 {
		t.Errorf("self-merge Count = %d, want 2002", all.Count())
	}
	all.Reset()
	if all.Count() != 0 || all.Clamped() != 0 {
		t.Errorf("after Reset: Count %d Clamped %d, want 0", all.Count(), all.Clamped())
	}
}

// TestLatencyRecorderConcurrent is meant for -race: recorders recording and
// merging into each other at once must neither race nor deadlock.
func TestLatencyRecorderConcurrent(t *testing.T) {
	a, b := NewLatencyRecorder(), NewLatencyRecorder()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				a.Record(time.Duration(i) * time.Microsecond)
				b.Record(time.Duration(i) * time.Microsecond)
				if i%100 == 0 {
					if g%2 == 0 {
						a.Merge(b)
					} else {
						b.Merge(a)
					}
					_ = a.Summary()
				}
			}
		})
	}
	wg.Wait()
	if a.Count() < 4000 || b.Count() < 4000 {
		t.Errorf("counts %d and %d, want at least the 4000 direct records each", a.Count(), b.Count())
	}
}

func TestRatio(t *testing.T) {
	for _, c := range []struct {
		ours, baseline, want float64
	}{
		{50, 100, 0.5},
		{100, 50, 2},
		{1, 3, 0.333},
		{2, 3, 0.667},
		{0, 10, 0},
		{10, 0, 0},
		{0, 0, 0},
		{-5, 10, -0.5},
		{math.NaN(), 1, 0},
		{1, math.NaN(), 0},
		{math.Inf(1), 1, 0},
		{1, math.Inf(1), 0},
		{1e308, 1e-308, 0}, // overflows to +Inf
	} {
		if got := Ratio(c.ours, c.baseline); got != c.want {
			t.Errorf("Ratio(%v, %v) = %v, want %v", c.ours, c.baseline, got, c.want)
		}
	}
}

func TestMs(t *testing.T) {
	if got := Ms(1234567 * time.Nanosecond); got != 1.235 {
		t.Errorf("Ms(1.234567ms) = %v, want 1.235", got)
	}
}

func TestCompareLatency(t *testing.T) {
	base, ours := NewLatencyRecorder(), NewLatencyRecorder()
	for range 100 {
		base.Record(10 * time.Millisecond)
		ours.Record(5 * time.Millisecond)
	}
	table := CompareLatency("nested", base, "split", ours)
	if want := []string{"latency (ms)", "nested", "split", "ratio ours/baseline"}; !slices.Equal(table.Header, want) {
		t.Errorf("header %q, want %q", table.Header, want)
	}
	rows := map[string][]string{}
	for _, row := range table.Rows {
		if len(row) != 4 {
			t.Fatalf("row %q has %d cells, want 4", row, len(row))
		}
		rows[row[0]] = row
	}
	for _, name := range []string{"count", "mean", "p50", "p90", "p99", "p99.9", "max"} {
		if rows[name] == nil {
			t.Errorf("no %q row in %q", name, table.Rows)
		}
	}
	if got := rows["count"]; !slices.Equal(got, []string{"count", "100", "100", "1.000"}) {
		t.Errorf("count row %q", got)
	}
	p99 := rows["p99"]
	baseMs, err1 := strconv.ParseFloat(p99[1], 64)
	oursMs, err2 := strconv.ParseFloat(p99[2], 64)
	if err1 != nil || err2 != nil || math.Abs(baseMs-10) > 0.02 || math.Abs(oursMs-5) > 0.01 || p99[3] != "0.500" {
		t.Errorf("p99 row %q, want about [p99 10 5 0.500]", p99)
	}
	empty := CompareLatency("a", NewLatencyRecorder(), "b", nil)
	for _, row := range empty.Rows {
		if row[3] != "–" {
			t.Errorf("empty baseline row %q: ratio %q, want –", row, row[3])
		}
	}
}

func TestCompareLatenciesHasAColumnPerSideAndARatioPerOtherSide(t *testing.T) {
	nested, split, hot := NewLatencyRecorder(), NewLatencyRecorder(), NewLatencyRecorder()
	for range 100 {
		nested.Record(10 * time.Millisecond)
		split.Record(5 * time.Millisecond)
		hot.Record(2 * time.Millisecond)
	}
	table := CompareLatencies([]string{"nested", "split", "hot"}, []*LatencyRecorder{nested, split, hot})
	if want := []string{"latency (ms)", "nested", "split", "hot", "split/nested", "hot/nested"}; !slices.Equal(table.Header, want) {
		t.Errorf("header %q, want %q", table.Header, want)
	}
	for _, row := range table.Rows {
		if len(row) != len(table.Header) {
			t.Fatalf("row %q has %d cells, want %d", row, len(row), len(table.Header))
		}
		if row[0] == "p99" && (row[4] != "0.500" || row[5] != "0.200") {
			t.Errorf("p99 row %q, want ratios 0.500 and 0.200", row)
		}
		if row[0] == "count" && !slices.Equal(row, []string{"count", "100", "100", "100", "1.000", "1.000"}) {
			t.Errorf("count row %q", row)
		}
	}
}

// A recorder rebuilt from another's Counts has the same count, clamped
// count and quantiles, as when client processes send their latencies to
// the benchmark that merges them.
func TestLatencyCountsAddBackBucketForBucket(t *testing.T) {
	src := NewLatencyRecorder()
	for i := range 10_000 {
		src.Record(time.Duration(1+i*i%7919) * 13 * time.Microsecond)
	}
	src.Record(2 * time.Minute) // clamped
	dst := NewLatencyRecorder()
	dst.AddCounts(src.Counts())
	if dst.Count() != src.Count() || dst.Clamped() != 1 {
		t.Fatalf("rebuilt: count %d clamped %d, want %d and 1", dst.Count(), dst.Clamped(), src.Count())
	}
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 1} {
		if got, want := dst.Quantile(q), src.Quantile(q); got != want {
			t.Errorf("quantile %v: rebuilt %s, original %s", q, got, want)
		}
	}
	dst.AddCounts(LatencyCounts{Values: []int64{int64(time.Millisecond), 5}, Counts: []int64{-3}})
	if dst.Count() != src.Count() {
		t.Errorf("a negative count and an unpaired value changed the count to %d", dst.Count())
	}
}
