// Package replbench is the workload of `baedal bench replicas`: it measures
// adaptive replica selection (S3) against the selection policies Redis
// clients offer today, on real servers degraded on the server side.
//
// Redis part: one primary and three read replicas on loopback (a dedicated
// local stack), timelines of Users × EntriesPerUser entries loaded into the
// primary and replicated, then a closed loop of Clients concurrent feed
// reads, split between ClientProcesses independent client processes
// (clients.go; each has its own selector per side, as application servers
// do): (a pipeline of ZREVRANGE 0..19 to 0..49 of the reader's timeline and
// two ZREVRANGEBYSCORE LIMIT 0 20 of celebrities') through replica/redisread for
// baedal's selector (C3, its ablations) and every peer policy, interleaved
// (ABBA) in the same run, in four scenarios: (a) all replicas healthy, (b) one
// replica limited to DegradePercent% of one core by a cgroup-v1 CPU quota on
// its process, (c) one replica stopped (SIGSTOP) for StallFor every
// StallEvery, (d) one replica limited as in (b) for the first half of every
// side's round, then not. Each scenario reports C3 / round-robin and C3 /
// the best peer (the peer with the most reads/s).
//
// OpenSearch parts: a 3-node cluster, an index with 3 shards × 2 replicas
// (a copy of every shard on every node), and a victim node that is not the
// elected master. ARS: the victim limited the same way, and a search mix
// sent to a healthy coordinating node with OpenSearch's shard-copy ARS on
// and off, interleaved. Endpoints: the same search mix sent through
// replica/osread's Transport over the three nodes' HTTP endpoints, one
// Transport per policy (C3 as osread ships it, its Redis tuning, every
// peer), interleaved, in the same four scenarios with the victim's JVM as
// the degraded, stalled or recovering process.
//
// Targets are judged only in the judged set-up (judged.go): replicas on a
// CPU the clients cannot use, each capped at a share of it, and two or
// more client processes. Other set-ups report the same figures with none.
//
// Main invariant: every ratio in the Summary compares two sides measured in
// the same process and the same rounds (C3 / round-robin, C3 / best peer,
// ARS on / off), and
// every degradation this package applies is removed before Run returns.
package replbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/localstack"
	"github.com/baedal/baedal/replica"
)

// Config sizes a run. Zero fields take the profile's values (see
// WithDefaults).
type Config struct {
	Profile bench.Profile
	// StateDir, when set, is a running stack to use (it needs 3 Redis
	// replicas, and 3 OpenSearch nodes unless SkipOpenSearch). Empty: Run
	// starts a dedicated stack in a temporary directory and stops it.
	StateDir string
	// Users × EntriesPerUser timeline entries are loaded into the primary.
	Users, EntriesPerUser int
	// Clients is the closed loop's concurrency for Redis reads, split
	// between the client processes.
	Clients int
	// ClientProcesses is how many independent client processes run the
	// Redis reads (see clients.go): each has its own selector, connections
	// and statistics for every side, as application servers do.
	ClientProcesses int
	// Rounds of the interleaving; each policy runs RoundDuration per round.
	Rounds        int
	RoundDuration time.Duration
	// DegradePercent is the CPU quota of the degraded server, % of one core.
	DegradePercent int
	// ReplicaCPUPercent, when not zero, caps every Redis replica at this %
	// of one core for the whole Redis part, as if each ran on a host of
	// its own; the degraded replica's cap is lowered to DegradePercent.
	// Zero: the replicas share the machine's cores with each other and
	// with the clients, so one replica that takes every read can use all
	// the CPU the others leave idle (which favours policies that herd).
	ReplicaCPUPercent int
	// Policies to compare; C3 and round-robin are always included.
	Policies []replica.PolicyName
	// NoAblations leaves out the variants of our selector (c3Variants)
	// that show what its parts, and the ideas it does not use by default,
	// are worth.
	NoAblations bool
	// Variants, when not empty, are the only variants of our selector to
	// run (names from c3Variants); empty: all of them unless NoAblations.
	Variants []string
	// HedgeBudget is the hedge budget of the hedged variants (0:
	// replica.DefaultHedgeBudget).
	HedgeBudget float64
	// StallFor and StallEvery shape the stalled scenario: replica 1 is
	// stopped (SIGSTOP) for StallFor every StallEvery.
	StallFor, StallEvery time.Duration
	// SkipRedis leaves out the Redis part; SkipOpenSearch both OpenSearch
	// parts (shard-copy ARS and endpoints).
	SkipRedis, SkipOpenSearch bool
	// OpenSearchDocs, OpenSearchClients, OpenSearchRoundDuration (per ARS
	// side per round), OpenSearchEndpointRoundDuration (per endpoint policy
	// per round) and OpenSearchDegradePercent size the OpenSearch parts.
	OpenSearchDocs                  int
	OpenSearchClients               int
	OpenSearchRoundDuration         time.Duration
	OpenSearchEndpointRoundDuration time.Duration
	OpenSearchDegradePercent        int
	// OpenSearchNodeCPUPercent, when not zero, caps every OpenSearch node's
	// JVM at this % of one core for the endpoint part, as on a host of its
	// own; the victim's cap is lowered to OpenSearchDegradePercent.
	OpenSearchNodeCPUPercent int
	// IsolateServers pins the servers under test (the Redis replicas; the
	// OpenSearch nodes in the endpoint part when OpenSearchNodeCPUPercent
	// caps them) to the machine's last CPU and the clients to the others.
	// With ReplicaCPUPercent and OpenSearchNodeCPUPercent every server then
	// has a fixed share of a core the clients cannot take, as on hosts of
	// their own. With ClientProcesses of 2 or more this is the judged
	// set-up (judgedSetup); the flags default to it.
	IsolateServers bool
	// ReportDir receives replicas.html and replicas.json.
	ReportDir string
	// Seed makes the read mix reproducible.
	Seed uint64
	// Tuning holds the C3 knobs every policy client gets (Policy and Seed
	// are set per client); zero fields are replica's defaults.
	Tuning replica.Config
}

