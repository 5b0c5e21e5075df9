// Package benchsuite is `baedal bench all`: it runs every benchmark as a
// child process of the same binary (`baedal bench <name>`), reads each one's
// JSON summary from its last stdout line, and writes reports/index.html, a
// table that puts each of our figures beside the write-up's figure for the
// same measure and the target, with links to every benchmark's own report.
//
// Invariant: every figure, target and verdict in the index comes from a
// summary produced in this run; the write-up figures are the only typed-in
// numbers, and they are labelled as such.
package benchsuite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/baedal/baedal/bench"
)

// Benchmarks lists the benchmarks in the order they run.
func Benchmarks() []string {
	return []string{"index", "search", "replicas", "links", "feed", "reindex"}
}

// Measure is one row of the index: a key of a benchmark's summary and the
// write-up's figure for the same measure. The target and verdict come from
// the summary's own "targets" object, never typed here, so the index cannot
// show "—" for a target the benchmark judges.
type Measure struct {
	Bench, Key, Label, WriteUp string
}

// Measures is the comparison table (write-up figures from SPEC.md).
func Measures() []Measure {
	return []Measure{
		{"index", "throughput_ratio", "Shop-update indexing throughput, split / nested", "10×"},
		{"index", "bytes_written_ratio", "Bytes written, split / nested", "0.5 (halved)"},
		{"index", "freshness_p99_ms", "Freshness p99, split (POST /v1/events → GET /v1/search shows it), ms", "max delay −98%"},
		{"index", "throughput_ratio_hot", "Shop-update indexing throughput, hot / nested", "—"},
		{"index", "freshness_p99_ms_hot", "Freshness p99, hot (POST /v1/events → GET /v1/search shows it), ms", "—"},
		{"index", "freshness_gave_up", "Followed changes never seen within the limit, split", "—"},
		{"index", "freshness_gave_up_hot", "Followed changes never seen within the limit, hot", "—"},
		{"search", "equivalent", "Split results identical to nested", "identical"},
		{"search", "p50_ratio_under_load", "Search p50 under update load, split / nested", "0.86 (−14%)"},
		{"search", "p99_ratio_under_load", "Search p99 under update load, split / nested", "0.77 (−23%)"},
		{"search", "p99_ratio_under_load_hot", "Search p99 under update load, hot / nested", "—"},
		{"search", "p99_ratio_idle_hot", "Search p99 idle, hot / nested", "—"},
		{"search", "failed_share_under_load", "Searches without an answer under load, split (share)", "—"},
		{"search", "mismatches_under_load", "Pages differing from nested's, compared after load rounds", "—"},
		{"search", "under_load.timeouts_nested", "Timeouts under load, nested", ""},
		{"search", "under_load.timeouts_split", "Timeouts under load, split", "−99%"},
		{"replicas", "degraded.throughput_ratio", "Throughput, one replica degraded, C3 / round-robin", "2.13 (+113%)"},
		{"replicas", "degraded.p90_ratio", "p90, one replica degraded, C3 / round-robin", "0.35 (−65%)"},
		{"replicas", "degraded.p99_ratio", "p99, one replica degraded, C3 / round-robin", "0.39 (−61%)"},
		{"replicas", "healthy.throughput_ratio", "Throughput, all healthy, C3 / round-robin", "no loss"},
		{"replicas", "healthy.vs_best_peer.throughput_ratio", "Throughput, all healthy, C3 / the best peer policy", "—"},
		{"replicas", "healthy.peer_dominance", "All healthy: how far a peer beats C3 on reads/s and p99 at once", "—"},
		{"replicas", "degraded.vs_best_peer.throughput_ratio", "Throughput, one replica degraded, C3 / the best peer policy", "—"},
		{"replicas", "degraded.vs_best_peer.p99_ratio", "p99, one replica degraded, C3 / the best peer policy", "—"},
		{"replicas", "degraded.vs_best_peer.p999_ratio", "p99.9, one replica degraded, C3 / the best peer policy", "—"},
		{"replicas", "opensearch_ars.throughput_ratio", "OpenSearch ARS on / off, one node degraded", "2.13 (+113%)"},
		{"links", "memory_ratio", "Redis memory, best format / JSON", "0.48 (−52%)"},
		{"links", "value_ratio", "Value size, best format / JSON", "0.456"},
		{"links", "encode_ns", "Encode ns per record, best format", "~17,000"},
		{"links", "decode_ns", "Decode ns per record, best format", "—"},
		{"links", "bucketed.memory_ratio", "Redis memory, bucketed layout / JSON", "0.48 (−52%)"},
		{"links", "bucketed.encode_ratio", "Encode p50, bucketed codec / JSON", "—"},
		{"links", "bucketed.decode_ratio", "Decode p50, bucketed codec / JSON", "—"},
		{"links", "bucketed.resolve_p99_ratio", "Resolve p99, bucketed / keys layout", "—"},
		{"feed", "consistency.push", "Consistent polls, push", "0.7167"},
		{"feed", "consistency.hybrid", "Consistent polls, hybrid (share)", "1.0"},
		{"feed", "inconsistent_polls.hybrid", "Inconsistent polls, hybrid (count)", "0"},
		{"feed", "read_speedup_hybrid_vs_pull_user_a", "Feed read p50 for user A, pull / hybrid", "—"},
		{"feed", "hybrid_p99_ms_user_a_concurrent", "Hybrid p99 for user A, 50 clients, ms (no verdict: absolute)", "mean 49–176 ms"},
		{"feed", "hybrid_p99_over_floor_user_a_concurrent", "Hybrid p99 for user A, 50 clients, over the same-round floor", "—"},
		{"feed", "fanout_10k_ms", "Push fan-out to 10,000 followers, ms", "minutes (130M followers)"},
		{"reindex", "replicas0_vs_1", "End-to-end reindex, replicas 0 then added vs 1 kept", "1.59 (12h30 → 7h51)"},
		{"reindex", "slices_auto_vs_1", "Reindex throughput, slices auto / 1", "more slices, faster"},
		{"reindex", "shards6_vs_3", "Reindex throughput, 6 / 3 source shards", "1.19 (15 → 20 shards)"},
		{"reindex", "lost_updates", "Lost updates in a live reindex", "—"},
		{"reindex", "stale_docs", "Stale documents after a live reindex", "—"},
	}
}

