package replica

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestC3RankFormula(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name        string
		r, s        time.Duration
		q           float64
		os, clients int
		want        float64 // seconds
	}{
		// q̂ = 1: the service terms cancel, Ψ = R.
		{"idle", 5 * ms, 2 * ms, 0, 0, 1, 0.005},
		// q̂ = 1 + 0 + 2 = 3: Ψ = R − S + 27·S = R + 26·S.
		{"queue", 5 * ms, 2 * ms, 2, 0, 1, 0.005 + 26*0.002},
		// q̂ = 1 + 2·3 + 0 = 7: Ψ = R + 342·S.
		{"outstanding times clients", 1 * ms, 1 * ms, 0, 2, 3, 0.001 + 342*0.001},
		// q̂ = 1 + 1·1 + 0.5 = 2.5: Ψ = R + (15.625 − 1)·S.
		{"fractional queue", 3 * ms, 1 * ms, 0.5, 1, 1, 0.003 + 14.625*0.001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := C3Rank(tt.r, tt.s, tt.q, tt.os, tt.clients)
			if math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("C3Rank(R=%s, S=%s, q=%v, os=%d, n=%d) = %v, want %v", tt.r, tt.s, tt.q, tt.os, tt.clients, got, tt.want)
			}
		})
	}
}

// A longer service time means a lower service rate and must rank worse. The
// inverted formula (service time where the rate belongs) ranks it better;
// this test pins the direction.
func TestC3LongerServiceTimeRanksWorse(t *testing.T) {
	ms := time.Millisecond
	for _, q := range []float64{0.5, 1, 2, 10} {
		short := C3Rank(4*ms, 1*ms, q, 0, 1)
		long := C3Rank(4*ms, 5*ms, q, 0, 1)
		if long <= short {
			t.Errorf("q=%v: rank with service time 5ms = %v, with 1ms = %v; want the longer service time to rank worse", q, long, short)
		}
		inverted := func(s float64) float64 { // R − 1/S + q̂³/S: the bug
			qHat := 1 + q
			return 0.004 - 1/s + qHat*qHat*qHat/s
		}
		if inverted(0.005) >= inverted(0.001) {
			t.Errorf("q=%v: the inverted formula should prefer the slow replica (that is the bug this test guards against)", q)
		}
	}

	// Through the policy: replica 0 has the longer service time, equal R and
	// queue; replica 1 must come first although ties would favor replica 0.
	clock := newFakeClock()
	p := newTestPolicy(t, 2, Config{Now: clock.Now})
	complete(p, 0, okWithServer(4*ms, 5*ms, 2))
	complete(p, 1, okWithServer(4*ms, 1*ms, 2))
	order := p.Select(nil)
	if order[0] != 1 {
		t.Fatalf("Select = %v, want replica 1 (service time 1ms) before replica 0 (5ms)", order)
	}
}

func TestEWMAAlpha(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		alpha   float64
		samples []time.Duration
		want    time.Duration
	}{
		{0.3, []time.Duration{10 * ms}, 10 * ms},                     // the first sample sets the value
		{0.3, []time.Duration{10 * ms, 20 * ms}, 13 * ms},            // 10 + 0.3·10
		{0.3, []time.Duration{10 * ms, 20 * ms, 0}, 9100_000},        // 13 − 0.3·13 = 9.1ms
		{0.5, []time.Duration{10 * ms, 20 * ms, 30 * ms}, 22500_000}, // 15, then 22.5
		{1, []time.Duration{10 * ms, 20 * ms, 7 * ms}, 7 * ms},       // alpha 1 keeps the last
	}
	for _, tt := range tests {
		p := newTestPolicy(t, 1, Config{Alpha: tt.alpha, Now: newFakeClock().Now})
		for _, s := range tt.samples {
			complete(p, 0, ok(s))
		}
		if got := statsOf(p, 0).ResponseTime; !almostEqual(got, tt.want) {
			t.Errorf("alpha %v, samples %v: R = %s, want %s", tt.alpha, tt.samples, got, tt.want)
		}
	}
}

func TestServerStatsFromReplyOrSampler(t *testing.T) {
	ms := time.Millisecond
	p := newTestPolicy(t, 1, Config{Now: newFakeClock().Now})

	p.ObserveServer(0, 2*ms, 3)
	complete(p, 0, ok(5*ms)) // reply without server stats: the sampled values stand
	st := statsOf(p, 0)
	if !almostEqual(st.ServiceTime, 2*ms) || st.QueueLen != 3 || !almostEqual(st.ResponseTime, 5*ms) {
		t.Fatalf("after sampler and plain reply: S=%s q=%v R=%s, want S=2ms q=3 R=5ms", st.ServiceTime, st.QueueLen, st.ResponseTime)
	}

	// A reply with only a service time (OpenSearch "took") updates only µ̄.
	complete(p, 0, Result{Latency: 5 * ms, ServiceTime: 4 * ms, HasServiceTime: true})
	st = statsOf(p, 0)
	if !almostEqual(st.ServiceTime, 2600*time.Microsecond) || st.QueueLen != 3 {
		t.Fatalf("after reply with service time 4ms: S=%s q=%v, want S=2.6ms q=3", st.ServiceTime, st.QueueLen)
	}

	// The sampler keeps feeding the same EWMAs.
	p.ObserveServer(0, 2600*time.Microsecond, 13)
	st = statsOf(p, 0)
	if !almostEqual(st.ServiceTime, 2600*time.Microsecond) || math.Abs(st.QueueLen-6) > 1e-9 {
		t.Fatalf("after second sample: S=%s q=%v, want S=2.6ms q=6", st.ServiceTime, st.QueueLen)
	}
	wantRank := C3Rank(5*ms, 2600*time.Microsecond, 6, 0, 1)
	if math.Abs(st.Rank-wantRank) > 1e-12 {
		t.Fatalf("snapshot rank = %v, want %v", st.Rank, wantRank)
	}
}

// Each selection pulls the losers one EWMA step toward the mean of their
// stats and the winner's (Elasticsearch adjustStats).
func TestC3PullsLosersTowardWinner(t *testing.T) {
	ms := time.Millisecond
	p := newTestPolicy(t, 3, Config{Now: newFakeClock().Now})
	complete(p, 0, okWithServer(1*ms, 1*ms, 0))
	complete(p, 1, okWithServer(9*ms, 5*ms, 4))

	// Replica 2 has no stats: it is probed first, and a probe pulls nothing.
	if got := p.Select(nil); got[0] != 2 {
		t.Fatalf("first Select = %v, want the new replica 2 probed first", got)
	}
	if st := statsOf(p, 1); !almostEqual(st.ResponseTime, 9*ms) {
		t.Fatalf("after a probe selection, loser R = %s, want unchanged 9ms", st.ResponseTime)
	}
	if got := p.Select(nil); got[0] != 0 {
		t.Fatalf("second Select = %v, want replica 0 first", got)
	}
	st := statsOf(p, 1)
	// R: 9 + 0.3·((9+1)/2 − 9) = 7.8ms; S: 5 + 0.3·(3 − 5) = 4.4ms; q: 4 + 0.3·(2 − 4) = 3.4.
	if !almostEqual(st.ResponseTime, 7800*time.Microsecond) || !almostEqual(st.ServiceTime, 4400*time.Microsecond) || math.Abs(st.QueueLen-3.4) > 1e-9 {
		t.Errorf("loser after one selection: R=%s S=%s q=%v, want R=7.8ms S=4.4ms q=3.4", st.ResponseTime, st.ServiceTime, st.QueueLen)
	}
	if st := statsOf(p, 0); !almostEqual(st.ResponseTime, 1*ms) {
		t.Errorf("winner R = %s, want unchanged 1ms", st.ResponseTime)
	}
	if st := statsOf(p, 2); st.HasStats {
		t.Errorf("replica 2 without stats got stats from the pull: %+v", st)
	}
}

