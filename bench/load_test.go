package bench

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

var errEveryTenth = errors.New("every tenth call fails")

// failEveryTenth returns an op that sleeps a little and fails every 10th
// call, counting calls in calls.
func failEveryTenth(calls *atomic.Int64, sleep time.Duration) func(context.Context, int) error {
	return func(ctx context.Context, client int) error {
		n := calls.Add(1)
		time.Sleep(sleep)
		if n%10 == 0 {
			return errEveryTenth
		}
		return nil
	}
}

func TestRunClosedLoopCountsOpsAndErrors(t *testing.T) {
	var calls atomic.Int64
	r := RunClosedLoop(t.Context(), 4, 100*time.Millisecond, failEveryTenth(&calls, 200*time.Microsecond))
	total := calls.Load()
	if total < 10 {
		t.Fatalf("only %d calls in 100ms with 4 clients", total)
	}
	if r.Ops+r.Errors != total {
		t.Errorf("Ops %d + Errors %d != %d calls made", r.Ops, r.Errors, total)
	}
	if r.Errors != total/10 {
		t.Errorf("Errors = %d, want %d (every 10th of %d calls)", r.Errors, total/10, total)
	}
	if r.Latency.Count() != r.Ops {
		t.Errorf("Latency.Count %d != Ops %d", r.Latency.Count(), r.Ops)
	}
	if fastest := r.Latency.Quantile(0); fastest < 199*time.Microsecond { // 200µs less HDR's 0.1%
		t.Errorf("fastest op %v, want at least the 200µs it slept", fastest)
	}
	if r.Elapsed < 100*time.Millisecond {
		t.Errorf("Elapsed %v, want at least the 100ms run", r.Elapsed)
	}
	if got, want := r.Throughput(), float64(r.Ops)/r.Elapsed.Seconds(); got != want {
		t.Errorf("Throughput %v, want %v", got, want)
	}
}

// In a synctest bubble time is virtual, so the counts are exact: 4 clients
// making 1ms calls for 100ms make 400 calls, 40 of which fail.
func TestRunClosedLoopExactCountsWithVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		r := RunClosedLoop(t.Context(), 4, 100*time.Millisecond, failEveryTenth(&calls, time.Millisecond))
		if r.Ops != 360 || r.Errors != 40 || r.Elapsed != 100*time.Millisecond {
			t.Errorf("Ops %d Errors %d Elapsed %v, want 360, 40, 100ms", r.Ops, r.Errors, r.Elapsed)
		}
		if got := r.Throughput(); got != 3600 {
			t.Errorf("Throughput %v, want 3600/s", got)
		}
		if got := r.ErrorRate(); got != 0.1 {
			t.Errorf("ErrorRate %v, want 0.1", got)
		}
		if p50 := r.Latency.Quantile(0.5); !withinPrecision(p50, time.Millisecond) {
			t.Errorf("p50 %v, want 1ms", p50)
		}
	})
}

func TestRunClosedLoopStopsOnCancelWithoutCountingIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		// d = 0: run until ctx ends. Each op waits 20ms or until ctx ends.
		r := RunClosedLoop(ctx, 2, 0, func(ctx context.Context, client int) error {
			select {
			case <-time.After(20 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		// Calls at 0 and 20ms complete; the one started at 40ms is cut by the
		// deadline at 50ms and is neither an op nor an error.
		if r.Ops != 4 || r.Errors != 0 {
			t.Errorf("Ops %d Errors %d, want 4 and 0", r.Ops, r.Errors)
		}
		if r.Elapsed != 50*time.Millisecond {
			t.Errorf("Elapsed %v, want 50ms", r.Elapsed)
		}
	})
}

func TestRunClosedLoopLetsInFlightCallsFinishAfterDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := RunClosedLoop(t.Context(), 1, 50*time.Millisecond, func(ctx context.Context, client int) error {
			time.Sleep(30 * time.Millisecond)
			return ctx.Err()
		})
		// Calls start at 0 and 30ms; the second ends at 60ms and counts.
		if r.Ops != 2 || r.Errors != 0 || r.Elapsed != 60*time.Millisecond {
			t.Errorf("Ops %d Errors %d Elapsed %v, want 2, 0, 60ms", r.Ops, r.Errors, r.Elapsed)
		}
	})
}

func TestRunAtRateRoughlyKeepsTheRate(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var calls atomic.Int64
	r := RunAtRate(ctx, 200, 4, func(ctx context.Context, i int64) error {
		calls.Add(1)
		return nil
	})
	// 200/s for 300ms is 60 calls; the machine is shared, so the bounds are wide.
	if r.Ops < 30 || r.Ops > 90 {
		t.Errorf("Ops = %d in 300ms at 200/s, want about 60 (30..90)", r.Ops)
	}
	if r.Ops != calls.Load() || r.Errors != 0 || r.Latency.Count() != r.Ops {
		t.Errorf("Ops %d, calls %d, Errors %d, Latency.Count %d: want equal counts and no errors", r.Ops, calls.Load(), r.Errors, r.Latency.Count())
	}
}

func TestRunAtRateExactScheduleWithVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 302*time.Millisecond)
		defer cancel()
		var seen [61]atomic.Bool
		var outOfRange atomic.Int64
		r := RunAtRate(ctx, 200, 3, func(ctx context.Context, i int64) error {
			if i < 0 || i >= int64(len(seen)) {
				outOfRange.Add(1)
				return nil
			}
			seen[i].Store(true)
			if i%10 == 9 {
				return errEveryTenth
			}
			return nil
		})
		// Calls are due at 0, 5, ..., 300ms: 61 calls, i = 0..60, 6 of them fail.
		if r.Ops != 55 || r.Errors != 6 || outOfRange.Load() != 0 {
			t.Errorf("Ops %d Errors %d outOfRange %d, want 55, 6, 0", r.Ops, r.Errors, outOfRange.Load())
		}
		for i := range seen {
			if !seen[i].Load() {
				t.Errorf("call %d was never made", i)
			}
		}
		if r.Lag.Quantile(1) >= time.Microsecond {
			t.Errorf("max lag %v, want 0 (HDR's lowest bucket): idle workers start every call on time", r.Lag.Quantile(1))
		}
	})
}

func TestRunAtRateMeasuresFromScheduleWhenBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 95*time.Millisecond)
		defer cancel()
		// One worker, 10ms calls, due every 5ms: each call starts 5ms later
		// than the one before it relative to its schedule.
		r := RunAtRate(ctx, 200, 1, func(ctx context.Context, i int64) error {
			time.Sleep(10 * time.Millisecond)
			return nil
		})
		if r.Ops != 10 {
			t.Fatalf("Ops = %d, want 10 (10ms calls started until 95ms)", r.Ops)
		}
		// Call i starts at 10i ms, due at 5i ms: lag 5i ms, latency 5i+10 ms.
		if got := r.Lag.Quantile(1); !withinPrecision(got, 45*time.Millisecond) {
			t.Errorf("max lag %v, want 45ms", got)
		}
		if got := r.Latency.Quantile(1); !withinPrecision(got, 55*time.Millisecond) {
			t.Errorf("max latency %v, want 55ms: latency counts from the due time", got)
		}
		if s := r.Summary(); s.Lag == nil || s.Lag.Count != 10 {
			t.Errorf("Summary().Lag = %+v, want 10 lag samples", s.Lag)
		}
	})
}

func TestRunAtRatePanicsOnBadRate(t *testing.T) {
	for _, rate := range []float64{0, -1} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "rate") {
					t.Errorf("rate %v: panic %q, want one naming the rate", rate, msg)
				}
			}()
			RunAtRate(t.Context(), rate, 1, func(context.Context, int64) error { return nil })
		}()
	}
}

func TestLoadResultMergeAndSummary(t *testing.T) {
	one := LoadResult{Ops: 9, Errors: 1, Elapsed: time.Second, Latency: NewLatencyRecorder()}
	for range 9 {
		one.Latency.Record(2 * time.Millisecond)
	}
	var sum LoadResult
	sum.Merge(one)
	sum.Merge(one)
	if sum.Ops != 18 || sum.Errors != 2 || sum.Elapsed != 2*time.Second || sum.Latency.Count() != 18 {
		t.Fatalf("merged %+v, want 18 ops, 2 errors, 2s, 18 latencies", sum)
	}
	s := sum.Summary()
	if s.ThroughputOps != 9 || s.ElapsedS != 2 || s.Latency.Count != 18 || s.Lag != nil {
		t.Errorf("Summary %+v, want 9 ops/s over 2s, 18 latencies, no lag", s)
	}
	table := CompareLoad("before", one, "after", sum)
	if table.Rows[0][0] != "throughput (ops/s)" || table.Rows[0][3] != "1.000" {
		t.Errorf("first row %q, want throughput with ratio 1.000", table.Rows[0])
	}
	if table.Rows[1][3] != "2.000" {
		t.Errorf("ops row %q, want ratio 2.000", table.Rows[1])
	}
	if (LoadResult{}).Throughput() != 0 || (LoadResult{}).ErrorRate() != 0 {
		t.Error("a zero LoadResult must report 0 throughput and 0 error rate")
	}
}

func TestMergeKeepsEachRoundsThroughputAndLatency(t *testing.T) {
	round := func(ops int64, elapsed, latency time.Duration) LoadResult {
		rec := NewLatencyRecorder()
		for range ops {
			rec.Record(latency)
		}
		return LoadResult{Ops: ops, Elapsed: elapsed, Latency: rec}
	}
	var side LoadResult
	side.Merge(round(100, time.Second, time.Millisecond))
	side.Merge(round(300, 2*time.Second, 4*time.Millisecond))
	side.Merge(LoadResult{}) // nothing ran: no round
	if want := []float64{100, 150}; !slices.Equal(side.RoundThroughput, want) {
		t.Fatalf("RoundThroughput %v, want %v", side.RoundThroughput, want)
	}
	var all LoadResult
	all.Merge(side)
	all.Merge(round(50, time.Second, 9*time.Millisecond))
	if want := []float64{100, 150, 50}; !slices.Equal(all.RoundThroughput, want) {
		t.Errorf("merged sides: %v, want %v", all.RoundThroughput, want)
	}
	var p99s []float64
	for _, l := range all.RoundLatency {
		p99s = append(p99s, math.Round(l.P99Ms))
	}
	if want := []float64{1, 4, 9}; !slices.Equal(p99s, want) {
		t.Errorf("rounds' p99 %v ms, want %v", p99s, want)
	}
}
