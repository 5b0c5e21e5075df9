package replica

import (
	"math"
	"math/rand/v2"
	"time"
)

// This file holds the peers: the policies Redis clients and proxies offer,
// each implemented from its public description so that C3 is measured
// against the best of them, not only against round-robin.

// lowestPingToleranceStrategy is go-redis v9's RouteByLatency with
// RouteByLatencyTolerance (osscluster.go, slotNodeWithinLatency): every
// replica whose latency is at most PingTolerance over the lowest is a
// candidate, and reads take the candidates in turn (one cursor, advanced by
// every read). Until some replica has a latency, the strict minimum is
// taken. Latencies are re-read every PingRefresh, as lowest-ping.
//
// Differences from go-redis, both in the peer's favour on the benchmark:
// go-redis averages 10 PINGs taken every 10 s at most, this one reads the
// ping EWMA of the sampler (4 PINGs a second) every PingRefresh (1 s); a
// failing node is left out for FailingTimeoutSeconds there, it is backed
// off (ErrorBackoff) here, as for every policy.
type lowestPingToleranceStrategy struct {
	lowestPingStrategy
	cursor uint64
}

func (p *lowestPingToleranceStrategy) fillKeys(s *selector, now time.Time) {
	p.lowestPingStrategy.fillKeys(s, now) // keys by latency, refreshed
	lowest, measured := math.Inf(1), false
	for r := range s.replicas {
		if now.Before(s.replicas[r].backoffUntil) {
			continue
		}
		lowest = min(lowest, p.latency[r])
		measured = measured || p.latency[r] > 0
	}
	if !measured {
		return
	}
	tol := s.cfg.PingTolerance.Seconds()
	var candidates []int
	for r := range s.replicas {
		if !now.Before(s.replicas[r].backoffUntil) && p.latency[r]-lowest <= tol {
			candidates = append(candidates, r)
		}
	}
	if len(candidates) > 1 {
		chosen := candidates[p.cursor%uint64(len(candidates))]
		s.keys[chosen] = sortKey{tier: tierProbe, value: 0}
	}
}

func (p *lowestPingToleranceStrategy) selected(*selector, int) { p.cursor++ }

// peakEWMAStrategy is power of two choices over peak-EWMA load, as tower's
// PeakEwma (Linkerd), Finagle's and Envoy's peak_ewma: a replica's cost is
//
//	cost = rtt × (outstanding + 1)
//
// where rtt is a latency estimate that jumps to any sample above it (the
// peak) and otherwise decays toward each new sample, and toward zero while
// it is only read, by exp(−elapsed/DecayTime). A replica not measured yet
// starts at PeakRTT. Two distinct replicas are drawn at random and the one
// with the lower cost wins; the rest of the order is by cost.
type peakEWMAStrategy struct {
	rng      *rand.Rand
	rtt      []float64 // seconds
	updateAt []time.Time
}

func newPeakEWMA(n int, cfg Config) *peakEWMAStrategy {
	p := &peakEWMAStrategy{
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x517cc1b727220a95)),
		rtt:      make([]float64, n),
		updateAt: make([]time.Time, n),
	}
	for r := range p.rtt {
		p.rtt[r] = cfg.PeakRTT.Seconds()
	}
	return p
}

// update folds a sample into replica r's estimate at now; a sample of 0 is
// tower's decay on read.
func (p *peakEWMAStrategy) update(s *selector, r int, rtt float64, now time.Time) {
	if p.updateAt[r].IsZero() {
		p.updateAt[r] = now
	}
	if p.rtt[r] < rtt {
		p.rtt[r] = rtt
	} else {
		elapsed := max(now.Sub(p.updateAt[r]).Seconds(), 0)
		decay := math.Exp(-elapsed / s.cfg.DecayTime.Seconds())
		p.rtt[r] = p.rtt[r]*decay + rtt*(1-decay)
	}
	p.updateAt[r] = now
}

func (p *peakEWMAStrategy) fillKeys(s *selector, now time.Time) {
	for r := range s.replicas {
		p.update(s, r, 0, now)
		s.keys[r] = sortKey{tier: tierRanked, value: p.rtt[r] * float64(s.replicas[r].outstanding+1)}
	}
}

func (p *peakEWMAStrategy) observe(s *selector, r int, latency time.Duration, now time.Time) {
	p.update(s, r, latency.Seconds(), now)
}

func (p *peakEWMAStrategy) chooseFront(s *selector, sorted []int) {
	twoChoices(s, sorted, p.rng, false)
}

func (p *peakEWMAStrategy) selected(*selector, int) {}

// leastRequestStrategy is Envoy's LEAST_REQUEST load balancer with equal
// weights and the default choice_count 2: two replicas drawn at random with
// replacement, the one with fewer active requests wins, the first drawn on a
// tie. The rest of the order is by active requests.
type leastRequestStrategy struct{ rng *rand.Rand }

func (p *leastRequestStrategy) fillKeys(s *selector, _ time.Time) {
	for r := range s.replicas {
		s.keys[r] = sortKey{tier: tierRanked, value: float64(s.replicas[r].outstanding)}
	}
}

func (p *leastRequestStrategy) chooseFront(s *selector, sorted []int) {
	twoChoices(s, sorted, p.rng, true)
}

func (p *leastRequestStrategy) selected(*selector, int) {}

// twoChoices moves the better of two replicas drawn at random from the
// leading run of sorted that shares its tier (backed-off replicas are not
// drawn while another is up) to the front. Drawn with replacement (Envoy)
// the first drawn wins a tie; without (tower) the two are distinct.
func twoChoices(s *selector, sorted []int, rng *rand.Rand, withReplacement bool) {
	n := 0
	for n < len(sorted) && s.keys[sorted[n]].tier == s.keys[sorted[0]].tier {
		n++
	}
	if n < 2 {
		return
	}
	a, b := rng.IntN(n), rng.IntN(n)
	if !withReplacement {
		b = rng.IntN(n - 1)
		if b >= a {
			b++
		}
	}
	// sorted is ordered by key, then replica number: compare the keys, the
	// first drawn winning a tie.
	best := a
	if s.keys[sorted[b]].value < s.keys[sorted[a]].value {
		best = b
	}
	winner := sorted[best]
	copy(sorted[1:best+1], sorted[:best])
	sorted[0] = winner
}
