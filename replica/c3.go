package replica

import (
	"math"
	"time"
)

// C3Rank returns the C3 rank Ψ of a replica in seconds; the lowest rank wins.
//
// The paper writes
//
//	Ψ(s) = R(s) − 1/µ(s) + q̂(s)³/µ(s),   q̂(s) = 1 + os(s)·n + q(s)
//
// where µ is the service RATE (requests per second). Servers report a service
// TIME S, and the rate is its inverse: µ = 1/S, so 1/µ = S and
//
//	Ψ(s) = R(s) − S(s) + q̂(s)³·S(s)
//
// R is the EWMA of client-seen response time, S the EWMA of server service
// time, q the EWMA of server queue length, os the requests outstanding from
// this client and n the number of clients. Since q̂ ≥ 1, Ψ ≥ R ≥ 0, and a
// longer service time always ranks worse. (An early Elasticsearch version put
// the service time where the rate belongs, Ψ = R − 1/S + q̂³/S, which ranks
// slower servers better.)
func C3Rank(responseTime, serviceTime time.Duration, queueLen float64, outstanding, clients int) float64 {
	return c3Rank(responseTime.Seconds(), serviceTime.Seconds(), queueLen, outstanding, clients)
}

// c3Rank is C3Rank on seconds.
func c3Rank(responseTime, serviceTime, queueLen float64, outstanding, clients int) float64 {
	qHat := 1 + float64(outstanding)*float64(clients) + queueLen
	return responseTime - serviceTime + qHat*qHat*qHat*serviceTime
}

// c3RankOf ranks a replica that has stats. A replica that never reported a
// service time uses its response time in its place: R ≥ S, so the estimate
// is conservative, and the outstanding-requests term keeps its weight.
func c3RankOf(st *replicaState, clients int) float64 {
	service := st.responseTime.value
	if st.serviceTime.set {
		service = st.serviceTime.value
	}
	return c3Rank(st.responseTime.value, service, st.queueLen.value, st.outstanding, clients)
}

// c3Strategy orders replicas by C3 rank. Replicas without stats come first
// while fewer than ProbeLimit requests are in flight to them, and after the
// ranked ones otherwise, so a new replica is probed but not flooded.
//
// Replicas whose rank is within Config.Tolerance of the best are taken as
// equal and the winner among them rotates round-robin (next is the replica
// after the last winner): strict argmin on noisy estimates herds the reads
// onto whichever replica looked best at the last sample.
//
// With Config.SlowFactor set, a replica whose response-time EWMA R is over
// SlowFactor times the lowest R ranks after every other ranked one, whatever
// its Ψ (off by default, see Config). Ψ's queue term q̂³·S grows with this
// client's outstanding requests, so on its own it keeps feeding a stalled
// replica (a CPU-throttled Redis answers in 90 ms bursts, yet executes each
// command in microseconds) as soon as its backlog is a little shorter than
// the others'. The pull toward the winner brings its R back into range, so
// it is retried and recovers its share.
type c3Strategy struct{ next int }

func (*c3Strategy) fillKeys(s *selector, _ time.Time) {
	slowAbove := math.Inf(1)
	if s.cfg.SlowFactor > 0 {
		for r := range s.replicas {
			if st := &s.replicas[r]; st.hasStats() {
				slowAbove = min(slowAbove, st.responseTime.value*s.cfg.SlowFactor)
			}
		}
	}
	for r := range s.replicas {
		st := &s.replicas[r]
		switch {
		case st.hasStats() && st.responseTime.value > slowAbove:
			s.keys[r] = sortKey{tier: tierSlow, value: c3RankOf(st, s.cfg.Clients)}
		case st.hasStats():
			s.keys[r] = sortKey{tier: tierRanked, value: c3RankOf(st, s.cfg.Clients)}
		case st.outstanding < s.cfg.ProbeLimit:
			s.keys[r] = sortKey{tier: tierProbe, value: float64(st.outstanding)}
		default:
			s.keys[r] = sortKey{tier: tierProbeFull, value: float64(st.outstanding)}
		}
	}
}

// chooseFront moves to the front of sorted, among the ranked replicas within
// Tolerance of the best rank, the first one at or after next in replica
// order. Probes and backed-off replicas keep their places.
func (c *c3Strategy) chooseFront(s *selector, sorted []int) {
	if s.cfg.Tolerance <= 0 || len(sorted) < 2 || s.keys[sorted[0]].tier != tierRanked {
		return
	}
	n := len(s.replicas)
	limit := s.keys[sorted[0]].value * (1 + s.cfg.Tolerance)
	best, bestDistance := 0, n
	for i, r := range sorted {
		k := s.keys[r]
		if k.tier != tierRanked || k.value > limit {
			break
		}
		if d := (r - c.next + n) % n; d < bestDistance {
			best, bestDistance = i, d
		}
	}
	winner := sorted[best]
	copy(sorted[1:best+1], sorted[:best])
	sorted[0] = winner
}

// selected pulls every other replica's stats toward the winner's, as
// Elasticsearch's adjustStats does: each loser takes one EWMA step toward the
// mean of its stats and the winner's. A replica that once looked slow thus
// drifts back into contention and is retried, so a recovered replica gets its
// traffic back. A winner without stats (a probe) pulls nothing.
//
// With Config.PullInterval > 0 the pull happens at most once per interval.
// Every selection also moves the Tolerance rotation past the winner.
func (c *c3Strategy) selected(s *selector, winner int) {
	c.next = (winner + 1) % len(s.replicas)
	w := &s.replicas[winner]
	if !w.hasStats() {
		return
	}
	if s.cfg.PullInterval > 0 {
		now := s.cfg.Now()
		if now.Sub(s.lastPull) < s.cfg.PullInterval {
			return
		}
		s.lastPull = now
	}
	alpha := s.cfg.Alpha
	for r := range s.replicas {
		st := &s.replicas[r]
		if r == winner || !st.hasStats() {
			continue
		}
		st.responseTime.add((st.responseTime.value+w.responseTime.value)/2, alpha)
		if st.serviceTime.set && w.serviceTime.set {
			st.serviceTime.add((st.serviceTime.value+w.serviceTime.value)/2, alpha)
		}
		if st.queueLen.set && w.queueLen.set {
			st.queueLen.add((st.queueLen.value+w.queueLen.value)/2, alpha)
		}
	}
}
