package replica

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// hostNoise is a busy host's effect on reply latency: a factor that
// wanders by ±20% over a few seconds and jitters by about 20% every 50 ms,
// the same for both modes at any one time.
func hostNoise(seed uint64) func(t time.Duration) float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	var chunk time.Duration = -1
	jitter := 1.0
	return func(t time.Duration) float64 {
		if c := t / (50 * time.Millisecond); c != chunk {
			chunk, jitter = c, 1+0.2*rng.NormFloat64()
		}
		return (1 + 0.2*math.Sin(2*math.Pi*t.Seconds()/3.7)) * max(jitter, 0.5)
	}
}

// runModes drives a modeChooser for d with ten replies a millisecond, each
// taking spread(t) or concentrated(t) times noise(t), and returns the share
// of the time from `from` on it concentrated and its longest stretch of
// concentrating in that time.
func runModes(d, from time.Duration, spread, concentrated func(time.Duration) time.Duration, noise func(time.Duration) float64) (share float64, longest time.Duration) {
	var m modeChooser
	start := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	var on, stretch time.Duration
	for t := time.Duration(0); t < d; t += time.Millisecond {
		now := start.Add(t)
		latency := spread(t)
		if m.concentrating(now) {
			latency = concentrated(t)
			if t >= from {
				on += time.Millisecond
				stretch += time.Millisecond
				longest = max(longest, stretch)
			}
		} else {
			stretch = 0
		}
		latency = time.Duration(float64(latency) * noise(t))
		for range 10 {
			m.observe(latency, now)
		}
	}
	return float64(on) / float64(d-from), longest
}

func constant(d time.Duration) func(time.Duration) time.Duration {
	return func(time.Duration) time.Duration { return d }
}

func noNoise(time.Duration) float64 { return 1 }

// Where concentrating answers faster (clients and replicas sharing a few
// cores), even by 13% on a host whose load moves latency by more than
// that, the chooser concentrates nearly all the time, trying spreading
// again one epoch in many; where it is three times slower (a home replica
// out of CPU) it tries it ever more rarely and gives each try up after a
// tenth of a second; and when the mode it runs turns far slower, it
// changes within seconds.
func TestModeChooserKeepsTheFasterMode(t *testing.T) {
	ms := time.Millisecond
	minute := 60 * time.Second
	for seed := range uint64(5) {
		share, _ := runModes(minute, 0, constant(3*ms), constant(2600*time.Microsecond), hostNoise(seed))
		if share < 0.9 {
			t.Errorf("seed %d: concentrating 2.6ms against spreading 3ms, noisy host: concentrated %.3f of the time, want over 0.9", seed, share)
		}
		share, _ = runModes(minute, 0, constant(2600*time.Microsecond), constant(3*ms), hostNoise(seed))
		if share > 0.06 {
			t.Errorf("seed %d: concentrating 3ms against spreading 2.6ms, noisy host: concentrated %.3f of the time, want under 0.06", seed, share)
		}
	}
	share, _ := runModes(minute, 0, constant(3*ms), constant(2600*time.Microsecond), noNoise)
	if share < 0.95 {
		t.Errorf("concentrating 2.6ms against spreading 3ms: concentrated %.3f of the time, want over 0.95", share)
	}
	share, longest := runModes(minute, 0, constant(2*ms), constant(6*ms), noNoise)
	if share > 0.015 {
		t.Errorf("concentrating 6ms against spreading 2ms: concentrated %.3f of the time, want at most 0.015", share)
	}
	if share == 0 || longest > 2*modeWarmUp+ms {
		t.Errorf("concentrating 6ms against spreading 2ms: longest try %v (share %.4f), want tries, each given up after %v", longest, share, 2*modeWarmUp)
	}
	share, _ = runModes(minute, 0, constant(2*ms), constant(2*ms), noNoise)
	if share == 0 || share == 1 {
		t.Errorf("equal modes: concentrated %.2f of the time, want both modes tried", share)
	}
	// Concentrating is faster for half a minute, then its home runs out of
	// CPU: three seconds later the chooser must be spreading.
	turns := func(before, after time.Duration) func(time.Duration) time.Duration {
		return func(t time.Duration) time.Duration {
			if t < 30*time.Second {
				return before
			}
			return after
		}
	}
	share, _ = runModes(minute, 33*time.Second, constant(3*ms), turns(2*ms, 9*ms), hostNoise(1))
	if share > 0.02 {
		t.Errorf("concentrating turned from 2ms to 9ms against spreading 3ms: concentrated %.3f of the time from 3s after, want at most 0.02", share)
	}
}