// A replica without stats is tried first but gets at most ProbeLimit
// requests in flight, however many requests arrive before its first reply.
func TestC3ProbesNewReplicaWithoutFlooding(t *testing.T) {
	ms := time.Millisecond
	for _, limit := range []int{1, 2, 3} {
		p := newTestPolicy(t, 3, Config{ProbeLimit: limit, Now: newFakeClock().Now})
		complete(p, 0, okWithServer(5*ms, 5*ms, 0))
		complete(p, 1, okWithServer(5*ms, 5*ms, 0))

		var picks [3]int
		order := make([]int, 0, 3)
		for i := range 20 {
			order = p.Select(order)
			picks[order[0]]++
			if i < limit && order[0] != 2 {
				t.Fatalf("limit %d: request %d went to %d, want the new replica 2 probed first", limit, i, order[0])
			}
			if len(order) != 3 {
				t.Fatalf("limit %d: Select returned %v, want all 3 replicas", limit, order)
			}
		}
		if picks[2] != limit {
			t.Errorf("limit %d: new replica got %d concurrent requests, want exactly %d (picks %v)", limit, picks[2], limit, picks)
		}
		if st := statsOf(p, 2); st.Outstanding != limit {
			t.Errorf("limit %d: outstanding on new replica = %d, want %d", limit, st.Outstanding, limit)
		}

		// Once a probe answers, the replica is ranked like the others.
		p.Done(2, okWithServer(1*ms, 1*ms, 0))
		if st := statsOf(p, 2); !st.HasStats {
			t.Fatalf("limit %d: replica 2 has no stats after a reply", limit)
		}
	}
}

// Stats lag during a burst: no reply has arrived yet, so R, µ̄ and q are the
// same for all. The outstanding-requests term must spread the burst instead of
// piling it onto the replica that looked best when it started.
func TestC3SpreadsBurstAcrossEqualReplicas(t *testing.T) {
	ms := time.Millisecond
	newWarm := func(name PolicyName) Policy {
		p := newTestPolicy(t, 3, Config{Policy: name, Now: newFakeClock().Now})
		for r := range 3 {
			complete(p, r, okWithServer(2*ms, 2*ms, 0))
		}
		return p
	}
	burst := func(p Policy) [3]int {
		var picks [3]int
		for range 30 {
			picks[p.Pick()]++
		}
		return picks
	}

	if got := burst(newWarm(PolicyC3)); got != [3]int{10, 10, 10} {
		t.Errorf("C3 burst of 30 over 3 equal replicas: picks %v, want [10 10 10]", got)
	}
	// The baseline that ranks by latency only sends the whole burst to one.
	got := burst(newWarm(PolicyLowestPing))
	if slices.Max(got[:]) != 30 {
		t.Errorf("lowest-ping burst: picks %v, want all 30 on one replica (the flaw C3 avoids)", got)
	}

	// With a 3x slower replica among them, the fast two take the first
	// requests; once they have one outstanding each ((1+1)³ = 8x their
	// service time) the slow one is used too, and the burst spreads.
	p := newTestPolicy(t, 3, Config{Now: newFakeClock().Now})
	complete(p, 0, okWithServer(2*ms, 2*ms, 0))
	complete(p, 1, okWithServer(2*ms, 2*ms, 0))
	complete(p, 2, okWithServer(6*ms, 6*ms, 0))
	var picks [3]int
	for i := range 9 {
		r := p.Pick()
		picks[r]++
		if i < 2 && r == 2 {
			t.Errorf("burst with replica 2 3x slower: pick %d went to replica 2, want a fast one first", i)
		}
	}
	t.Logf("burst of 9 with replica 2 3x slower: picks %v", picks)
	if picks[2] == 0 || picks[2] > picks[0] || picks[2] > picks[1] {
		t.Errorf("burst of 9 with replica 2 3x slower: picks %v, want replica 2 used, and not more than each fast one", picks)
	}
}

func TestC3FailurePenalizesAndBacksOff(t *testing.T) {
	ms := time.Millisecond
	clock := newFakeClock()
	// Strict argmin, so the whole order is Ψ's.
	p := newTestPolicy(t, 3, Config{BestOfAll: true, Tolerance: -1, ErrorPenalty: 200 * ms, ErrorBackoff: 100 * ms, MaxErrorBackoff: 350 * ms, Now: clock.Now})
	complete(p, 0, ok(1*ms))
	complete(p, 1, ok(2*ms))
	complete(p, 2, ok(3*ms))

	order := p.Select(nil)
	if !slices.Equal(order, []int{0, 1, 2}) {
		t.Fatalf("Select = %v, want [0 1 2]", order)
	}
	p.Done(0, Result{Latency: 1 * ms, Failed: true})

	st := statsOf(p, 0)
	// R: 1 + 0.3·(200 − 1) = 60.7ms (the fast error counts as ErrorPenalty).
	if !almostEqual(st.ResponseTime, 60700*time.Microsecond) || st.Failures != 1 {
		t.Fatalf("after failure: R=%s failures=%d, want R=60.7ms failures=1", st.ResponseTime, st.Failures)
	}
	if want := clock.Now().Add(100 * ms); !st.BackoffUntil.Equal(want) {
		t.Fatalf("BackoffUntil = %v, want %v", st.BackoffUntil, want)
	}

	// The failed replica is skipped: last in the order, but still there for
	// a caller that runs out of replicas.
	buf := make([]int, 0, 3)
	for _, wantFirst := range []int{1, 1, 1} {
		buf = p.Select(buf)
		if buf[0] != wantFirst || buf[2] != 0 {
			t.Fatalf("during backoff Select = %v, want replica 0 last", buf)
		}
		p.Done(buf[0], ok(2*ms))
	}

	// Consecutive failures double the backoff up to MaxErrorBackoff.
	for _, want := range []time.Duration{200 * ms, 350 * ms, 350 * ms} {
		complete(p, 0, Result{Latency: 1 * ms, Failed: true})
		if got := statsOf(p, 0).BackoffUntil.Sub(clock.Now()); got != want {
			t.Errorf("backoff after consecutive failure = %s, want %s", got, want)
		}
	}
	clock.Advance(349 * ms)
	if order := p.Select(buf); order[2] != 0 {
		t.Errorf("1ms before backoff ends: Select = %v, want replica 0 last", order)
	}
	p.Done(1, ok(2*ms))

	// After the backoff, the penalty in R still keeps it behind the others.
	clock.Advance(1 * ms)
	if order := p.Select(buf); order[0] == 0 {
		t.Errorf("right after backoff: Select = %v, want the penalized replica 0 not first", order)
	} else {
		p.Done(order[0], ok(2*ms))
	}

	// A success clears the backoff and the failure streak.
	complete(p, 0, ok(1*ms))
	complete(p, 0, Result{Latency: 1 * ms, Failed: true})
	if got := statsOf(p, 0).BackoffUntil.Sub(clock.Now()); got != 100*ms {
		t.Errorf("backoff after a success then a failure = %s, want the base 100ms", got)
	}
}

