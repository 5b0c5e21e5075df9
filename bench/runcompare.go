package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// ReadRunFile reads a run record (or any JSON object, such as a
// <name>.json summary) as generic JSON.
func ReadRunFile(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("bench: run file %s: %w", path, err)
	}
	return m, nil
}

// RunValue is one numeric leaf of a run file, with its 95% interval when
// the file has one for it.
type RunValue struct {
	Value float64
	CI95  Interval
}

// FlattenRun returns the numeric leaves of a run file by flattened key
// ("summary.under_load.split.p99_ms", "summary.series[2]"). An interval is
// attached to the figure it belongs to, not listed as leaves: "<key>_ci95"
// to <key>, and "ci95" to its sibling "point" (as in "targets"). The
// record's top-level "targets" is left out: the summary holds the same.
func FlattenRun(run map[string]any) map[string]RunValue {
	out := map[string]RunValue{}
	intervals := map[string]Interval{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case float64:
			out[prefix] = RunValue{Value: x, CI95: NoInterval}
		case map[string]any:
			for k, child := range x {
				key := k
				if prefix != "" {
					key = prefix + "." + k
				}
				if iv, ok := asInterval(child); ok {
					if base, found := strings.CutSuffix(k, "_ci95"); found {
						intervals[strings.TrimSuffix(key, k)+base] = iv
						continue
					}
					if k == "ci95" {
						intervals[strings.TrimSuffix(key, k)+"point"] = iv
						continue
					}
				}
				if child == nil && (k == "ci95" || strings.HasSuffix(k, "_ci95")) {
					continue // no interval
				}
				walk(key, child)
			}
		case []any:
			for i, child := range x {
				walk(prefix+"["+strconv.Itoa(i)+"]", child)
			}
		}
	}
	top := map[string]any{}
	for k, v := range run {
		if k != "targets" || run["summary"] == nil {
			top[k] = v
		}
	}
	walk("", top)
	for k, iv := range intervals {
		if v, ok := out[k]; ok {
			v.CI95 = iv
			out[k] = v
		}
	}
	return out
}

func asInterval(v any) (Interval, bool) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		return NoInterval, false
	}
	lo, ok1 := arr[0].(float64)
	hi, ok2 := arr[1].(float64)
	iv := Interval{Low: lo, High: hi}
	return iv, ok1 && ok2 && iv.Known()
}

// RunDelta says whether two runs' figures differ.
type RunDelta string

const (
	// DeltaDiffers: both runs have a 95% interval and they do not overlap.
	DeltaDiffers RunDelta = "differs"
	// DeltaSame: both have an interval and they overlap ("~", as benchstat
	// prints for no significant difference).
	DeltaSame RunDelta = "~"
	// DeltaUnknown: one run or both have no interval for the figure.
	DeltaUnknown RunDelta = ""
)

// RunComparisonRow is one figure of two runs.
type RunComparisonRow struct {
	Key   string
	A, B  *RunValue // nil where the run lacks the figure
	Ratio float64   // B / A; NaN when undefined
	Delta RunDelta
}

// CompareRuns lines up the numeric leaves of two run files, sorted by key.
func CompareRuns(a, b map[string]any) []RunComparisonRow {
	fa, fb := FlattenRun(a), FlattenRun(b)
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	var rows []RunComparisonRow
	for k := range keys {
		row := RunComparisonRow{Key: k, Ratio: math.NaN()}
		if v, ok := fa[k]; ok {
			row.A = &v
		}
		if v, ok := fb[k]; ok {
			row.B = &v
		}
		if row.A != nil && row.B != nil {
			if row.A.Value != 0 {
				row.Ratio = row.B.Value / row.A.Value
			} else if row.B.Value == 0 {
				row.Ratio = 1
			}
			row.Delta = intervalDelta(row.A.CI95, row.B.CI95)
		}
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Key < rows[j].Key })
	return rows
}

func intervalDelta(a, b Interval) RunDelta {
	if !a.Known() || !b.Known() {
		return DeltaUnknown
	}
	if a.High < b.Low || b.High < a.Low {
		return DeltaDiffers
	}
	return DeltaSame
}

