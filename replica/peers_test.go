package replica

import (
	"math"
	"testing"
	"time"
)

// fronts counts, over n selections, which replica each put first; every
// selection is ended at once so the outstanding counts stay as set up.
func fronts(p Policy, n int, res Result) map[int]int {
	got := map[int]int{}
	for range n {
		r := p.Pick()
		got[r]++
		p.Done(r, res)
	}
	return got
}

func TestLowestPingToleranceRotatesWithinTheBand(t *testing.T) {
	clock := newFakeClock()
	p := newTestPolicy(t, 3, Config{Policy: PolicyLowestPingTolerance, PingTolerance: time.Millisecond, Now: clock.Now})
	// Unmeasured: the strict minimum (every latency zero: replica 0).
	if r := p.Pick(); r != 0 {
		t.Fatalf("unmeasured: picked %d, want 0 (strict minimum until measured)", r)
	}
	p.Done(0, Result{})
	clock.Advance(2 * DefaultPingRefresh)
	p.ObservePing(0, 2*time.Millisecond)
	p.ObservePing(1, 2500*time.Microsecond) // within 1 ms of the lowest
	p.ObservePing(2, 9*time.Millisecond)    // outside
	var seq []int
	for range 6 {
		r := p.Pick()
		seq = append(seq, r)
		p.Done(r, Result{Latency: time.Millisecond})
	}
	for i, r := range seq {
		if r == 2 {
			t.Fatalf("picks %v: replica 2 is 7 ms over the lowest, outside the 1 ms band", seq)
		}
		if i > 0 && r == seq[i-1] {
			t.Fatalf("picks %v: the two replicas in the band must alternate", seq)
		}
	}
	// Latencies are re-read only every PingRefresh.
	p.ObservePing(2, 0)
	p.ObservePing(2, 0)
	p.ObservePing(2, 0)
	p.ObservePing(2, 0)
	if got := fronts(p, 10, ok(time.Millisecond)); got[2] != 0 {
		t.Fatalf("before the refresh replica 2 got %d picks, want 0", got[2])
	}
	clock.Advance(DefaultPingRefresh)
	if got := fronts(p, 10, ok(time.Millisecond)); got[2] == 0 {
		t.Fatalf("after the refresh replica 2 (now the fastest) got no picks: %v", got)
	}
}

func TestLowestPingStrictStaysOnTheFastest(t *testing.T) {
	clock := newFakeClock()
	p := newTestPolicy(t, 3, Config{Policy: PolicyLowestPing, Now: clock.Now})
	p.ObservePing(0, 2*time.Millisecond)
	p.ObservePing(1, 2100*time.Microsecond)
	p.ObservePing(2, 9*time.Millisecond)
	if got := fronts(p, 20, ok(time.Millisecond)); got[0] != 20 {
		t.Fatalf("strict lowest-ping picks %v, want all 20 on replica 0", got)
	}
}

func TestPeakEWMAJumpsToPeaksAndDecays(t *testing.T) {
	clock := newFakeClock()
	p := newTestPolicy(t, 2, Config{Policy: PolicyPeakEWMA, DecayTime: 10 * time.Second, PeakRTT: 30 * time.Millisecond, Now: clock.Now})
	peak := p.(*selector).strategy.(*peakEWMAStrategy)
	rtt := func(r int) float64 { return peak.rtt[r] }
	if got := rtt(0); got != 0.030 {
		t.Fatalf("unmeasured estimate %v, want PeakRTT 0.030", got)
	}
	complete(p, 0, ok(50*time.Millisecond))
	if got := rtt(0); got != 0.050 {
		t.Fatalf("after a 50 ms sample the estimate is %v, want the peak 0.050 at once", got)
	}
	// 10 s later (one decay time) a 10 ms sample moves the estimate
	// 1 − e^(−elapsed/τ) of the way toward it.
	clock.Advance(10 * time.Second)
	complete(p, 0, ok(10*time.Millisecond))
	want := 0.050*math.Exp(-1) + 0.010*(1-math.Exp(-1))
	if got := rtt(0); math.Abs(got-want) > 1e-9 {
		t.Fatalf("estimate %v, want %v", got, want)
	}
	// Read without samples, it decays toward zero: another τ later, by e^−1.
	clock.Advance(10 * time.Second)
	p.Done(p.Pick(), Result{Latency: 0})
	if got := rtt(0); math.Abs(got-want*math.Exp(-1)) > 1e-9 {
		t.Fatalf("estimate after a read %v, want %v", got, want*math.Exp(-1))
	}
}

func TestPeakEWMACostCountsOutstanding(t *testing.T) {
	clock := newFakeClock()
	p := newTestPolicy(t, 2, Config{Policy: PolicyPeakEWMA, Now: clock.Now})
	peak := p.(*selector).strategy.(*peakEWMAStrategy)
	peak.rtt[0], peak.rtt[1] = 0.010, 0.004
	// Replica 1 is faster but has 3 in flight: cost 0.004 × 4 = 0.016 >
	// replica 0's 0.010 × 1. With two replicas both are always drawn.
	for range 3 {
		p.Start(1)
	}
	if got := fronts(p, 20, Result{Latency: 0}); got[0] != 20 {
		t.Fatalf("picks %v, want all on replica 0 (lower rtt × (outstanding+1))", got)
	}
}

