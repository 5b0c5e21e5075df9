package scalebench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/layout"
)

// Plot is one chart of the cost curve, with the file name (without .svg)
// that WritePlots gives it.
type Plot struct {
	File  string
	Chart bench.Chart
}

// Plots are the cost curve's charts: every figure against the catalog
// size (log scale), one series per layout or ratio. The HTML report and
// WritePlots draw the same ones.
func Plots(s Summary) []Plot {
	x := make([]float64, len(s.BySize))
	for i, f := range s.BySize {
		x[i] = float64(f.Shops)
	}
	kinds := kindsIn(s)
	line := func(title, yLabel string, series []bench.Series) bench.Chart {
		return bench.Chart{Title: title, XLabel: "shops in the catalog", YLabel: yLabel, Kind: bench.LineChart, LogX: true, Series: series}
	}
	perLayout := func(value func(SizeFigures, string) float64) []bench.Series {
		var out []bench.Series
		for _, k := range kinds {
			sr := bench.Series{Name: k, X: x}
			for _, f := range s.BySize {
				sr.Y = append(sr.Y, value(f, k))
			}
			out = append(out, sr)
		}
		return out
	}
	search := func(pick func(Latencies) float64) []bench.Series {
		return perLayout(func(f SizeFigures, k string) float64 { return pick(f.Search[k]) })
	}
	ratios := func(pick func(SizeFigures, string) float64) []bench.Series {
		var out []bench.Series
		for _, k := range kinds[1:] {
			sr := bench.Series{Name: k + " / nested", X: x}
			for _, f := range s.BySize {
				sr.Y = append(sr.Y, pick(f, k))
			}
			out = append(out, sr)
		}
		return out
	}
	throughput := func(f SizeFigures, k string) float64 {
		if k == string(layout.Hot) {
			return f.ThroughputRatioHot
		}
		return f.ThroughputRatio
	}
	const mb = 1 << 20
	return []Plot{
		{"throughput-ratio", line("Hot shop updates/s over nested's", "ratio", ratios(throughput))},
		{"events-per-s", line("Hot shop updates/s", "events/s", perLayout(func(f SizeFigures, k string) float64 { return f.EventsPerS[k] }))},
		{"search-p50-idle", line("Search p50, idle", "ms", search(func(l Latencies) float64 { return l.IdleP50Ms }))},
		{"search-p99-idle", line("Search p99, idle", "ms", search(func(l Latencies) float64 { return l.IdleP99Ms }))},
		{"search-p50-load", line("Search p50 under hot-update load", "ms", search(func(l Latencies) float64 { return l.LoadP50Ms }))},
		{"search-p99-load", line("Search p99 under hot-update load", "ms", search(func(l Latencies) float64 { return l.LoadP99Ms }))},
		{"search-p99-ratio-load", line("Search p99 under load over nested's", "ratio", ratios(func(f SizeFigures, k string) float64 { return f.P99Ratio[k].UnderLoad }))},
		{"hot-table-bytes-per-shop", line("Hot table bytes per shop (one node)", "bytes", []bench.Series{{Name: "hot table", X: x, Y: each(s, func(f SizeFigures) float64 { return f.HotTableBytesPerShop })}})},
		{"heap", line("OpenSearch heap in use after the load", "MB", []bench.Series{
			{Name: "heap used", X: x, Y: each(s, func(f SizeFigures) float64 { return float64(f.HeapUsedBytes) / mb })},
			{Name: "heap max", X: x, Y: each(s, func(f SizeFigures) float64 { return float64(f.HeapMaxBytes) / mb })},
		})},
		{"disk", line("OpenSearch disk per layout (primary store)", "MB", perLayout(func(f SizeFigures, k string) float64 { return float64(f.StoreBytes[k]) / mb }))},
	}
}

// each returns one value per size.
func each(s Summary, value func(SizeFigures) float64) []float64 {
	out := make([]float64, len(s.BySize))
	for i, f := range s.BySize {
		out[i] = value(f)
	}
	return out
}

// kindsIn returns the layouts measured at every size, nested first.
func kindsIn(s Summary) []string {
	var out []string
	for _, k := range layout.Kinds() {
		all := len(s.BySize) > 0
		for _, f := range s.BySize {
			if _, ok := f.Search[string(k)]; !ok {
				all = false
			}
		}
		if all {
			out = append(out, string(k))
		}
	}
	if len(out) == 0 {
		out = []string{string(layout.Nested)}
	}
	return out
}

