package replica

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Policy chooses, for each request, the order in which to try the replicas of
// one replicated read path. Replicas are numbered 0..n-1; the caller maps the
// numbers to its clients; a number out of range panics. A Policy is safe
// for use by many goroutines.
type Policy interface {
	// Name returns the policy's name.
	Name() PolicyName
	// Select writes every replica into dst[:0], best first, counts a request
	// started on the first one and returns the order. The caller must end
	// that request with Done, and may retry on later replicas with Start and
	// Done. Reuse dst across calls to avoid allocation.
	Select(dst []int) []int
	// Pick is Select without the fallback order: it starts a request on the
	// best replica and returns it. It does not allocate.
	Pick() int
	// Start counts a request started on replica r, e.g. a retry on the
	// next replica of a Select order.
	Start(r int)
	// Done ends a request started on replica r and records its result.
	Done(r int, res Result)
	// ObserveServer records a server-side sample from a background sampler:
	// service time and queue length. Done uses the last sampled values for
	// replies that do not carry their own.
	ObserveServer(r int, serviceTime time.Duration, queueLen float64)
	// ObservePing records a ping round trip. Only lowest-ping ranks by it;
	// C3 ranks by the response times of real requests.
	ObservePing(r int, rtt time.Duration)
	// Ejected says whether C3 keeps replica r out now (always false for the
	// other policies): a sampler pings such a replica more often, as its
	// pings are what bring it back early.
	Ejected(r int) bool
	// Snapshot appends the stats of every replica to dst[:0] and returns it.
	Snapshot(dst []ReplicaStats) []ReplicaStats
}

// Result is what a wrapper learned from one request.
type Result struct {
	// Latency is the response time the client saw, from send to reply.
	Latency time.Duration
	// Failed says the request failed (error, timeout, refused). The replica
	// is penalized: its response time takes max(Latency, ErrorPenalty) and
	// it is ranked last until a backoff ends.
	Failed bool
	// ServiceTime is the server's own time for this request (e.g.
	// OpenSearch "took"), if HasServiceTime.
	ServiceTime    time.Duration
	HasServiceTime bool
	// QueueLen is the server's queue length with this reply, if HasQueueLen.
	QueueLen    float64
	HasQueueLen bool
}

// ReplicaStats is a snapshot of one replica's statistics, for metrics and
// the web console.
type ReplicaStats struct {
	Replica int
	// HasStats is false until a request to this replica has completed.
	HasStats bool
	// ResponseTime is the EWMA of client-seen response times (R).
	ResponseTime time.Duration
	// ServiceTime is the EWMA of server service times (µ̄, a time; the
	// service rate is its inverse). Zero when never reported.
	ServiceTime time.Duration
	// QueueLen is the EWMA of the server's queue length (q).
	QueueLen float64
	// Ping is the EWMA of ping round trips, zero when never pinged; Pings
	// counts the round trips observed.
	Ping  time.Duration
	Pings uint64
	// Outstanding is the number of this client's requests in flight (os).
	Outstanding int
	// Rank is C3's Ψ in seconds, lower is better, computed for every policy
	// so that runs can be compared; zero without stats.
	Rank float64
	// Chosen counts requests started on this replica; Failures counts
	// failed ones.
	Chosen   uint64
	Failures uint64
	// BackoffUntil is when a failed replica stops being ranked last; zero
	// when not backing off.
	BackoffUntil time.Time
	// EjectedUntil is when a replica C3 found slow (Config.SlowFactor)
	// stops being ranked last; zero when not ejected. Ejections counts the
	// ejections in its current series (each one twice as long).
	EjectedUntil time.Time
	Ejections    int
	// Probation says the replica is back from an ejection and takes
	// ProbeLimit requests at a time, for a trial of a tenth of
	// Config.ProbationTime, then doubled by every answer in time.
	Probation bool
	// InFlightCap, when positive, is how many requests the replica may
	// have in flight since its first ejection: half what it held when last
	// ejected, doubled after every tenth of EjectTime in which it held
	// that many (see c3Strategy).
	InFlightCap int
	// SlowEjections, SilentEjections and PingEjections count every
	// ejection of the replica since the policy was made, by what set it
	// off: a response time over SlowFactor × the typical one, silence with
	// requests in flight while another replica answered, or the ping gate
	// (Config.PingGate). PingExtensions counts ejections the gate extended
	// because the pings were still slow when they ended.
	SlowEjections   uint64
	SilentEjections uint64
	PingEjections   uint64
	PingExtensions  uint64
}