// The wrapper's retry loop: replica 0 (the best) fails, the caller falls
// through to the next-best, and the counters balance.
func TestSelectOrderSupportsRetry(t *testing.T) {
	ms := time.Millisecond
	clock := newFakeClock()
	p := newTestPolicy(t, 3, Config{Now: clock.Now})
	complete(p, 0, ok(1*ms))
	complete(p, 1, ok(2*ms))
	complete(p, 2, ok(3*ms))

	down := map[int]bool{0: true}
	var served []int
	buf := make([]int, 0, 3)
	for range 5 {
		order := p.Select(buf)
		for i, r := range order {
			if i > 0 {
				p.Start(r)
			}
			if down[r] {
				p.Done(r, Result{Latency: 1 * ms, Failed: true})
				continue
			}
			p.Done(r, ok(2*ms))
			served = append(served, r)
			break
		}
		clock.Advance(10 * ms)
	}
	if len(served) != 5 || slices.Contains(served, 0) {
		t.Fatalf("served by %v, want 5 requests none on the failing replica 0", served)
	}
	snap := p.Snapshot(nil)
	if snap[0].Failures != 1 {
		t.Errorf("replica 0 failures = %d, want 1 (tried once, then skipped while backing off)", snap[0].Failures)
	}
	for _, st := range snap {
		if st.Outstanding != 0 {
			t.Errorf("replica %d outstanding = %d after all requests ended, want 0", st.Replica, st.Outstanding)
		}
	}
}

// With PullInterval, losers are pulled on the first selection and then not
// again until the interval has passed on the clock.
func TestC3PullIntervalSpacesPulls(t *testing.T) {
	ms := time.Millisecond
	clock := newFakeClock()
	p := newTestPolicy(t, 2, Config{PullInterval: 100 * ms, Now: clock.Now})
	complete(p, 0, okWithServer(1*ms, 1*ms, 0))
	complete(p, 1, okWithServer(9*ms, 5*ms, 0))
	pick := func() {
		r := p.Pick()
		if r != 0 {
			t.Fatalf("Pick = %d, want the fast replica 0", r)
		}
		p.Done(r, okWithServer(1*ms, 1*ms, 0))
	}
	pick() // pulls: R of replica 1 = 9 + 0.3·(5 − 9) = 7.8ms
	if st := statsOf(p, 1); !almostEqual(st.ResponseTime, 7800*time.Microsecond) {
		t.Fatalf("after the first selection loser R = %s, want 7.8ms", st.ResponseTime)
	}
	for range 50 {
		pick()
	}
	clock.Advance(99 * ms)
	pick()
	if st := statsOf(p, 1); !almostEqual(st.ResponseTime, 7800*time.Microsecond) {
		t.Fatalf("51 selections within 99ms: loser R = %s, want still 7.8ms", st.ResponseTime)
	}
	clock.Advance(1 * ms)
	pick() // 100ms after the first pull: R = 7.8 + 0.3·((7.8+1)/2 − 7.8) = 6.78ms
	if st := statsOf(p, 1); !almostEqual(st.ResponseTime, 6780*time.Microsecond) {
		t.Fatalf("after the interval loser R = %s, want 6.78ms", st.ResponseTime)
	}
	if err := (Config{PullInterval: -ms}).Validate(); err == nil || !strings.Contains(err.Error(), "PullInterval") {
		t.Fatalf("negative PullInterval: %v, want an error naming PullInterval", err)
	}
}

// Replicas whose ranks are within Tolerance of the best take turns; strict
// argmin (negative Tolerance) sends everything to the lowest rank. A
// replica outside the band is never chosen while the others are idle.
func TestC3ToleranceRotatesAmongNearEqual(t *testing.T) {
	ms := time.Millisecond
	results := []Result{okWithServer(2*ms, 2*ms, 0), okWithServer(2200*time.Microsecond, 2200*time.Microsecond, 0), okWithServer(6*ms, 6*ms, 0)}
	run := func(tolerance float64) [3]int {
		// An hour between pulls: the stats stay as set after the first.
		p := newTestPolicy(t, 3, Config{BestOfAll: true, Tolerance: tolerance, PullInterval: time.Hour, Now: newFakeClock().Now})
		for r, res := range results {
			complete(p, r, res)
		}
		var picks [3]int
		for range 10 {
			r := p.Pick()
			picks[r]++
			p.Done(r, results[r])
		}
		return picks
	}
	if got := run(-1); got != [3]int{10, 0, 0} {
		t.Errorf("strict argmin: picks %v, want [10 0 0]", got)
	}
	if got := run(0.25); got != [3]int{5, 5, 0} {
		t.Errorf("tolerance 0.25 (replica 1 ranks 10%% worse, replica 2 3x worse): picks %v, want [5 5 0]", got)
	}
	if err := (Config{Tolerance: math.NaN()}).Validate(); err == nil || !strings.Contains(err.Error(), "Tolerance") {
		t.Errorf("Tolerance NaN: %v, want an error naming Tolerance", err)
	}
}

