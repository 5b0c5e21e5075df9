package bench_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/baedal/baedal/bench"
)

// A whole benchmark: two sides interleaved in ABBA rounds under closed-loop
// load, a report with a table and a latency CDF, and the JSON summary as the
// last stdout line.
func Example() {
	ctx := context.Background()
	profile, _ := bench.ParseProfile("quick")
	rounds := bench.Pick(profile, 2, 6)
	perRound := bench.Pick(profile, 50*time.Millisecond, 5*time.Second)

	var baseline, ours bench.LoadResult
	err := bench.Interleave(rounds,
		bench.Side{Name: "baseline", Run: func(round int) error {
			baseline.Merge(bench.RunClosedLoop(ctx, 2, perRound, func(ctx context.Context, client int) error {
				time.Sleep(2 * time.Millisecond) // the baseline's operation
				return nil
			}))
			return nil
		}},
		bench.Side{Name: "ours", Run: func(round int) error {
			ours.Merge(bench.RunClosedLoop(ctx, 2, perRound, func(ctx context.Context, client int) error {
				time.Sleep(time.Millisecond) // our operation
				return nil
			}))
			return nil
		}},
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}

	summary := map[string]any{
		"benchmark":        "example",
		"profile":          profile,
		"baseline":         baseline.Summary(),
		"ours":             ours.Summary(),
		"p50_ratio":        bench.Ratio(ours.Latency.Summary().P50Ms, baseline.Latency.Summary().P50Ms),
		"throughput_ratio": bench.Ratio(ours.Throughput(), baseline.Throughput()),
	}
	table := bench.CompareLoad("baseline", baseline, "ours", ours)
	report := bench.NewReport("example", "Example: sleep 2ms vs 1ms", bench.CommandLine())
	report.Add(bench.Section{
		Title:  "Closed loop, 2 clients",
		Text:   "Both sides ran in the same process, interleaved ABBA.",
		Table:  &table,
		Charts: []bench.Chart{bench.LatencyCDF("Latency", []string{"baseline", "ours"}, []*bench.LatencyRecorder{baseline.Latency, ours.Latency})},
	})
	report.SetSummary(summary)
	dir, _ := os.MkdirTemp("", "bench-example")
	defer os.RemoveAll(dir)
	if _, err := report.WriteHTML(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	bench.PrintSummary(os.Stdout, summary) // the last stdout line
}

func ExampleInterleave() {
	run := func(name string) bench.Side {
		return bench.Side{Name: name, Run: func(round int) error {
			fmt.Print(name, " ")
			return nil
		}}
	}
	_ = bench.Interleave(4, run("A"), run("B"))
	fmt.Println()
	// Output: A B B A A B B A
}

func ExamplePrintSummary() {
	base, ours := bench.NewLatencyRecorder(), bench.NewLatencyRecorder()
	base.Record(10 * time.Millisecond)
	ours.Record(4 * time.Millisecond)
	bench.PrintSummary(os.Stdout, map[string]any{
		"benchmark": "replicas",
		"p99_ratio": bench.Ratio(bench.Ms(ours.Quantile(0.99)), bench.Ms(base.Quantile(0.99))),
	})
	// Output: {"benchmark":"replicas","p99_ratio":0.4}
}