// WriteRunComparison prints the rows as a table: key, A with its interval,
// B with its interval, B/A, and the delta ("differs", "~", or blank without
// intervals on both sides).
func WriteRunComparison(w io.Writer, nameA, nameB string, rows []RunComparisonRow) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\tA\tB\tB/A\tdelta\n")
	cell := func(v *RunValue) string {
		if v == nil {
			return "-"
		}
		s := formatFloat(v.Value)
		if v.CI95.Known() {
			s += " [" + formatFloat(v.CI95.Low) + ", " + formatFloat(v.CI95.High) + "]"
		}
		return s
	}
	differs := 0
	for _, r := range rows {
		ratio := "-"
		if !math.IsNaN(r.Ratio) && !math.IsInf(r.Ratio, 0) {
			ratio = strconv.FormatFloat(r.Ratio, 'f', 3, 64)
		}
		if r.Delta == DeltaDiffers {
			differs++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Key, cell(r.A), cell(r.B), ratio, r.Delta)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nA: %s\nB: %s\ndelta: \"differs\" when both runs have a 95%% interval for the figure and they do not overlap, \"~\" when they overlap, blank without intervals on both sides. %d figure(s) differ.\n", nameA, nameB, differs)
	return err
}

// RunHeadline is one line about a run file: benchmark, start, revision,
// server versions and load, from what the file has.
func RunHeadline(run map[string]any) string {
	var parts []string
	for _, k := range []string{"bench", "start", "revision"} {
		if s, ok := run[k].(string); ok && s != "" {
			parts = append(parts, k+" "+s)
		}
	}
	if servers, ok := run["servers"].(map[string]any); ok {
		var names []string
		for n := range servers {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			parts = append(parts, fmt.Sprintf("%s %v", n, servers[n]))
		}
	}
	load := func(k string) string {
		m, _ := run[k].(map[string]any)
		if v, ok := m["1m"].(float64); ok {
			return formatFloat(v)
		}
		return "?"
	}
	if run["load_before"] != nil || run["load_after"] != nil {
		parts = append(parts, "load "+load("load_before")+" → "+load("load_after"))
	}
	return strings.Join(parts, ", ")
}

// WriteTargetsTable writes the targets of run records as one Markdown
// table, for BENCHMARKS.md: one row per target (benchmark, figure, target,
// point, 95% interval, verdict), the runs in the given order and each run's
// targets by name, then each run's date, revision and command. The figures
// are the run's own, formatted, never typed by hand. A non-empty match keeps
// the targets whose name contains it.
func WriteTargetsTable(w io.Writer, runs []map[string]any, match string) error {
	var b strings.Builder
	b.WriteString("| benchmark | figure | target | point | 95% interval | verdict |\n|---|---|---|---|---|---|\n")
	for _, run := range runs {
		name, _ := run["bench"].(string)
		targets, _ := run["targets"].(map[string]any)
		keys := make([]string, 0, len(targets))
		for k := range targets {
			if strings.Contains(k, match) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			t, _ := targets[k].(map[string]any)
			op := "≤"
			if better, _ := t["better"].(string); better == string(HigherIsBetter) {
				op = "≥"
			}
			interval := "none"
			if iv, ok := asInterval(t["ci95"]); ok && iv.Known() {
				interval = "[" + formatFloat(iv.Low) + ", " + formatFloat(iv.High) + "]"
			}
			point := "none"
			if p, ok := t["point"].(float64); ok {
				point = formatFloat(p)
			}
			target, _ := t["target"].(float64)
			verdict, _ := t["verdict"].(string)
			fmt.Fprintf(&b, "| %s | `%s` | %s %s | %s | %s | %s |\n", name, k, op, formatFloat(target), point, interval, verdict)
		}
	}
	b.WriteString("\n")
	for _, run := range runs {
		fmt.Fprintf(&b, "- %s: %s, `%v`\n", run["bench"], RunHeadline(run), run["command"])
	}
	_, err := io.WriteString(w, b.String())
	return err
}