// A replica whose response time is over SlowFactor × the typical one is ejected
// (ranked last) although its short backlog gives it the best Ψ (a throttled
// Redis: tiny service time, long stalls). When the ejection ends it is
// tried on fresh samples; stalling again ejects it for twice as long.
func TestC3SlowFactorEjectsStalledReplica(t *testing.T) {
	us := time.Microsecond
	ms := time.Millisecond
	setup := func(slowFactor float64) (Policy, *fakeClock) {
		clock := newFakeClock()
		// Strict argmin, so that who wins among the others is Ψ's call.
		p := newTestPolicy(t, 3, Config{BestOfAll: true, Tolerance: -1, SlowFactor: slowFactor, EjectTime: 250 * ms, PullInterval: time.Hour, Now: clock.Now})
		complete(p, 0, okWithServer(30*ms, 20*us, 0))
		complete(p, 1, okWithServer(5*ms, 20*us, 0))
		complete(p, 2, okWithServer(5*ms, 20*us, 0))
		for range 15 { // 15 in flight on each healthy one: q̂³·S = 4096·20µs ≈ 82ms
			p.Start(1)
			p.Start(2)
		}
		return p, clock
	}
	if p, _ := setup(0); p.Select(nil)[0] != 0 {
		t.Fatalf("SlowFactor off: want the stalled replica 0 first by Ψ (the flaw), got %v", p.Select(nil))
	}
	p, clock := setup(3)
	// advance moves the clock while replicas 1 and 2 keep answering, so
	// only replica 0 can look stalled.
	advance := func(d time.Duration) {
		clock.Advance(d)
		for _, r := range []int{1, 2} {
			p.Done(r, okWithServer(5*ms, 20*us, 0))
			p.Start(r)
		}
	}
	order := p.Select(nil)
	p.Done(order[0], okWithServer(5*ms, 20*us, 0))
	if order[2] != 0 {
		t.Fatalf("replica 0 R = 30ms vs 5ms: order %v, want replica 0 last", order)
	}
	if st := statsOf(p, 0); st.EjectedUntil.IsZero() || st.Ejections != 1 || st.SlowEjections != 1 || st.SilentEjections != 0 {
		t.Fatalf("replica 0 stats: ejected until %v, ejections %d (slow %d, silent %d); want one ejection for its response time", st.EjectedUntil, st.Ejections, st.SlowEjections, st.SilentEjections)
	}
	advance(200 * ms)
	if r := p.Pick(); r == 0 {
		t.Fatal("replica 0 chosen 200ms into a 250ms ejection")
	} else {
		p.Done(r, okWithServer(5*ms, 20*us, 0))
	}
	advance(100 * ms)
	if r := p.Pick(); r != 0 {
		t.Fatalf("after its ejection replica 0 (R reset, nothing in flight) should win on Ψ; got %d", r)
	}
	// Replica 0 holds that request for 20ms without answering: over 3 × 5ms.
	advance(20 * ms)
	if r := p.Pick(); r == 0 {
		t.Fatal("replica 0 stalled 20ms (> 3 × 5ms) and was chosen again")
	} else {
		p.Done(r, okWithServer(5*ms, 20*us, 0))
	}
	p.Done(0, okWithServer(20*ms, 20*us, 0))
	if st := statsOf(p, 0); st.SilentEjections != 1 || st.SlowEjections != 1 {
		t.Fatalf("replica 0: slow %d, silent %d ejections; want the second one counted as silent", st.SlowEjections, st.SilentEjections)
	}
	// The second ejection lasts 500ms.
	advance(400 * ms)
	if r := p.Pick(); r == 0 {
		t.Fatal("replica 0 chosen 400ms into its second (500ms) ejection")
	} else {
		p.Done(r, okWithServer(5*ms, 20*us, 0))
	}
	advance(150 * ms)
	if r := p.Pick(); r != 0 {
		t.Fatalf("replica 0 not tried again after its second ejection; got %d", r)
	}
}

// MinSilence is a floor under the silence that ejects: a replica silent
// for 20ms, over 10 × the typical 1ms, stays in while MinSilence is 50ms,
// and is ejected once its silence passes 50ms.
func TestC3MinSilenceFloorsTheSilenceThatEjects(t *testing.T) {
	ms := time.Millisecond
	clock := newFakeClock()
	p := newTestPolicy(t, 3, Config{PeakCost: true, SlowFactor: 10, MinSilence: 50 * ms, PullInterval: time.Hour, Now: clock.Now})
	for r := range 3 {
		complete(p, r, ok(ms))
	}
	p.Start(0) // replica 0 holds a read and answers nothing
	step := func(d time.Duration) {
		clock.Advance(d)
		for _, r := range []int{1, 2} { // the others keep answering
			complete(p, r, ok(ms))
		}
		p.Done(p.Pick(), ok(ms))
	}
	step(20 * ms)
	if st := statsOf(p, 0); !st.EjectedUntil.IsZero() {
		t.Fatalf("replica 0 silent 20ms (under MinSilence 50ms) was ejected")
	}
	step(40 * ms)
	if st := statsOf(p, 0); st.EjectedUntil.IsZero() || st.SilentEjections != 1 {
		t.Fatalf("replica 0 silent 60ms: ejected until %v, silent ejections %d; want one silent ejection", st.EjectedUntil, st.SilentEjections)
	}
}

// A replica back from an ejection is on probation for ProbationTime: it
// takes one read at a time (ProbeLimit), timely answers do not end that
// early, and a slow answer ejects it again for twice as long.
func TestC3ProbationAfterAnEjection(t *testing.T) {
	ms := time.Millisecond
	p, clock := newEjectingPolicy(t)
	ejectBySilence(p, clock, 1)
	if st := statsOf(p, 0); st.SilentEjections != 1 {
		t.Fatalf("replica 0: silent ejections %d, want 1", st.SilentEjections)
	}
	clock.Advance(300 * ms) // the ejection ends
	if n := burstOnZero(p, 300); n != 1 {
		t.Fatalf("replica 0 on probation got %d reads in flight, want 1 (ProbeLimit)", n)
	}
	if st := statsOf(p, 0); !st.Probation {
		t.Fatal("replica 0 not on probation after its ejection ended")
	}
	p.Done(0, ok(80*ms)) // a slow probe: over 50ms
	if st := statsOf(p, 0); st.Probation || st.EjectedUntil.Sub(clock.Now()) != 500*ms || st.SlowEjections != 1 {
		t.Fatalf("after a slow probe: probation %t, ejected for %v, slow ejections %d; want ejected again for 500ms", st.Probation, st.EjectedUntil.Sub(clock.Now()), st.SlowEjections)
	}
	clock.Advance(600 * ms)
	if n := burstOnZero(p, 300); n != 1 {
		t.Fatalf("replica 0 on its second probation got %d reads in flight, want 1", n)
	}
	p.Done(0, ok(2*ms)) // a timely probe does not end the probation
	if n := burstOnZero(p, 300); n != 1 {
		t.Fatalf("replica 0 on probation after a timely probe got %d reads in flight, want 1", n)
	}
	p.Done(0, ok(2*ms))
	clock.Advance(260 * ms) // past ProbationTime (EjectTime, 250ms)
	if st := statsOf(p, 0); st.Probation {
		t.Fatal("replica 0 still on probation after ProbationTime")
	}
	// Its in-flight cap, 1, doubles after each step it was full
	// (TestC3InFlightCapAfterAnEjection).
	for _, want := range []int{1, 2, 4} {
		n := burstOnZero(p, 300)
		if n != want {
			t.Fatalf("replica 0 after its probation got %d reads in flight, want %d", n, want)
		}
		for range n {
			p.Done(0, ok(2*ms))
		}
		clock.Advance(30 * ms)
	}
}

