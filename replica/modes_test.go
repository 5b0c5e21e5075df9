package replica

import (
	"testing"
	"time"
)

// runModes drives a modeChooser for d with ten replies a millisecond, each
// taking spread or concentrated, and returns the share of the time it
// concentrated and its longest stretch of concentrating.
func runModes(d, spread, concentrated time.Duration) (share float64, longest time.Duration) {
	var m modeChooser
	start := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	var on, stretch time.Duration
	for t := time.Duration(0); t < d; t += time.Millisecond {
		now := start.Add(t)
		latency := spread
		if m.concentrating(now) {
			latency = concentrated
			on += time.Millisecond
			stretch += time.Millisecond
			longest = max(longest, stretch)
		} else {
			stretch = 0
		}
		for range 10 {
			m.observe(latency, now)
		}
	}
	return float64(on) / float64(d), longest
}

// Where concentrating answers faster (clients and replicas sharing a few
// cores), even by little, the chooser concentrates nearly all the time,
// trying spreading again one epoch in many; where it is three times slower (a home replica
// out of CPU) it tries it ever more rarely and gives each try up after a
// tenth of a second.
func TestModeChooserKeepsTheFasterMode(t *testing.T) {
	ms := time.Millisecond
	share, _ := runModes(60*time.Second, 3*ms, 2*ms)
	if share < 0.9 {
		t.Errorf("concentrating 2ms against spreading 3ms: concentrated %.2f of the time, want over 0.9", share)
	}
	// 15% faster is too close for a try to lose by much, and a try every
	// few epochs would still run the slower mode a fifth of the time.
	share, _ = runModes(60*time.Second, 3*ms, 2600*time.Microsecond)
	if share < 0.95 {
		t.Errorf("concentrating 2.6ms against spreading 3ms: concentrated %.3f of the time, want over 0.95", share)
	}
	share, longest := runModes(60*time.Second, 2*ms, 6*ms)
	if share > 0.015 {
		t.Errorf("concentrating 6ms against spreading 2ms: concentrated %.3f of the time, want at most 0.015", share)
	}
	if share == 0 || longest > 2*modeWarmUp+ms {
		t.Errorf("concentrating 6ms against spreading 2ms: longest try %v (share %.4f), want tries, each given up after %v", longest, share, 2*modeWarmUp)
	}
	share, _ = runModes(60*time.Second, 2*ms, 2*ms)
	if share == 0 || share == 1 {
		t.Errorf("equal modes: concentrated %.2f of the time, want both modes tried", share)
	}
}
