package replica

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strings"
	"time"
)

// PolicyName names a replica selection policy.
type PolicyName string

// The policies. C3 is the default; the others are baselines for comparison.
const (
	// PolicyC3 ranks replicas by Ψ = R − S + q̂³·S (see C3Rank).
	PolicyC3 PolicyName = "c3"
	// PolicyRoundRobin cycles through the replicas.
	PolicyRoundRobin PolicyName = "round-robin"
	// PolicyRandom picks a uniformly random replica from a seeded generator.
	PolicyRandom PolicyName = "random"
	// PolicyLowestPing picks the replica with the lowest recent ping (or
	// response time) EWMA, re-read every Config.PingRefresh, as Redis clients
	// do with "route by latency".
	PolicyLowestPing PolicyName = "lowest-ping"
	// PolicyLowestPingTolerance is lowest-ping with go-redis's
	// RouteByLatencyTolerance: every replica whose latency is within
	// Config.PingTolerance of the lowest is a candidate, and reads rotate
	// round-robin among the candidates.
	PolicyLowestPingTolerance PolicyName = "lowest-ping-tolerance"
	// PolicyPeakEWMA is power of two choices over the cost peak-EWMA(latency)
	// × (outstanding+1), as Finagle, Linkerd (tower) and Envoy's peak_ewma.
	PolicyPeakEWMA PolicyName = "peak-ewma"
	// PolicyLeastRequest is Envoy's LEAST_REQUEST with equal weights: of two
	// replicas drawn at random (with replacement), the one with fewer
	// requests in flight.
	PolicyLeastRequest PolicyName = "least-request"
)

// PolicyNames lists every policy in a stable order.
var PolicyNames = []PolicyName{PolicyC3, PolicyRoundRobin, PolicyRandom, PolicyLowestPing, PolicyLowestPingTolerance, PolicyPeakEWMA, PolicyLeastRequest}

// Peers lists the policies baedal's selector (C3) is measured against: what
// Redis clients and proxies offer instead.
var Peers = []PolicyName{PolicyLowestPing, PolicyLowestPingTolerance, PolicyPeakEWMA, PolicyLeastRequest, PolicyRoundRobin, PolicyRandom}

// ErrUnknownPolicy is returned (wrapped) by ParsePolicyName.
var ErrUnknownPolicy = errors.New("replica: unknown policy")

