// Package bench is the shared library for baedal's system benchmarks: a
// workload runs on top of it, records latencies and load, and ends with a
// self-contained HTML report and one JSON summary line.
//
// The pieces are:
//
//   - LatencyRecorder: a concurrency-safe HDR histogram of durations
//     (1 µs .. 60 s, 3 significant digits) with percentiles and a JSON-ready
//     LatencySummary.
//   - Interleave: runs the baseline and the candidate ("ours") in alternating
//     rounds in ABBA order, so drift on a noisy machine hits both sides alike.
//   - RunClosedLoop and RunAtRate: closed-loop load from N clients, and
//     open-loop load at a fixed rate whose latency includes the time an
//     operation waited behind schedule (no coordinated omission).
//   - Ratio, CompareLatency, CompareLoad: the figures benchmarks report.
//   - Report: one HTML file with inline SVG charts rendered in Go (no
//     JavaScript, no network), plus <name>.json with the summary;
//     PrintSummary prints that summary as the last stdout line.
//   - Progress: done/total, rate and ETA for long CLI work.
//   - Profile: the size of a run, "quick" or "full".
//
// A benchmark is a workload package plus this package plus a thin CLI:
//
//	var cfg bench.Config // --profile, --rounds, --seed, --report-dir
//	cfg.Flags(fs)
//	...
//	var base, ours bench.LoadResult
//	err := bench.Interleave(cfg.RoundsFor(2, 6),
//		bench.Side{Name: "nested", Run: func(int) error {
//			base.Merge(bench.RunClosedLoop(ctx, clients, perRound, searchNested))
//			return nil
//		}},
//		bench.Side{Name: "split", Run: func(int) error {
//			ours.Merge(bench.RunClosedLoop(ctx, clients, perRound, searchSplit))
//			return nil
//		}},
//	)
//	table := bench.CompareLoad("nested", base, "split", ours)
//	rep := bench.NewReport("search", "Nested vs split search", bench.CommandLine())
//	rep.Add(bench.Section{Title: "Search under load", Table: &table,
//		Charts: []bench.Chart{bench.LatencyCDF("Latency", []string{"nested", "split"},
//			[]*bench.LatencyRecorder{base.Latency, ours.Latency})}})
//	summary := map[string]any{"nested": base.Summary(), "split": ours.Summary(),
//		"p99_ratio": bench.Ratio(ours.Latency.Summary().P99Ms, base.Latency.Summary().P99Ms)}
//	rep.SetSummary(summary)
//	path, err := rep.WriteHTML(cfg.ReportDir) // reports/search.html and .json
//	bench.PrintSummary(os.Stdout, summary)    // the LAST stdout line
//
// Progress goes to stderr, so stdout ends with the summary line that CI smoke
// tests read back with ParseSummary and MissingKeys.
//
// Main invariant: baseline and candidate run in the same process on the same
// machine, interleaved; every figure a benchmark reports is a ratio between
// them or a percentile from an HDR histogram, never a single absolute time
// from a noisy machine. The package opens no connections and starts no
// servers; it only measures what the workload hands it.
package bench