// WritePlots writes every plot of the summary as dir/<File>.svg and
// returns the paths.
func WritePlots(dir string, s Summary) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("scalebench: plots directory: %w", err)
	}
	var paths []string
	for _, p := range Plots(s) {
		path := filepath.Join(dir, p.File+".svg")
		if err := os.WriteFile(path, []byte(p.Chart.SVG()+"\n"), 0o644); err != nil {
			return paths, fmt.Errorf("scalebench: write plot: %w", err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// ReadRecord reads the summary of a bench scale run record (or of a
// scale.json summary).
func ReadRecord(path string) (Summary, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Summary{}, err
	}
	var rec struct {
		Summary *Summary `json:"summary"`
		Bench   string   `json:"bench"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return Summary{}, fmt.Errorf("scalebench: %s: %w", path, err)
	}
	if rec.Summary == nil { // a summary, not a record
		var s Summary
		if err := json.Unmarshal(raw, &s); err != nil {
			return Summary{}, fmt.Errorf("scalebench: %s: %w", path, err)
		}
		rec.Summary = &s
	}
	if rec.Bench != "scale" || rec.Summary.Bench != "scale" {
		return Summary{}, fmt.Errorf("scalebench: %s is not a bench scale record or summary", path)
	}
	return *rec.Summary, nil
}

// WriteMarkdown writes the figures by size (the report's "By size" table)
// as a Markdown table, for BENCHMARKS.md.
func WriteMarkdown(w io.Writer, s Summary) error {
	t := sizeTable(s)
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.Header, " | ") + " |\n|")
	b.WriteString(strings.Repeat("---|", len(t.Header)) + "\n")
	for _, r := range t.Rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeReport writes scale.html (and scale.json) to cfg.ReportDir.
func writeReport(cfg Config, s Summary) (string, error) {
	rep := bench.NewReport("scale", "Cost as the catalog grows: nested, split and hot", bench.CommandLine())
	setup := fmt.Sprintf("At each size, bench index (%d rounds of %d hot shop updates and %d realistic-mix events per layout, no freshness runs) and then bench search (%d queries per phase in %d rounds, idle and under hot-update load at half nested's measured maximum), each on fresh indices loaded through the bulk path: the indexer's own documents, refresh and replicas paused during the load. Sizes measured: %v of %v.",
		s.IndexRounds, s.HotEvents, cfg.MixedEvents, s.Queries, s.Rounds, s.Done, s.Sizes)
	for _, k := range slices.Sorted(maps.Keys(s.Skipped)) {
		setup += fmt.Sprintf(" The %s layout was skipped: %v.", k, s.Skipped[k])
	}
	rep.Add(bench.Section{Title: "Setup", Text: setup})
	rep.Add(bench.Section{Title: "By size", Table: sizeTable(s)})
	var charts []bench.Chart
	for _, p := range Plots(s) {
		charts = append(charts, p.Chart)
	}
	rep.Add(bench.Section{Title: "Against the catalog size", Charts: charts})
	rep.Add(bench.TargetsSection(s.Targets))
	rep.SetSummary(s)
	return rep.WriteHTML(cfg.ReportDir)
}

// sizeTable is one row per figure, one column per size.
func sizeTable(s Summary) *bench.Table {
	t := &bench.Table{Header: []string{"figure"}}
	for _, f := range s.BySize {
		t.Header = append(t.Header, strconv.Itoa(f.Shops)+" shops")
	}
	row := func(name string, value func(SizeFigures) string) {
		r := []string{name}
		for _, f := range s.BySize {
			r = append(r, value(f))
		}
		t.Rows = append(t.Rows, r)
	}
	ratio := func(p float64, ci bench.Interval) string {
		return fmt.Sprintf("%.2f [%.2f, %.2f]", p, ci.Low, ci.High)
	}
	row("load into every layout, s", func(f SizeFigures) string { return fmt.Sprintf("%.0f", f.LoadSeconds) })
	row("split/nested hot updates/s", func(f SizeFigures) string { return ratio(f.ThroughputRatio, f.ThroughputRatioCI95) })
	row("hot/nested hot updates/s", func(f SizeFigures) string { return ratio(f.ThroughputRatioHot, f.ThroughputRatioHotCI95) })
	for _, k := range kindsIn(s) {
		row(k+" search p50 / p99 idle, ms", func(f SizeFigures) string {
			return fmt.Sprintf("%.1f / %.1f", f.Search[k].IdleP50Ms, f.Search[k].IdleP99Ms)
		})
		row(k+" search p50 / p99 under load, ms", func(f SizeFigures) string {
			return fmt.Sprintf("%.1f / %.1f", f.Search[k].LoadP50Ms, f.Search[k].LoadP99Ms)
		})
		row(k+" disk, MB", func(f SizeFigures) string { return fmt.Sprintf("%.1f", float64(f.StoreBytes[k])/(1<<20)) })
	}
	row("hot table bytes per shop", func(f SizeFigures) string { return fmt.Sprintf("%.1f", f.HotTableBytesPerShop) })
	row("heap used / max after load, MB", func(f SizeFigures) string {
		return fmt.Sprintf("%.0f / %.0f", float64(f.HeapUsedBytes)/(1<<20), float64(f.HeapMaxBytes)/(1<<20))
	})
	return t
}
