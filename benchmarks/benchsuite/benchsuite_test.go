package benchsuite

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/baedal/baedal/bench"
)

// TestRunReadsEachSummaryAndIndexesIt uses a stand-in binary that answers
// like `baedal bench <name>`: progress first, the JSON summary last.
func TestRunReadsEachSummaryAndIndexesIt(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fake-baedal")
	script := `#!/bin/sh
case "$2" in
index) echo "loading..."; echo '{"bench":"index","throughput_ratio":12.5,"throughput_ratio_ci95":[11.25,13.75],"bytes_written_ratio":0.06,"targets":{"throughput_ratio":{"target":20,"better":"higher","point":12.5,"ci95":[11.25,13.75],"verdict":"missed"}},"report":"reports/index-bench.html"}' ;;
search) echo "no summary here"; exit 3 ;;
reindex) echo '{"bench":"reindex","lost_updates":0,"targets":{"lost_updates":{"target":0,"better":"lower","point":0,"ci95":[0,0],"verdict":"met"},"only_in_the_summary":{"target":1.5,"better":"higher","point":2,"ci95":[1.8,2.2],"verdict":"met"}}}' ;;
esac
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	results, err := Run(context.Background(), Config{Profile: bench.ProfileQuick, ReportDir: dir, Only: []string{"index", "search", "reindex"}, Binary: bin}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || results[0].Err != nil || results[1].Err == nil || results[2].Err != nil {
		t.Fatalf("results %+v: want index ok, search failed, reindex ok", results)
	}
	if got, _ := lookup(results[0].Summary, "throughput_ratio"); got != 12.5 {
		t.Fatalf("throughput_ratio = %v", got)
	}
	path, err := WriteIndex(dir, "baedal bench all <script>", results)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	html := string(raw)
	// The goals come from the summaries' targets: reindex's lost_updates
	// is judged, so its row shows the goal, and a target the table does not
	// list still appears among every judged target.
	for _, want := range []string{"12.5", "[11.2, 13.8]", "<td>missed</td>", "0.06", "10×", "benchmark failed", "&lt;script&gt;",
		"<td>&gt;= 20</td>", "<td>Lost updates in a live reindex</td><td>0</td><td></td><td>—</td><td>&lt;= 0</td><td>met</td>", "<td>only_in_the_summary</td><td>&gt;= 1.5</td>"} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	if strings.Contains(html, "<script>") {
		t.Error("the command was not escaped")
	}
}

func TestRunRefusesAnUnknownBenchmark(t *testing.T) {
	_, err := Run(context.Background(), Config{Only: []string{"nope"}, Binary: "/bin/true"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "allowed: index") {
		t.Fatalf("err = %v, want one listing the allowed benchmarks", err)
	}
}

func TestEveryMeasureNamesAKnownBenchmark(t *testing.T) {
	for _, m := range Measures() {
		if !slices.Contains(Benchmarks(), m.Bench) || m.Key == "" || m.Label == "" {
			t.Errorf("bad measure %+v", m)
		}
	}
}