// On probation a replica takes ProbeLimit reads at a time for its trial (a
// tenth of ProbationTime), then doubles that with every answer in time, up
// to its in-flight cap (half the 16 it held when ejected): a replica that
// was only stopped for a moment is back at its share within a few round
// trips, not after the whole probation. A slow answer still ejects it.
func TestC3ProbationStartsSlowAndDoublesUpToTheCap(t *testing.T) {
	ms := time.Millisecond
	p, clock := newEjectingPolicy(t)
	ejectBySilence(p, clock, 16)
	clock.Advance(300 * ms) // the ejection ends: probation
	for range 3 {
		n := burstOnZero(p, 300)
		if n != 1 {
			t.Fatalf("on trial: replica 0 took %d reads at once, want 1 however timely its answers", n)
		}
		p.Done(0, ok(2*ms))
	}
	clock.Advance(30 * ms) // past the trial, 25ms
	for _, want := range []int{1, 2, 8, 8} {
		n := burstOnZero(p, 300)
		if n != want {
			t.Fatalf("on probation: replica 0 took %d reads at once, want %d (1, doubled by each answer in time, up to the cap 8)", n, want)
		}
		for range n {
			p.Done(0, ok(2*ms))
		}
	}
	if st := statsOf(p, 0); !st.Probation || st.InFlightCap != 8 {
		t.Fatalf("probation %t, cap %d; want still on probation (250ms), cap 8", st.Probation, st.InFlightCap)
	}
	burstOnZero(p, 300)
	p.Done(0, ok(80*ms)) // a slow answer: over 50ms
	if st := statsOf(p, 0); st.Probation || st.EjectedUntil.IsZero() || st.SlowEjections != 1 {
		t.Fatalf("after a slow answer on probation: probation %t, ejected until %v, slow ejections %d; want ejected again", st.Probation, st.EjectedUntil, st.SlowEjections)
	}
}

// When every replica stalls at once (this client paused, not a server) no
// replica is an outlier: Ψ decides as usual.
func TestC3SlowFactorIgnoresStallsOfEveryReplica(t *testing.T) {
	ms := time.Millisecond
	clock := newFakeClock()
	p := newTestPolicy(t, 3, Config{BestOfAll: true, Tolerance: -1, SlowFactor: 3, PullInterval: time.Hour, Now: clock.Now})
	for r := range 3 {
		complete(p, r, ok(time.Duration(r+1)*ms))
		p.Start(r)
	}
	clock.Advance(time.Second)
	if order := p.Select(nil); order[0] != 0 || order[2] != 2 {
		t.Fatalf("order %v, want Ψ order 0, 1, 2 (no ejection)", order)
	}
}

// Under load the replica with the fewest reads in flight answers in a
// fraction of the others' time. That is no outlier: the slow factor is
// judged against the typical (lower median) replica, not the fastest, so
// healthy replicas stay in, and a slow one is still ejected. With PeakCost
// no replica is ejected for its response time: the cost steers reads away
// from the slow one instead.
func TestC3SlowFactorJudgesAgainstTheTypicalReplica(t *testing.T) {
	us, ms := time.Microsecond, time.Millisecond
	// Replica 0 answered its one read in 200µs; replicas 1 and 2, with
	// about 50 reads in flight each, in 3ms (15 × 200µs); replica 3 in 60ms.
	latency := []time.Duration{200 * us, 3 * ms, 3 * ms, 60 * ms}
	setup := func(peakCost bool) Policy {
		p := newTestPolicy(t, 4, Config{PeakCost: peakCost, SlowFactor: 10, PullInterval: time.Hour, Now: newFakeClock().Now})
		for r, l := range latency {
			complete(p, r, ok(l))
		}
		return p
	}
	p := setup(false)
	p.Done(p.Pick(), ok(200*us))
	for r, st := range p.Snapshot(nil) {
		switch ejected := !st.EjectedUntil.IsZero(); {
		case r == 3 && (!ejected || st.SlowEjections != 1):
			t.Errorf("slow replica 3 (R 60ms against a typical 3ms): ejected %t, slow ejections %d; want ejected once", ejected, st.SlowEjections)
		case r != 3 && ejected:
			t.Errorf("healthy replica %d (R %v, the fastest 200µs, typical 3ms): ejected; want it kept", r, latency[r])
		}
	}
	p = setup(true)
	var onSlow int
	for range 400 {
		r := p.Pick()
		if r == 3 {
			onSlow++
		}
		p.Done(r, ok(latency[r]))
	}
	for r, st := range p.Snapshot(nil) {
		if !st.EjectedUntil.IsZero() {
			t.Errorf("PeakCost: replica %d ejected (slow %d, silent %d); want no ejection for response time", r, st.SlowEjections, st.SilentEjections)
		}
	}
	if onSlow > 20 {
		t.Errorf("PeakCost: the 60ms replica got %d of 400 reads; want few (the cost steers away from it)", onSlow)
	}
}

// By default (two random choices) the worst of three ranked replicas never wins (it always
// meets a better one), the best wins in about two draws of three and the
// middle one in about one.
func TestC3TwoChoices(t *testing.T) {
	ms := time.Millisecond
	p := newTestPolicy(t, 3, Config{PullInterval: time.Hour, Now: newFakeClock().Now, Seed: 7})
	latency := []time.Duration{1 * ms, 2 * ms, 3 * ms}
	for r := range 3 {
		complete(p, r, ok(latency[r]))
	}
	const n = 3000
	wins := countWins(p, n, latency)
	if wins[2] != 0 {
		t.Errorf("the worst replica won %d of %d", wins[2], n)
	}
	if share := float64(wins[0]) / n; share < 0.6 || share > 0.73 {
		t.Errorf("the best replica won %.3f of the draws, want about 2/3 (wins %v)", share, wins)
	}
}

// countWins runs n reads, each answered in its replica's latency, and
// counts the reads each replica won.
func countWins(p Policy, n int, latency []time.Duration) []int {
	wins := make([]int, len(latency))
	for range n {
		r := p.Pick()
		wins[r]++
		p.Done(r, ok(latency[r]))
	}
	return wins
}

// With one of three replicas ejected, the other two still share the reads
// as the two-choice draw over three gives: the ejected replica stays in the
// draw and loses it, so the costlier healthy replica wins the third of the
// pairs it meets the ejected one in, instead of never (an argmin of two).
func TestC3TwoChoicesKeepEjectedReplicasInTheDraw(t *testing.T) {
	ms := time.Millisecond
	p := newTestPolicy(t, 3, Config{PeakCost: true, SlowFactor: 10, PingGate: 10, PullInterval: time.Hour, Now: newFakeClock().Now, Seed: 3})
	latency := []time.Duration{2 * ms, time.Millisecond, 3 * ms / 2}
	for r := range 3 {
		complete(p, r, ok(latency[r]))
		p.ObservePing(r, 300*time.Microsecond)
	}
	for range 10 {
		p.ObservePing(0, 40*ms) // replica 0 is ejected by the gate
	}
	const n = 3000
	wins := countWins(p, n, latency)
	if wins[0] != 0 {
		t.Errorf("the ejected replica won %d of %d", wins[0], n)
	}
	if share := float64(wins[2]) / n; share < 0.27 || share > 0.4 {
		t.Errorf("the costlier healthy replica won %.3f of the draws, want about 1/3 (wins %v)", share, wins)
	}
}