// WithDefaults fills zero fields from the profile (quick when unset).
func (c Config) WithDefaults() Config {
	if c.Profile == "" {
		c.Profile = bench.ProfileQuick
	}
	p := c.Profile
	setInt := func(v *int, quick, full int) {
		if *v == 0 {
			*v = bench.Pick(p, quick, full)
		}
	}
	setDur := func(v *time.Duration, quick, full time.Duration) {
		if *v == 0 {
			*v = bench.Pick(p, quick, full)
		}
	}
	setInt(&c.Users, 2_000, 10_000)
	setInt(&c.EntriesPerUser, 200, 200)
	setInt(&c.Clients, 100, 100)
	setInt(&c.ClientProcesses, DefaultClientProcesses, DefaultClientProcesses)
	// 4 rounds: a t interval over 2 rounds multiplies their spread by 12.7.
	setInt(&c.Rounds, 4, 8)
	setDur(&c.RoundDuration, 3*time.Second, 8*time.Second)
	setInt(&c.DegradePercent, 10, 10)
	setInt(&c.OpenSearchDocs, 5_000, 20_000)
	setInt(&c.OpenSearchClients, 16, 16)
	setDur(&c.OpenSearchRoundDuration, 5*time.Second, 15*time.Second)
	// Eight endpoint sides × 4 scenarios: 3 s rounds keep the quick
	// profile's endpoint part near 7 minutes.
	setDur(&c.OpenSearchEndpointRoundDuration, 3*time.Second, 8*time.Second)
	setInt(&c.OpenSearchDegradePercent, 10, 10)
	setDur(&c.StallFor, 200*time.Millisecond, 200*time.Millisecond)
	setDur(&c.StallEvery, 2*time.Second, 2*time.Second)
	if len(c.Policies) == 0 {
		c.Policies = append([]replica.PolicyName(nil), replica.PolicyNames...)
	}
	if c.ReportDir == "" {
		c.ReportDir = "reports"
	}
	return c
}

// Validate names every invalid field with its allowed values.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if _, err := bench.ParseProfile(string(c.Profile)); err != nil {
		errs = append(errs, fmt.Errorf("profile: %w", err))
	}
	positive := []struct {
		name string
		v    int
	}{
		{"users", c.Users}, {"entries-per-user", c.EntriesPerUser}, {"clients", c.Clients}, {"rounds", c.Rounds},
		{"opensearch-docs", c.OpenSearchDocs}, {"opensearch-clients", c.OpenSearchClients},
	}
	for _, f := range positive {
		if f.v < 1 {
			errs = append(errs, fmt.Errorf("%s: got %d, must be at least 1", f.name, f.v))
		}
	}
	if c.EntriesPerUser < 50 {
		errs = append(errs, fmt.Errorf("entries-per-user: got %d, must be at least 50 (reads take up to 50)", c.EntriesPerUser))
	}
	if c.Clients > 1000 {
		errs = append(errs, fmt.Errorf("clients: got %d, allowed: 1..1000", c.Clients))
	}
	if c.ClientProcesses < 1 || c.ClientProcesses > 16 || c.ClientProcesses > c.Clients {
		errs = append(errs, fmt.Errorf("client-processes: got %d, allowed: 1..16 and at most clients (%d)", c.ClientProcesses, c.Clients))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"round-duration", c.RoundDuration}, {"opensearch-round-duration", c.OpenSearchRoundDuration}, {"opensearch-endpoint-round-duration", c.OpenSearchEndpointRoundDuration}} {
		if d.v < 100*time.Millisecond || d.v > 10*time.Minute {
			errs = append(errs, fmt.Errorf("%s: got %s, allowed: 100ms..10m", d.name, d.v))
		}
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"degrade-percent", c.DegradePercent}, {"opensearch-degrade-percent", c.OpenSearchDegradePercent}} {
		if p.v < 1 || p.v > 100 {
			errs = append(errs, fmt.Errorf("%s: got %d, allowed: 1..100 (%% of one core)", p.name, p.v))
		}
	}
	if c.ReplicaCPUPercent != 0 && (c.ReplicaCPUPercent <= c.DegradePercent || c.ReplicaCPUPercent > 100) {
		errs = append(errs, fmt.Errorf("replica-cpu-percent: got %d, allowed: 0 (no cap) or %d..100 (over degrade-percent, %% of one core)", c.ReplicaCPUPercent, c.DegradePercent+1))
	}
	if c.OpenSearchNodeCPUPercent != 0 && (c.OpenSearchNodeCPUPercent <= c.OpenSearchDegradePercent || c.OpenSearchNodeCPUPercent > 100) {
		errs = append(errs, fmt.Errorf("opensearch-node-cpu-percent: got %d, allowed: 0 (no cap) or %d..100 (over opensearch-degrade-percent, %% of one core)", c.OpenSearchNodeCPUPercent, c.OpenSearchDegradePercent+1))
	}
	if c.SkipRedis && c.SkipOpenSearch {
		errs = append(errs, errors.New("skip-redis and skip-opensearch: got both, nothing would run; leave out one"))
	}
	if c.StallFor <= 0 || c.StallFor >= c.StallEvery {
		errs = append(errs, fmt.Errorf("stall-for: got %s, allowed: more than 0 and less than stall-every (%s)", c.StallFor, c.StallEvery))
	}
	if math.IsNaN(c.HedgeBudget) || c.HedgeBudget > 1 {
		errs = append(errs, fmt.Errorf("hedge-budget: got %v, allowed: negative (off), 0 (default) or up to 1", c.HedgeBudget))
	}
	for _, name := range c.Policies {
		if _, err := replica.ParsePolicyName(string(name)); err != nil {
			errs = append(errs, fmt.Errorf("policies: %w", err))
		}
	}
	for _, name := range c.Variants {
		if !slices.Contains(variantNames(), name) {
			errs = append(errs, fmt.Errorf("variants: got %q, allowed: %s", name, strings.Join(variantNames(), ", ")))
		}
	}
	if c.NoAblations && len(c.Variants) > 0 {
		errs = append(errs, errors.New("variants and no-ablations: got both; no-ablations runs no variant, leave out one"))
	}
	return errors.Join(errs...)
}

