package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// LoadResult is what a load run measured.
//
// Ops counts operations that succeeded and Errors those that returned an
// error; an operation that fails only because the run's context ended is
// counted in neither. Latency holds the latency of every successful
// operation, so Latency.Count() == Ops. Lag (RunAtRate only; empty
// otherwise) holds how late each operation started against its schedule.
// RoundThroughput holds the throughput of every run merged into it, in
// order: one per round when each round of an Interleave merges one run,
// the pairs PairedRatioCI takes. RoundLatency holds those runs' latency
// summaries in the same order, for intervals of a percentile over rounds.
type LoadResult struct {
	Ops, Errors     int64
	Elapsed         time.Duration
	Latency         *LatencyRecorder
	Lag             *LatencyRecorder
	RoundThroughput []float64
	RoundLatency    []LatencySummary
}

// Throughput returns successful operations per second of Elapsed, or 0 when
// nothing ran.
func (r LoadResult) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// ErrorRate returns Errors / (Ops + Errors), or 0 when nothing ran.
func (r LoadResult) ErrorRate() float64 {
	total := r.Ops + r.Errors
	if total == 0 {
		return 0
	}
	return float64(r.Errors) / float64(total)
}

// Merge adds o to r: counts, elapsed time and recorders. Use it to sum the
// rounds of one side of an Interleave. A zero LoadResult is a valid start.
// It appends o's throughput and latency summary to r.RoundThroughput and
// r.RoundLatency (o's own when o is itself merged rounds).
func (r *LoadResult) Merge(o LoadResult) {
	switch {
	case len(o.RoundThroughput) > 0:
		r.RoundThroughput = append(r.RoundThroughput, o.RoundThroughput...)
		r.RoundLatency = append(r.RoundLatency, o.RoundLatency...)
	case o.Elapsed > 0:
		r.RoundThroughput = append(r.RoundThroughput, o.Throughput())
		r.RoundLatency = append(r.RoundLatency, o.Latency.Summary())
	}
	r.Ops += o.Ops
	r.Errors += o.Errors
	r.Elapsed += o.Elapsed
	if r.Latency == nil {
		r.Latency = NewLatencyRecorder()
	}
	if r.Lag == nil {
		r.Lag = NewLatencyRecorder()
	}
	r.Latency.Merge(o.Latency)
	r.Lag.Merge(o.Lag)
}

// LoadSummary is the JSON form of a LoadResult.
type LoadSummary struct {
	Ops           int64           `json:"ops"`
	Errors        int64           `json:"errors"`
	ElapsedS      float64         `json:"elapsed_s"`
	ThroughputOps float64         `json:"throughput_ops_per_s"`
	Latency       LatencySummary  `json:"latency"`
	Lag           *LatencySummary `json:"lag,omitempty"`
}

// Summary returns the JSON form of r; Lag is included only when something
// was recorded in it.
func (r LoadResult) Summary() LoadSummary {
	s := LoadSummary{
		Ops:           r.Ops,
		Errors:        r.Errors,
		ElapsedS:      round3(r.Elapsed.Seconds()),
		ThroughputOps: round3(r.Throughput()),
		Latency:       r.Latency.Summary(),
	}
	if r.Lag.Count() > 0 {
		lag := r.Lag.Summary()
		s.Lag = &lag
	}
	return s
}

// RunClosedLoop runs `clients` goroutines (at least 1); each calls op in a
// loop, starting the next call when the previous one returns, until d has
// passed (d <= 0: until ctx ends) or ctx ends. Calls in flight when d passes
// are allowed to finish and are counted; op receives ctx itself, so only the
// caller's cancellation interrupts them. client is the goroutine's index
// (0..clients-1), for per-client state such as a seeded RNG.
func RunClosedLoop(ctx context.Context, clients int, d time.Duration, op func(ctx context.Context, client int) error) LoadResult {
	if clients < 1 {
		clients = 1
	}
	start := time.Now()
	var deadline time.Time
	if d > 0 {
		deadline = start.Add(d)
	}
	running := func() bool {
		return ctx.Err() == nil && (deadline.IsZero() || time.Now().Before(deadline))
	}

	recorders := make([]*LatencyRecorder, clients)
	var ops, failures atomic.Int64
	var wg sync.WaitGroup
	for c := range clients {
		rec := NewLatencyRecorder()
		recorders[c] = rec
		wg.Go(func() {
			for running() {
				t0 := time.Now()
				err := op(ctx, c)
				took := time.Since(t0)
				switch {
				case err == nil:
					ops.Add(1)
					rec.Record(took)
				case ctx.Err() != nil && isContextError(err):
					// Interrupted by the end of the run, not a failure.
				default:
					failures.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return collect(start, &ops, &failures, recorders, nil)
}

// RunAtRate calls op at a fixed rate (calls per second, must be > 0) until
// ctx ends, from `workers` goroutines (at least 1). This is open-loop load,
// for example "updates applied at 2000/s while searching": call i is due at
// start + i/rate whether or not earlier calls have returned. When every
// worker is busy, calls start late; each call's Latency is measured from its
// due time, so it includes that wait (no coordinated omission), and Lag
// records how late it started. Calls due after ctx ends are not made; use
// context.WithTimeout to bound the run. op receives ctx and the call's
// sequence number i (0, 1, 2, ...).
//
// A rate that cannot be met shows as growing Lag and Throughput below rate.
// RunAtRate panics if rate is not a positive finite number, like
// time.NewTicker with a non-positive interval.
func RunAtRate(ctx context.Context, rate float64, workers int, op func(ctx context.Context, i int64) error) LoadResult {
	if !(rate > 0) || math.IsInf(rate, 0) {
		panic(fmt.Sprintf("bench: RunAtRate rate is %v, want a positive finite number of calls per second", rate))
	}
	if workers < 1 {
		workers = 1
	}
	interval := float64(time.Second) / rate
	start := time.Now()
	due := func(i int64) time.Time {
		return start.Add(time.Duration(float64(i) * interval))
	}

	latencies := make([]*LatencyRecorder, workers)
	lags := make([]*LatencyRecorder, workers)
	var next, ops, failures atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		latency, lag := NewLatencyRecorder(), NewLatencyRecorder()
		latencies[w], lags[w] = latency, lag
		wg.Go(func() {
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				at := due(i)
				if wait := time.Until(at); wait > 0 {
					timer.Reset(wait)
					select {
					case <-ctx.Done():
						return
					case <-timer.C:
					}
				}
				lag.Record(time.Since(at))
				err := op(ctx, i)
				switch {
				case err == nil:
					ops.Add(1)
					latency.Record(time.Since(at))
				case ctx.Err() != nil && isContextError(err):
					// Interrupted by the end of the run, not a failure.
				default:
					failures.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return collect(start, &ops, &failures, latencies, lags)
}

func collect(start time.Time, ops, failures *atomic.Int64, latencies, lags []*LatencyRecorder) LoadResult {
	r := LoadResult{
		Ops:     ops.Load(),
		Errors:  failures.Load(),
		Elapsed: time.Since(start),
		Latency: NewLatencyRecorder(),
		Lag:     NewLatencyRecorder(),
	}
	for _, l := range latencies {
		r.Latency.Merge(l)
	}
	for _, l := range lags {
		r.Lag.Merge(l)
	}
	return r
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