// With PingGate, a replica whose pings wait over PingGate × the fastest
// replica's, and longer than the best read, is ejected although its reads
// look fine (it got few of them),
// stays out EjectTime at a time while its pings stay slow, and is back
// within one EjectTime of its pings recovering. Without it, nothing ejects
// that replica.
func TestC3PingGateKeepsAThrottledReplicaOutUntilItsPingsRecover(t *testing.T) {
	ms := time.Millisecond
	setup := func(gate float64) (Policy, *fakeClock) {
		clock := newFakeClock()
		p := newTestPolicy(t, 3, Config{PeakCost: true, SlowFactor: 10, PingGate: gate, EjectTime: 250 * ms, PullInterval: time.Hour, Now: clock.Now})
		for r := range 3 {
			complete(p, r, ok(2*ms))
			p.ObservePing(r, 300*time.Microsecond)
		}
		for range 10 { // replica 1's pings wait for its CPU share
			p.ObservePing(1, 40*ms)
		}
		return p, clock
	}
	// picks runs n reads that all take 2ms and counts those on replica 1.
	picks := func(p Policy, n int) (onReplica1 int) {
		for range n {
			r := p.Pick()
			if r == 1 {
				onReplica1++
			}
			p.Done(r, ok(2*ms))
		}
		return onReplica1
	}
	if p, _ := setup(-1); picks(p, 300) == 0 {
		t.Fatal("PingGate off: replica 1 got no reads; its reads are as fast as the others', so only its pings could have ejected it")
	}
	p, clock := setup(10)
	if n := picks(p, 300); n != 0 {
		t.Fatalf("replica 1 (pings 40ms against 0.3ms, reads 2ms) got %d of 300 reads; want 0", n)
	}
	if st := statsOf(p, 1); st.EjectedUntil.IsZero() || st.Ejections != 1 || st.PingEjections != 1 || st.SlowEjections+st.SilentEjections != 0 {
		t.Fatalf("replica 1: ejected until %v, ejections %d (ping %d, slow %d, silent %d); want one ejection by the ping gate", st.EjectedUntil, st.Ejections, st.PingEjections, st.SlowEjections, st.SilentEjections)
	}
	// Its pings stay slow through three ejection periods: it stays out,
	// each extension EjectTime long (no doubling).
	for range 3 {
		clock.Advance(260 * ms)
		if n := picks(p, 100); n != 0 {
			t.Fatalf("replica 1 got %d reads while its pings were still slow", n)
		}
		if st := statsOf(p, 1); st.EjectedUntil.Sub(clock.Now()) > 250*ms || st.Ejections != 1 {
			t.Fatalf("extension: ejected for %v more, ejections %d; want at most EjectTime, still 1", st.EjectedUntil.Sub(clock.Now()), st.Ejections)
		}
	}
	if st := statsOf(p, 1); st.PingExtensions != 3 {
		t.Fatalf("replica 1: %d ping extensions, want 3", st.PingExtensions)
	}
	// Its pings recover (nine samples bring the EWMA under 3ms).
	for range 10 {
		p.ObservePing(1, 300*time.Microsecond)
	}
	clock.Advance(260 * ms)
	if n := picks(p, 300); n == 0 {
		t.Fatal("replica 1's pings recovered but it got no reads after its ejection ended")
	}
	if st := statsOf(p, 1); !st.EjectedUntil.IsZero() {
		t.Fatalf("replica 1 still ejected until %v after its pings recovered", st.EjectedUntil)
	}
}

// Reads faster than a PING (a hot replica answering a burst of pipelined
// reads) do not make the gate eject healthy replicas: they are judged
// against the typical replica's pings, and the fastest is never ejected.
func TestC3PingGateLeavesHealthyReplicasWhoseReadsBeatTheirPings(t *testing.T) {
	us := time.Microsecond
	clock := newFakeClock()
	p := newTestPolicy(t, 3, Config{PeakCost: true, SlowFactor: 10, PingGate: 10, PullInterval: time.Hour, Now: clock.Now})
	pings := []time.Duration{300 * us, 900 * us, 2 * time.Millisecond} // 2ms: under 10 × 300µs
	for r := range 3 {
		complete(p, r, ok(60*us))
		p.ObservePing(r, pings[r])
	}
	for range 600 {
		r := p.Pick()
		p.Done(r, ok(60*us))
		clock.Advance(time.Millisecond)
	}
	for r, st := range p.Snapshot(nil) {
		if !st.EjectedUntil.IsZero() || st.Ejections != 0 {
			t.Errorf("replica %d (ping %v, reads 60µs): ejected until %v (%d ejections); want never ejected", r, pings[r], st.EjectedUntil, st.Ejections)
		}
	}
}

// A replica back from an ejection may hold at most half the reads it held
// when it went silent. The cap doubles after each tenth of EjectTime it
// held that many without an ejection, stays while the replica holds fewer
// or takes no reads, and halves again at the next ejection.
func TestC3InFlightCapAfterAnEjection(t *testing.T) {
	ms := time.Millisecond
	p, clock := newEjectingPolicy(t)
	// inFlight starts 300 reads at once and returns how many replica 0
	// took, then ends them all.
	inFlight := func() int {
		n := burstOnZero(p, 300)
		for range n {
			p.Done(0, ok(2*ms))
		}
		return n
	}
	ejectBySilence(p, clock, 8)
	if st := statsOf(p, 0); st.SilentEjections != 1 || st.InFlightCap != 4 {
		t.Fatalf("after holding 8 reads silent: silent ejections %d, cap %d; want 1 and 4", st.SilentEjections, st.InFlightCap)
	}
	clock.Advance(300 * ms) // the ejection ends: probation
	if n := inFlight(); n != 1 {
		t.Fatalf("on trial: replica 0 took %d reads at once, want 1", n)
	}
	clock.Advance(260 * ms) // the probation ends
	if n := inFlight(); n != 4 {
		t.Fatalf("after probation: replica 0 took %d reads at once, want its cap 4", n)
	}
	clock.Advance(30 * ms) // a step (EjectTime/10) at its cap
	if n := inFlight(); n != 8 {
		t.Fatalf("a step at its cap later: replica 0 took %d reads at once, want 8", n)
	}
	ejectBySilence(p, clock, 6)
	if st := statsOf(p, 0); st.SilentEjections != 2 || st.InFlightCap != 3 {
		t.Fatalf("after holding 6 reads silent: silent ejections %d, cap %d; want 2 and 3", st.SilentEjections, st.InFlightCap)
	}
	clock.Advance(600 * ms) // the second ejection (500ms) ends: probation
	if n := inFlight(); n != 1 {
		t.Fatalf("on the second trial: replica 0 took %d reads at once, want 1", n)
	}
	clock.Advance(300 * ms) // the probation ends
	for _, want := range []int{3, 6, 12} {
		if n := inFlight(); n != want {
			t.Fatalf("replica 0 took %d reads at once, want %d (3, doubled after each step at its cap)", n, want)
		}
		clock.Advance(30 * ms)
	}
	for range 3 { // steps with one read at a time: the cap stays
		r := p.Pick()
		p.Done(r, ok(2*ms))
		clock.Advance(30 * ms)
	}
	clock.Advance(10 * 250 * ms) // a pause in the reads: the cap stays too
	p.Done(p.Pick(), ok(2*ms))
	if st := statsOf(p, 0); st.InFlightCap != 24 {
		t.Fatalf("cap %d, want 24: doubled once more for the step at 12, not for steps below it or the pause", st.InFlightCap)
	}
}