// Flags binds the configuration to flags of `baedal bench replicas`.
func (c *Config) Flags(fs *flag.FlagSet) {
	if c.Profile == "" {
		c.Profile = bench.ProfileQuick
	}
	if !c.IsolateServers && c.ReplicaCPUPercent == 0 {
		// The judged set-up unless the caller chose otherwise.
		c.IsolateServers, c.ReplicaCPUPercent = true, JudgedReplicaCPUPercent
	}
	fs.Var(&c.Profile, "profile", "run size: quick or full")
	fs.StringVar(&c.StateDir, "state-dir", c.StateDir, "use the running stack in this directory (3 Redis replicas, 3 OpenSearch nodes) instead of starting one")
	fs.IntVar(&c.Users, "users", c.Users, "timelines to load (0: the profile's)")
	fs.IntVar(&c.EntriesPerUser, "entries-per-user", c.EntriesPerUser, "entries per timeline (0: 200)")
	fs.IntVar(&c.Clients, "clients", c.Clients, "concurrent Redis readers, split between the client processes (0: 100)")
	fs.IntVar(&c.ClientProcesses, "client-processes", c.ClientProcesses, "independent client processes that run the Redis reads, each with its own selectors, connections and statistics (0: 3)")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "interleaved rounds (0: the profile's)")
	fs.DurationVar(&c.RoundDuration, "round-duration", c.RoundDuration, "time per policy per round (0: the profile's)")
	fs.IntVar(&c.DegradePercent, "degrade-percent", c.DegradePercent, "CPU quota of the degraded Redis replica, % of one core (0: 10)")
	fs.IntVar(&c.ReplicaCPUPercent, "replica-cpu-percent", c.ReplicaCPUPercent, "cap every Redis replica at this % of one core, as on a host of its own (0: no cap, the replicas share the cores; the judged set-up: 30)")
	fs.BoolVar(&c.SkipRedis, "skip-redis", c.SkipRedis, "leave out the Redis part (run only the OpenSearch ARS and endpoint parts)")
	fs.BoolVar(&c.SkipOpenSearch, "skip-opensearch", c.SkipOpenSearch, "leave out the OpenSearch parts (shard-copy ARS and endpoints)")
	fs.IntVar(&c.OpenSearchDocs, "opensearch-docs", c.OpenSearchDocs, "documents in the OpenSearch index (0: the profile's)")
	fs.IntVar(&c.OpenSearchClients, "opensearch-clients", c.OpenSearchClients, "concurrent OpenSearch searchers (0: 16)")
	fs.DurationVar(&c.OpenSearchRoundDuration, "opensearch-round-duration", c.OpenSearchRoundDuration, "time per ARS side per round (0: the profile's)")
	fs.DurationVar(&c.OpenSearchEndpointRoundDuration, "opensearch-endpoint-round-duration", c.OpenSearchEndpointRoundDuration, "time per endpoint policy per round (0: the profile's)")
	fs.IntVar(&c.OpenSearchDegradePercent, "opensearch-degrade-percent", c.OpenSearchDegradePercent, "CPU quota of the degraded or recovering OpenSearch node, % of one core (0: 10)")
	fs.IntVar(&c.OpenSearchNodeCPUPercent, "opensearch-node-cpu-percent", c.OpenSearchNodeCPUPercent, "cap every OpenSearch node at this % of one core in the endpoint part, as on a host of its own (0: no cap, the nodes share the cores)")
	fs.BoolVar(&c.IsolateServers, "isolate-servers", c.IsolateServers, "run the Redis replicas and, in the endpoint part with --opensearch-node-cpu-percent, the OpenSearch nodes on the machine's last CPU and the clients on the others (needs 2 CPUs and the cgroup-v1 cpuset controller; --isolate-servers=false: every process shares the cores, a set-up reported without verdicts)")
	fs.BoolVar(&c.NoAblations, "no-ablations", c.NoAblations, "leave out the variants of C3 ("+strings.Join(variantNames(), ", ")+")")
	fs.Func("variants", "comma-separated variants of C3 to run (default: all, or none with --no-ablations): "+strings.Join(variantNames(), ", "), func(s string) error {
		c.Variants = nil
		for _, part := range strings.Split(s, ",") {
			c.Variants = append(c.Variants, strings.TrimSpace(part))
		}
		return nil
	})
	fs.Float64Var(&c.HedgeBudget, "hedge-budget", c.HedgeBudget, "hedge budget of the hedged C3 variants, a fraction of reads (0: 0.05)")
	fs.DurationVar(&c.StallFor, "stall-for", c.StallFor, "stalled scenario: how long replica 1 is stopped each time (0: 200ms)")
	fs.DurationVar(&c.StallEvery, "stall-every", c.StallEvery, "stalled scenario: how often replica 1 is stopped (0: 2s)")
	fs.StringVar(&c.ReportDir, "report-dir", c.ReportDir, "directory of the HTML report")
	d := c.Tuning.WithDefaults()
	fs.Float64Var(&c.Tuning.Tolerance, "c3-tolerance", d.Tolerance, "C3 with --c3-best-of-all: ranks within this fraction of the best rotate (negative: strict argmin)")
	fs.Float64Var(&c.Tuning.SlowFactor, "c3-slow-factor", d.SlowFactor, "C3: eject a replica whose latency is over this factor × the replicas' lower median (0: the Redis client's default; negative: off)")
	fs.Float64Var(&c.Tuning.PingGate, "c3-ping-gate", d.PingGate, "C3: eject a replica whose ping EWMA is over this factor × the replicas' lower median ping and over the lowest response time (0: the Redis client's default; negative: off)")
	fs.DurationVar(&c.Tuning.MinSilence, "c3-min-silence", d.MinSilence, "C3: eject a replica for silence only after at least this long (0: the Redis client's default)")
	fs.IntVar(&c.Tuning.Clients, "c3-clients", d.Clients, "C3: n in the queue estimate q̂ = 1 + os·n + q")
	fs.BoolVar(&c.Tuning.BestOfAll, "c3-best-of-all", d.BestOfAll, "C3: take the best of all replicas instead of the better of two random ones")
	fs.DurationVar(&c.Tuning.EjectTime, "c3-eject-time", d.EjectTime, "C3: how long a replica found slow ranks last (doubles on repeats)")
	fs.DurationVar(&c.Tuning.PullInterval, "c3-pull-interval", d.PullInterval, "C3: pull losers' stats toward the winner at most once per interval (0: the Redis client's default)")
	fs.Func("policies", "comma-separated policies to compare (default: all): "+policyList(), func(s string) error {
		c.Policies = nil
		for _, part := range strings.Split(s, ",") {
			name, err := replica.ParsePolicyName(strings.TrimSpace(part))
			if err != nil {
				return err
			}
			c.Policies = append(c.Policies, name)
		}
		return nil
	})
}

