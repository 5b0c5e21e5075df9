package bench

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// recorderOf records n latencies drawn from an exponential distribution of
// the given mean, shifted by floor.
func recorderOf(rng *rand.Rand, n int, floor, mean time.Duration) *LatencyRecorder {
	r := NewLatencyRecorder()
	for range n {
		r.Record(floor + time.Duration(rng.ExpFloat64()*float64(mean)))
	}
	return r
}

// When the rounds disagree (each round's baseline p99 moves by a factor
// the other side does not share, as a merge in one side's time slot does),
// the interval covers the rounds' spread, which the bootstrap alone misses.
func TestQuantileRatioOverRoundsCoversTheSpreadBetweenRounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var base, ours []*LatencyRecorder
	for i := range 8 {
		// The baseline's rounds alternate between a calm and a slow state.
		slowdown := time.Duration(1 + 2*(i%2))
		base = append(base, recorderOf(rng, 5000, time.Millisecond, slowdown*2*time.Millisecond))
		ours = append(ours, recorderOf(rng, 5000, time.Millisecond, 2*time.Millisecond))
	}
	got := QuantileRatioOverRounds(base, ours, 0.99, 1)
	boot := QuantileRatioCI(Pool(base), Pool(ours), 0.99, 1)
	if !got.CI95.Known() || !boot.Known() {
		t.Fatalf("intervals unknown: %v, bootstrap %v", got.CI95, boot)
	}
	if got.Rounds.Rounds != 8 || got.Rounds.Dropped != 0 {
		t.Fatalf("rounds %d, dropped %d; want 8 and 0", got.Rounds.Rounds, got.Rounds.Dropped)
	}
	if width, bootWidth := got.CI95.High-got.CI95.Low, boot.High-boot.Low; width < 2*bootWidth {
		t.Errorf("interval %v is not much wider than the bootstrap's %v although the rounds' ratios run %.2f–%.2f",
			got.CI95, boot, got.Rounds.Min, got.Rounds.Max)
	}
	if !got.CI95.Contains(got.Point) || !got.CI95.Contains(got.Rounds.GeoMean) {
		t.Errorf("interval %v must contain the point %.3f and the rounds' geometric mean %.3f", got.CI95, got.Point, got.Rounds.GeoMean)
	}
}

// With rounds that agree the interval is the bootstrap's (the hull adds
// little) and still covers the true ratio.
func TestQuantileRatioOverRoundsCoversTheTrueRatio(t *testing.T) {
	covered := 0
	const trials = 100
	for trial := range trials {
		rng := rand.New(rand.NewPCG(uint64(trial), 7))
		var base, ours []*LatencyRecorder
		for range 8 {
			base = append(base, recorderOf(rng, 1000, 0, 4*time.Millisecond))
			ours = append(ours, recorderOf(rng, 1000, 0, 2*time.Millisecond))
		}
		if QuantileRatioOverRounds(base, ours, 0.99, uint64(trial)).CI95.Contains(0.5) {
			covered++
		}
	}
	if covered < 90 {
		t.Errorf("the interval covered the true p99 ratio 0.5 in %d of %d trials, want >= 90", covered, trials)
	}
}

// A round where a side recorded nothing is counted, not dropped silently.
func TestQuantileRatioOverRoundsCountsAFailedRound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	base := []*LatencyRecorder{recorderOf(rng, 500, 0, time.Millisecond), NewLatencyRecorder(), recorderOf(rng, 500, 0, time.Millisecond)}
	ours := []*LatencyRecorder{recorderOf(rng, 500, 0, time.Millisecond), recorderOf(rng, 500, 0, time.Millisecond), recorderOf(rng, 500, 0, time.Millisecond)}
	got := QuantileRatioOverRounds(base, ours, 0.5, 1)
	if got.Rounds.Rounds != 2 || got.Rounds.Dropped != 1 {
		t.Fatalf("rounds %d, dropped %d; want 2 and 1", got.Rounds.Rounds, got.Rounds.Dropped)
	}
}

func TestPairedRatioCICountsUnpairedAndEmptyRounds(t *testing.T) {
	got := PairedRatioCI([]float64{1, 0, 2, 3}, []float64{1, 1, math.NaN()})
	// Round 1: baseline 0; round 2: ours NaN; round 3: ours missing.
	if got.Rounds != 1 || got.Dropped != 3 {
		t.Fatalf("rounds %d, dropped %d; want 1 and 3", got.Rounds, got.Dropped)
	}
}

func TestShareCI(t *testing.T) {
	for _, c := range []struct {
		k, n      int64
		low, high float64 // Wilson score interval, from the formula by hand
	}{
		{0, 100, 0, 0.0370},
		{0, 10000, 0, 0.000384},
		{1, 20000, 0.0000088, 0.000283},
		{50, 100, 0.4038, 0.5962},
	} {
		iv := ShareCI(c.k, c.n)
		if math.Abs(iv.Low-c.low) > 0.0001*math.Max(1, c.low*10) || math.Abs(iv.High-c.high)/c.high > 0.01 {
			t.Errorf("ShareCI(%d, %d) = %v, want [%g, %g]", c.k, c.n, iv, c.low, c.high)
		}
		if !iv.Contains(Share(c.k, c.n)) {
			t.Errorf("ShareCI(%d, %d) = %v does not contain the share %g", c.k, c.n, iv, Share(c.k, c.n))
		}
	}
	if ShareCI(0, 0).Known() || ShareCI(3, 2).Known() {
		t.Error("no samples, or more hits than samples, must give no interval")
	}
}
