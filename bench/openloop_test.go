package bench

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// world is a simulated system under test: a change issued at offset t
// (from the run's start) becomes visible delay(t) later.
type world struct {
	start time.Time
	delay func(offset time.Duration) time.Duration
}

func (w world) issue(ctx context.Context, i int) (Look, error) {
	issued := time.Now()
	d := w.delay(issued.Sub(w.start))
	return func(context.Context) (bool, error) { return time.Since(issued) >= d, nil }, nil
}

// A slow period is sampled in proportion to its duration: 2 s of slow
// visibility in a 10 s run hold 20% of the samples, however many changes
// are in flight during it, and the p99 is the slow period's.
func TestFollowOpenLoopSamplesASlowPeriodInProportion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const fast, slow = 5 * time.Millisecond, 500 * time.Millisecond
		w := world{start: time.Now(), delay: func(at time.Duration) time.Duration {
			if at >= 3*time.Second && at < 5*time.Second {
				return slow
			}
			return fast
		}}
		cfg := FollowConfig{Interval: 10 * time.Millisecond, Issues: 1000, Limit: 2 * time.Second, MinPoll: time.Millisecond, MaxLooks: 2}
		res, err := FollowOpenLoop(t.Context(), cfg, w.issue)
		if err != nil {
			t.Fatal(err)
		}
		if res.Followed != 1000 || res.Seen != 1000 || res.GaveUp != 0 {
			t.Fatalf("followed %d, seen %d, gave up %d; want all 1000 seen", res.Followed, res.Seen, res.GaveUp)
		}
		// The share of samples at or above the slow delay is the slow
		// period's share of the run (200 of 1000 issues).
		slowSamples := res.Latency.Count() - countBelow(res.Latency, slow)
		if slowSamples != 200 {
			t.Errorf("%d samples at the slow delay, want 200 (2 s of a 10 s run at 100 issues/s)", slowSamples)
		}
		if p99 := res.Latency.Quantile(0.99); p99 < slow || p99 > slow+slow/10 {
			t.Errorf("p99 %s, want the slow period's %s (to 10%%)", p99, slow)
		}
		if p50 := res.Latency.Quantile(0.5); p50 >= 50*time.Millisecond {
			t.Errorf("p50 %s, want the fast delay's order (%s)", p50, fast)
		}
		if lag := res.Lag.Quantile(1); lag > time.Millisecond {
			t.Errorf("issues started up to %s late; the schedule must not wait for followers", lag)
		}
	})
}

// countBelow counts recorded latencies below d.
func countBelow(r *LatencyRecorder, d time.Duration) int64 {
	e := r.empirical()
	var n int64
	for i, v := range e.values {
		if time.Duration(v) < d {
			n = e.cum[i]
		}
	}
	return n
}

// Changes never seen within the limit are counted as given up and enter
// the percentiles at the limit, not left out.
func TestFollowOpenLoopCountsGivenUpChangesAtTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = time.Second
		w := world{start: time.Now(), delay: func(at time.Duration) time.Duration {
			if at >= 3*time.Second && at < 4*time.Second {
				return time.Hour // lost
			}
			return 5 * time.Millisecond
		}}
		cfg := FollowConfig{Interval: 10 * time.Millisecond, Issues: 1000, Limit: limit, MinPoll: time.Millisecond}
		res, err := FollowOpenLoop(t.Context(), cfg, w.issue)
		if err != nil {
			t.Fatal(err)
		}
		if res.GaveUp != 100 || res.Seen != 900 || res.Latency.Count() != 1000 {
			t.Fatalf("gave up %d, seen %d, recorded %d; want 100, 900, 1000", res.GaveUp, res.Seen, res.Latency.Count())
		}
		if p95 := res.Latency.Quantile(0.95); p95 < limit || p95 > limit+limit/100 {
			t.Errorf("p95 %s, want the limit %s: 10%% of the changes were never seen", p95, limit)
		}
	})
}

// Only the issues that return a Look are followed; the others are load.
func TestFollowOpenLoopFollowsOnlyWhatIssueReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		issued := 0
		cfg := FollowConfig{Interval: 20 * time.Millisecond, Issues: 50, Limit: time.Second}
		res, err := FollowOpenLoop(t.Context(), cfg, func(ctx context.Context, i int) (Look, error) {
			issued++
			if i%5 != 0 {
				return nil, nil
			}
			return func(context.Context) (bool, error) { return true, nil }, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if issued != 50 || res.Followed != 10 {
			t.Fatalf("issued %d, followed %d; want 50 and 10", issued, res.Followed)
		}
	})
}

// A look that fails ends the run with its error.
func TestFollowOpenLoopStopsOnALookError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("search answered 500")
		cfg := FollowConfig{Interval: 10 * time.Millisecond, Issues: 1000, Limit: time.Second}
		_, err := FollowOpenLoop(t.Context(), cfg, func(ctx context.Context, i int) (Look, error) {
			return func(context.Context) (bool, error) {
				if i == 7 {
					return false, boom
				}
				return true, nil
			}, nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want %v", err, boom)
		}
	})
}

func TestFollowConfigValidateNamesTheField(t *testing.T) {
	for _, c := range []FollowConfig{{Interval: 0, Limit: time.Second}, {Interval: time.Second, Limit: 0}, {Interval: time.Second, Limit: time.Second, Issues: -1}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
