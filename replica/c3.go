package replica

import (
	"math"
	"math/rand/v2"
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
// Which ranked replica wins: the lower Ψ of two drawn at random (power of
// two choices); with Config.BestOfAll, the best Ψ, rotating round-robin
// among the replicas within Config.Tolerance of it (next is the replica
// after the last winner). Argmin on estimates that one client refreshes
// only as its replies come back herds the reads onto whichever replica
// answered last.
//
// With Config.SlowFactor set, a replica is an outlier when its latency
// signal, the larger of its response-time EWMA R and how long it has had
// requests in flight without completing any while another replica still
// completed some, is over SlowFactor times the typical signal (the lower
// median; with PeakCost only the silence counts; see ejectOutliers). An
// outlier is ejected: it ranks after every other replica for EjectTime,
// doubling on repeats (see Config), and when that ends (or earlier, once a
// silent replica answers and pings in time again: see ejectOutliers) it is
// on probation for ProbationTime: it takes ProbeLimit requests at a time,
// first for a trial of a tenth of ProbationTime, then twice as many after
// each answer in time (a slow start, up to its in-flight cap), and an
// answer over the outlier limit, or silence, ejects it again. A fixed
// ProbeLimit for the whole probation kept a replica that had only been
// stopped for a moment at one read at a time for a second, a third of
// the capacity when each replica has a host of its own. The trial spans a
// CFS period (100 ms) at the defaults: a CPU-throttled Redis answers a few
// reads in time before its quota runs out, and without the trial the slow
// start had flooded it by then. A replica that fails the trial of an early
// return serves out the ejection it came back from, neither doubled nor
// with a lower cap: one read told nothing about what it can hold.
//
// A replica back from an ejection may hold at most an in-flight cap, half
// what it held when ejected, doubled after each step it held that many
// without an ejection (see growInFlightCap): a CPU-throttled Redis answers
// a few reads at a time in time, and fails again only with more.
// Ψ alone does not eject: its queue term q̂³·S grows with this client's
// outstanding requests and S is the server's CPU time per command, so Ψ
// keeps feeding a CPU-throttled Redis (it answers in 90 ms bursts, yet
// executes each command in microseconds) as soon as its backlog is a
// little shorter than the others'.
//
// With Config.PeakCost, the rank is peak-EWMA latency × (outstanding+1)
// (see peakEWMAStrategy) instead of Ψ; probes, ejection and the choice of
// the winner stay. The latency there is at least how long the replica has
// been silent while another answered (silentWhileOthersAnswer): a stopped
// server's peak latency rises only when its first late reply comes back,
// and until then peak-EWMA kept sending it its share of the reads, each
// caught for the rest of the stall. An OpenSearch node's searches take
// tens of milliseconds on a busy host, so 10 × that is longer than a
// 200 ms GC pause, and its silence never ejects it: the cost is what
// steers reads away from it.
//
// With Config.Concentrate, the front is the home replica instead (see
// chooseHome); with Config.AutoConcentrate, in the epochs where
// concentrating has given the lower mean latency (see modeChooser).
type c3Strategy struct {
	next int
	rng  *rand.Rand
	// Concentrate: the home replica and when it was chosen.
	home    int
	homeAt  time.Time
	hasHome bool
	// peak is the peak-EWMA state with Config.PeakCost, else nil.
	peak *peakEWMAStrategy
	// modes chooses between spreading and concentrating with
	// Config.AutoConcentrate, else nil.
	modes *modeChooser
}

// observe feeds PeakCost's peak-EWMA estimates and judges a replica on
// probation: a reply over the outlier limit (SlowFactor × the typical
// signal, at least MinSilence) ejects it again (doubling, as any repeat),
// one in time doubles what it may hold (up to its in-flight cap).
func (c *c3Strategy) observe(s *selector, r int, latency time.Duration, now time.Time) {
	if c.peak != nil {
		c.peak.observe(s, r, latency, now)
	}
	if c.modes != nil {
		c.modes.observe(latency, now)
	}
	if st := &s.replicas[r]; st.onProbation(now) {
		typical, _ := typicalSignal(s, now)
		if latency.Seconds() > max(typical*s.cfg.SlowFactor, s.cfg.MinSilence.Seconds()) {
			eject(s, st, now, ejectedSlow)
		} else if !st.onTrial(now) && st.probeLimit < st.inFlightCap {
			st.probeLimit = min(2*st.probeLimit, st.inFlightCap)
		}
	}
}

func (c *c3Strategy) fillKeys(s *selector, now time.Time) {
	if s.cfg.SlowFactor > 0 {
		c.ejectOutliers(s, now)
	}
	rank := func(r int, st *replicaState) float64 { return c3RankOf(st, s.cfg.Clients) }
	if c.peak != nil {
		rank = func(r int, st *replicaState) float64 {
			c.peak.update(s, r, 0, now)
			latency := max(c.peak.rtt[r], silentWhileOthersAnswer(s, r, now))
			return latency * float64(st.outstanding+1)
		}
	}
	for r := range s.replicas {
		st := &s.replicas[r]
		switch {
		case st.hasStats() && now.Before(st.ejectedUntil),
			st.onProbation(now) && st.outstanding >= st.probeLimit,
			st.atInFlightCap():
			s.keys[r] = sortKey{tier: tierSlow, value: rank(r, st)}
		case st.hasStats():
			s.keys[r] = sortKey{tier: tierRanked, value: rank(r, st)}
		case st.outstanding < s.cfg.ProbeLimit:
			s.keys[r] = sortKey{tier: tierProbe, value: float64(st.outstanding)}
		default:
			s.keys[r] = sortKey{tier: tierProbeFull, value: float64(st.outstanding)}
		}
	}
}

// ejectOutliers ejects the replicas whose latency signal is over SlowFactor
// times the typical one (with PeakCost, only for silence: see below), and
// lets those whose ejection has ended back in, on probation, with their R
// reset to the lowest R. With PeakCost, a replica whose ejection ran out
// keeps its peak latency, and one back early (it answered every read it
// held and pings in time again: see below) restarts it from the lowest of
// the others', unless KeepPeak. The reads a 200 ms stall caught come back
// 200 ms late, and peak-EWMA forgets a peak over its DecayTime (10 s): a
// replica stopped 200 ms every 2 s kept a fifth of the reads all the time
// it was up, and when each replica has a host of its own the other two
// ran out of CPU. Before the silence counted in the cost, restarting the
// peak had given the replica its whole share into the next stall, which
// caught a third of the reads in flight; now its cost rises with its
// silence within milliseconds.
//
// The typical signal is the lower median of the replicas' signals (the
// lowest of two, the second of three or four): not the lowest, because
// under load the replica that happens to have the fewest reads in flight
// answers them in a fraction of the others' time, and 10 × that fraction
// ejected healthy replicas over and over (about one ejection per replica
// per second of a healthy benchmark round). When every replica stalls at
// once (a pause of this client, not of a server), the typical signal rises
// with them and none is an outlier. Silence must also last MinSilence.
//
// With PeakCost a replica is not ejected for its response time: the cost
// already sends a replica that answers k times slower about k times fewer
// reads, and response times compared across replicas mostly measure how
// many reads each has queued (a replica back from an ejection answers its
// first reads in 70 µs, a loaded one in 3 ms), which ejected healthy
// replicas about once a second on the benchmark. Silence and the ping gate
// still eject a stopped or throttled replica.
//
// With Config.PingGate, a replica's pings count too: one whose ping EWMA is
// over PingGate × the typical (lower median) ping EWMA, and over the lowest
// R (a bare PING waits longer than a whole read takes on the best replica),
// is ejected, and an ejection that ends while that still holds is extended
// by EjectTime. A CPU-throttled Redis thus stays out while its pings wait
// for its quota, however few reads it is sent. An ejected replica is back
// early, on probation, once it has answered every read it held and two
// pings since its ejection were fast; its ping EWMA restarts from the
// latest ping, as the one slow sample of a 200 ms stall would keep it over
// the gate for about two seconds. Stopped for 200 ms every 2 s (a fork, a
// GC pause), the gate otherwise kept a replica out until its next stall: a
// third of the capacity when each replica has a host of its own. An idle
// CPU-throttled Redis answers pings in time too, so the probation's trial
// (see c3Strategy) is what keeps it out; a replica that recovers is back
// within a few pings, not when an ejection doubled up to seconds ends.
// The replica with the lowest ping is never ejected by the gate.
func (c *c3Strategy) ejectOutliers(s *selector, now time.Time) {
	typical, lowestR := typicalSignal(s, now)
	limit := typical * s.cfg.SlowFactor
	pings := s.scratch[:0]
	for r := range s.replicas {
		if st := &s.replicas[r]; st.hasStats() && st.ping.set {
			pings = append(pings, st.ping.value)
		}
	}
	pingLimit := max(s.cfg.PingGate*lowerMedian(pings), lowestR)
	slowPing := func(st *replicaState) bool {
		return s.cfg.PingGate > 0 && st.ping.set && st.ping.value > pingLimit
	}
	// backEarly: an ejected replica has answered every read it held and
	// its last two pings, both since the ejection, were fast. One was not
	// enough: a Redis at 10% of a core answers a ping in time whenever it
	// lands in its quota, one in ten or so. It comes back early at most
	// once per EjectTime: an idle CPU-throttled Redis answers pings fast,
	// and pinged every 25 ms (the read paths' EjectedPingInterval) it came
	// back within 50 ms of each ejection, each time catching reads in its
	// next throttled pause (p99.9 up from 24 to 45 ms on the benchmark).
	backEarly := func(st *replicaState) bool {
		return s.cfg.PingGate > 0 && st.outstanding == 0 && now.Sub(st.backEarlyAt) >= s.cfg.EjectTime &&
			st.prevPingAt.After(st.ejectedAt) && max(st.lastPing, st.prevPing) <= pingLimit
	}
	for r := range s.replicas {
		st := &s.replicas[r]
		growInFlightCap(s, st, now)
		early := st.hasStats() && now.Before(st.ejectedUntil) && backEarly(st)
		if early {
			// The stall's one slow ping would keep the EWMA over the gate
			// for seconds: restart it from the latest ping.
			st.ping.value = st.lastPing
		}
		switch {
		case !st.hasStats():
		case now.Before(st.ejectedUntil) && !early:
			// still ejected
		case !st.ejectedUntil.IsZero() && slowPing(st):
			// Its pings are still slow: keep it out, without doubling,
			// so that it returns soon after they recover.
			st.ejectedUntil = now.Add(s.cfg.EjectTime)
			st.lastEjectionEnd = st.ejectedUntil
			st.pingExtensions++
		case !st.ejectedUntil.IsZero():
			// The ejection ended (or the replica is back early): judge
			// it on fresh samples, a few probes at a time.
			st.resumeUntil = time.Time{}
			if early {
				st.resumeUntil, st.lastEjectionEnd, st.backEarlyAt = st.ejectedUntil, now, now
				if c.peak != nil && !s.cfg.KeepPeak {
					c.peak.rtt[r] = c.lowestPeakOfOthers(s, r, now)
				}
			}
			st.ejectedUntil = time.Time{}
			st.responseTime.value = lowestR
			if !s.cfg.NoProbation {
				st.probationUntil = now.Add(s.cfg.ProbationTime)
				st.trialUntil = now.Add(s.cfg.ProbationTime / 10)
				st.probeLimit = s.cfg.ProbeLimit
				st.capGrownAt, st.capFull = st.trialUntil, false
			}
		case !s.cfg.PeakCost && st.responseTime.value > limit:
			eject(s, st, now, ejectedSlow)
		case silentWhileOthersAnswer(s, r, now) > max(limit, s.cfg.MinSilence.Seconds()):
			eject(s, st, now, ejectedSilent)
		case slowPing(st):
			eject(s, st, now, ejectedPing)
		}
	}
}

// lowestPeakOfOthers is the lowest peak-EWMA latency of the replicas other
// than r that are not ejected (r's own when there is none).
func (c *c3Strategy) lowestPeakOfOthers(s *selector, r int, now time.Time) float64 {
	lowest := c.peak.rtt[r]
	for o := range s.replicas {
		if o != r && !now.Before(s.replicas[o].ejectedUntil) {
			lowest = min(lowest, c.peak.rtt[o])
		}
	}
	return lowest
}

// typicalSignal returns the lower median of the latency signals, max(R,
// time stalled), of the replicas with stats, and their lowest R (+Inf
// without stats).
func typicalSignal(s *selector, now time.Time) (typical, lowestR float64) {
	lowestR = math.Inf(1)
	signals := s.scratch[:0]
	for r := range s.replicas {
		if st := &s.replicas[r]; st.hasStats() {
			lowestR = min(lowestR, st.responseTime.value)
			signals = append(signals, max(st.responseTime.value, st.stalled(now)))
		}
	}
	return lowerMedian(signals), lowestR
}

// lowerMedian sorts v in place and returns its lower median (+Inf when v is
// empty). Replica sets are small: an insertion sort does not allocate.
func lowerMedian(v []float64) float64 {
	if len(v) == 0 {
		return math.Inf(1)
	}
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
	return v[(len(v)-1)/2]
}

// silentWhileOthersAnswer is how long replica r, with requests outstanding,
// has answered nothing while another replica still answered: its stall up
// to the last reply of any other replica. A stall of the whole host (on a
// loaded machine no process is scheduled for tens of milliseconds) stops
// every reply, so it ejects no one; a stopped or throttled server stalls
// alone.
func silentWhileOthersAnswer(s *selector, r int, now time.Time) float64 {
	st := &s.replicas[r]
	if st.outstanding == 0 {
		return 0
	}
	var othersLast time.Time
	for o := range s.replicas {
		if o != r && s.replicas[o].lastDone.After(othersLast) {
			othersLast = s.replicas[o].lastDone
		}
	}
	if othersLast.After(now) {
		othersLast = now
	}
	return max(othersLast.Sub(st.waitingSince).Seconds(), 0)
}

// What set an ejection off, to count ejections by cause.
const (
	ejectedSlow   = iota // response time over SlowFactor × the typical signal
	ejectedSilent        // silent with requests in flight while others answer
	ejectedPing          // the ping gate
	ejectionCauses
)

// eject ranks st last for EjectTime, doubled for each ejection since the
// replica last served 10 × EjectTime without one, up to MaxEjectTime.
//
// Unless NoProbation, it also halves what the replica may hold in flight
// when it is back (see growInFlightCap): its cap becomes half the requests
// it held when ejected (or half its cap, when lower), at least ProbeLimit.
//
// A replica that fails its trial (see c3Strategy) after an early return
// serves out the ejection it came back from instead; after an ejection that
// ended, its cap stays (a trial holds ProbeLimit reads, which says nothing
// about what the replica can hold).
func eject(s *selector, st *replicaState, now time.Time, cause int) {
	st.ejectedFor[cause]++
	st.ejectedAt = now
	st.probationUntil = time.Time{}
	onTrial := st.onTrial(now)
	st.trialUntil = time.Time{}
	if onTrial && now.Before(st.resumeUntil) {
		st.ejectedUntil, st.lastEjectionEnd = st.resumeUntil, st.resumeUntil
		return
	}
	if !s.cfg.NoProbation && !onTrial {
		held := st.outstanding
		if st.inFlightCap > 0 {
			held = min(held, st.inFlightCap)
		}
		st.inFlightCap = max(s.cfg.ProbeLimit, held/2)
	}
	if now.Sub(st.lastEjectionEnd) > 10*s.cfg.EjectTime {
		st.ejections = 0
	}
	d := s.cfg.EjectTime
	for i := 0; i < st.ejections && d < s.cfg.MaxEjectTime; i++ {
		d *= 2
	}
	st.ejections++
	st.ejectedUntil = now.Add(min(d, s.cfg.MaxEjectTime))
	st.lastEjectionEnd = st.ejectedUntil
}

// growInFlightCap doubles the in-flight cap of a replica back from an
// ejection after every step (a tenth of EjectTime) in which it held as many
// requests as the cap allows, from the end of its trial; a step in which it
// held fewer tells nothing about what it can hold, and leaves the cap.
//
// Probation alone let a CPU-throttled Redis back at full share: with one
// read at a time it stays within its quota and answers in time, and
// taken off probation it took its cost's share of 100 clients' reads
// (about 30) until the quota ran out, and each of them then waited up to a
// throttling period (90 ms): on the benchmark, those reads were the p99.9.
// Halving the cap at each ejection bounds what one such stall holds, and
// the bound halves with each repeat. A throttled replica stalls within a
// step once it holds more than its quota serves, so growing the cap only
// after full steps without an ejection finds that bound from below.
//
// Two rules this replaced: growth by one a step (as TCP's congestion
// avoidance), which left a replica that had recovered, or had only been
// stopped for 200 ms, at half its share for seconds; and lifting the cap
// 10 × EjectTime after the last ejection, which after any pause in the
// reads sent a still-throttled replica its whole share again.
func growInFlightCap(s *selector, st *replicaState, now time.Time) {
	if st.inFlightCap == 0 || !st.ejectedUntil.IsZero() || st.onTrial(now) {
		return // no cap, or still ejected (until ejectOutliers ends it), or on trial
	}
	if now.Sub(st.capGrownAt) < max(s.cfg.EjectTime/10, time.Millisecond) {
		return
	}
	if st.capFull {
		st.inFlightCap *= 2
	}
	st.capFull, st.capGrownAt = false, now
}

// chooseFront moves the winner among the ranked replicas to the front of
// sorted: the better of two drawn at random, or with BestOfAll the first at
// or after next in replica order among those within Tolerance of the best
// rank. Probes and ejected or backed-off replicas keep their
// places.
//
// Ejected replicas stay in the two-choice draw, and lose it: with one of
// three ejected, drawing only among the other two would always give the
// cheaper of them, an argmin that sends each burst of reads to one replica
// (on the benchmark, half the reads took 0.1 ms and the p99 was 1.3-1.4x
// peak-EWMA's). Drawn among all three, each healthy replica wins the pairs
// it meets the ejected one in, as in the peak-ewma policy, where a slow
// replica's cost makes it lose them.
func (c *c3Strategy) chooseFront(s *selector, sorted []int) {
	ranked := 0
	for ranked < len(sorted) && s.keys[sorted[ranked]].tier == tierRanked {
		ranked++
	}
	drawn := ranked // and the ejected ones after them
	for drawn < len(sorted) && s.keys[sorted[drawn]].tier == tierSlow {
		drawn++
	}
	if ranked < 1 || drawn < 2 || s.keys[sorted[0]].tier != tierRanked {
		return
	}
	best := 0
	switch {
	case s.cfg.Concentrate || c.modes != nil && c.modes.concentrating(s.cfg.Now()):
		home := c.chooseHome(s, sorted[:ranked])
		for i, r := range sorted[:ranked] {
			if r == home {
				best = i
			}
		}
	case !s.cfg.BestOfAll:
		a, b := c.rng.IntN(drawn), c.rng.IntN(drawn-1)
		if b >= a {
			b++
		}
		best = min(a, b)    // sorted by tier, then rank: the lower index wins
		if best >= ranked { // two ejected replicas: any ranked one
			best = c.rng.IntN(ranked)
		}
	case s.cfg.Tolerance > 0:
		n := len(s.replicas)
		limit := s.keys[sorted[0]].value * (1 + s.cfg.Tolerance)
		bestDistance := n
		for i, r := range sorted[:ranked] {
			if s.keys[r].value > limit {
				break
			}
			if d := (r - c.next + n) % n; d < bestDistance {
				best, bestDistance = i, d
			}
		}
	}
	winner := sorted[best]
	copy(sorted[1:best+1], sorted[:best])
	sorted[0] = winner
}

// chooseHome returns the replica that takes every read with Concentrate:
// the current home while it is among ranked (not ejected, backed off or a
// probe) and younger than PingRefresh, else the replica of ranked with the
// lowest ping EWMA (response-time EWMA when never pinged), which becomes the
// home. A replica ejected recently (its ejection series is still running:
// less than 10 × EjectTime since its last ejection ended) is chosen only
// when every ranked replica was: a CPU-throttled Redis answers PINGs fast
// while idle, and as home it would hold every read in flight for up to a
// throttling period before it is ejected again.
func (c *c3Strategy) chooseHome(s *selector, ranked []int) int {
	now := s.cfg.Now()
	if c.hasHome && now.Sub(c.homeAt) < s.cfg.PingRefresh {
		for _, r := range ranked {
			if r == c.home {
				return r
			}
		}
	}
	best, bestLatency, bestRecent := ranked[0], math.Inf(1), true
	for _, r := range ranked {
		st := &s.replicas[r]
		latency := st.responseTime.value
		if st.ping.set {
			latency = st.ping.value
		}
		recent := st.ejections > 0 && now.Sub(st.lastEjectionEnd) <= 10*s.cfg.EjectTime
		if (bestRecent && !recent) || (recent == bestRecent && latency < bestLatency) {
			best, bestLatency, bestRecent = r, latency, recent
		}
	}
	c.home, c.homeAt, c.hasHome = best, now, true
	return best
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