// runsVariant says whether the run includes the variant of our selector
// named name.
func (c Config) runsVariant(name string) bool {
	if len(c.Variants) > 0 {
		return slices.Contains(c.Variants, name)
	}
	return !c.NoAblations
}

// tuned is the policy configuration of one compared client.
func tuned(t replica.Config, policy replica.PolicyName, seed uint64) replica.Config {
	t.Policy, t.Seed = policy, seed
	return t
}

func policyList() string {
	var names []string
	for _, n := range replica.PolicyNames {
		names = append(names, string(n))
	}
	return strings.Join(names, ", ")
}

// Ratios compares ours with a baseline: throughput ours/baseline (above 1:
// ours does more) and latency percentiles ours/baseline (below 1: ours is
// faster).
//
// Each ratio has a 95% interval over the paired rounds' ratios
// (bench.PairedRatioCI, with the rounds' min and max). A percentile's
// interval is also widened to cover a bootstrap over both sides' pooled
// latencies (bench.QuantileRatioCI): the bootstrap alone treats every read
// of a run as independent and missed the spread between rounds (a quick
// run's per-round p99 ratios spread over ±10-20% while its bootstrap was
// about ±1% wide); the rounds alone may agree by chance when few.
type Ratios struct {
	ThroughputRatio       float64           `json:"throughput_ratio"`
	ThroughputRatioCI95   bench.Interval    `json:"throughput_ratio_ci95"`
	ThroughputRatioRounds bench.RoundRatios `json:"throughput_ratio_rounds"`
	P50Ratio              float64           `json:"p50_ratio"`
	P50RatioCI95          bench.Interval    `json:"p50_ratio_ci95"`
	P50RatioRounds        bench.RoundRatios `json:"p50_ratio_rounds"`
	P90Ratio              float64           `json:"p90_ratio"`
	P90RatioCI95          bench.Interval    `json:"p90_ratio_ci95"`
	P90RatioRounds        bench.RoundRatios `json:"p90_ratio_rounds"`
	P99Ratio              float64           `json:"p99_ratio"`
	P99RatioCI95          bench.Interval    `json:"p99_ratio_ci95"`
	P99RatioRounds        bench.RoundRatios `json:"p99_ratio_rounds"`
	P999Ratio             float64           `json:"p999_ratio"`
	P999RatioCI95         bench.Interval    `json:"p999_ratio_ci95"`
	P999RatioRounds       bench.RoundRatios `json:"p999_ratio_rounds"`
}

func ratios(ours, base bench.LoadResult, seed uint64) Ratios {
	o, b := ours.Latency.Summary(), base.Latency.Summary()
	// percentile returns the ratio of quantile q, its rounds' summary and
	// its interval.
	percentile := func(q float64, of func(bench.LatencySummary) float64) (float64, bench.RoundRatios, bench.Interval) {
		point := bench.Ratio(of(o), of(b))
		var perBase, perOurs []float64
		for _, l := range base.RoundLatency {
			perBase = append(perBase, of(l))
		}
		for _, l := range ours.RoundLatency {
			perOurs = append(perOurs, of(l))
		}
		rounds := bench.PairedRatioCI(perBase, perOurs)
		pooled := bench.QuantileRatioCI(base.Latency, ours.Latency, q, seed)
		return point, rounds, rounds.IntervalAround(point).Hull(pooled)
	}
	r := Ratios{
		ThroughputRatio:       bench.Ratio(ours.Throughput(), base.Throughput()),
		ThroughputRatioRounds: bench.PairedRatioCI(base.RoundThroughput, ours.RoundThroughput),
	}
	r.ThroughputRatioCI95 = r.ThroughputRatioRounds.IntervalAround(r.ThroughputRatio)
	r.P50Ratio, r.P50RatioRounds, r.P50RatioCI95 = percentile(0.5, func(l bench.LatencySummary) float64 { return l.P50Ms })
	r.P90Ratio, r.P90RatioRounds, r.P90RatioCI95 = percentile(0.9, func(l bench.LatencySummary) float64 { return l.P90Ms })
	r.P99Ratio, r.P99RatioRounds, r.P99RatioCI95 = percentile(0.99, func(l bench.LatencySummary) float64 { return l.P99Ms })
	r.P999Ratio, r.P999RatioRounds, r.P999RatioCI95 = percentile(0.999, func(l bench.LatencySummary) float64 { return l.P999Ms })
	return r
}

// figures lists the ratios with their intervals for the report's chart.
func (r Ratios) figures(prefix string) []bench.Figure {
	return []bench.Figure{
		{Name: prefix + " throughput", Point: r.ThroughputRatio, CI95: r.ThroughputRatioCI95, Rounds: &r.ThroughputRatioRounds},
		{Name: prefix + " p50", Point: r.P50Ratio, CI95: r.P50RatioCI95, Rounds: &r.P50RatioRounds},
		{Name: prefix + " p90", Point: r.P90Ratio, CI95: r.P90RatioCI95, Rounds: &r.P90RatioRounds},
		{Name: prefix + " p99", Point: r.P99Ratio, CI95: r.P99RatioCI95, Rounds: &r.P99RatioRounds},
		{Name: prefix + " p99.9", Point: r.P999Ratio, CI95: r.P999RatioCI95, Rounds: &r.P999RatioRounds},
	}
}

