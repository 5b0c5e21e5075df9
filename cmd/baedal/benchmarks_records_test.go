package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/benchmarks/scalebench"
)

// recordsBlock matches a block of BENCHMARKS.md generated from run records:
//
//	<!-- targets: benchmarks/runs/A.json benchmarks/runs/B.json -->
//	...what `baedal bench targets benchmarks/runs/A.json benchmarks/runs/B.json` prints...
//	<!-- end targets -->
var recordsBlock = regexp.MustCompile(`(?s)<!-- targets: ([^>]*?) -->\n(.*?)<!-- end targets -->`)

// A full, clean git revision: a record of a dirty tree or of an unknown
// revision is not evidence.
var cleanRevision = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Every figure in the targets tables of BENCHMARKS.md, and of the older
// runs moved to docs/benchmark-history.md, is what `baedal bench targets`
// prints for run records checked into benchmarks/runs, each made by a
// binary built from a clean commit; the table and the records must not
// disagree. Regenerate a block with the command its marker names.
func TestBenchmarksFiguresComeFromCheckedInRecords(t *testing.T) {
	for doc, atLeast := range map[string]int{"BENCHMARKS.md": 1, "docs/benchmark-history.md": 0} {
		problems, err := recordBlockProblems("../..", doc, atLeast)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", doc, p)
		}
	}
}

// recordBlockProblems checks every records block of root/doc and says
// what disagrees; fewer than atLeast blocks is a problem too.
func recordBlockProblems(root, doc string, atLeast int) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		return nil, err
	}
	var problems []string
	blocks := recordsBlock.FindAllStringSubmatch(string(raw), -1)
	if len(blocks) < atLeast {
		problems = append(problems, fmt.Sprintf("%s has %d blocks of figures from records (<!-- targets: RUN... -->), want at least %d", doc, len(blocks), atLeast))
	}
	for _, b := range blocks {
		paths := strings.Fields(b[1])
		var runs []map[string]any
		for _, p := range paths {
			if !strings.HasPrefix(p, "benchmarks/runs/") || strings.Contains(p, "..") {
				problems = append(problems, fmt.Sprintf("%s: %s is not a record checked into benchmarks/runs/", doc, p))
				continue
			}
			run, err := bench.ReadRunFile(filepath.Join(root, p))
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", doc, err))
				continue
			}
			if rev, _ := run["revision"].(string); !cleanRevision.MatchString(rev) {
				problems = append(problems, fmt.Sprintf("%s: %s was made by a binary of revision %q; want a clean commit's full hash", doc, p, rev))
			}
			runs = append(runs, run)
		}
		var want strings.Builder
		if err := bench.WriteTargetsTable(&want, runs, ""); err != nil {
			return nil, err
		}
		if got := strings.TrimSpace(b[2]); got != strings.TrimSpace(want.String()) {
			problems = append(problems, fmt.Sprintf("%s: the block of %v disagrees with its records; regenerate it with\n  baedal bench targets %s\ngot:\n%s\nwant:\n%s",
				doc, paths, strings.Join(paths, " "), got, want.String()))
		}
	}
	return problems, nil
}

