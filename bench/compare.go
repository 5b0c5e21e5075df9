package bench

import (
	"fmt"
	"strconv"
)

// CompareLatency returns the standard comparison table of two recorders:
// one row per figure (count, mean, p50, p90, p99, p99.9, max; latencies in
// ms) with the baseline, ours and the ratio ours/baseline (below 1: ours is
// faster).
func CompareLatency(baselineName string, baseline *LatencyRecorder, oursName string, ours *LatencyRecorder) Table {
	t := CompareLatencies([]string{baselineName, oursName}, []*LatencyRecorder{baseline, ours})
	t.Header[3] = "ratio ours/baseline"
	return t
}

// CompareLatencies is CompareLatency for any number of sides, the baseline
// first: one column per side, then one ratio column per other side
// ("split/nested"), each over the baseline.
func CompareLatencies(names []string, recorders []*LatencyRecorder) Table {
	n := min(len(names), len(recorders))
	sums := make([]LatencySummary, n)
	for i := range n {
		sums[i] = recorders[i].Summary()
	}
	t := Table{Header: append([]string{"latency (ms)"}, names[:n]...)}
	for i := 1; i < n; i++ {
		t.Header = append(t.Header, names[i]+"/"+names[0])
	}
	row := func(name string, value func(LatencySummary) float64, format func(float64) string) []string {
		out := []string{name}
		for _, s := range sums {
			out = append(out, format(value(s)))
		}
		for _, s := range sums[min(1, n):] {
			out = append(out, formatRatio(value(s), value(sums[0])))
		}
		return out
	}
	count := func(v float64) string { return strconv.FormatInt(int64(v), 10) }
	t.Rows = append(t.Rows, row("count", func(s LatencySummary) float64 { return float64(s.Count) }, count))
	for _, f := range []struct {
		name  string
		value func(LatencySummary) float64
	}{
		{"mean", func(s LatencySummary) float64 { return s.MeanMs }},
		{"p50", func(s LatencySummary) float64 { return s.P50Ms }},
		{"p90", func(s LatencySummary) float64 { return s.P90Ms }},
		{"p99", func(s LatencySummary) float64 { return s.P99Ms }},
		{"p99.9", func(s LatencySummary) float64 { return s.P999Ms }},
		{"max", func(s LatencySummary) float64 { return s.MaxMs }},
	} {
		t.Rows = append(t.Rows, row(f.name, f.value, formatMs))
	}
	return t
}

// CompareLoad returns the comparison table of two load runs: throughput,
// operations, errors, error rate and the latency rows of CompareLatency,
// each with the ratio ours/baseline (throughput: above 1 is better).
func CompareLoad(baselineName string, baseline LoadResult, oursName string, ours LoadResult) Table {
	t := Table{Header: []string{"figure", baselineName, oursName, "ratio ours/baseline"}}
	bt, ot := baseline.Throughput(), ours.Throughput()
	t.Rows = append(t.Rows,
		[]string{"throughput (ops/s)", formatFloat(bt), formatFloat(ot), formatRatio(ot, bt)},
		[]string{"ops", strconv.FormatInt(baseline.Ops, 10), strconv.FormatInt(ours.Ops, 10), formatRatio(float64(ours.Ops), float64(baseline.Ops))},
		[]string{"errors", strconv.FormatInt(baseline.Errors, 10), strconv.FormatInt(ours.Errors, 10), formatRatio(float64(ours.Errors), float64(baseline.Errors))},
		[]string{"error rate", formatPercent(baseline.ErrorRate()), formatPercent(ours.ErrorRate()), "–"},
	)
	lat := CompareLatency(baselineName, baseline.Latency, oursName, ours.Latency)
	for _, row := range lat.Rows[1:] { // count is the ops row above
		row[0] = row[0] + " (ms)"
		t.Rows = append(t.Rows, row)
	}
	return t
}

// formatRatio prints Ratio(ours, baseline), or "–" when there is no baseline.
func formatRatio(ours, baseline float64) string {
	if baseline == 0 {
		return "–"
	}
	return strconv.FormatFloat(Ratio(ours, baseline), 'f', 3, 64)
}

func formatMs(ms float64) string {
	return strconv.FormatFloat(ms, 'f', 3, 64)
}

func formatFloat(v float64) string {
	return strconv.FormatFloat(round3(v), 'f', -1, 64)
}

func formatPercent(v float64) string {
	return fmt.Sprintf("%.2f%%", v*100)
}