// newEjectingPolicy returns C3 as the read paths ship it (peak cost,
// silent replicas ejected after 50ms), EjectTime 250ms, on a fake clock,
// with each of 3 replicas answered once in 2ms.
func newEjectingPolicy(t *testing.T) (Policy, *fakeClock) {
	ms := time.Millisecond
	clock := newFakeClock()
	p := newTestPolicy(t, 3, Config{PeakCost: true, SlowFactor: 10, MinSilence: 50 * ms, EjectTime: 250 * ms, PullInterval: time.Hour, Now: clock.Now})
	for r := range 3 {
		complete(p, r, ok(2*ms))
	}
	return p, clock
}

// ejectBySilence holds n reads on replica 0 for 60ms while the others
// answer, which ejects it, then answers them.
func ejectBySilence(p Policy, clock *fakeClock, n int) {
	ms := time.Millisecond
	for range n {
		p.Start(0)
	}
	clock.Advance(60 * ms)
	complete(p, 1, ok(2*ms))
	p.Done(p.Pick(), ok(2*ms))
	for range n {
		p.Done(0, ok(60*ms))
	}
}

// burstOnZero starts n reads at once, as a burst of clients does, ends
// those on replicas 1 and 2 and returns how many went to replica 0 (left in
// flight). Replica 0's peak latency is its cost with nothing in flight;
// the others' cost grows with their reads in flight.
func burstOnZero(p Policy, n int) (onZero int) {
	var others []int
	for range n {
		if r := p.Pick(); r == 0 {
			onZero++
		} else {
			others = append(others, r)
		}
	}
	for _, r := range others {
		p.Done(r, ok(2*time.Millisecond))
	}
	return onZero
}

// A replica ejected for silence (stopped by a fork or a GC pause) is back,
// on probation, as soon as it has answered the reads it held and two pings
// since its ejection were fast, not only when its EjectTime ends: stopped
// 200 ms every 2 s, it would otherwise sit out most of its time up. One
// whose fresh pings are still slow, or fast only now and then
// (CPU-throttled), stays out, and without the ping gate nothing brings it
// back early.
func TestC3StalledReplicaIsBackOnceItAnswersAndPingsAgain(t *testing.T) {
	ms := time.Millisecond
	setup := func(gate float64) (Policy, *fakeClock) {
		clock := newFakeClock()
		p := newTestPolicy(t, 3, Config{PeakCost: true, SlowFactor: 10, PingGate: gate, MinSilence: 50 * ms, EjectTime: time.Second, PullInterval: time.Hour, Now: clock.Now})
		for r := range 3 {
			complete(p, r, ok(2*ms))
			p.ObservePing(r, 300*time.Microsecond)
		}
		ejectBySilence(p, clock, 8) // it answers the 8 reads it held
		if st := statsOf(p, 0); st.SilentEjections != 1 || st.EjectedUntil.IsZero() {
			t.Fatalf("gate %v: silent ejections %d, ejected until %v; want one silent ejection", gate, st.SilentEjections, st.EjectedUntil)
		}
		return p, clock
	}
	// after observes ping on replica 0 once d has passed and runs a read,
	// which judges the replicas, and says whether replica 0 is ejected.
	after := func(p Policy, clock *fakeClock, d, ping time.Duration) (ejected bool) {
		clock.Advance(d)
		p.ObservePing(0, ping)
		p.Done(p.Pick(), ok(2*ms))
		return !statsOf(p, 0).EjectedUntil.IsZero()
	}
	p, clock := setup(10)
	if !after(p, clock, 10*ms, 200*ms) { // the ping sent during the stall
		t.Fatal("back after a slow ping")
	}
	if !after(p, clock, 240*ms, 300*time.Microsecond) {
		t.Fatal("back after one fast ping, the one before it slow")
	}
	if after(p, clock, 250*ms, 300*time.Microsecond) {
		t.Fatal("still ejected 500ms into a 1s ejection, its reads answered and two pings fast again")
	}
	if ping := statsOf(p, 0).Ping; !almostEqual(ping, 300*time.Microsecond) {
		t.Fatalf("back early: ping EWMA %v, want restarted from the latest ping, 300µs", ping)
	}
	if n := burstOnZero(p, 300); n != 1 {
		t.Fatalf("back early: replica 0 took %d reads at once, want 1 (probation)", n)
	}

	p, clock = setup(10)
	for i := range 3 { // CPU-throttled: its pings wait for its quota, but for one that lands in it
		ping := 40 * ms
		if i == 1 {
			ping = 300 * time.Microsecond
		}
		if !after(p, clock, 250*ms, ping) {
			t.Fatalf("back with its pings still slow but for one (ping %d of 3)", i+1)
		}
	}
	p, clock = setup(-1)
	if !after(p, clock, 250*ms, 300*time.Microsecond) {
		t.Fatal("back early without the ping gate")
	}
}