// New returns the policy cfg.Policy over replicas numbered 0..replicas-1.
func New(replicas int, cfg Config) (Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if replicas < 1 {
		return nil, fmt.Errorf("replica: new %s policy: got %d replicas, need at least 1", cfg.Policy, replicas)
	}
	cfg = cfg.WithDefaults()
	s := &selector{
		cfg:      cfg,
		replicas: make([]replicaState, replicas),
		keys:     make([]sortKey, replicas),
		order:    make([]int, 0, replicas),
		scratch:  make([]float64, 0, replicas),
	}
	switch cfg.Policy {
	case PolicyC3:
		c3 := &c3Strategy{rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x243f6a8885a308d3))}
		if cfg.PeakCost {
			c3.peak = newPeakEWMA(replicas, cfg)
		}
		if cfg.AutoConcentrate {
			c3.modes = &modeChooser{}
		}
		s.strategy = c3
	case PolicyRoundRobin:
		s.strategy = &roundRobinStrategy{}
	case PolicyRandom:
		s.strategy = &randomStrategy{rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	case PolicyLowestPing:
		s.strategy = &lowestPingStrategy{latency: make([]float64, replicas)}
	case PolicyLowestPingTolerance:
		s.strategy = &lowestPingToleranceStrategy{lowestPingStrategy: lowestPingStrategy{latency: make([]float64, replicas)}}
	case PolicyPeakEWMA:
		s.strategy = newPeakEWMA(replicas, cfg)
	case PolicyLeastRequest:
		s.strategy = &leastRequestStrategy{rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x2545f4914f6cdd1d))}
	}
	return s, nil
}

// ewma is an exponentially weighted moving average whose first sample sets
// the value.
type ewma struct {
	value float64
	set   bool
}

func (e *ewma) add(sample, alpha float64) {
	if !e.set {
		e.value, e.set = sample, true
		return
	}
	e.value += alpha * (sample - e.value)
}

// replicaState holds one replica's statistics. Times are in seconds.
type replicaState struct {
	responseTime ewma // R
	serviceTime  ewma // µ̄, a time
	queueLen     ewma // q
	ping         ewma
	// lastPing is the latest ping round trip (seconds), observed at
	// lastPingAt, and prevPing the one before, observed at prevPingAt: what
	// brings an ejected replica back early (see ejectOutliers).
	lastPing, prevPing     float64
	lastPingAt, prevPingAt time.Time
	pings                  uint64
	outstanding            int // os
	// waitingSince is when the replica last completed a request, or got
	// one while idle: with requests outstanding, now − waitingSince is how
	// long it has answered nothing (see stalled).
	waitingSince time.Time
	// lastDone is when the replica last completed a request.
	lastDone time.Time
	// C3 outlier ejection (Config.SlowFactor): ranked last until
	// ejectedUntil; ejections counts those since the replica last served
	// 10 × EjectTime after an ejection (lastEjectionEnd) without one.
	ejectedUntil    time.Time
	lastEjectionEnd time.Time
	ejections       int
	// ejectedAt is when the current ejection began.
	ejectedAt time.Time
	// probationUntil: back from an ejection, the replica takes at most
	// probeLimit requests at a time until then: ProbeLimit until trialUntil,
	// then doubled by every answer in time, up to inFlightCap (see
	// c3Strategy). Back early, resumeUntil is when the ejection it came
	// back from would have ended, and backEarlyAt when it came back. It
	// takes at most inFlightCap (when positive), which doubles after a
	// step from capGrownAt in which the replica was at its cap (capFull;
	// see growInFlightCap).
	probationUntil time.Time
	trialUntil     time.Time
	resumeUntil    time.Time
	backEarlyAt    time.Time
	probeLimit     int
	inFlightCap    int
	capGrownAt     time.Time
	capFull        bool
	// ejectedFor counts ejections by cause (see ReplicaStats).
	ejectedFor     [ejectionCauses]uint64
	pingExtensions uint64

	chosen              uint64
	failures            uint64
	consecutiveFailures int
	backoffUntil        time.Time
}

func (st *replicaState) hasStats() bool { return st.responseTime.set }

func (st *replicaState) onProbation(now time.Time) bool { return now.Before(st.probationUntil) }

// atInFlightCap says the replica holds as many requests as its in-flight
// cap allows, and notes it for growInFlightCap.
func (st *replicaState) atInFlightCap() bool {
	full := st.inFlightCap > 0 && st.outstanding >= st.inFlightCap
	st.capFull = st.capFull || full
	return full
}

// onTrial says the replica is in the first part of its probation, when it
// takes ProbeLimit requests at a time however timely its answers.
func (st *replicaState) onTrial(now time.Time) bool { return now.Before(st.trialUntil) }