// Result is one benchmark's outcome.
type Result struct {
	Bench    string
	Summary  map[string]any
	Err      error
	Duration time.Duration
}

// Config selects what runs.
type Config struct {
	Profile   bench.Profile
	ReportDir string
	// Only limits the run to these benchmarks (all when empty).
	Only []string
	// Binary is the baedal executable to run (default: this process).
	Binary string
}

// Run runs the benchmarks one after another; a failing one is recorded and
// the others still run. Their progress goes to progress.
func Run(ctx context.Context, cfg Config, progress io.Writer) ([]Result, error) {
	bin := cfg.Binary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	names := Benchmarks()
	if len(cfg.Only) > 0 {
		for _, n := range cfg.Only {
			if !slices.Contains(names, n) {
				return nil, fmt.Errorf("benchsuite: unknown benchmark %q; allowed: %s", n, strings.Join(names, ", "))
			}
		}
		names = cfg.Only
	}
	var results []Result
	for _, name := range names {
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
		fmt.Fprintf(progress, "== bench %s --profile %s\n", name, cfg.Profile)
		start := time.Now()
		var stdout bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, "bench", name, "--profile", string(cfg.Profile), "--report-dir", cfg.ReportDir)
		cmd.Stdout = io.MultiWriter(&stdout, progress)
		cmd.Stderr = progress
		// On Ctrl-C the child gets SIGINT, so it can stop the stack it
		// started, and a grace period before it is killed.
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = time.Minute
		err := cmd.Run()
		r := Result{Bench: name, Duration: time.Since(start)}
		if err != nil {
			r.Err = fmt.Errorf("bench %s: %w", name, err)
		} else if r.Summary, err = bench.ParseSummary(stdout.Bytes()); err != nil {
			r.Err = fmt.Errorf("bench %s: %w", name, err)
		}
		results = append(results, r)
	}
	return results, nil
}

