package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/internal/flaghelp"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/localstack"
)

// fakeBenchmark prints a summary whose targets have the given verdicts;
// with stateDir, it uses that stack as benchmarks do (UseOrStart).
func fakeBenchmark(servers []string, stateDir string, verdicts ...bench.Verdict) benchmark {
	return benchmark{
		summary: "a fake", example: "baedal bench fake",
		servers: uses(servers...),
		bind: func(c *flaghelp.Command) benchRun {
			return benchRun{run: func(ctx context.Context, stdout io.Writer) error {
				if stateDir != "" {
					if _, stop, err := localstack.UseOrStart(ctx, stateDir, io.Discard); err != nil {
						return err
					} else {
						defer stop()
					}
				}
				targets := bench.Targets{}
				for i, v := range verdicts {
					tr := bench.AtMost(0.7).Evaluate(0.6, bench.Interval{Low: 0.5, High: 0.8})
					tr.Verdict = v
					targets[fmt.Sprintf("figure_%d", i)] = tr
				}
				fmt.Fprintln(stdout, "progress line")
				return bench.PrintSummary(stdout, map[string]any{"bench": "fake", "p99_ratio": 0.6, "p99_ratio_ci95": []float64{0.5, 0.8}, "targets": targets})
			}}
		},
	}
}

func runFake(t *testing.T, b benchmark, args ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	var err error
	captureStdout(t, func() { err = benchOne(context.Background(), "fake", b, append(args, "--runs-dir", dir)) })
	files, _ := filepath.Glob(filepath.Join(dir, "*-fake.json"))
	if len(files) != 1 {
		t.Fatalf("run records: %v, want one", files)
	}
	return files[0], err
}

// Each run writes a run record with the summary, revision, load, targets;
// --check fails only on a missed target.
func TestBenchRunRecordAndCheck(t *testing.T) {
	path, err := runFake(t, fakeBenchmark(nil, "", bench.VerdictMet, bench.VerdictMissed, bench.VerdictUndecided))
	if err != nil {
		t.Fatalf("without --check a missed target is reported, not an error: %v", err)
	}
	rec, err := bench.ReadRunFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"bench", "start", "end", "command", "revision", "go", "load_before", "load_after", "targets", "verdicts", "summary"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("run record lacks %q", k)
		}
	}
	if _, ok := rec["servers"]; ok {
		t.Errorf("a benchmark that uses no server has servers: %v", rec["servers"])
	}
	if rec["revision"] == "" || rec["revision"] == nil {
		t.Errorf("revision %v", rec["revision"])
	}
	if s, _ := rec["summary"].(map[string]any); s["p99_ratio"] != 0.6 {
		t.Errorf("summary = %v", rec["summary"])
	}

	_, err = runFake(t, fakeBenchmark(nil, "", bench.VerdictMet, bench.VerdictMissed), "--check")
	var ue usageError
	if !errors.Is(err, errTargetMissed) || errors.As(err, &ue) {
		t.Errorf("--check with a missed target: %v, want errTargetMissed (exit 1)", err)
	}
	if _, err = runFake(t, fakeBenchmark(nil, "", bench.VerdictMet, bench.VerdictUndecided), "--check"); err != nil {
		t.Errorf("--check with an undecided target: %v, want exit 0", err)
	}
}

// The run record holds the versions the servers of the stack the
// benchmark used report, and only of the kinds it uses.
func TestBenchRunRecordAsksTheServers(t *testing.T) {
	dir := os.Getenv(stacktest.EnvStateDir)
	if dir == "" {
		testenv.Unavailable(t, fmt.Errorf("%s is not set: no stack to ask (this package starts none)", stacktest.EnvStateDir))
	}
	path, err := runFake(t, fakeBenchmark([]string{serverOpenSearch, serverRedis, serverPostgres}, dir))
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := bench.ReadRunFile(path)
	servers, _ := rec["servers"].(map[string]any)
	for _, k := range []string{serverOpenSearch, serverRedis, serverPostgres} {
		v, _ := servers[k].(string)
		if v == "" || strings.HasPrefix(v, "unknown") || !strings.ContainsAny(v[:1], "0123456789") {
			t.Errorf("servers[%s] = %q, want a version", k, v)
		}
	}
	t.Logf("servers: %v", servers)
	path, _ = runFake(t, fakeBenchmark([]string{serverRedis}, dir))
	rec, _ = bench.ReadRunFile(path)
	if servers, _ := rec["servers"].(map[string]any); len(servers) != 1 || servers[serverRedis] == nil {
		t.Errorf("a Redis-only benchmark: servers %v", servers)
	}
}

// `baedal bench compare RUN_A RUN_B` on two run records prints the figures
// side by side; with one file it is a usage error.
func TestBenchCompareCommand(t *testing.T) {
	a, _ := runFake(t, fakeBenchmark(nil, "", bench.VerdictMet))
	b, _ := runFake(t, fakeBenchmark(nil, "", bench.VerdictMissed))
	var code int
	out := captureStdout(t, func() { code = run(context.Background(), []string{"bench", "compare", a, b}, os.Stdout, io.Discard) })
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"figure", "B/A", "summary.p99_ratio ", "0.6 [0.5, 0.8]", "1.000  ~", "summary.targets.figure_0.point", "A: " + a} {
		if !strings.Contains(out, want) {
			t.Errorf("compare output lacks %q:\n%s", want, out)
		}
	}
	if code := run(context.Background(), []string{"bench", "compare", a}, io.Discard, io.Discard); code != 2 {
		t.Errorf("compare with one file: exit %d, want 2", code)
	}
}

// `baedal bench targets RUN...` prints each run's targets as Markdown rows
// with the run's own point, interval and verdict, then the run's command;
// a summary without targets, or no file, is an error.
func TestBenchTargetsCommand(t *testing.T) {
	a, _ := runFake(t, fakeBenchmark(nil, "", bench.VerdictMet, bench.VerdictMissed))
	var code int
	out := captureStdout(t, func() { code = run(context.Background(), []string{"bench", "targets", a}, os.Stdout, io.Discard) })
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"| benchmark | figure | target | point | 95% interval | verdict |",
		"| fake | `figure_0` | ≤ 0.7 | 0.6 | [0.5, 0.8] | met |",
		"| fake | `figure_1` | ≤ 0.7 | 0.6 | [0.5, 0.8] | missed |",
		"- fake: bench fake, start ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("targets output lacks %q:\n%s", want, out)
		}
	}
	out = captureStdout(t, func() {
		run(context.Background(), []string{"bench", "targets", "--match", "_1", a}, os.Stdout, io.Discard)
	})
	if strings.Contains(out, "figure_0") || !strings.Contains(out, "figure_1") {
		t.Errorf("--match _1 keeps figure_1 only:\n%s", out)
	}
	if code := run(context.Background(), []string{"bench", "targets"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("targets with no file: exit %d, want 2", code)
	}
	notRun := filepath.Join(t.TempDir(), "x.json")
	if err := os.WriteFile(notRun, []byte(`{"bench":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := run(context.Background(), []string{"bench", "targets", notRun}, io.Discard, io.Discard); code != 1 {
		t.Errorf("targets of a file without targets: exit %d, want 1", code)
	}
}
