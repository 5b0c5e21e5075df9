package bench

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseLoadAvg(t *testing.T) {
	l, err := ParseLoadAvg("1.25 0.50 0.10 2/345 6789\n")
	if err != nil || *l != (LoadAvg{1.25, 0.5, 0.1}) {
		t.Errorf("ParseLoadAvg = %+v, %v", l, err)
	}
	if _, err := ParseLoadAvg("1.0 x"); err == nil {
		t.Error("a short loadavg was accepted")
	}
	if _, err := os.Stat("/proc/loadavg"); err == nil {
		if _, err := ReadLoadAvg(); err != nil {
			t.Error(err)
		}
	}
}

func summaryWithTargets(verdicts ...Verdict) map[string]any {
	targets := map[string]any{}
	for i, v := range verdicts {
		targets[string(rune('a'+i))+"_ratio"] = map[string]any{"target": 0.7, "better": "lower", "point": 0.6, "ci95": []any{0.5, 0.8}, "verdict": string(v)}
	}
	return map[string]any{"bench": "x", "p99_ratio": 0.6, "p99_ratio_ci95": []any{0.5, 0.8}, "targets": targets}
}

// A run record holds the summary and what a later comparison needs, under
// a name that sorts by time and is never reused.
func TestWriteRunKeepsEveryRun(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	r := NewRunRecord("search", summaryWithTargets(VerdictMet, VerdictMissed, VerdictUndecided))
	r.Start, r.End, r.Revision, r.Go = start, start.Add(time.Minute), "abc+dirty", "go1.26"
	r.Servers = map[string]string{"opensearch": "3.8.0"}
	r.LoadBefore, r.LoadAfter = &LoadAvg{1, 2, 3}, &LoadAvg{4, 5, 6}
	p1, err := WriteRun(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := WriteRun(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(p1) != "20261124T080000Z-search.json" || filepath.Base(p2) != "20261124T080000Z-search-2.json" {
		t.Errorf("paths %s, %s", p1, p2)
	}
	got, err := ReadRunFile(p1)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"bench", "start", "end", "command", "revision", "go", "servers", "load_before", "load_after", "targets", "verdicts", "summary"} {
		if _, ok := got[k]; !ok {
			t.Errorf("run record lacks %q: %v", k, got)
		}
	}
	raw, _ := json.Marshal(got["verdicts"])
	if string(raw) != `{"met":1,"missed":1,"undecided":1}` {
		t.Errorf("verdicts = %s", raw)
	}
	if got["load_before"].(map[string]any)["1m"] != 1.0 {
		t.Errorf("load_before = %v", got["load_before"])
	}
	if m := TargetsWith(r.Summary, VerdictMissed); len(m) != 1 || m[0] != "b_ratio" {
		t.Errorf("TargetsWith(missed) = %v", m)
	}
}

// A record written as a run goes (bench scale after each size) stays one
// file: RewriteRun replaces it, and leaves no other file beside it.
func TestRewriteRunReplacesTheRecord(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 28, 6, 24, 28, 0, time.UTC)
	r := NewRunRecord("scale", summaryWithTargets(VerdictMet))
	r.Start = start
	path, err := WriteRun(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	r = NewRunRecord("scale", summaryWithTargets(VerdictMet, VerdictMissed))
	r.Start = start
	if err := RewriteRun(path, r); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRunFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := json.Marshal(got["verdicts"]); string(raw) != `{"met":1,"missed":1}` {
		t.Errorf("verdicts after the rewrite = %s, want the second record's", raw)
	}
	if files, _ := os.ReadDir(dir); len(files) != 1 {
		t.Errorf("%d files in the runs directory, want 1", len(files))
	}
}

// compare lines up the numeric leaves, the ratio B/A, and says "differs"
// only when both 95% intervals exist and do not overlap.
func TestCompareRuns(t *testing.T) {
	a := map[string]any{
		"bench": "search", "revision": "aaa", "load_before": map[string]any{"1m": 1.0},
		"targets": map[string]any{"ignored": 1.0},
		"summary": map[string]any{
			"p99_ratio": 0.6, "p99_ratio_ci95": []any{0.5, 0.7},
			"p50_ratio": 0.9, "p50_ratio_ci95": []any{0.8, 1.0},
			"qps":       100.0,
			"only_in_a": 1.0,
			"nested":    map[string]any{"p99_ms": 10.0, "series": []any{1.0, 2.0}},
			"noci":      2.0, "noci_ci95": nil,
			"targets": map[string]any{"p99_ratio": map[string]any{"point": 0.6, "ci95": []any{0.5, 0.7}, "verdict": "met"}},
		},
	}
	b := map[string]any{
		"bench": "search", "revision": "bbb", "load_before": map[string]any{"1m": 2.0},
		"summary": map[string]any{
			"p99_ratio": 0.9, "p99_ratio_ci95": []any{0.8, 1.0},
			"p50_ratio": 0.95, "p50_ratio_ci95": []any{0.9, 1.1},
			"qps":    150.0,
			"nested": map[string]any{"p99_ms": 5.0, "series": []any{1.0, 4.0}},
			"noci":   2.0, "noci_ci95": []any{1.0, 3.0},
			"targets": map[string]any{"p99_ratio": map[string]any{"point": 0.9, "ci95": []any{0.8, 1.0}, "verdict": "missed"}},
		},
	}
	rows := CompareRuns(a, b)
	byKey := map[string]RunComparisonRow{}
	for _, r := range rows {
		byKey[r.Key] = r
	}
	check := func(key string, ratio float64, delta RunDelta) {
		t.Helper()
		r, ok := byKey[key]
		if !ok {
			t.Errorf("no row %s; rows: %v", key, keysOf(byKey))
			return
		}
		if math.Abs(r.Ratio-ratio) > 1e-9 && !(math.IsNaN(ratio) && math.IsNaN(r.Ratio)) || r.Delta != delta {
			t.Errorf("%s: ratio %v delta %q, want %v %q", key, r.Ratio, r.Delta, ratio, delta)
		}
	}
	check("summary.p99_ratio", 1.5, DeltaDiffers)
	check("summary.p50_ratio", 0.95/0.9, DeltaSame)
	check("summary.qps", 1.5, DeltaUnknown)
	check("summary.nested.p99_ms", 0.5, DeltaUnknown)
	check("summary.nested.series[1]", 2, DeltaUnknown)
	check("summary.noci", 1, DeltaUnknown)
	check("summary.targets.p99_ratio.point", 1.5, DeltaDiffers)
	check("load_before.1m", 2, DeltaUnknown)
	check("summary.only_in_a", math.NaN(), DeltaUnknown)
	for k := range byKey {
		if strings.Contains(k, "ci95") || strings.HasPrefix(k, "targets.") {
			t.Errorf("row %s: intervals and the record's own targets are not figures", k)
		}
	}
	var out strings.Builder
	if err := WriteRunComparison(&out, "a.json ("+RunHeadline(a)+")", "b.json", rows); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"summary.p99_ratio ", "0.6 [0.5, 0.7]", "0.9 [0.8, 1]", "1.500  differs",
		"summary.only_in_a", "bench search, revision aaa, load 1 → ?", "2 figure(s) differ",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("comparison lacks %q:\n%s", want, s)
		}
	}
}

func keysOf(m map[string]RunComparisonRow) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