// stalled is how long, at now, the replica has had requests outstanding
// without completing any (zero when it has none outstanding).
func (st *replicaState) stalled(now time.Time) float64 {
	if st.outstanding == 0 {
		return 0
	}
	return now.Sub(st.waitingSince).Seconds()
}

// sortKey orders replicas: by tier, then value, then replica number.
type sortKey struct {
	tier  int
	value float64
}

func (a sortKey) less(b sortKey) bool {
	if a.tier != b.tier {
		return a.tier < b.tier
	}
	return a.value < b.value
}

// Tiers shared by the strategies. A backed-off replica's tier is raised by
// tierBackedOff, so it sorts after every healthy one but keeps its order
// among the backed-off.
const (
	tierProbe     = 0 // no stats, below the probe limit: try first
	tierRanked    = 1
	tierSlow      = 2 // C3: ejected, or on probation with a probe in flight
	tierProbeFull = 3 // no stats, at the probe limit: do not flood
	tierBackedOff = 10
)

// strategy is the part of a policy that differs: how to order the replicas.
// Its methods are called with selector.mu held.
type strategy interface {
	// fillKeys sets s.keys[r] for every replica r; lower sorts first.
	fillKeys(s *selector, now time.Time)
	// selected is told the winner of a selection.
	selected(s *selector, winner int)
}

// selector implements Policy: shared bookkeeping plus a strategy.
type selector struct {
	mu       sync.Mutex
	cfg      Config
	strategy strategy
	replicas []replicaState
	keys     []sortKey // scratch, indexed by replica
	order    []int     // scratch for Pick
	lastPull time.Time // C3: when losers were last pulled (PullInterval)
	// scratch holds C3's per-replica signals or pings (see ejectOutliers).
	scratch []float64
}

func (s *selector) Name() PolicyName { return s.cfg.Policy }

func (s *selector) Select(dst []int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	dst = s.orderLocked(dst[:0])
	s.startLocked(dst[0])
	s.strategy.selected(s, dst[0])
	return dst
}

func (s *selector) Pick() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.order = s.orderLocked(s.order[:0])
	winner := s.order[0]
	s.startLocked(winner)
	s.strategy.selected(s, winner)
	return winner
}

// orderLocked appends all replicas to dst sorted by the strategy's keys,
// backed-off replicas last.
func (s *selector) orderLocked(dst []int) []int {
	now := s.cfg.Now()
	s.strategy.fillKeys(s, now)
	for r := range s.replicas {
		if now.Before(s.replicas[r].backoffUntil) {
			s.keys[r].tier += tierBackedOff
		}
	}
	// Insertion sort: replica sets are small (a handful to a few dozen),
	// it is stable and it does not allocate.
	for r := range s.replicas {
		dst = append(dst, r)
		for i := len(dst) - 1; i > 0 && s.keys[dst[i]].less(s.keys[dst[i-1]]); i-- {
			dst[i], dst[i-1] = dst[i-1], dst[i]
		}
	}
	if rf, ok := s.strategy.(frontChooser); ok {
		rf.chooseFront(s, dst)
	}
	return dst
}

// observer is a strategy that keeps its own per-replica state from the
// results of requests.
type observer interface {
	observe(s *selector, r int, latency time.Duration, now time.Time)
}

// frontChooser is a strategy that may move another replica than the
// lowest-keyed one to the front of a sorted order.
type frontChooser interface {
	chooseFront(s *selector, sorted []int)
}

func (s *selector) startLocked(r int) {
	st := &s.replicas[r]
	if st.outstanding == 0 {
		st.waitingSince = s.cfg.Now()
	}
	st.outstanding++
	st.chosen++
}

func (s *selector) Start(r int) {
	s.mu.Lock()
	s.startLocked(r)
	s.mu.Unlock()
}

func (s *selector) Done(r int, res Result) {
	alpha := s.cfg.Alpha
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.replicas[r]
	if st.outstanding > 0 {
		st.outstanding--
	}
	st.waitingSince = s.cfg.Now()
	st.lastDone = st.waitingSince
	latency := max(res.Latency, 0)
	if res.Failed {
		latency = max(latency, s.cfg.ErrorPenalty)
		st.failures++
		st.consecutiveFailures++
		backoff := s.cfg.ErrorBackoff
		for i := 1; i < st.consecutiveFailures && backoff < s.cfg.MaxErrorBackoff; i++ {
			backoff *= 2
		}
		st.backoffUntil = s.cfg.Now().Add(min(backoff, s.cfg.MaxErrorBackoff))
	} else {
		st.consecutiveFailures = 0
		st.backoffUntil = time.Time{}
		// Only a successful reply's server stats describe normal work.
		if res.HasServiceTime {
			st.serviceTime.add(max(res.ServiceTime, 0).Seconds(), alpha)
		}
		if res.HasQueueLen {
			st.queueLen.add(max(res.QueueLen, 0), alpha)
		}
	}
	st.responseTime.add(latency.Seconds(), alpha)
	if o, ok := s.strategy.(observer); ok {
		o.observe(s, r, latency, s.cfg.Now())
	}
}

