package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

const hostile = `<script>alert("x")</script> & 'q'`

func sampleRecorders() (base, ours *LatencyRecorder) {
	base, ours = NewLatencyRecorder(), NewLatencyRecorder()
	for i := 1; i <= 2000; i++ {
		base.Record(time.Duration(i) * 10 * time.Microsecond)
		ours.Record(time.Duration(i) * 6 * time.Microsecond)
	}
	return base, ours
}

func sampleReport() *Report {
	base, ours := sampleRecorders()
	table := CompareLatency("nested", base, "split "+hostile, ours)
	r := NewReport("search-latency", "Search "+hostile, "go run ./cmd/baedal bench search --profile quick")
	r.Add(Section{
		Title:  "Latency " + hostile,
		Text:   "First paragraph " + hostile + ".\n\nSecond paragraph.",
		Table:  &table,
		Charts: []Chart{LatencyCDF("Latency CDF "+hostile, []string{"nested", "split"}, []*LatencyRecorder{base, ours})},
	})
	r.Add(Section{
		Title: "Throughput",
		Charts: []Chart{
			{Title: "Throughput by clients", XLabel: "clients", YLabel: "ops/s", Kind: LineChart, Series: []Series{
				{Name: "nested", X: []float64{1, 2, 4, 8}, Y: []float64{900, 1700, 3000, 3100}},
				{Name: "split " + hostile, X: []float64{1, 2, 4, 8}, Y: []float64{1200, 2300, 4100, 4500}},
			}},
			{Title: "p99 by phase", YLabel: "ms", Kind: BarChart, LogY: true, Series: []Series{
				{Name: "nested", Labels: []string{"plan", "query " + hostile, "merge"}, Y: []float64{0.2, 14, 1.5}},
				{Name: "split", Labels: []string{"plan", "query " + hostile, "merge"}, Y: []float64{0.2, 6, 1.1}},
			}},
		},
	})
	return r
}

func TestWriteHTMLWritesSelfContainedEscapedReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "reports", "nested") // WriteHTML creates it
	r := sampleReport()
	summary := map[string]any{"name": "search-latency", "p99_ratio": 0.6, "note": hostile}
	r.SetSummary(summary)
	path, err := r.WriteHTML(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "search-latency.html"); path != want {
		t.Errorf("path %q, want %q", path, want)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)

	if n := strings.Count(page, "<svg "); n != 3 {
		t.Errorf("%d <svg> elements, want one per chart (3)", n)
	}
	if strings.Contains(page, "<script") {
		t.Error("the page contains a raw <script: a title was not escaped")
	}
	if !strings.Contains(page, "&lt;script&gt;") {
		t.Error("the page does not contain the escaped title &lt;script&gt;")
	}
	for _, banned := range []string{"http://", "https://", "src=", "<link", "@import"} {
		if strings.Contains(strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, ""), banned) {
			t.Errorf("page contains %q: it must not load anything", banned)
		}
	}
	for _, want := range []string{
		"go run ./cmd/baedal bench search --profile quick",
		runtime.GOOS + "/" + runtime.GOARCH,
		"<p>Second paragraph.</p>",
		"<td>p99</td>",
		"<th>ratio ours/baseline</th>",
		">99.9<",              // the CDF's nines axis goes to 99.9 for 2000 samples
		`p99_ratio&#34;: 0.6`, // the summary is shown in the page
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	jsonData, err := os.ReadFile(filepath.Join(dir, "search-latency.json"))
	if err != nil {
		t.Fatalf("summary file: %v", err)
	}
	var back map[string]any
	if err := json.Unmarshal(jsonData, &back); err != nil || back["p99_ratio"] != 0.6 || back["note"] != hostile {
		t.Errorf("summary file %s: %v", jsonData, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries, want the .html and .json only (no temporary files)", len(entries))
	}
}

func TestWriteHTMLWithoutSummaryWritesNoJSON(t *testing.T) {
	dir := t.TempDir()
	r := NewReport("plain", "Plain", "cmd")
	if _, err := r.WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "plain.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plain.json: %v, want not to exist", err)
	}
}

