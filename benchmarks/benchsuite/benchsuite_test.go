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
esac
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	results, err := Run(context.Background(), Config{Profile: bench.ProfileQuick, ReportDir: dir, Only: []string{"index", "search"}, Binary: bin}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].Err != nil || results[1].Err == nil {
		t.Fatalf("results %+v: want index ok and search failed", results)
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
	for _, want := range []string{"12.5", "[11.2, 13.8]", "<td>missed</td>", "0.06", "10×", "benchmark failed", "&lt;script&gt;"} {
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