func TestLeastRequestTwoChoicesWithReplacement(t *testing.T) {
	clock := newFakeClock()
	p := newTestPolicy(t, 3, Config{Policy: PolicyLeastRequest, Seed: 7, Now: clock.Now})
	p.Start(0)
	p.Start(0)
	p.Start(1)
	// Replica 0 (2 active) wins only when drawn twice: 1/9. Replica 2
	// (idle) wins whenever it is drawn: 5/9. Replica 1: 3/9.
	const n = 9000
	got := fronts(p, n, ok(time.Millisecond))
	for r, want := range []float64{1.0 / 9, 3.0 / 9, 5.0 / 9} {
		share := float64(got[r]) / n
		if math.Abs(share-want) > 0.03 {
			t.Errorf("replica %d share %.3f, want %.3f (picks %v)", r, share, want, got)
		}
	}
}

func TestC3ConcentrateKeepsOneHomeAndLeavesAStalledOne(t *testing.T) {
	clock := newFakeClock()
	p := newTestPolicy(t, 3, Config{Policy: PolicyC3, Concentrate: true, SlowFactor: 10, Now: clock.Now})
	for r := range 3 {
		complete(p, r, ok(2*time.Millisecond))
	}
	p.ObservePing(0, 900*time.Microsecond)
	p.ObservePing(1, 300*time.Microsecond) // home: lowest ping
	p.ObservePing(2, 700*time.Microsecond)
	// Reads stay in flight: C3 alone would spread them by q̂³.
	for i := range 30 {
		if r := p.Pick(); r != 1 {
			t.Fatalf("read %d went to %d, want every read on the home replica 1", i, r)
		}
	}
	// The home answers nothing for 50 ms, 25× the others' response time,
	// while replica 0 still answers: it is ejected and the next read goes
	// elsewhere.
	clock.Advance(50 * time.Millisecond)
	complete(p, 0, ok(2*time.Millisecond))
	r := p.Pick()
	if r == 1 {
		t.Fatalf("after a 50 ms stall the read still went to the home replica 1")
	}
	if s := statsOf(p, 1); !s.EjectedUntil.After(clock.Now()) {
		t.Fatalf("stalled home not ejected: %+v", s)
	}
	if r2 := p.Pick(); r2 != r {
		t.Fatalf("the new home is %d, then %d: want one home", r, r2)
	}
	// Every read ends; the ejection (1 s) ends. Replica 1 still has the
	// lowest ping but was ejected recently: it does not become home again
	// until 10 × EjectTime after its ejection ended.
	s := p.(*selector)
	for r := range 3 {
		for s.replicas[r].outstanding > 0 {
			p.Done(r, ok(2*time.Millisecond))
		}
	}
	clock.Advance(2 * time.Second)
	if r := p.Pick(); r == 1 {
		t.Fatalf("a replica ejected 1 s ago became home again")
	} else {
		p.Done(r, ok(2*time.Millisecond))
	}
	clock.Advance(10 * time.Second)
	if r := p.Pick(); r != 1 {
		t.Fatalf("11 s after its ejection ended the lowest-ping replica 1 is not home (got %d)", r)
	}
}

func TestC3PeakCostRanksByPeakLatencyTimesLoadAndStillEjects(t *testing.T) {
	clock := newFakeClock()
	p := newTestPolicy(t, 3, Config{Policy: PolicyC3, PeakCost: true, SlowFactor: 10, Now: clock.Now})
	complete(p, 0, ok(10*time.Millisecond))
	complete(p, 1, ok(4*time.Millisecond))
	complete(p, 2, ok(4*time.Millisecond))
	// Replica 2 stops answering: 150 ms without a reply, over 10 × the
	// lowest latency (4 ms), so it is ejected. Replica 1 has 3 in flight:
	// cost 4 ms × 4 = 16 ms > replica 0's 10 ms.
	p.Start(2)
	clock.Advance(150 * time.Millisecond)
	complete(p, 0, ok(10*time.Millisecond)) // the others still answer
	for range 3 {
		p.Start(1)
	}
	// The silent replica stays in the two-choice draw and loses it: replica
	// 0 wins the pairs it is in (about 2/3), replica 1 the pair it meets
	// the silent one in.
	var first [3]int
	for range 300 {
		order := p.Select(nil)
		p.Done(order[0], ok(10*time.Millisecond))
		first[order[0]]++
		if order[2] != 2 {
			t.Fatalf("order %v, want the silent replica 2 last", order)
		}
	}
	if first[2] != 0 || first[0] < 150 || first[1] < 50 {
		t.Fatalf("first choices %v of 300, want replica 0 (lowest peak × (outstanding+1)) about 2/3, replica 1 about 1/3, the silent replica 2 never", first)
	}
	if s := statsOf(p, 2); !s.EjectedUntil.After(clock.Now()) {
		t.Fatalf("silent replica 2 not ejected: %+v", s)
	}
}

func TestC3DoesNotEjectWhenTheWholeHostStalls(t *testing.T) {
	clock := newFakeClock()
	p := newTestPolicy(t, 3, Config{Policy: PolicyC3, PeakCost: true, SlowFactor: 10, Now: clock.Now})
	for r := range 3 {
		complete(p, r, ok(2*time.Millisecond))
	}
	// Replica 2 has a read in flight and, like every replica, answers
	// nothing for 300 ms: this process was not scheduled, no server is
	// to blame.
	p.Start(2)
	clock.Advance(300 * time.Millisecond)
	p.Done(p.Pick(), ok(time.Millisecond))
	for r, s := range p.Snapshot(nil) {
		if !s.EjectedUntil.IsZero() {
			t.Fatalf("replica %d ejected after a stall of the whole host: %+v", r, s)
		}
	}
}