func TestWriteHTMLRejectsUnsafeNamesAndBadSummaries(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"", "../escape", "a/b", ".hidden", "with space", strings.Repeat("n", 101)} {
		r := NewReport(name, "t", "c")
		_, err := r.WriteHTML(dir)
		if err == nil || !strings.Contains(err.Error(), "report name") {
			t.Errorf("name %q: err %v, want one naming the report name rule", name, err)
		}
	}
	r := NewReport("nan", "t", "c")
	r.SetSummary(map[string]float64{"ratio": math.NaN()})
	if _, err := r.WriteHTML(dir); err == nil || !strings.Contains(err.Error(), "summary") {
		t.Errorf("NaN summary: err %v, want an encoding error", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed writes left %d files", len(entries))
	}
}

// Every chart must be well-formed XML whatever its text and values, so one
// bad label cannot break the page.
func TestChartsAreWellFormedXML(t *testing.T) {
	base, _ := sampleRecorders()
	charts := []Chart{
		{Title: hostile, Kind: LineChart, XLabel: hostile, YLabel: hostile, Series: []Series{{Name: hostile, Y: []float64{1, math.NaN(), 3, math.Inf(1)}}}},
		{Title: "log-log", Kind: LineChart, LogX: true, LogY: true, Series: []Series{{Name: "a", X: []float64{0, 1, 10, 100}, Y: []float64{-1, 1, 100, 1e4}}}},
		{Title: "negative bars", Kind: BarChart, Series: []Series{{Name: "a", Labels: []string{"x", "y"}, Y: []float64{-3, 5}}}},
		{Title: "bars from X", Kind: BarChart, Series: []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{3, 5}}, {Name: "b", Y: []float64{4}}}},
		{Title: "cdf", Kind: CDFChart, LogY: true, Series: []Series{{Name: "hdr", Latency: base}, {Name: "points", X: []float64{0, 50, 99, 99.99, 100}, Y: []float64{1, 2, 3, 4, 5}}}},
		{Title: "empty", Kind: CDFChart, Series: []Series{{Name: "none", Latency: NewLatencyRecorder()}}},
		{Title: "no series", Kind: BarChart},
		{Title: "constant", Kind: LineChart, Series: []Series{{Name: "flat", Y: []float64{7, 7, 7}}}},
		{Title: "many series", Kind: LineChart, Series: manySeries(20)},
		{Title: "bad utf8 \xff", Kind: ChartKind(99), Series: []Series{{Name: "\xfe", Y: []float64{1}}}},
	}
	for _, c := range charts {
		svg := renderSVG(c)
		if err := checkXML(svg); err != nil {
			t.Errorf("chart %q: %v\n%s", c.Title, err, svg)
		}
		if strings.Contains(svg, "<script") {
			t.Errorf("chart %q contains a raw <script", c.Title)
		}
		if err := checkFiniteAttributes(svg); err != nil {
			t.Errorf("chart %q: %v", c.Title, err)
		}
	}
	if svg := renderSVG(charts[5]); !strings.Contains(svg, "no data") {
		t.Error("an empty chart should say 'no data'")
	}
	if svg := renderSVG(charts[4]); strings.Count(svg, "<polyline") != 2 || !strings.Contains(svg, "#0072B2") || !strings.Contains(svg, "#D55E00") {
		t.Error("a CDF chart with two series should draw two lines in two colors")
	}
}

func manySeries(n int) []Series {
	s := make([]Series, n)
	for i := range s {
		s[i] = Series{Name: strings.Repeat("long series name ", 3), Y: []float64{float64(i), float64(i + 1)}}
	}
	return s
}