// PolicyResult is one policy's figures in one scenario.
type PolicyResult struct {
	bench.LoadSummary
	// Shares is the fraction of reads each replica served (replica order).
	Shares []float64 `json:"replica_shares"`
	// VictimShareByTenth is the victim's (replica 1's) share of the reads
	// started in each tenth of a round, over every round.
	VictimShareByTenth []float64 `json:"victim_share_by_tenth"`
	// Hedges counts hedged reads (our selector only).
	Hedges *replica.HedgeStats `json:"hedges,omitempty"`
	// Ejections counts our selector's ejections of each replica (replica
	// order) over the scenario's rounds, by cause; absent for the peers.
	Ejections []Ejections `json:"ejections,omitempty"`
	// Herding is how the reads of every client process together piled on
	// one replica (Redis part).
	Herding *Herding `json:"herding,omitempty"`
	// ReplicaThrottled is, for each replica with a CPU cap, the fraction
	// of CFS periods (100 ms) with work in which it used its whole quota
	// and was stopped until the next, over this side's rounds; absent
	// without caps.
	ReplicaThrottled []float64 `json:"replica_throttled_periods,omitempty"`
	// RoundP99Ms is the p99 of each of this side's rounds, in order: how
	// much a side's tail moves between rounds of the same run.
	RoundP99Ms []float64 `json:"round_p99_ms"`
}

// Ejections counts one replica's ejections by cause (see
// replica.ReplicaStats).
type Ejections struct {
	Slow           uint64 `json:"slow"`
	Silent         uint64 `json:"silent"`
	Ping           uint64 `json:"ping"`
	PingExtensions uint64 `json:"ping_extensions"`
}

// ejectionsOf returns the ejection counts of stats, nil when there were none.
func ejectionsOf(stats []replica.ReplicaStats) []Ejections {
	var out []Ejections
	var total uint64
	for _, s := range stats {
		e := Ejections{Slow: s.SlowEjections, Silent: s.SilentEjections, Ping: s.PingEjections, PingExtensions: s.PingExtensions}
		total += e.Slow + e.Silent + e.Ping + e.PingExtensions
		out = append(out, e)
	}
	if total == 0 {
		return nil
	}
	return out
}

// Scenario is the Redis comparison in one condition; the embedded ratios
// are C3 / round-robin, VsBestPeer C3 / the peer with the most reads/s.
type Scenario struct {
	Ratios
	Degradation string                  `json:"degradation"`
	Policies    map[string]PolicyResult `json:"policies"`
	BestPeer    string                  `json:"best_peer"`
	VsBestPeer  Ratios                  `json:"vs_best_peer"`
	// PeerDominance is how far the peer that beats C3 most on throughput
	// and p99 at once does so (see peerDominance); VsPeers has each peer's.
	PeerDominance     float64                  `json:"peer_dominance"`
	PeerDominanceCI95 bench.Interval           `json:"peer_dominance_ci95"`
	VsPeers           map[string]PeerDominance `json:"vs_peers"`
}

// ARSResult is the OpenSearch comparison; the ratios are ARS on / ARS off.
type ARSResult struct {
	Ratios
	Skipped     string             `json:"skipped,omitempty"`
	Degradation string             `json:"degradation,omitempty"`
	On          *bench.LoadSummary `json:"ars_on,omitempty"`
	Off         *bench.LoadSummary `json:"ars_off,omitempty"`
	// DegradedNodeShare is the share of shard queries the degraded node ran
	// (from its query_total), with ARS on and off.
	DegradedNodeShareOn  float64 `json:"degraded_node_query_share_on"`
	DegradedNodeShareOff float64 `json:"degraded_node_query_share_off"`
}

// Summary is the JSON object the benchmark prints as its last stdout line.
type Summary struct {
	Bench   string `json:"bench"`
	Profile string `json:"profile"`
	// The Redis scenarios and sizes; absent when the Redis part was
	// skipped (RedisSkipped).
	Healthy       Scenario  `json:"healthy,omitzero"`
	Degraded      Scenario  `json:"degraded,omitzero"`
	Stalled       Scenario  `json:"stalled,omitzero"`
	Recovering    Scenario  `json:"recovering,omitzero"`
	OpenSearchARS ARSResult `json:"opensearch_ars"`
	// OpenSearchEndpoints is the four scenarios on the OpenSearch
	// endpoints (osread), every policy interleaved.
	OpenSearchEndpoints EndpointsResult `json:"opensearch_endpoints"`
	// RedisSkipped says why the Redis scenarios are empty, if they are.
	RedisSkipped string `json:"redis_skipped,omitempty"`
	Clients      int    `json:"clients,omitzero"`
	Timelines    int    `json:"timelines,omitzero"`
	Entries      int    `json:"entries_per_timeline,omitzero"`
	// ReplicaCPUPercent is Config.ReplicaCPUPercent: each replica's CPU
	// cap, % of one core; absent when the replicas shared the cores.
	ReplicaCPUPercent int `json:"replica_cpu_percent,omitzero"`
	// IsolatedServers is Config.IsolateServers: the replicas ran on a CPU
	// the clients did not use.
	IsolatedServers bool `json:"isolated_servers,omitzero"`
	// ClientProcesses is Config.ClientProcesses.
	ClientProcesses int `json:"client_processes,omitzero"`
	// Setup says in which set-up the Redis part ran and whether its
	// targets were judged (only in the judged set-up; see targets).
	Setup string `json:"setup,omitempty"`
	// Targets are judged on the ratios' intervals; see targets.
	Targets bench.Targets `json:"targets"`
	Report  string        `json:"report"`
}

// Run runs the benchmark, writes the HTML report, prints progress to
// progress and the summary as one line to out.
func Run(ctx context.Context, cfg Config, out, progress io.Writer) (Summary, error) {
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	cfg = cfg.WithDefaults()
	if !containsPolicy(cfg.Policies, replica.PolicyRoundRobin) {
		cfg.Policies = append(cfg.Policies, replica.PolicyRoundRobin)
	}
	sum := Summary{Bench: "replicas", Profile: string(cfg.Profile)}
	rep := bench.NewReport("replicas", "Adaptive replica selection (C3) vs every peer policy on Redis replicas and OpenSearch endpoints, and OpenSearch ARS", bench.CommandLine())
	var err error
	if cfg.SkipRedis {
		sum.RedisSkipped = "skipped by --skip-redis"
	} else {
		// Without a given stack, the Redis part runs on a stack with a
		// single idle OpenSearch node and the OpenSearch parts on a second
		// stack with three: three JVMs beside the Redis servers would take
		// the CPU the Redis comparison measures (2 cores).
		sum.Clients, sum.Timelines, sum.Entries = cfg.Clients, cfg.Users, cfg.EntriesPerUser
		st, stop, serr := openStack(ctx, cfg, 1, progress)
		if serr != nil {
			return Summary{}, serr
		}
		err = runRedis(ctx, cfg, st, &sum, rep, progress)
		stop()
	}
	if err == nil {
		if cfg.SkipOpenSearch {
			sum.OpenSearchARS.Skipped = "skipped by --skip-opensearch"
			sum.OpenSearchEndpoints.Skipped = "skipped by --skip-opensearch"
		} else {
			var osStack *localstack.State
			var stopOS func()
			if osStack, stopOS, err = openStack(ctx, cfg, 3, progress); err == nil {
				sum.OpenSearchARS, sum.OpenSearchEndpoints, err = runOpenSearch(ctx, cfg, osStack, rep, progress)
				stopOS()
			}
		}
	}
	if err == nil {
		sum.Targets = targets(sum)
		sum.Report, err = writeReport(rep, sum, cfg.ReportDir)
	}
	if err != nil {
		return sum, err
	}
	fmt.Fprintf(progress, "report: %s\n", sum.Report)
	return sum, bench.PrintSummary(out, sum)
}