// A replica back early is on trial first: one read at a time for a tenth
// of its probation (200ms here). Failing it, by a slow answer or silence,
// sends it back into the ejection it came from, to the same end, with the
// same in-flight cap and without doubling the series; it comes back early
// at most once per EjectTime. Passing the trial, the slow start begins.
func TestC3FailedTrialResumesTheEjection(t *testing.T) {
	ms := time.Millisecond
	clock := newFakeClock()
	p := newTestPolicy(t, 3, Config{PeakCost: true, SlowFactor: 10, PingGate: 10, MinSilence: 50 * ms, EjectTime: 2 * time.Second, PullInterval: time.Hour, Now: clock.Now})
	for r := range 3 {
		complete(p, r, ok(2*ms))
		p.ObservePing(r, 300*time.Microsecond)
	}
	ejectBySilence(p, clock, 8) // for 2s; cap 4
	ejected := statsOf(p, 0)
	if ejected.EjectedUntil.IsZero() || ejected.InFlightCap != 4 {
		t.Fatalf("ejected until %v, cap %d; want ejected with cap 4", ejected.EjectedUntil, ejected.InFlightCap)
	}
	backEarly := func() {
		t.Helper()
		for range 2 {
			clock.Advance(250 * ms)
			p.ObservePing(0, 300*time.Microsecond)
		}
		p.Done(p.Pick(), ok(2*ms))
		if st := statsOf(p, 0); !st.EjectedUntil.IsZero() || !st.Probation {
			t.Fatalf("after two fast pings: ejected until %v, probation %t; want back early, on probation", st.EjectedUntil, st.Probation)
		}
	}
	backEarly()
	if n := burstOnZero(p, 300); n != 1 {
		t.Fatalf("on trial: replica 0 took %d reads, want 1", n)
	}
	p.Done(0, ok(80*ms)) // over 50ms: the trial failed
	st := statsOf(p, 0)
	if !st.EjectedUntil.Equal(ejected.EjectedUntil) || st.InFlightCap != 4 || st.Ejections != 1 || st.SlowEjections != 1 {
		t.Fatalf("after a failed trial: ejected until %v (want %v, the ejection it left), cap %d (want 4), series %d (want 1), slow ejections %d (want 1)",
			st.EjectedUntil, ejected.EjectedUntil, st.InFlightCap, st.Ejections, st.SlowEjections)
	}
	// It comes back early at most once per EjectTime: two more fast pings
	// leave it out, and it is back, on trial, when the ejection it left
	// ends, whatever the cause of its ejection (a slow answer now).
	for range 2 {
		clock.Advance(250 * ms)
		p.ObservePing(0, 300*time.Microsecond)
	}
	p.Done(p.Pick(), ok(2*ms))
	if st := statsOf(p, 0); st.EjectedUntil.IsZero() {
		t.Fatalf("two fast pings 500ms after it came back early: back early again, want it out until %v", ejected.EjectedUntil)
	}
	clock.Advance(ejected.EjectedUntil.Sub(clock.Now()) + ms)
	p.Done(p.Pick(), ok(2*ms))
	if st := statsOf(p, 0); !st.EjectedUntil.IsZero() || !st.Probation {
		t.Fatalf("past its ejection: ejected until %v, probation %t; want back, on probation", st.EjectedUntil, st.Probation)
	}
	burstOnZero(p, 300)
	clock.Advance(210 * ms) // the trial (200ms) passes
	p.Done(0, ok(2*ms))
	if n := burstOnZero(p, 300); n != 2 {
		t.Fatalf("after the trial: replica 0 took %d reads, want 2 (the slow start)", n)
	}
}

// With PeakCost, a replica silent while the others answer costs at least
// its silence per read in flight: stopped with two reads in flight, it
// stops winning reads long before SlowFactor ejects it, although its peak
// latency (2ms, from before the stall) is the others' and they hold more
// reads. Peak-EWMA alone keeps sending it reads until its first late reply.
func TestC3PeakCostCountsSilence(t *testing.T) {
	ms := time.Millisecond
	for _, peer := range []bool{false, true} {
		clock := newFakeClock()
		// PeakRTT 2ms: every replica's peak latency starts at its replies'.
		cfg := Config{PeakCost: true, PeakRTT: 2 * ms, SlowFactor: 1000, PullInterval: time.Hour, Now: clock.Now, Seed: 5}
		if peer {
			cfg = Config{Policy: PolicyPeakEWMA, PeakRTT: 2 * ms, Now: clock.Now, Seed: 5}
		}
		p := newTestPolicy(t, 3, cfg)
		for r := range 3 {
			complete(p, r, ok(2*ms))
		}
		p.Start(0)
		p.Start(0)
		for range 4 { // four reads in flight on each of the others
			p.Start(1)
			p.Start(2)
		}
		// 30ms on: replicas 1 and 2 each answered one read and took
		// another; replica 0 answered nothing.
		clock.Advance(30 * ms)
		for _, r := range []int{1, 2} {
			p.Done(r, ok(2*ms))
			p.Start(r)
		}
		onZero := 0
		for range 200 {
			if r := p.Pick(); r == 0 {
				onZero++ // and left in flight: replica 0 is stopped
			} else {
				p.Done(r, ok(2*ms))
			}
		}
		switch {
		case !peer && onZero != 0:
			t.Errorf("C3: the replica silent for 30ms won %d of 200 reads; want none (cost 30ms × 3 against 2ms × 5)", onZero)
		case peer && onZero == 0:
			t.Errorf("peak-ewma: the silent replica won no read; the test no longer shows what C3 adds")
		}
		if st := statsOf(p, 0); st.SilentEjections != 0 {
			t.Errorf("peer %t: replica 0 ejected (%d); the test is about the cost, not ejection", peer, st.SilentEjections)
		}
	}
}

// With PeakCost, a replica back early from an ejection for silence (it
// answered the reads it held, late, and two pings since were fast)
// restarts its peak latency from the others': it wins its share of
// sequential reads again. With KeepPeak, or when its ejection merely ran
// out (no ping gate, so no early return), the late replies of its stall
// keep it losing every pair it is drawn in.
func TestC3BackEarlyRestartsThePeakLatency(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name       string
		keepPeak   bool
		gate       float64
		wait       time.Duration
		wantAShare bool
	}{
		{name: "back early", gate: 10, wait: 500 * ms, wantAShare: true},
		{name: "back early, KeepPeak", keepPeak: true, gate: 10, wait: 500 * ms},
		{name: "ejection ran out", gate: -1, wait: 1100 * ms},
	} {
		clock := newFakeClock()
		p := newTestPolicy(t, 3, Config{PeakCost: true, PeakRTT: 2 * ms, KeepPeak: c.keepPeak, SlowFactor: 10, PingGate: c.gate, MinSilence: 50 * ms,
			EjectTime: time.Second, PullInterval: time.Hour, Now: clock.Now, Seed: 3})
		for r := range 3 {
			complete(p, r, ok(2*ms))
			p.ObservePing(r, 300*time.Microsecond)
		}
		ejectBySilence(p, clock, 8) // its 8 reads come back 60ms late
		for elapsed := time.Duration(0); elapsed < c.wait; elapsed += 250 * ms {
			clock.Advance(min(250*ms, c.wait-elapsed))
			for r := range 3 {
				p.ObservePing(r, 300*time.Microsecond)
			}
		}
		onZero := 0
		for range 300 { // one read at a time: no read in flight, the cost is the peak latency
			r := p.Pick()
			if r == 0 {
				onZero++
			}
			p.Done(r, ok(2*ms))
		}
		if back := statsOf(p, 0).EjectedUntil.IsZero(); !back {
			t.Fatalf("%s: replica 0 still ejected after %v", c.name, c.wait)
		}
		switch {
		case c.wantAShare && onZero < 60:
			t.Errorf("%s: replica 0 won %d of 300 reads; want about a third (peak restarted from the others' 2ms)", c.name, onZero)
		case !c.wantAShare && onZero != 0:
			t.Errorf("%s: replica 0 won %d of 300 reads; want none (its 60ms peak kept)", c.name, onZero)
		}
	}
}