// lookup finds a dotted key in a summary.
func lookup(m map[string]any, key string) (any, bool) {
	var cur any = m
	for _, part := range strings.Split(key, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// intervalOf formats the summary's "<key>_ci95" as [low, high], or "" when
// there is none.
func intervalOf(summary map[string]any, key string) string {
	v, ok := lookup(summary, key+"_ci95")
	arr, isArr := v.([]any)
	if !ok || !isArr || len(arr) != 2 {
		return ""
	}
	bound := func(v any) string {
		if x, ok := v.(float64); ok && (x >= 100 || x <= -100) {
			return fmt.Sprintf("%.0f", x) // 3,664 ns, not 3.66e+03
		}
		return format(v)
	}
	return "[" + bound(arr[0]) + ", " + bound(arr[1]) + "]"
}

// targetOf returns the goal ("<= 0.7") and verdict of targets[key], or
// "—" and "" when the benchmark judges no target of that name; target
// names are summary keys, dots included ("degraded.p99_ratio"), so key is
// not split.
func targetOf(summary map[string]any, key string) (goal, verdict string) {
	targets, _ := summary["targets"].(map[string]any)
	t, ok := targets[key].(map[string]any)
	if !ok {
		return "—", ""
	}
	verdict, _ = t["verdict"].(string)
	value, _ := t["target"].(float64)
	better, _ := t["better"].(string)
	return bench.Target{Better: bench.Better(better), Value: value}.String(), verdict
}

func format(v any) string {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) && (x >= 1000 || x <= -1000 || x == 0) {
			return fmt.Sprintf("%.0f", x)
		}
		return fmt.Sprintf("%.3g", x)
	case bool:
		return fmt.Sprint(x)
	}
	return fmt.Sprint(v)
}

// WriteIndex writes <dir>/index.html.
func WriteIndex(dir, command string, results []Result) (string, error) {
	rep := bench.NewReport("index", "baedal benchmarks: our figures beside the write-ups'", command)
	byName := map[string]Result{}
	var runs bench.Table
	runs.Header = []string{"benchmark", "status", "duration", "report"}
	for _, r := range results {
		byName[r.Bench] = r
		status, report := "ok", ""
		if r.Err != nil {
			status = "FAILED: " + r.Err.Error()
		} else if p, ok := lookup(r.Summary, "report"); ok {
			report = fmt.Sprint(p)
		}
		runs.Rows = append(runs.Rows, []string{r.Bench, status, r.Duration.Round(time.Second).String(), report})
	}
	var cmp bench.Table
	cmp.Header = []string{"benchmark", "measure", "ours (this run)", "95% interval", "write-up", "target", "verdict"}
	for _, m := range Measures() {
		r, ran := byName[m.Bench]
		if !ran {
			continue
		}
		ours, interval, goal, verdict := "not measured", "", "—", ""
		if r.Err != nil {
			ours = "benchmark failed"
		} else if v, ok := lookup(r.Summary, m.Key); ok {
			ours = format(v)
		}
		if r.Err == nil {
			interval = intervalOf(r.Summary, m.Key)
			goal, verdict = targetOf(r.Summary, m.Key)
		}
		cmp.Rows = append(cmp.Rows, []string{m.Bench, m.Label, ours, interval, m.WriteUp, goal, verdict})
	}
	// Every target a benchmark judged, those of the table above included:
	// nothing judged is left out of the overview.
	var all bench.Table
	all.Header = []string{"benchmark", "target", "goal", "point", "verdict"}
	for _, r := range results {
		targets, _ := r.Summary["targets"].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(targets)) {
			t, _ := targets[name].(map[string]any)
			goal, verdict := targetOf(r.Summary, name)
			all.Rows = append(all.Rows, []string{r.Bench, name, goal, format(t["point"]), verdict})
		}
	}
	rep.Add(bench.Section{Title: "Ours beside the write-ups", Text: "Ratios are ours / baseline measured in the same run on the same machine, interleaved. Write-up figures are from the engineering write-ups summarised in SPEC.md (production clusters, not this machine). " +
		"The 95% interval and the verdict come from each benchmark's summary (<key>_ci95 and targets): met when the whole interval is on the good side of the target, missed when it is all on the bad side, undecided when it straddles the target.", Table: &cmp})
	rep.Add(bench.Section{Title: "Every judged target", Table: &all})
	rep.Add(bench.Section{Title: "Runs", Text: "Each benchmark's own report has its plots.", Table: &runs})
	return rep.WriteHTML(dir)
}
