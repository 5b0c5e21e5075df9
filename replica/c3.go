package replica

import "time"

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
type c3Strategy struct{}

func (c3Strategy) fillKeys(s *selector, _ time.Time) {
	for r := range s.replicas {
		st := &s.replicas[r]
		switch {
		case st.hasStats():
			s.keys[r] = sortKey{tier: tierRanked, value: c3RankOf(st, s.cfg.Clients)}
		case st.outstanding < s.cfg.ProbeLimit:
			s.keys[r] = sortKey{tier: tierProbe, value: float64(st.outstanding)}
		default:
			s.keys[r] = sortKey{tier: tierProbeFull, value: float64(st.outstanding)}
		}
	}
}

// selected pulls every other replica's stats toward the winner's, as
// Elasticsearch's adjustStats does: each loser takes one EWMA step toward the
// mean of its stats and the winner's. A replica that once looked slow thus
// drifts back into contention and is retried, so a recovered replica gets its
// traffic back. A winner without stats (a probe) pulls nothing.
//
// With Config.PullInterval > 0 the pull happens at most once per interval.
func (c3Strategy) selected(s *selector, winner int) {
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