// runRedis runs the Redis part on a running stack into sum and rep.
func runRedis(ctx context.Context, cfg Config, st *localstack.State, sum *Summary, rep *bench.Report, out io.Writer) (err error) {
	if len(st.RedisReplicaAddrs) < 3 {
		return fmt.Errorf("replbench: stack in %s has %d Redis replicas, need 3 (baedal up --redis-replicas 3)", st.StateDir, len(st.RedisReplicaAddrs))
	}
	cores := serverCores("replica", cfg.ReplicaCPUPercent, cfg.IsolateServers)
	rep.Add(bench.Section{Title: "Setup", Text: fmt.Sprintf(
		"Redis: one primary and 3 read replicas on loopback; %s %d timelines × %d entries (sorted sets) loaded into the primary and replicated. "+
			"A closed loop of %d concurrent clients reads feeds through replica/redisread: one pipeline of ZREVRANGE (20–50 entries of the reader's timeline) and two ZREVRANGEBYSCORE … LIMIT 0 20 (followed celebrities' posts); "+
			"policies %v run interleaved (ABBA) for %d rounds of %s each. Degraded: one replica's process limited to %d%% of one core "+
			"by a cgroup-v1 CPU quota (cpu.cfs_quota_us %d per %d µs period). Ratios are C3 / round-robin.",
		cores, cfg.Users, cfg.EntriesPerUser, cfg.Clients, cfg.Policies, cfg.Rounds, cfg.RoundDuration, cfg.DegradePercent,
		cpuPeriodMicros*cfg.DegradePercent/100, cpuPeriodMicros)})

	prefix := "tl:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	if err := loadTimelines(ctx, st, prefix, cfg, out); err != nil {
		return err
	}
	rcfg := backend.Defaults().Redis
	rcfg.Addr, rcfg.ReplicaAddrs = st.RedisAddr, st.RedisReplicaAddrs[:3]
	rcfg.PoolSize = cfg.Clients/cfg.ClientProcesses + 16 // per client process

	pid, err := componentPID(st, "redis-replica-1")
	if err != nil {
		return err
	}
	caps, release, err := constrainServers(st, []string{"redis-replica-1", "redis-replica-2", "redis-replica-3"}, cfg.ReplicaCPUPercent, cfg.IsolateServers)
	defer func() { err = errors.Join(err, release()) }()
	if err != nil {
		return err
	}
	sum.ReplicaCPUPercent, sum.IsolatedServers, sum.ClientProcesses = cfg.ReplicaCPUPercent, cfg.IsolateServers, cfg.ClientProcesses
	sum.Setup = setupText(cfg)
	var capped *CPULimit
	if len(caps) > 0 {
		capped = caps[0]
	}
	// Started after the servers were pinned: the client processes inherit
	// this process's cpuset, the clients' CPUs.
	out = &lockedWriter{w: out} // the client processes' stderr goes there too
	procs, err := startClientProcs(cfg.ClientProcesses, out)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, procs.stop()) }()
	fmt.Fprintf(out, "client processes: pids %v\n", procs.pids())
	base := hostSetup{Config: cfg, Redis: rcfg, Prefix: prefix}
	runScenario := func(ctx context.Context, name, degradation string, limit *CPULimit, cond condition) (Scenario, error) {
		base.Scenario = name
		return runRedisScenario(ctx, cfg, procs, base, caps, degradation, limit, cond, rep, out)
	}
	sum.Healthy, err = runScenario(ctx, scenarioHealthy, "none", nil, nil)
	if err != nil {
		return err
	}
	limit, undo, err := degrade(pid, cfg.DegradePercent, capped)
	if err != nil {
		return err
	}
	sum.Degraded, err = runScenario(ctx, scenarioDegraded,
		fmt.Sprintf("replica 1 (%s, pid %d) limited to %d%% of one core (cgroup-v1 cpu quota)", rcfg.ReplicaAddrs[0], pid, cfg.DegradePercent), limit, nil)
	if uerr := undo(); uerr != nil && err == nil {
		err = uerr
	}
	if err != nil {
		return err
	}
	stalls := 0
	sum.Stalled, err = runScenario(ctx, scenarioStalled,
		fmt.Sprintf("replica 1 (%s, pid %d) stopped (SIGSTOP) for %s every %s, the first %s into each round", rcfg.ReplicaAddrs[0], pid, cfg.StallFor, cfg.StallEvery, min(cfg.StallEvery/5, cfg.RoundDuration/4)),
		nil, stallCondition(pid, cfg.StallFor, cfg.StallEvery, &stalls))
	if err != nil {
		return err
	}
	sum.Stalled.Degradation += fmt.Sprintf("; %d stalls in all", stalls)
	sum.Recovering, err = runScenario(ctx, scenarioRecovering,
		fmt.Sprintf("replica 1 (%s, pid %d) limited to %d%% of one core for the first half of each round, then not", rcfg.ReplicaAddrs[0], pid, cfg.DegradePercent),
		nil, recoverCondition(pid, cfg.DegradePercent, capped))
	return err
}