// ParsePolicyName parses a policy name such as "c3" or "round-robin".
// The error names the allowed values.
func ParsePolicyName(s string) (PolicyName, error) {
	for _, name := range PolicyNames {
		if string(name) == s {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w %q, allowed: %s", ErrUnknownPolicy, s, allowedPolicyNames())
}

func allowedPolicyNames() string {
	names := make([]string, len(PolicyNames))
	for i, n := range PolicyNames {
		names[i] = string(n)
	}
	return strings.Join(names, ", ")
}

// MarshalText implements encoding.TextMarshaler (for flag.TextVar).
func (p PolicyName) MarshalText() ([]byte, error) { return []byte(p), nil }

// UnmarshalText implements encoding.TextUnmarshaler (for flag.TextVar).
func (p *PolicyName) UnmarshalText(text []byte) error {
	name, err := ParsePolicyName(string(text))
	if err != nil {
		return err
	}
	*p = name
	return nil
}

// Defaults used for zero fields of Config.
const (
	DefaultPolicy          = PolicyC3
	DefaultAlpha           = 0.3 // Elasticsearch's EWMA weight
	DefaultClients         = 1
	DefaultProbeLimit      = 1
	DefaultErrorPenalty    = time.Second
	DefaultErrorBackoff    = 500 * time.Millisecond
	DefaultMaxErrorBackoff = 30 * time.Second
	DefaultPingRefresh     = time.Second
	DefaultTolerance       = 0.25
	DefaultEjectTime       = time.Second
	DefaultMaxEjectTime    = 30 * time.Second
	// DefaultPingTolerance is lowest-ping-tolerance's band. go-redis has no
	// default (zero is its strict minimum); 1 ms covers the spread of PING
	// round trips between idle replicas on one loaded host.
	DefaultPingTolerance = time.Millisecond
	// DefaultDecayTime and DefaultPeakRTT are Linkerd's peak-EWMA defaults
	// (Finagle's decay time is 10 s too).
	DefaultDecayTime = 10 * time.Second
	DefaultPeakRTT   = 30 * time.Millisecond
)

// Config tunes a Policy. Zero fields take the Default* values.
type Config struct {
	// Policy chooses the selection policy.
	Policy PolicyName
	// Alpha is the weight of a new sample in every EWMA, in (0, 1].
	Alpha float64
	// Clients is n in C3's q̂ = 1 + os·n + q: how many clients send to the
	// same replicas, so one outstanding request here stands for n in total.
	Clients int
	// ProbeLimit caps the requests in flight to a replica that has no stats
	// yet. Such a replica is tried first, but not flooded.
	ProbeLimit int
	// ErrorPenalty is the response time recorded for a failed request when
	// the observed latency is lower (a fast error is not a fast answer).
	ErrorPenalty time.Duration
	// ErrorBackoff is how long a replica that just failed is ranked last;
	// it doubles with each consecutive failure up to MaxErrorBackoff.
	ErrorBackoff    time.Duration
	MaxErrorBackoff time.Duration
	// PingRefresh is how often the lowest-ping policy re-reads latencies.
	PingRefresh time.Duration
	// PullInterval spaces C3's pulls of the losers' stats toward the
	// winner's: zero pulls on every selection (Elasticsearch), a positive
	// interval pulls at most once per interval. A client whose replies do
	// not carry server stats (Redis: they are sampled a few times a second)
	// needs it, or thousands of selections a second erase a slow replica's
	// stats within milliseconds of each sample.
	PullInterval time.Duration
	// Tolerance, with BestOfAll, makes C3 treat replicas whose rank Ψ is
	// within this fraction of the best as equal and rotate among them (0.25:
	// within 25%). Negative: strict argmin, as the paper.
	Tolerance float64
	// SlowFactor, when at least 1, makes C3 eject an outlier: a replica
	// whose latency signal, max(R, time with requests in flight and no
	// reply), is over SlowFactor × the typical signal, the replicas'
	// lower median (stalled or throttled). With PeakCost only the silence
	// counts: the cost already steers reads away from a slow replica.
	// Zero takes the default, off (as the paper); negative is off. The
	// Redis and OpenSearch read paths turn it on (see redisread, osread).
	SlowFactor float64
	// MinSilence, with SlowFactor, is the least time a replica must have
	// answered nothing, with requests in flight while another replica
	// answered, to be ejected for it, however low SlowFactor × the typical
	// signal is. Zero: no floor.
	MinSilence time.Duration
	// ProbationTime is how long a replica whose ejection ended is watched:
	// it takes ProbeLimit requests at a time for a tenth of it (the trial),
	// then twice as many after each answer in time (up to its in-flight
	// cap), and an answer over the outlier limit ejects it again (see
	// c3Strategy). Zero takes EjectTime.
	ProbationTime time.Duration
	// NoProbation lets a replica whose ejection ended take reads as any
	// other at once: no probation (ProbationTime) and no in-flight cap
	// (see c3Strategy).
	NoProbation bool
	// BestOfAll makes C3 take the best Ψ of all ranked replicas (rotating
	// within Tolerance) instead of the better of two drawn at random (power
	// of two choices, the default). One client with many requests in flight
	// refreshes its view of a replica only as replies come back, so the best
	// of all sends each burst of new requests to the replica whose replies
	// just arrived: on the benchmark, half the reads took 0.1-0.3 ms and the
	// p99 was 1.3-2.3x round-robin's.
	BestOfAll bool
	// EjectTime is how long C3 ranks a replica found slow by SlowFactor
	// after the others; it doubles with each ejection that follows within
	// 10 × EjectTime of the last one, up to MaxEjectTime. When it ends, the
	// replica's response time restarts at the lowest R, so it is tried on
	// fresh samples. Used only with SlowFactor.
	EjectTime    time.Duration
	MaxEjectTime time.Duration
	// Concentrate makes C3 send every read to one home replica, as
	// lowest-ping does, instead of spreading reads by Ψ: the home is the
	// replica with the lowest ping (else response-time) EWMA among those
	// neither ejected nor backed off, preferring those not ejected within
	// the last 10 × EjectTime, chosen again every PingRefresh and at once
	// when the home is ejected or fails. The rest of the order is by Ψ.
	// One Redis server that takes every read batches them into fewer event
	// loop turns, so on a host where clients and servers share the cores it
	// serves more reads than three servers sharing them; SlowFactor ejection
	// is what keeps a slow or stalled home from holding the reads.
	Concentrate bool
	// AutoConcentrate makes C3 concentrate reads as Concentrate does only
	// while that has given a lower mean reply latency than spreading,
	// trying the other way one 250 ms epoch now and then (see
	// modeChooser). Off by default: on the 2-core benchmark host, replicas
	// sharing the cores with the clients, it served from 7% fewer to 11%
	// more reads than C3 spreading (scenarios of three runs, 2026-11-27),
	// and 10-15% fewer than lowest-ping; each try on replicas with CPUs of their own floods
	// one of them (p99.9 up to 2x C3's), and many client processes
	// measuring each other's load might all settle on the same home; one
	// benchmark process cannot show that.
	AutoConcentrate bool
	// PeakCost makes C3 rank replicas by peak-EWMA latency × (outstanding
	// + 1), the cost of the peak-ewma policy (DecayTime, PeakRTT), instead
	// of Ψ, keeping C3's probes, outlier ejection (SlowFactor) and choice
	// of the winner. Ψ's queue term rests on the server's CPU time per
	// command, which says nothing of a Redis that waits for its CPU
	// share; the peak of the client-seen latency does. It has no flag: the
	// read paths (redisread, osread) set it for C3 unless their PsiRank.
	PeakCost bool
	// KeepPeak, with PeakCost, keeps the peak latency of a replica back
	// early from an ejection instead of restarting it from the lowest of
	// the others' (see ejectOutliers): the reads its stall caught then
	// price it for several DecayTimes. For comparison only.
	KeepPeak bool
	// PingGate, with SlowFactor, ejects a replica whose ping EWMA is over
	// PingGate × the typical (lower median) ping EWMA and over the lowest
	// response-time EWMA R, and keeps an ejected one out (EjectTime at a
	// time, not doubling) while that holds: a PING that waits that much
	// longer than the others, and longer than a whole read on the best
	// replica, means the server itself is not being scheduled (CPU quota,
	// SIGSTOP, fork). Only replicas that are pinged are judged. Zero or
	// negative is off.
	PingGate float64
	// PingTolerance is lowest-ping-tolerance's band: replicas whose latency
	// is at most this much over the lowest are candidates.
	PingTolerance time.Duration
	// DecayTime is peak-EWMA's decay constant τ: an estimate decays toward
	// new samples (and toward zero between them) as exp(−elapsed/τ).
	DecayTime time.Duration
	// PeakRTT is peak-EWMA's estimate of a replica it has not measured yet.
	PeakRTT time.Duration
	// Seed seeds the random policy and C3's two choices. Zero is a valid seed.
	Seed uint64
	// Now is the clock; nil means time.Now. Tests inject a fake clock.
	Now func() time.Time
}

// WithDefaults returns c with zero fields replaced by the defaults.
func (c Config) WithDefaults() Config {
	if c.Policy == "" {
		c.Policy = DefaultPolicy
	}
	if c.Alpha == 0 {
		c.Alpha = DefaultAlpha
	}
	if c.Clients == 0 {
		c.Clients = DefaultClients
	}
	if c.ProbeLimit == 0 {
		c.ProbeLimit = DefaultProbeLimit
	}
	if c.ErrorPenalty == 0 {
		c.ErrorPenalty = DefaultErrorPenalty
	}
	if c.ErrorBackoff == 0 {
		c.ErrorBackoff = DefaultErrorBackoff
	}
	if c.MaxErrorBackoff == 0 {
		c.MaxErrorBackoff = max(DefaultMaxErrorBackoff, c.ErrorBackoff)
	}
	if c.PingRefresh == 0 {
		c.PingRefresh = DefaultPingRefresh
	}
	if c.Tolerance == 0 {
		c.Tolerance = DefaultTolerance
	}
	if c.EjectTime == 0 {
		c.EjectTime = DefaultEjectTime
	}
	if c.MaxEjectTime == 0 {
		c.MaxEjectTime = max(DefaultMaxEjectTime, c.EjectTime)
	}
	if c.ProbationTime == 0 {
		c.ProbationTime = c.EjectTime
	}
	if c.PingTolerance == 0 {
		c.PingTolerance = DefaultPingTolerance
	}
	if c.DecayTime == 0 {
		c.DecayTime = DefaultDecayTime
	}
	if c.PeakRTT == 0 {
		c.PeakRTT = DefaultPeakRTT
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports every invalid field by name. Zero fields are valid: they
// take the defaults.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if _, err := ParsePolicyName(string(c.Policy)); err != nil {
		errs = append(errs, fmt.Errorf("replica: Policy: %w", err))
	}
	if math.IsNaN(c.Alpha) || c.Alpha <= 0 || c.Alpha > 1 {
		errs = append(errs, fmt.Errorf("replica: Alpha: got %v, allowed: 0 < Alpha <= 1", c.Alpha))
	}
	if c.Clients < 1 {
		errs = append(errs, fmt.Errorf("replica: Clients: got %d, must be at least 1", c.Clients))
	}
	if c.ProbeLimit < 1 {
		errs = append(errs, fmt.Errorf("replica: ProbeLimit: got %d, must be at least 1", c.ProbeLimit))
	}
	if c.ErrorPenalty < 0 {
		errs = append(errs, fmt.Errorf("replica: ErrorPenalty: got %s, must not be negative", c.ErrorPenalty))
	}
	if c.ErrorBackoff < 0 {
		errs = append(errs, fmt.Errorf("replica: ErrorBackoff: got %s, must not be negative", c.ErrorBackoff))
	}
	if c.MaxErrorBackoff < c.ErrorBackoff {
		errs = append(errs, fmt.Errorf("replica: MaxErrorBackoff: got %s, must be at least ErrorBackoff (%s)", c.MaxErrorBackoff, c.ErrorBackoff))
	}
	if c.PullInterval < 0 {
		errs = append(errs, fmt.Errorf("replica: PullInterval: got %s, must not be negative", c.PullInterval))
	}
	if math.IsNaN(c.Tolerance) || math.IsInf(c.Tolerance, 0) || c.Tolerance > 10 {
		errs = append(errs, fmt.Errorf("replica: Tolerance: got %v, allowed: negative (strict argmin) or 0..10", c.Tolerance))
	}
	if math.IsNaN(c.SlowFactor) || (c.SlowFactor > 0 && c.SlowFactor < 1) {
		errs = append(errs, fmt.Errorf("replica: SlowFactor: got %v, allowed: 0 or negative (off), or at least 1", c.SlowFactor))
	}
	if math.IsNaN(c.PingGate) || math.IsInf(c.PingGate, 0) {
		errs = append(errs, fmt.Errorf("replica: PingGate: got %v, allowed: 0 or negative (off), or a positive factor", c.PingGate))
	}
	if c.MinSilence < 0 {
		errs = append(errs, fmt.Errorf("replica: MinSilence: got %s, must not be negative", c.MinSilence))
	}
	if c.EjectTime < 0 {
		errs = append(errs, fmt.Errorf("replica: EjectTime: got %s, must not be negative", c.EjectTime))
	}
	if c.ProbationTime < 0 {
		errs = append(errs, fmt.Errorf("replica: ProbationTime: got %s, must not be negative", c.ProbationTime))
	}
	if c.MaxEjectTime < c.EjectTime {
		errs = append(errs, fmt.Errorf("replica: MaxEjectTime: got %s, must be at least EjectTime (%s)", c.MaxEjectTime, c.EjectTime))
	}
	if c.PingRefresh < 0 {
		errs = append(errs, fmt.Errorf("replica: PingRefresh: got %s, must not be negative", c.PingRefresh))
	}
	if c.PingTolerance < 0 {
		errs = append(errs, fmt.Errorf("replica: PingTolerance: got %s, must not be negative", c.PingTolerance))
	}
	if c.DecayTime < 0 {
		errs = append(errs, fmt.Errorf("replica: DecayTime: got %s, must not be negative", c.DecayTime))
	}
	if c.PeakRTT < 0 {
		errs = append(errs, fmt.Errorf("replica: PeakRTT: got %s, must not be negative", c.PeakRTT))
	}
	return errors.Join(errs...)
}

// Flags binds the configuration to command-line flags named prefix+"policy",
// prefix+"alpha", and so on (e.g. prefix "redis-replica-").
func (c *Config) Flags(fs *flag.FlagSet, prefix string) {
	d := c.WithDefaults()
	*c = d
	fs.TextVar(&c.Policy, prefix+"policy", d.Policy, "replica selection policy: "+allowedPolicyNames())
	fs.Float64Var(&c.Alpha, prefix+"alpha", d.Alpha, "EWMA weight of a new sample, in (0, 1]")
	fs.IntVar(&c.Clients, prefix+"clients", d.Clients, "number of clients sharing the replicas (n in C3's queue estimate)")
	fs.IntVar(&c.ProbeLimit, prefix+"probe-limit", d.ProbeLimit, "max requests in flight to a replica that has no stats yet")
	fs.DurationVar(&c.ErrorPenalty, prefix+"error-penalty", d.ErrorPenalty, "response time recorded for a failed request")
	fs.DurationVar(&c.ErrorBackoff, prefix+"error-backoff", d.ErrorBackoff, "how long a failed replica is ranked last (doubles per consecutive failure)")
	fs.DurationVar(&c.MaxErrorBackoff, prefix+"max-error-backoff", d.MaxErrorBackoff, "cap of the error backoff")
	fs.DurationVar(&c.PingRefresh, prefix+"ping-refresh", d.PingRefresh, "how often the lowest-ping policy re-reads latencies")
	fs.DurationVar(&c.PullInterval, prefix+"pull-interval", d.PullInterval, "C3: pull losers' stats toward the winner at most once per interval (0: every selection)")
	fs.BoolVar(&c.BestOfAll, prefix+"best-of-all", d.BestOfAll, "C3: take the best of all replicas instead of the better of two random ones")
	fs.Float64Var(&c.Tolerance, prefix+"tolerance", d.Tolerance, "C3 with best-of-all: ranks within this fraction of the best count as equal and rotate (negative: strict argmin)")
	fs.Float64Var(&c.SlowFactor, prefix+"slow-factor", d.SlowFactor, "C3: eject a replica whose latency is over this factor × the replicas' lower median (0 or negative: off)")
	fs.Float64Var(&c.PingGate, prefix+"ping-gate", d.PingGate, "C3 with slow-factor: eject a replica whose ping EWMA is over this factor × the replicas' lower median ping and over the lowest response time, and keep it out while it is (0 or negative: off)")
	fs.DurationVar(&c.MinSilence, prefix+"min-silence", d.MinSilence, "C3 with slow-factor: eject a replica for silence (no reply while others answer) only after at least this long")
	fs.DurationVar(&c.ProbationTime, prefix+"probation-time", d.ProbationTime, "C3: how long a replica back from an ejection is watched: probe-limit reads at a time for a tenth of it, then doubling per answer in time (a slow answer ejects it again)")
	fs.BoolVar(&c.NoProbation, prefix+"no-probation", d.NoProbation, "C3: let a replica back from an ejection take reads at once, without probation or in-flight cap")
	fs.DurationVar(&c.EjectTime, prefix+"eject-time", d.EjectTime, "C3: how long a replica found slow (slow-factor) ranks last; doubles on repeats")
	fs.DurationVar(&c.MaxEjectTime, prefix+"max-eject-time", d.MaxEjectTime, "C3: cap of the ejection time")
	fs.BoolVar(&c.Concentrate, prefix+"concentrate", d.Concentrate, "C3: send every read to one home replica (lowest ping, not ejected) instead of spreading by rank")
	fs.BoolVar(&c.AutoConcentrate, prefix+"auto-concentrate", d.AutoConcentrate, "C3: send every read to one home replica only in the 250 ms epochs where that has answered faster on average than spreading, trying the other way now and then")
	fs.BoolVar(&c.KeepPeak, prefix+"keep-peak", d.KeepPeak, "C3: keep the peak latency of a replica back early from an ejection instead of restarting it from the others'")
	fs.DurationVar(&c.PingTolerance, prefix+"ping-tolerance", d.PingTolerance, "lowest-ping-tolerance: replicas within this much of the lowest latency rotate")
	fs.DurationVar(&c.DecayTime, prefix+"decay-time", d.DecayTime, "peak-ewma: decay constant of the latency estimate")
	fs.DurationVar(&c.PeakRTT, prefix+"peak-rtt", d.PeakRTT, "peak-ewma: latency estimate of a replica not measured yet")
	fs.Uint64Var(&c.Seed, prefix+"seed", d.Seed, "seed of the random policy and of C3's two random choices")
}

// ValidateEjectedPingInterval checks how often a read path's sampler pings
// an ejected replica (after defaults), naming the field under name.
func ValidateEjectedPingInterval(name string, interval time.Duration) error {
	if interval < 0 || interval > 0 && interval < 5*time.Millisecond {
		return fmt.Errorf("%s: EjectedPingInterval: got %s, allowed: 0 (off) or at least 5ms", name, interval)
	}
	return nil
}

// ValidateSampler checks the background stats sampler of a read path
// (interval and timeout after defaults), naming the fields under name
// ("redisread", "osread").
func ValidateSampler(name string, interval, timeout time.Duration) error {
	var errs []error
	if interval > 0 && interval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("%s: SampleInterval: got %s, allowed: negative (off) or at least 10ms", name, interval))
	}
	if timeout < 0 {
		errs = append(errs, fmt.Errorf("%s: SampleTimeout: got %s, must be > 0", name, timeout))
	}
	return errors.Join(errs...)
}
