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
	b, o := baseline.Summary(), ours.Summary()
	t := Table{Header: []string{"latency (ms)", baselineName, oursName, "ratio ours/baseline"}}
	t.Rows = append(t.Rows, []string{"count", strconv.FormatInt(b.Count, 10), strconv.FormatInt(o.Count, 10), formatRatio(float64(o.Count), float64(b.Count))})
	for _, f := range []struct {
		name       string
		base, ours float64
	}{
		{"mean", b.MeanMs, o.MeanMs},
		{"p50", b.P50Ms, o.P50Ms},
		{"p90", b.P90Ms, o.P90Ms},
		{"p99", b.P99Ms, o.P99Ms},
		{"p99.9", b.P999Ms, o.P999Ms},
		{"max", b.MaxMs, o.MaxMs},
	} {
		t.Rows = append(t.Rows, []string{f.name, formatMs(f.base), formatMs(f.ours), formatRatio(f.ours, f.base)})
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