// constrainServers caps each named component of st (its process) at
// percent% of one core (none when percent is 0), in order, and with isolate
// pins them to a CPU of their own (isolateServers). release undoes what was
// done, also after an error.
func constrainServers(st *localstack.State, components []string, percent int, isolate bool) (caps []*CPULimit, release func() error, err error) {
	release = func() error {
		var errs []error
		for _, c := range caps {
			errs = append(errs, c.Remove())
		}
		return errors.Join(errs...)
	}
	var pids []int
	for _, component := range components {
		pid, err := componentPID(st, component)
		if err != nil {
			return caps, release, err
		}
		pids = append(pids, pid)
		if percent == 0 {
			continue
		}
		c, err := LimitCPU(pid, percent)
		if err != nil {
			return caps, release, err
		}
		caps = append(caps, c)
	}
	if !isolate {
		return caps, release, nil
	}
	unpin, err := isolateServers(pids)
	if err != nil {
		return caps, release, err
	}
	uncap := release
	release = func() error { return errors.Join(unpin(), uncap()) }
	return caps, release, nil
}

// writeReport adds the targets, writes the HTML report and returns its path.
func writeReport(rep *bench.Report, sum Summary, dir string) (string, error) {
	var figures []bench.Figure
	if sum.RedisSkipped == "" {
		for _, sc := range sum.scenarios() {
			figures = append(figures, sc.s.figures(sc.name+" vs round-robin")...)
			figures = append(figures, sc.s.VsBestPeer.figures(sc.name+" vs "+sc.s.BestPeer)...)
		}
	}
	if sum.OpenSearchARS.Skipped == "" {
		figures = append(figures, sum.OpenSearchARS.figures("ARS")...)
	}
	if sum.OpenSearchEndpoints.Skipped == "" {
		for _, sc := range sum.OpenSearchEndpoints.scenarios() {
			figures = append(figures, sc.s.VsBestPeer.figures("OpenSearch endpoints "+sc.name+" vs "+sc.s.BestPeer)...)
		}
	}
	rep.Add(bench.IntervalSection(figures))
	rep.Add(bench.TargetsSection(sum.Targets))
	rep.Add(bench.Section{Title: "Targets", Text: targetsText(sum)})
	rep.SetSummary(sum)
	return rep.WriteHTML(dir)
}

func containsPolicy(list []replica.PolicyName, p replica.PolicyName) bool {
	for _, n := range list {
		if n == p {
			return true
		}
	}
	return false
}

// namedScenario is a scenario with its key.
type namedScenario struct {
	name string
	s    Scenario
}

func (s Summary) scenarios() []namedScenario {
	return []namedScenario{{scenarioHealthy, s.Healthy}, {scenarioDegraded, s.Degraded}, {scenarioStalled, s.Stalled}, {scenarioRecovering, s.Recovering}}
}

func targetsText(s Summary) string {
	return fmt.Sprintf("OpenSearch ARS on/off with one node degraded: throughput %.3f, p50 %.3f, p90 %.3f, p99 %.3f (write-up: +113%% throughput, p90 −65%%, p99 −61%%; no target).\n\n%s",
		s.OpenSearchARS.ThroughputRatio, s.OpenSearchARS.P50Ratio, s.OpenSearchARS.P90Ratio, s.OpenSearchARS.P99Ratio, endpointsText(s.OpenSearchEndpoints))
}

// openStack returns the stack to use and a function that stops it if Run
// started it.
func openStack(ctx context.Context, cfg Config, openSearchNodes int, out io.Writer) (*localstack.State, func(), error) {
	if cfg.StateDir != "" {
		st, err := localstack.Load(cfg.StateDir)
		if err != nil {
			return nil, nil, fmt.Errorf("replbench: state-dir %s: %w", cfg.StateDir, err)
		}
		return st, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "baedal-replbench-")
	if err != nil {
		return nil, nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil { // postgres runs as the postgres user
		return nil, nil, err
	}
	lc := localstack.Defaults()
	lc.StateDir, lc.PortBase, lc.OpenSearchNodes = dir, 0, openSearchNodes
	lc.RedisReplicas = 3
	lc.OpenSearchHeap = "256m"
	if openSearchNodes > 1 {
		lc.RedisReplicas = 0
		lc.OpenSearchHeap = bench.Pick(cfg.Profile, "384m", "512m")
	}
	fmt.Fprintf(out, "starting a dedicated stack in %s\n", dir)
	st, err := localstack.Up(ctx, lc, out)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("replbench: start the stack: %w", err)
	}
	return st, func() {
		if err := localstack.Down(dir, out); err != nil {
			fmt.Fprintf(out, "replbench: stop the stack in %s: %v\n", dir, err)
			return
		}
		os.RemoveAll(dir)
	}, nil
}

// componentPID returns the PID of a stack component such as "redis-replica-1".
func componentPID(st *localstack.State, component string) (int, error) {
	for _, p := range st.Processes {
		if p.Component == component && p.Alive() {
			return p.PID, nil
		}
	}
	return 0, fmt.Errorf("replbench: stack in %s has no running %s", st.StateDir, component)
}

