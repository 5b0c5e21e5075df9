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
//     rounds in ABBA order, so drift on a noisy machine hits both sides alike
//     (more sides: ABC, CBA, ..., as bench index and bench search run
//     nested, split and hot).
//   - RunClosedLoop and RunAtRate: closed-loop load from N clients, and
//     open-loop load at a fixed rate whose latency includes the time an
//     operation waited behind schedule (no coordinated omission).
//   - FollowOpenLoop: freshness, open loop: changes issued on a fixed
//     schedule however many are in flight, each followed until seen or
//     given up at a limit, where it counts.
//   - Ratio, CompareLatency, CompareLoad: the figures benchmarks report.
//   - QuantileRatioOverRounds, QuantileRatioCI, QuantileCI, PairedRatioCI,
//     ShareCI: the 95% interval of each figure (see "Intervals" below),
//     reported as "<key>_ci95": [low, high].
//   - Target, Verdict, Targets: a goal per figure and the verdict the
//     interval allows: met, missed or undecided.
//   - Report: one HTML file with inline SVG charts rendered in Go (no
//     JavaScript, no network), plus <name>.json with the summary;
//     PrintSummary prints that summary as the last stdout line.
//   - RunRecord, WriteRun: the history of runs, one file per run in
//     <report-dir>/runs (see "Run records" below); CompareRuns and
//     WriteRunComparison put two of them side by side.
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
// # Intervals
//
// A single run's figure is one draw from a noisy machine: four quick runs of
// bench search gave p99 ratios from 0.71 to 1.25. So every headline ratio
// comes with a 95% interval, and targets are judged on the interval, not
// the point. Two kinds of figures need two methods:
//
//   - Percentile ratios (p50, p99, p99.9 of ours over the baseline's) use a
//     percentile bootstrap over the latencies each side recorded
//     (QuantileRatioCI): 2,000 resamples, from a PCG generator with a fixed
//     seed so a report can be reproduced. Each resample redraws both sides
//     from their HDR histograms and takes the ratio of the resampled
//     percentiles; the interval is the 2.5th to 97.5th percentile of those
//     ratios. A percentile is an order statistic of thousands of latencies
//     from one run, with no rounds to pair and no shape to assume; the
//     bootstrap needs neither. The k-th smallest of a resample is drawn in
//     one step from the Beta(k, n+1−k) distribution of a uniform order
//     statistic (see resampleQuantile), which is exactly the bootstrap, and
//     costs the same for 2,000 or 2,000,000 latencies. A p99 resting on few
//     latencies gets a wide interval, which is the point: each side's p99
//     should rest on at least 20 latencies above it (2,000 samples), and
//     on this machine's heavy tails a p99 ratio needs about 10,000 per side
//     for an interval of ±10% (bench search's quick profile).
//     The bootstrap treats every latency as independent, so it misses the
//     spread between rounds: under load each side runs in its own time
//     slots, and a merge lands in one and not the other. A benchmark that
//     runs rounds therefore reports QuantileRatioOverRounds: the hull of
//     the bootstrap and of the t interval over the rounds' paired ratios of
//     the percentile (below), with at least about 8 rounds per phase.
//     QuantileCI does the same for one side's percentile against an
//     absolute target (a p99 in ms).
//   - Throughput and other figures measured once per side in every ABBA
//     round use the rounds' paired ratios (PairedRatioCI): round i's
//     baseline and ours ran back to back, so ours_i/baseline_i cancels the
//     machine's drift between rounds. The interval is Student's t on the
//     logs of the per-round ratios, exp(mean ± t(0.975, n−1)·sd/√n):
//     logs because noise on a rate is multiplicative and a ratio and its
//     inverse should get the same interval; t because a run has 4–8 rounds,
//     too few for a bootstrap or for golang.org/x/perf/benchmath's
//     order-statistic interval of the median (it needs 6 samples for any
//     95% interval). The rounds' smallest and largest ratio are reported
//     beside it, so a reader sees the spread the t interval assumes.
//
// Both intervals are widened, if needed, to contain the reported point
// (Interval.Around): the point is computed from all the data (the ratio of
// the totals, the percentile of all latencies), the interval from
// resamples or rounds, and on small samples the two can disagree by a
// little. A figure with no noise (a count of lost updates) gets Exact.
// A figure with too little data (one round, one latency) gets NoInterval,
// which encodes as null and leaves its targets undecided.
//
// A Target (AtMost or AtLeast a value) is met when the whole interval is on
// its good side, missed when the whole interval is on the bad side, and
// undecided when the interval straddles it. Summaries carry them as
// "targets": {name: {target, better, point, ci95, verdict}}, and
// IntervalSection and TargetsSection put them in the report, the ratios as
// a bar chart with error bars.
//
// The statistics are tested on synthetic latencies with a known true
// ratio (stats_test.go): over 200 seeded trials each interval covers the
// true ratio at least 90% of the time, and narrows as samples or rounds
// grow.
//
// # Run records
//
// <report-dir>/<name>.json holds the last run only. `baedal bench <name>`
// also writes <report-dir>/runs/<UTC start>-<name>.json (WriteRun never
// replaces one): the summary, the git revision, the versions reported by
// the servers the run used, /proc/loadavg before and after, and the
// targets with a count of verdicts. The caller gathers those (this package
// asks no server); the record is the summary plus context, so any two runs
// of one benchmark can be compared later. `baedal bench <name> --check`
// fails on a missed target and not on an undecided one: undecided means
// the run was too noisy or too short to tell, which more rounds settle.
//
// CompareRuns flattens the numeric leaves of two run files by key
// ("summary.under_load.split.p99_ms") and gives B/A. A "<key>_ci95" (or a
// target's "ci95") is attached to its figure: where both runs have one,
// the figures differ when the intervals do not overlap and are "~" when
// they do, like benchstat's "~". Overlapping 95% intervals do not prove
// equality, and non-overlap is a conservative test of a difference; it
// needs nothing but what the summaries already hold.
//
// Main invariant: baseline and candidate run in the same process on the same
// machine, interleaved; every figure a benchmark reports is a ratio between
// them or a percentile from an HDR histogram, never a single absolute time
// from a noisy machine. The package opens no connections and starts no
// servers; it only measures what the workload hands it.
package bench