func (s *selector) ObserveServer(r int, serviceTime time.Duration, queueLen float64) {
	alpha := s.cfg.Alpha
	s.mu.Lock()
	st := &s.replicas[r]
	st.serviceTime.add(max(serviceTime, 0).Seconds(), alpha)
	st.queueLen.add(max(queueLen, 0), alpha)
	s.mu.Unlock()
}

func (s *selector) ObservePing(r int, rtt time.Duration) {
	alpha := s.cfg.Alpha
	s.mu.Lock()
	st := &s.replicas[r]
	st.prevPing, st.prevPingAt = st.lastPing, st.lastPingAt
	st.lastPing, st.lastPingAt = max(rtt, 0).Seconds(), s.cfg.Now()
	st.ping.add(st.lastPing, alpha)
	st.pings++
	s.mu.Unlock()
}

func (s *selector) Ejected(r int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.Now().Before(s.replicas[r].ejectedUntil)
}

func (s *selector) Snapshot(dst []ReplicaStats) []ReplicaStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	dst = dst[:0]
	now := s.cfg.Now()
	for r := range s.replicas {
		st := &s.replicas[r]
		stats := ReplicaStats{
			Replica:      r,
			HasStats:     st.hasStats(),
			ResponseTime: seconds(st.responseTime.value),
			ServiceTime:  seconds(st.serviceTime.value),
			QueueLen:     st.queueLen.value,
			Ping:         seconds(st.ping.value),
			Pings:        st.pings,
			Outstanding:  st.outstanding,
			Chosen:       st.chosen,
			Failures:     st.failures,
			BackoffUntil: st.backoffUntil,
			EjectedUntil: st.ejectedUntil,
			Ejections:    st.ejections,

			Probation:       st.onProbation(now),
			InFlightCap:     st.inFlightCap,
			SlowEjections:   st.ejectedFor[ejectedSlow],
			SilentEjections: st.ejectedFor[ejectedSilent],
			PingEjections:   st.ejectedFor[ejectedPing],
			PingExtensions:  st.pingExtensions,
		}
		if st.hasStats() {
			stats.Rank = c3RankOf(st, s.cfg.Clients)
		}
		dst = append(dst, stats)
	}
	return dst
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// roundRobinStrategy starts each order one replica after the previous winner.
type roundRobinStrategy struct{ next int }

func (p *roundRobinStrategy) fillKeys(s *selector, _ time.Time) {
	n := len(s.replicas)
	for r := range s.replicas {
		s.keys[r] = sortKey{tier: tierRanked, value: float64((r - p.next + n) % n)}
	}
}

func (p *roundRobinStrategy) selected(s *selector, winner int) {
	p.next = (winner + 1) % len(s.replicas)
}

// randomStrategy orders the replicas by a fresh random key each time.
type randomStrategy struct{ rng *rand.Rand }

func (p *randomStrategy) fillKeys(s *selector, _ time.Time) {
	for r := range s.replicas {
		s.keys[r] = sortKey{tier: tierRanked, value: p.rng.Float64()}
	}
}

func (p *randomStrategy) selected(*selector, int) {}

// lowestPingStrategy orders by a latency read every PingRefresh: the ping
// EWMA when the replica was pinged, else the response-time EWMA. Between
// refreshes every request goes to the same replica, which is how Redis
// clients' "route by latency" behaves and why it herds under bursts.
type lowestPingStrategy struct {
	latency     []float64 // seconds, as of refreshedAt
	refreshedAt time.Time
	refreshed   bool
}

func (p *lowestPingStrategy) fillKeys(s *selector, now time.Time) {
	if !p.refreshed || now.Sub(p.refreshedAt) >= s.cfg.PingRefresh {
		for r := range s.replicas {
			st := &s.replicas[r]
			switch {
			case st.ping.set:
				p.latency[r] = st.ping.value
			default:
				p.latency[r] = st.responseTime.value // zero when unknown: tried first
			}
		}
		p.refreshedAt, p.refreshed = now, true
	}
	for r := range s.replicas {
		s.keys[r] = sortKey{tier: tierRanked, value: p.latency[r]}
	}
}

func (p *lowestPingStrategy) selected(*selector, int) {}