// loadTimelines writes Users sorted sets of EntriesPerUser post IDs scored
// by time into the primary and waits until all 3 replicas have them.
func loadTimelines(ctx context.Context, st *localstack.State, prefix string, cfg Config, out io.Writer) error {
	rdb := redis.NewClient(&redis.Options{Addr: st.RedisAddr, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	defer rdb.Close()
	progress := bench.NewProgress(out, "load timelines", int64(cfg.Users))
	rng := rand.New(rand.NewPCG(cfg.Seed, 1))
	now := time.Now().Unix()
	const usersPerPipeline = 50
	members := make([]redis.Z, cfg.EntriesPerUser)
	for first := 0; first < cfg.Users; first += usersPerPipeline {
		pipe := rdb.Pipeline()
		last := min(first+usersPerPipeline, cfg.Users)
		for u := first; u < last; u++ {
			for i := range members {
				// A post ID like a snowflake; scores are post times over a week.
				members[i] = redis.Z{Score: float64(now - rng.Int64N(7*24*3600)), Member: strconv.FormatUint(rng.Uint64()>>1, 10)}
			}
			pipe.ZAdd(ctx, prefix+strconv.Itoa(u), members...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("replbench: load timelines %d..%d into %s: %w", first, last-1, st.RedisAddr, err)
		}
		progress.Add(int64(last - first))
	}
	progress.Done()
	n, err := rdb.Wait(ctx, 3, time.Minute).Result()
	if err != nil || n < 3 {
		return fmt.Errorf("replbench: wait for 3 replicas to copy the timelines: %d acknowledged, err %v", n, err)
	}
	return nil
}

// runRedisScenario runs every contender interleaved against the replicas
// in the client processes and adds a report section. limit, when not nil,
// is a degradation in force for the whole scenario; cond, when not nil,
// is applied to each side's round. caps are the replicas' CPU caps (none
// without ReplicaCPUPercent), whose throttling each side's rounds count.
func runRedisScenario(ctx context.Context, cfg Config, procs *clientProcs, setup hostSetup, caps []*CPULimit, degradation string, limit *CPULimit, cond condition, rep *bench.Report, out io.Writer) (Scenario, error) {
	name := setup.Scenario
	sc := Scenario{Degradation: degradation, Policies: map[string]PolicyResult{}}
	list := contenders(cfg, false)
	if err := procs.open(setup); err != nil {
		return sc, err
	}
	results := make([]sideResult, len(list))
	loads, throttled, err := interleaveContenders(ctx, cfg.Rounds, cfg.RoundDuration, name, list, limit, cond, func(i, round int) (bench.LoadResult, error) {
		before := readCPUStats(caps)
		load, chosen, step, err := procs.round(i, round, cfg.RoundDuration)
		if err != nil {
			return load, err
		}
		results[i].throttle = addCPUStats(results[i].throttle, before, readCPUStats(caps))
		results[i].victim.add(chosen, step, cfg.RoundDuration)
		results[i].herd.add(chosen, step, cfg.RoundDuration)
		return load, nil
	}, out)
	if err != nil {
		return sc, err
	}
	sc.Degradation += throttled
	status, err := procs.status()
	if err != nil {
		return sc, err
	}
	for i := range list {
		results[i].load, results[i].shares = loads[i], status[i].shares()
		results[i].hedges, results[i].ejections = status[i].Hedges, status[i].Ejections
	}
	table, charts := compareContenders(&sc, list, results, cfg.Seed, "replica shares", "Timeline read latency, "+name, "Throughput, "+name)
	rep.Add(bench.Section{
		Title: "Redis timelines, " + name,
		Text: fmt.Sprintf("Degradation: %s.\n\nC3 / round-robin: throughput %.3f, p50 %.3f, p90 %.3f, p99 %.3f. C3 / the best peer (%s): throughput %.3f, p99 %.3f, p99.9 %.3f. "+
			"No peer better on both throughput and p99 (peer dominance ≤ 1): %.3f [%.3f, %.3f]. "+
			"Replica shares are the fraction of reads each policy sent to replicas 1 / 2 / 3 (replica 1 is the one degraded or stalled), over every client process. "+
			"Herding: the most-loaded replica's mean share of the reads of all client processes per %s window, and how often per second it moved to another replica. "+
			"Throttled: for each capped replica, the fraction of 100 ms CFS periods in which it used its whole quota. "+
			"c3-psi, c3-concentrate, c3-hedge, c3-no-ping-gate, c3-no-probation, c3-keep-peak, c3-auto-concentrate and c3-ejected-pings are C3 variants: ranked by Ψ instead of peak-EWMA latency × (in-flight+1); every read sent to one home replica (lowest ping, not ejected); with hedged reads (a read late past its replica's p95 while that replica answers nothing is sent to the next-best; at most 5%% of reads; only reads to a suspect replica, whose p95 is over twice the best replica's or which is silent, can be hedged); without the ping gate (a replica whose PINGs take over 10× the typical replica's and longer than its reads is not ejected for it); without probation and in-flight cap (a replica back from an ejection takes reads at once, not one at a time for a 100 ms trial, then twice as many per answer in time up to half what it held when ejected, a cap that doubles after each 100 ms the replica held it); keeping the peak latency of a replica back early from an ejection (its stall's late replies) instead of restarting it from the others'; every read to the home replica while that has answered faster on average than spreading (one 250 ms epoch in 4 to 64 tries the other way, judged against the epochs around it); pinging an ejected replica every 25 ms instead of only with the samples (every 250 ms). Ejections are our selector's, per replica, as slow / silent / ping (+ ping extensions), summed over the client processes. %s",
			sc.Degradation, sc.ThroughputRatio, sc.P50Ratio, sc.P90Ratio, sc.P99Ratio, sc.BestPeer, sc.VsBestPeer.ThroughputRatio, sc.VsBestPeer.P99Ratio, sc.VsBestPeer.P999Ratio,
			sc.PeerDominance, sc.PeerDominanceCI95.Low, sc.PeerDominanceCI95.High, herdWindow, victimTimelineText(sc)),
		Table:  &table,
		Charts: charts,
	})
	cmp := bench.CompareLoad(sc.BestPeer, findLoad(list, results, sc.BestPeer), oursName, findLoad(list, results, oursName))
	rep.Add(bench.Section{Title: "C3 vs the best peer, " + name, Table: &cmp})
	return sc, nil
}

// celebrities is how many timelines act as followed celebrities whose posts
// a feed read pulls (hybrid fan-out) beside the reader's own timeline.
const celebrities = 100

// readFeed is one feed read on one server; it keeps everything it reads in
// its own variables, so a hedged read may run it twice at once.
func readFeed(ctx context.Context, rdb *redis.Client, home string, limit int, pulled [2]string) error {
	pipe := rdb.Pipeline()
	own := pipe.ZRevRange(ctx, home, 0, int64(limit-1))
	var pulls [2]*redis.StringSliceCmd
	for i, key := range pulled {
		pulls[i] = pipe.ZRevRangeByScore(ctx, key, &redis.ZRangeBy{Min: "-inf", Max: "+inf", Count: 20})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	if n := len(own.Val()); n != limit {
		return fmt.Errorf("timeline %s on %s: got %d entries, want %d", home, rdb.Options().Addr, n, limit)
	}
	for i, p := range pulls {
		if n := len(p.Val()); n != 20 {
			return fmt.Errorf("timeline %s on %s: got %d entries, want 20", pulled[i], rdb.Options().Addr, n)
		}
	}
	return nil
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