// The check itself: a figure edited by hand, or a record of a dirty tree,
// fails it.
func TestRecordBlocksCheckCatchesAnEditedFigure(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "benchmarks/runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	record := func(name, revision string) {
		body := `{"bench":"index","start":"2026-11-28T03:00:00Z","revision":"` + revision + `","command":"baedal bench index --profile quick",
			"targets":{"throughput_ratio":{"target":20,"better":"higher","point":29.14,"ci95":[26.899,32.086],"verdict":"met"}},"summary":{}}`
		if err := os.WriteFile(filepath.Join(root, "benchmarks/runs", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	record("a-index.json", "9d34b7ff8d348e017b4fba7e426ab49712f3b118")
	run, err := bench.ReadRunFile(filepath.Join(root, "benchmarks/runs/a-index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := bench.WriteTargetsTable(&table, []map[string]any{run}, ""); err != nil {
		t.Fatal(err)
	}
	doc := func(body string) {
		if err := os.WriteFile(filepath.Join(root, "doc.md"), []byte("# x\n\n<!-- targets: benchmarks/runs/a-index.json -->\n"+body+"<!-- end targets -->\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	problems := func() []string {
		p, err := recordBlockProblems(root, "doc.md", 1)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	doc(table.String())
	if p := problems(); len(p) > 0 {
		t.Fatalf("the generated table fails the check: %q", p)
	}
	doc(strings.Replace(table.String(), "29.14", "31.4", 1))
	if len(problems()) == 0 {
		t.Error("a figure edited by hand passes the check")
	}
	record("a-index.json", "9d34b7ff8d348e017b4fba7e426ab49712f3b118+dirty")
	doc(table.String())
	if len(problems()) == 0 {
		t.Error("a record of a dirty tree passes the check")
	}
}

// plotsBlock matches the figures and plots of a bench scale record in
// BENCHMARKS.md:
//
//	<!-- scale-plots: benchmarks/runs/A-scale.json benchmarks/runs/A-scale -->
//	...the table `baedal bench scale-plots --out DIR RUN` prints...
//	![...](benchmarks/runs/A-scale/disk.svg) ...
//	<!-- end scale-plots -->
var plotsBlock = regexp.MustCompile(`(?s)<!-- scale-plots: (\S+) (\S+) -->\n(.*?)<!-- end scale-plots -->`)

// The table and every plot BENCHMARKS.md shows of the cost curve are what
// `baedal bench scale-plots --out DIR RUN` prints and draws from the
// record it names, checked in: regenerate them with that command.
func TestBenchmarksPlotsComeFromTheirRecord(t *testing.T) {
	problems, err := plotBlockProblems("../..", "BENCHMARKS.md", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// plotBlockProblems redraws the plots of every block of root/doc into
// scratch and says where they differ from the checked-in files, and which
// images of a block are not among them.
func plotBlockProblems(root, doc, scratch string) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		return nil, err
	}
	var problems []string
	for i, b := range plotsBlock.FindAllStringSubmatch(string(raw), -1) {
		record, dir := b[1], b[2]
		if !strings.HasPrefix(record, "benchmarks/runs/") || !strings.HasPrefix(dir, "benchmarks/runs/") || strings.Contains(record+dir, "..") {
			problems = append(problems, fmt.Sprintf("%s: plots of %s in %s: both must be in benchmarks/runs/", doc, record, dir))
			continue
		}
		s, err := scalebench.ReadRecord(filepath.Join(root, record))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", doc, err))
			continue
		}
		fresh, err := scalebench.WritePlots(filepath.Join(scratch, fmt.Sprint(i)), s)
		if err != nil {
			return nil, err
		}
		var table strings.Builder
		if err := scalebench.WriteMarkdown(&table, s); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(b[3], table.String()) {
			problems = append(problems, fmt.Sprintf("%s: the table of %s is not what the record gives; regenerate it with\n  baedal bench scale-plots --out %s %s\nwant:\n%s", doc, record, dir, record, table.String()))
		}
		drawn := map[string]bool{} // the checked-in paths of the plots
		for _, path := range fresh {
			want, _ := os.ReadFile(path)
			checkedIn := filepath.Join(dir, filepath.Base(path))
			drawn[checkedIn] = true
			got, err := os.ReadFile(filepath.Join(root, checkedIn))
			if err != nil || string(got) != string(want) {
				problems = append(problems, fmt.Sprintf("%s: %s is not what the record draws (%v); regenerate with\n  baedal bench scale-plots --out %s %s", doc, checkedIn, err, dir, record))
			}
		}
		for _, img := range regexp.MustCompile(`\]\(([^)]+\.svg)\)`).FindAllStringSubmatch(b[3], -1) {
			if !drawn[img[1]] {
				problems = append(problems, fmt.Sprintf("%s: the image %s is not one of %s's plots in %s", doc, img[1], record, dir))
			}
		}
	}
	return problems, nil
}

// The plots check itself: the generated block passes, an SVG or a table
// figure edited by hand fails it.
func TestPlotBlocksCheckCatchesAnEditedPlot(t *testing.T) {
	root := t.TempDir()
	s := scalebench.Summary{Bench: "scale", Sizes: []int{5000, 20000}, Done: []int{5000, 20000}, BySize: []scalebench.SizeFigures{
		{Shops: 5000, LoadSeconds: 60, StoreBytes: map[string]int64{"nested": 3 << 20},
			Search: map[string]scalebench.Latencies{"nested": {IdleP50Ms: 20, IdleP99Ms: 40}}},
		{Shops: 20000, LoadSeconds: 240, StoreBytes: map[string]int64{"nested": 12 << 20},
			Search: map[string]scalebench.Latencies{"nested": {IdleP50Ms: 30, IdleP99Ms: 80}}},
	}}
	raw, err := json.Marshal(map[string]any{"bench": "scale", "revision": "9d34b7ff8d348e017b4fba7e426ab49712f3b118", "summary": s})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "benchmarks/runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "benchmarks/runs/a-scale.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "benchmarks/runs/a-scale")
	if _, err := scalebench.WritePlots(dir, s); err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := scalebench.WriteMarkdown(&table, s); err != nil {
		t.Fatal(err)
	}
	doc := func(body string) {
		block := "<!-- scale-plots: benchmarks/runs/a-scale.json benchmarks/runs/a-scale -->\n" + body + "<!-- end scale-plots -->\n"
		if err := os.WriteFile(filepath.Join(root, "doc.md"), []byte("# x\n\n"+block), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	problems := func() []string {
		p, err := plotBlockProblems(root, "doc.md", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	images := "\n![disk](benchmarks/runs/a-scale/disk.svg)\n"
	doc(table.String() + images)
	if p := problems(); len(p) > 0 {
		t.Fatalf("the generated block fails the check: %q", p)
	}
	doc(strings.Replace(table.String(), "240", "120", 1) + images)
	if len(problems()) == 0 {
		t.Error("a table figure edited by hand passes the check")
	}
	doc(table.String() + "\n![disk](benchmarks/runs/a-scale/drawn-by-hand.svg)\n")
	if len(problems()) == 0 {
		t.Error("an image that is not one of the record's plots passes the check")
	}
	doc(table.String() + images)
	svg := filepath.Join(dir, "disk.svg")
	body, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(svg, []byte(strings.Replace(string(body), "</svg>", "<circle r=\"3\"/></svg>", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if len(problems()) == 0 {
		t.Error("a plot edited by hand passes the check")
	}
}
