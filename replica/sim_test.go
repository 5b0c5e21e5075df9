package replica

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// A discrete-event simulation of one client sending Poisson arrivals to
// replicas that are single-server FIFO queues with exponential service
// times. Time is simulated: the policy reads the fake clock, which the
// simulation moves to each event. Nothing sleeps.

type simWorkload struct {
	replicas     int
	requests     int
	interarrival time.Duration // mean
	// meanService returns replica r's mean service time at simulated time t.
	meanService func(r int, t time.Duration) time.Duration
	seed        uint64
}

type simRequest struct {
	arrival time.Duration
	replica int
	latency time.Duration
}

type simCompletion struct {
	finish  time.Duration
	replica int
	service time.Duration
	index   int // into the request log
}

type completionHeap []simCompletion

func (h completionHeap) Len() int           { return len(h) }
func (h completionHeap) Less(i, j int) bool { return h[i].finish < h[j].finish }
func (h completionHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *completionHeap) Push(x any)        { *h = append(*h, x.(simCompletion)) }
func (h *completionHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// runSim returns the request log in arrival order.
func runSim(t testing.TB, name PolicyName, w simWorkload) []simRequest {
	t.Helper()
	return runSimConfig(t, Config{Policy: name}, w)
}

// runSimConfig is runSim with a policy configuration; Seed and Now are set
// by the simulation.
func runSimConfig(t testing.TB, cfg Config, w simWorkload) []simRequest {
	t.Helper()
	name := cfg.WithDefaults().Policy
	clock := newFakeClock()
	start := clock.Now()
	cfg.Seed, cfg.Now = w.seed, clock.Now
	p := newTestPolicy(t, w.replicas, cfg)
	rng := rand.New(rand.NewPCG(w.seed, 1))

	log := make([]simRequest, 0, w.requests)
	busyUntil := make([]time.Duration, w.replicas)
	inSystem := make([]int, w.replicas)
	var pending completionHeap

	completeUntil := func(until time.Duration) {
		for pending.Len() > 0 && pending[0].finish <= until {
			c := heap.Pop(&pending).(simCompletion)
			clock.Set(start.Add(c.finish))
			inSystem[c.replica]--
			p.Done(c.replica, okWithServer(log[c.index].latency, c.service, float64(inSystem[c.replica])))
		}
	}

	var now time.Duration
	for i := range w.requests {
		now += time.Duration(rng.ExpFloat64() * float64(w.interarrival))
		completeUntil(now)
		clock.Set(start.Add(now))

		r := p.Pick()
		service := time.Duration(rng.ExpFloat64() * float64(w.meanService(r, now)))
		begin := max(now, busyUntil[r])
		busyUntil[r] = begin + service
		inSystem[r]++
		log = append(log, simRequest{arrival: now, replica: r, latency: busyUntil[r] - now})
		heap.Push(&pending, simCompletion{finish: busyUntil[r], replica: r, service: service, index: i})
	}
	completeUntil(1<<62 - 1)
	for _, st := range p.Snapshot(nil) {
		if st.Outstanding != 0 {
			t.Fatalf("%s: replica %d has %d outstanding after the simulation drained", name, st.Replica, st.Outstanding)
		}
	}
	return log
}

// share returns the fraction of requests arriving in [from, to) that went
// to replica r, and their mean latency.
func share(log []simRequest, r int, from, to time.Duration) (fraction float64, mean time.Duration) {
	var n, hits int
	var total time.Duration
	for _, req := range log {
		if req.arrival < from || req.arrival >= to {
			continue
		}
		n++
		total += req.latency
		if req.replica == r {
			hits++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(hits) / float64(n), total / time.Duration(n)
}

const forever = time.Duration(1<<62 - 1)

// One of three replicas is 10x slower. C3 must send it far less than a third
// of the traffic and beat round-robin's mean latency.
func TestSimulationC3AvoidsSlowReplica(t *testing.T) {
	w := simWorkload{
		replicas:     3,
		requests:     20000,
		interarrival: 4 * time.Millisecond, // 250 req/s; round-robin loads the slow one to 83%
		meanService: func(r int, _ time.Duration) time.Duration {
			if r == 2 {
				return 10 * time.Millisecond
			}
			return 1 * time.Millisecond
		},
		seed: 7,
	}
	results := map[PolicyName]struct {
		slowShare float64
		mean      time.Duration
	}{}
	for _, name := range PolicyNames {
		log := runSim(t, name, w)
		f, mean := share(log, 2, 0, forever)
		results[name] = struct {
			slowShare float64
			mean      time.Duration
		}{f, mean}
		t.Logf("%-12s slow replica share %.3f, mean latency %s", name, f, mean)
	}
	c3, rr := results[PolicyC3], results[PolicyRoundRobin]
	if c3.slowShare > 0.1 {
		t.Errorf("C3 sent %.1f%% of requests to the 10x slower replica, want under 10%% (a third would be 33%%)", 100*c3.slowShare)
	}
	if rr.slowShare < 0.3 {
		t.Errorf("round-robin slow share %.3f, want about 1/3 (the simulation is broken)", rr.slowShare)
	}
	if c3.mean*3 > rr.mean {
		t.Errorf("C3 mean latency %s, round-robin %s: want C3 at least 3x lower", c3.mean, rr.mean)
	}
	if c3.mean >= results[PolicyRandom].mean {
		t.Errorf("C3 mean latency %s, random %s: want C3 lower", c3.mean, results[PolicyRandom].mean)
	}
}

// Replica 0 is as fast as the others, then 10x slower, then fast again. Its
// share of traffic must drop while it is slow and come back once it has
// recovered.
func TestSimulationSlowThenRecoveredReplica(t *testing.T) {
	const phase = 20 * time.Second
	w := simWorkload{
		replicas:     3,
		requests:     15000, // 60 s at 250 req/s
		interarrival: 4 * time.Millisecond,
		meanService: func(r int, t time.Duration) time.Duration {
			if r == 0 && t >= phase && t < 2*phase {
				return 10 * time.Millisecond
			}
			return 1 * time.Millisecond
		},
		seed: 11,
	}
	log := runSim(t, PolicyC3, w)
	// Measure each phase after a settling second.
	before, _ := share(log, 0, time.Second, phase)
	slow, _ := share(log, 0, phase+time.Second, 2*phase)
	after, _ := share(log, 0, 2*phase+time.Second, 3*phase)
	t.Logf("replica 0 share: before %.3f, while slow %.3f, after recovery %.3f", before, slow, after)
	if before < 0.2 {
		t.Errorf("share before slowdown %.3f, want a fair part (over 0.2) among 3 equal replicas", before)
	}
	if slow > before/3 {
		t.Errorf("share while 10x slower %.3f, want under a third of the share before (%.3f)", slow, before)
	}
	if after < 0.2 || after < 2*slow {
		t.Errorf("share after recovery %.3f (while slow %.3f), want traffic back: over 0.2 and twice the slow share", after, slow)
	}
}

// latencyPercentile returns the q-quantile (0..1) of the logged latencies.
func latencyPercentile(log []simRequest, q float64) time.Duration {
	lat := make([]time.Duration, len(log))
	for i, req := range log {
		lat[i] = req.latency
	}
	slices.Sort(lat)
	return lat[min(len(lat)-1, int(q*float64(len(lat))))]
}

// Three equal replicas at 80% load: C3 must not lose to round-robin, with
// two random choices (default), the tolerance band or strict argmin, at the
// median or the tail.
func TestSimulationC3HealthyNotWorseThanRoundRobin(t *testing.T) {
	w := simWorkload{
		replicas:     3,
		requests:     60000,
		interarrival: 417 * time.Microsecond, // 2400 req/s over 3 × 1000 req/s
		meanService:  func(int, time.Duration) time.Duration { return time.Millisecond },
		seed:         3,
	}
	rr := runSim(t, PolicyRoundRobin, w)
	rrP50, rrP99 := latencyPercentile(rr, 0.5), latencyPercentile(rr, 0.99)
	t.Logf("%-22s p50 %s p99 %s", "round-robin", rrP50, rrP99)
	for _, tc := range []struct {
		name      string
		bestOfAll bool
		tolerance float64
	}{{"c3 two choices", false, 0}, {"c3 tolerance 0.25", true, 0.25}, {"c3 strict argmin", true, -1}} {
		log := runSimConfig(t, Config{Policy: PolicyC3, BestOfAll: tc.bestOfAll, Tolerance: tc.tolerance}, w)
		p50, p99 := latencyPercentile(log, 0.5), latencyPercentile(log, 0.99)
		t.Logf("%-22s p50 %s p99 %s", tc.name, p50, p99)
		if float64(p50) > 1.03*float64(rrP50) || float64(p99) > 1.03*float64(rrP99) {
			t.Errorf("%s: p50 %s p99 %s, round-robin p50 %s p99 %s: want C3 at most 3%% worse", tc.name, p50, p99, rrP50, rrP99)
		}
	}
}