func checkXML(s string) error {
	d := xml.NewDecoder(strings.NewReader(s))
	for {
		if _, err := d.Token(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

func TestAxes(t *testing.T) {
	a := linearAxis(3, 97)
	if a.min != 0 || a.max != 100 || len(a.ticks) != 6 || a.ticks[1].label != "20" {
		t.Errorf("linearAxis(3, 97) = %+v, want 0..100 by 20", a)
	}
	l := logAxis(0.3, 4500)
	if l.min != 0.1 || l.max != 10000 || l.ticks[0].label != "0.1" || l.ticks[len(l.ticks)-1].label != "10k" {
		t.Errorf("logAxis(0.3, 4500) = %+v, want decades 0.1..10k", l)
	}
	if got := []string{ninesLabel(0), ninesLabel(1), ninesLabel(2), ninesLabel(3), ninesLabel(4)}; strings.Join(got, " ") != "0 90 99 99.9 99.99" {
		t.Errorf("nines labels %q, want 0 90 99 99.9 99.99", got)
	}
	for v, want := range map[float64]string{0: "0", 0.25: "0.25", 12.5: "12.5", 1500: "1500", 25000: "25k", 3e6: "3M", 0.1 + 0.2: "0.3"} {
		if got := formatTick(v); got != want {
			t.Errorf("formatTick(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestPrintSummaryWritesOneLineOfJSON(t *testing.T) {
	var out bytes.Buffer
	summary := struct {
		Name    string         `json:"name"`
		Note    string         `json:"note"`
		Latency LatencySummary `json:"latency"`
	}{"search", "multi\nline <b>", LatencySummary{Count: 3, P99Ms: 1.5}}
	if err := PrintSummary(&out, summary); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Fatalf("output %q: want exactly one line ending in a newline", s)
	}
	if !json.Valid([]byte(s)) {
		t.Fatalf("output %q is not valid JSON", s)
	}
	if !strings.Contains(s, "<b>") {
		t.Errorf("output %q escaped HTML characters; keep them readable", s)
	}
	got, err := ParseSummary([]byte("progress: 10%\nsome log line\n" + s + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if missing := MissingKeys(got, "name", "note", "latency.p99_ms", "latency.count"); len(missing) > 0 {
		t.Errorf("missing keys %v in %v", missing, got)
	}
	if missing := MissingKeys(got, "latency.p42_ms", "name.inner", "absent"); len(missing) != 3 {
		t.Errorf("MissingKeys found keys that are not there: missing only %v", missing)
	}
}

func TestPrintSummaryRejectsNonObjects(t *testing.T) {
	for _, v := range []any{[]int{1}, "text", 3, nil, map[string]float64{"x": math.Inf(1)}} {
		var out bytes.Buffer
		if err := PrintSummary(&out, v); err == nil || out.Len() != 0 {
			t.Errorf("PrintSummary(%#v): err %v, output %q; want an error and no output", v, err, out.String())
		}
	}
}

func TestParseSummaryErrors(t *testing.T) {
	for _, stdout := range []string{"", "\n\n", `{"a":1}` + "\nnot json", "[1,2]", "null"} {
		if _, err := ParseSummary([]byte(stdout)); err == nil {
			t.Errorf("ParseSummary(%q) accepted it", stdout)
		}
	}
}

func FuzzParseSummary(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "log\n{\"b\":{\"c\":2}}\n", "", "null", "{", "[]", "\n{}\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		summary, err := ParseSummary(stdout)
		if err != nil {
			return
		}
		if summary == nil {
			t.Fatal("nil summary without error")
		}
		var out bytes.Buffer
		if err := PrintSummary(&out, summary); err != nil {
			t.Fatalf("a parsed summary does not print back: %v", err)
		}
		again, err := ParseSummary(out.Bytes())
		if err != nil || len(again) != len(summary) {
			t.Fatalf("round trip changed the summary: %v, %d vs %d keys", err, len(again), len(summary))
		}
	})
}

func FuzzRenderSVG(f *testing.F) {
	f.Add(hostile, "x", 1.0, 2.0, 3.0, uint8(0), false)
	f.Add("t", "\xff<&>", -1.0, 0.0, 1e300, uint8(1), true)
	f.Add("", "", math.NaN(), math.Inf(-1), 5e-324, uint8(2), true)
	f.Fuzz(func(t *testing.T, title, label string, a, b, c float64, kind uint8, log bool) {
		chart := Chart{Title: title, XLabel: label, YLabel: label, Kind: ChartKind(kind % 4), LogX: log, LogY: log, Series: []Series{
			{Name: label, X: []float64{a, b, c}, Y: []float64{c, a, b}, Labels: []string{label, title}},
			{Name: title, Y: []float64{b}},
		}}
		svg := renderSVG(chart)
		if err := checkXML(svg); err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		if err := checkFiniteAttributes(svg); err != nil {
			t.Fatalf("%v in %s", err, svg)
		}
	})
}

// checkFiniteAttributes fails on a NaN or Inf in any attribute that holds
// numbers (aria-label holds the title, which may say anything).
func checkFiniteAttributes(svg string) error {
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if start, ok := tok.(xml.StartElement); ok {
			for _, a := range start.Attr {
				if a.Name.Local != "aria-label" && (strings.Contains(a.Value, "NaN") || strings.Contains(a.Value, "Inf")) {
					return fmt.Errorf("<%s %s=%q>: non-finite number", start.Name.Local, a.Name.Local, a.Value)
				}
			}
		}
	}
}
