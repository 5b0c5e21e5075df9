// Package feedbench is the workload of `baedal bench feed` (SPEC §S5, issue
// 7): the write-up's experiment run against the pull, push and hybrid
// strategies in one process, interleaved, over real HTTP on loopback.
//
//  1. Feed-read latency of users A (follows 10,000 users and the celebrity)
//     and B (follows user 1 and the celebrity), with 1 client and with 50
//     concurrent clients, through GET /api/v1/feeds?user-id=N, sent by a
//     lean keep-alive client (leanConn) rather than net/http.
//  2. Consistency: users 1 and N poll their feeds while the celebrity posts
//     at 1/6 of the duration; a poll is consistent when both feeds agree on
//     every post accepted (POST returned 201) before the poll started.
//  3. Fan-out (push): time from POST /api/v1/tweets by the celebrity
//     (10,002 followers) until its fan-out finished, checked afterwards in
//     every follower's timeline.
//
// Invariant: the three strategies run on identical data (one database each,
// seeded with the same seed and clock) and take turns round by round, so
// their ratios survive a noisy machine.
//
// With --redis-cluster MASTERS the benchmark also starts a local Redis
// Cluster of that many masters (benchmarks/internal/clusterbench: no replicas, free
// loopback ports, stopped by PID at the end) and a fourth deployment,
// hybrid on the cluster ("hybrid-cluster", its own database seeded with the
// same seed and clock), which takes its turn in the same read rounds as the
// strategies and the floor (interleaved). Consistency and fan-out run on
// the single Redis only. The summary's redis_cluster object holds its
// figures beside the single-Redis hybrid's of the same run, and the
// masters' balance over the seeding and reads: the largest master's share
// of the commands processed (INFO stats total_commands_processed deltas
// from the cluster's formation to the end of the reads) and of
// used_memory_dataset (above each master's empty baseline), over the
// smallest's; target <= 1.2.
// Run quick with
//
//	baedal bench feed --profile quick
package feedbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/benchmarks/internal/clusterbench"
	"github.com/baedal/baedal/feed"
)

// Config is the benchmark's configuration. Zero sizes take the profile's
// values (see EnsureDefaults).
type Config struct {
	Profile bench.Profile
	// PostgresURL is a URL with the right to create databases; the
	// benchmark creates <DatabasePrefix>_<strategy> and drops them after.
	PostgresURL string
	// RedisAddr is the Redis primary; keys start with KeyPrefix.
	RedisAddr      string
	DatabasePrefix string
	KeyPrefix      string
	// Users is the experiment's N (ordinary users; default 10,000).
	Users int
	// Clients is the concurrency of the second read run (default 50).
	Clients int
	// Rounds: each strategy's read time is split into this many turns.
	Rounds int
	// ReadDuration is each strategy's total read time per user and
	// concurrency, over all rounds.
	ReadDuration time.Duration
	// ConsistencyDuration is each strategy's consistency run.
	ConsistencyDuration time.Duration
	// FanoutRuns is the number of timed celebrity posts under push.
	FanoutRuns int
	// ReportDir receives feed.html and feed.json ("" = no report).
	ReportDir string
	// Command is written into the report.
	Command string
	// Keep leaves the databases and Redis keys in place.
	Keep bool
	// RedisCluster, when > 0, is the number of masters of a local Redis
	// Cluster that a hybrid deployment reads from beside the single Redis
	// (see the package doc).
	RedisCluster int
}

// Defaults returns the quick profile against no servers.
func Defaults() Config {
	return Config{Profile: bench.ProfileQuick, DatabasePrefix: "baedal_feedbench", KeyPrefix: "feedbench:", ReportDir: "reports"}
}

// Flags binds the benchmark's own flags (backends come from the caller).
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Var(&c.Profile, "profile", "run size: quick or full")
	fs.IntVar(&c.Users, "users", c.Users, "experiment size N (0: 10000)")
	fs.IntVar(&c.Clients, "clients", c.Clients, "concurrent clients of the second read run (0: 50)")
	fs.DurationVar(&c.ReadDuration, "read-duration", c.ReadDuration, "time of each read run (user, clients, strategy), split over the rounds (0: quick 8s, full 18s)")
	fs.StringVar(&c.ReportDir, "report-dir", c.ReportDir, "directory of the HTML report")
	fs.BoolVar(&c.Keep, "keep", c.Keep, "keep the benchmark databases and Redis keys")
	fs.IntVar(&c.RedisCluster, "redis-cluster", c.RedisCluster, "also read hybrid feeds from a local Redis Cluster of this many masters (3..16; 0: none), interleaved, and report its balance")
}

// EnsureDefaults fills zero fields from the profile.
func (c *Config) EnsureDefaults() {
	if c.Profile == "" {
		c.Profile = bench.ProfileQuick
	}
	p := c.Profile
	if c.DatabasePrefix == "" {
		c.DatabasePrefix = "baedal_feedbench"
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = "feedbench:"
	}
	if c.Users == 0 {
		c.Users = 10_000
	}
	if c.Clients == 0 {
		c.Clients = 50
	}
	if c.Rounds == 0 {
		// The read time is split over the rounds, so more rounds cost no
		// time; hybrid's p99 interval is over the rounds' p99s, and a t
		// interval over 2 rounds multiplies their spread by 12.7, over 6 by
		// 2.57.
		c.Rounds = bench.Pick(p, 6, 9)
	}
	if c.ReadDuration == 0 {
		// Quick: 4 s per round, so the 50-client p99 rests on ~150,000
		// reads rather than ~40,000. It still moves between runs of the
		// same code: 5.8–7.6 ms with 1 s rounds, 5.2 and 6.6 ms with 4 s.
		c.ReadDuration = bench.Pick(p, 8*time.Second, 18*time.Second)
	}
	if c.ConsistencyDuration == 0 {
		c.ConsistencyDuration = bench.Pick(p, 6*time.Second, 30*time.Second)
	}
	if c.FanoutRuns == 0 {
		c.FanoutRuns = bench.Pick(p, 3, 10)
	}
}

// Validate names the first invalid field.
func (c *Config) Validate() error {
	if _, err := bench.ParseProfile(string(c.Profile)); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	switch {
	case c.PostgresURL == "":
		return errors.New("postgres-url: required")
	case c.RedisAddr == "":
		return errors.New("redis-addr: required")
	case c.Users < 10 || c.Users > 1_000_000:
		return fmt.Errorf("users: got %d, allowed: 10..1000000", c.Users)
	case c.Clients < 1 || c.Clients > 1000:
		return fmt.Errorf("clients: got %d, allowed: 1..1000", c.Clients)
	case c.Rounds < 1 || c.Rounds > 100:
		return fmt.Errorf("rounds: got %d, allowed: 1..100", c.Rounds)
	case c.ReadDuration < 10*time.Millisecond || c.ConsistencyDuration < 60*time.Millisecond:
		return fmt.Errorf("durations: read %s (min 10ms), consistency %s (min 60ms)", c.ReadDuration, c.ConsistencyDuration)
	case c.FanoutRuns < 1 || c.FanoutRuns > 1000:
		return fmt.Errorf("fanout runs: got %d, allowed: 1..1000", c.FanoutRuns)
	case c.RedisCluster != 0 && (c.RedisCluster < 3 || c.RedisCluster > 16):
		return fmt.Errorf("redis-cluster: got %d masters, allowed: 0 (none) or 3..16", c.RedisCluster)
	}
	for _, r := range c.DatabasePrefix {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return fmt.Errorf("database prefix: got %q, allowed characters: a-z 0-9 _", c.DatabasePrefix)
		}
	}
	return nil
}

// Summary is the last stdout line of the benchmark.
type Summary struct {
	Bench   string `json:"bench"`
	Profile string `json:"profile"`
	Users   int    `json:"users"`
	Clients int    `json:"clients"`
	// Feed reads of user A with one client, per strategy.
	ReadP50Ms map[string]float64 `json:"read_p50_ms"`
	ReadP99Ms map[string]float64 `json:"read_p99_ms"`
	// The same with Clients concurrent clients.
	ReadP50MsConcurrent map[string]float64 `json:"read_p50_ms_concurrent"`
	ReadP99MsConcurrent map[string]float64 `json:"read_p99_ms_concurrent"`
	ThroughputUserA     map[string]float64 `json:"read_throughput_user_a_concurrent"`
	// User B, one client.
	ReadP50MsUserB             map[string]float64 `json:"read_p50_ms_user_b"`
	ReadP99MsUserB             map[string]float64 `json:"read_p99_ms_user_b"`
	SpeedupHybridVsPullUserA   float64            `json:"read_speedup_hybrid_vs_pull_user_a"`
	HybridP99MsUserAConcurrent float64            `json:"hybrid_p99_ms_user_a_concurrent"`
	// 95% intervals. The speedup (pull p50 / hybrid p50, 1 client) is a
	// percentile ratio: the hull of a bootstrap over both sides' reads and
	// a t interval over the rounds' paired ratios
	// (bench.QuantileRatioOverRounds). Hybrid's p99 is an absolute time,
	// reported without a verdict (absolute times flip with the machine):
	// its interval is over the rounds' p99s (bench.RoundValuesCI).
	SpeedupHybridVsPullUserACI95     bench.Interval    `json:"read_speedup_hybrid_vs_pull_user_a_ci95"`
	SpeedupHybridVsPullUserARounds   bench.RoundRatios `json:"read_speedup_hybrid_vs_pull_user_a_rounds"`
	HybridP99MsUserAConcurrentCI95   bench.Interval    `json:"hybrid_p99_ms_user_a_concurrent_ci95"`
	HybridP99MsUserAConcurrentRounds bench.RoundRatios `json:"hybrid_p99_ms_user_a_concurrent_rounds"`
	ReadErrors                       int64             `json:"read_errors"`
	// The floor: user A's hybrid page served fixed, by a handler that does
	// nothing else, through the same API server and clients (serveFloor),
	// in the same rounds. Its p99 with one client, its p50, p99 and
	// throughput with Clients, and hybrid's concurrent p99 over its own:
	// the feed's latency target (<= 1.25), a ratio measured in the same
	// rounds, which a slower or busier machine does not move as it moves
	// an absolute time (one run's floor p99 alone was 7.84 ms).
	FloorP99Ms           float64 `json:"read_floor_p99_ms"`
	FloorP50MsConcurrent float64 `json:"read_floor_p50_ms_concurrent"`
	FloorP99MsConcurrent float64 `json:"read_floor_p99_ms_concurrent"`
	FloorThroughput      float64 `json:"read_floor_throughput_concurrent"`
	HybridP99OverFloor   float64 `json:"hybrid_p99_over_floor_user_a_concurrent"`
	// Hull of a bootstrap over hybrid's and the floor's reads and a t
	// interval over the rounds' paired ratios.
	HybridP99OverFloorCI95   bench.Interval    `json:"hybrid_p99_over_floor_user_a_concurrent_ci95"`
	HybridP99OverFloorRounds bench.RoundRatios `json:"hybrid_p99_over_floor_user_a_concurrent_rounds"`
	// Share of consistent polls per strategy, the number of polls and the
	// number of inconsistent ones (the count is judged: one inconsistent
	// poll in 20,000 rounds to a share of 1.0000 but is a miss).
	Consistency       map[string]float64 `json:"consistency"`
	ConsistencyPolls  map[string]int     `json:"consistency_polls"`
	InconsistentPolls map[string]int     `json:"inconsistent_polls"`
	// Push fan-out of a post by an author with FanoutFollowers followers.
	FanoutMs        float64   `json:"fanout_10k_ms"`
	FanoutRunsMs    []float64 `json:"fanout_runs_ms"`
	FanoutFollowers int       `json:"fanout_followers"`
	FanoutVerified  bool      `json:"fanout_verified"`
	// Over the runs (bench.RoundValuesCI); fanout_10k_ms is their median.
	FanoutMsCI95 bench.Interval `json:"fanout_10k_ms_ci95"`
	// Targets: read_speedup_hybrid_vs_pull_user_a >= 10,
	// hybrid_p99_over_floor_user_a_concurrent <= 1.25, fanout_10k_ms <= 200,
	// inconsistent_polls.hybrid <= 0 (exact: one inconsistent poll is a
	// miss) and read_errors <= 0.
	Targets bench.Targets `json:"targets"`
	Report  string        `json:"report,omitempty"`
	// RedisCluster is set by --redis-cluster only; its targets
	// (redis_cluster.*) join Targets then.
	RedisCluster *ClusterFigures `json:"redis_cluster,omitempty"`
}

// ClusterFigures is the summary's redis_cluster object: the masters'
// balance, and user A's hybrid reads with Clients clients on the cluster
// beside the single Redis's of the same rounds.
type ClusterFigures struct {
	clusterbench.Balance
	HybridP99MsUserAConcurrent       float64           `json:"hybrid_p99_ms_user_a_concurrent"`
	HybridP99MsUserAConcurrentCI95   bench.Interval    `json:"hybrid_p99_ms_user_a_concurrent_ci95"`
	HybridP99MsUserAConcurrentRounds bench.RoundRatios `json:"hybrid_p99_ms_user_a_concurrent_rounds"`
	ReadThroughputUserAConcurrent    float64           `json:"read_throughput_user_a_concurrent"`
	HybridP50MsUserA                 float64           `json:"hybrid_p50_ms_user_a"`
	// The single Redis's hybrid figures of the same run.
	SingleHybridP99MsUserAConcurrent    float64 `json:"single_hybrid_p99_ms_user_a_concurrent"`
	SingleReadThroughputUserAConcurrent float64 `json:"single_read_throughput_user_a_concurrent"`
	SingleHybridP50MsUserA              float64 `json:"single_hybrid_p50_ms_user_a"`
	// HybridP99ClusterOverSingle is the cluster's hybrid p99 over the
	// single Redis's (user A, Clients clients) with the interval over the
	// rounds' paired ratios: what the cluster costs the read, apart from
	// how fast this machine is on the day.
	HybridP99ClusterOverSingle       float64           `json:"hybrid_p99_cluster_over_single"`
	HybridP99ClusterOverSingleRounds bench.RoundRatios `json:"hybrid_p99_cluster_over_single_rounds"`
	ReadErrors                       int64             `json:"read_errors"`
	// Balance is measured over the seeding and SpreadReads reads of
	// ordinary users drawn uniformly (SpreadReadErrors failed); the ops
	// share over the whole run, users A's and B's reads included, is
	// OpsShareMaxOverMinWithUserABReads (their keys' masters take them all).
	SpreadReads                       int64   `json:"spread_reads"`
	SpreadReadErrors                  int64   `json:"spread_read_errors"`
	OpsShareMaxOverMinWithUserABReads float64 `json:"ops_share_max_over_min_with_user_a_b_reads"`
}

// deployment is one strategy's service, served over loopback HTTP.
type deployment struct {
	strategy feed.Strategy
	svc      *feed.Service
	db       *pgxpool.Pool
	dbName   string
	base     string // http://127.0.0.1:port
	stop     func()
}

// Run runs the benchmark, writes progress to progress, the HTML report to
// cfg.ReportDir and the summary as the last line of out.
func Run(ctx context.Context, cfg Config, out, progress io.Writer) (Summary, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	if progress == nil {
		progress = io.Discard
	}
	rdb := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr, DialTimeout: 2 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, PoolSize: 128})
	defer rdb.Close()

	seed := feed.SeedConfig{Preset: feed.PresetExperiment, Users: cfg.Users, Seed: 1, Now: time.Now(), Reset: true}
	var deps []*deployment
	defer func() {
		for _, d := range deps {
			d.close(cfg, rdb)
		}
	}()
	var ids feed.SeedResult
	for _, st := range feed.Strategies() {
		d, res, err := startDeployment(ctx, cfg, st, "", seed, rdb, progress)
		if d != nil {
			deps = append(deps, d)
		}
		if err != nil {
			return Summary{}, err
		}
		ids = res
	}
	// --redis-cluster: hybrid on a cluster of its own, seeded alike.
	var cluster *clusterbench.Cluster
	var clusterDep *deployment
	var clusterBefore map[string]clusterbench.Node
	if cfg.RedisCluster > 0 {
		cl, err := clusterbench.Start(ctx, cfg.RedisCluster, progress)
		if cl != nil {
			defer cl.Stop(progress)
		}
		if err != nil {
			return Summary{}, err
		}
		cluster = cl
		if clusterBefore, err = cl.Snapshot(ctx); err != nil {
			return Summary{}, err
		}
		d, res, err := startDeployment(ctx, cfg, feed.StrategyHybrid, "_cluster", seed, cl.Client, progress)
		if d != nil {
			// Closed before the cluster stops (defers run last in, first out).
			defer d.close(cfg, cl.Client)
		}
		if err != nil {
			return Summary{}, err
		}
		if res.UserA != ids.UserA || res.UserB != ids.UserB {
			return Summary{}, fmt.Errorf("feedbench: the cluster's seed gave users A %d and B %d, the single Redis's %d and %d", res.UserA, res.UserB, ids.UserA, ids.UserB)
		}
		clusterDep = d
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second,
		DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
	}}
	defer client.CloseIdleConnections()

	// The cluster's balance on the generated data: the seeding, then reads
	// spread uniformly over the ordinary users (the rounds below read users
	// A and B only, so their keys' masters would decide it).
	var clusterGenerated map[string]clusterbench.Node
	var spread bench.LoadResult
	var spreadShares []float64 // the commands' balance of each round of spread reads
	if clusterDep != nil {
		before := clusterBefore
		for round := range cfg.Rounds {
			res, err := readSpread(ctx, clusterDep.base, cfg.Users, cfg.Clients, cfg.ReadDuration/time.Duration(cfg.Rounds*cfg.Rounds), seed.Seed+uint64(round))
			if err != nil {
				return Summary{}, err
			}
			spread.Merge(res)
			after, err := cluster.Snapshot(ctx)
			if err != nil {
				return Summary{}, err
			}
			if round > 0 { // round 0's window holds the seeding too
				share, err := clusterbench.OpsShare(before, after)
				if err != nil {
					return Summary{}, err
				}
				spreadShares = append(spreadShares, share)
			}
			before, clusterGenerated = after, after
		}
	}

	sum := Summary{Bench: "feed", Profile: string(cfg.Profile), Users: cfg.Users, Clients: cfg.Clients}
	report := bench.NewReport("feed", "Follow feed: pull vs push vs hybrid", cfg.Command)

	// 1. Reads, of each strategy and of the floor: a server answering user
	// A's hybrid page, fixed, through the same API server (serveFloor).
	type readKey struct {
		target, user string
		clients      int
	}
	type user struct {
		name string
		id   int64
	}
	userA, userB := user{"A", ids.UserA}, user{"B", ids.UserB}
	type readTarget struct {
		name, base string
		users      []user
	}
	var targets []readTarget
	var hybrid *deployment
	for _, d := range deps {
		targets = append(targets, readTarget{string(d.strategy), d.base, []user{userA, userB}})
		if d.strategy == feed.StrategyHybrid {
			hybrid = d
		}
	}
	if clusterDep != nil {
		targets = append(targets, readTarget{clusterTarget, clusterDep.base, []user{userA, userB}})
	}
	floorBase, stopFloor, err := serveFloor(ctx, hybrid.base, ids.UserA)
	defer stopFloor()
	if err != nil {
		return Summary{}, err
	}
	targets = append(targets, readTarget{floorTarget, floorBase, []user{userA}})

	reads := map[readKey]*bench.LoadResult{}
	roundP99 := map[readKey][]float64{}                 // ms, one per round
	roundRecs := map[readKey][]*bench.LatencyRecorder{} // one per round
	concurrencies := []int{1, cfg.Clients}
	slice := cfg.ReadDuration / time.Duration(cfg.Rounds)
	prog := bench.NewProgress(progress, "feed reads", int64(cfg.Rounds*len(targets)))
	var sides []bench.Side
	for _, t := range targets {
		// One lean keep-alive connection per client goroutine, kept across
		// rounds as net/http's pool would.
		conns := make([]*leanConn, max(cfg.Clients, 1))
		defer func() {
			for _, c := range conns {
				if c != nil {
					c.close()
				}
			}
		}()
		sides = append(sides, bench.Side{Name: t.name, Run: func(round int) error {
			for _, u := range t.users {
				req, err := newLeanRequest(compatFeedURL(t.base, u.id))
				if err != nil {
					return err
				}
				for _, c := range concurrencies {
					res := bench.RunClosedLoop(ctx, c, slice, func(ctx context.Context, client int) error {
						if conns[client] == nil {
							conns[client] = newLeanConn(req.addr, 30*time.Second)
						}
						return leanReadFeed(ctx, conns[client], req)
					})
					k := readKey{t.name, u.name, c}
					if reads[k] == nil {
						reads[k] = &bench.LoadResult{}
					}
					reads[k].Merge(res)
					roundP99[k] = append(roundP99[k], bench.Ms(res.Latency.Quantile(0.99)))
					roundRecs[k] = append(roundRecs[k], res.Latency)
				}
			}
			prog.Add(1)
			return ctx.Err()
		}})
	}
	if err := bench.Interleave(cfg.Rounds, sides...); err != nil {
		return sum, err
	}
	prog.Done()

	sum.ReadP50Ms, sum.ReadP99Ms = map[string]float64{}, map[string]float64{}
	sum.ReadP50MsConcurrent, sum.ReadP99MsConcurrent = map[string]float64{}, map[string]float64{}
	sum.ReadP50MsUserB, sum.ReadP99MsUserB = map[string]float64{}, map[string]float64{}
	sum.ThroughputUserA = map[string]float64{}
	readTable := &bench.Table{Header: []string{"strategy · user · clients", "requests", "errors", "req/s", "p50 ms", "p99 ms", "max ms"}}
	var cdfNames []string
	var cdfRecs []*bench.LatencyRecorder
	for _, t := range targets {
		name := t.name
		for _, u := range t.users {
			for _, c := range concurrencies {
				r := reads[readKey{name, u.name, c}]
				s := r.Summary()
				if name != clusterTarget { // the cluster's are in redis_cluster.read_errors
					sum.ReadErrors += r.Errors
				}
				readTable.Rows = append(readTable.Rows, []string{fmt.Sprintf("%s · %s · %d", name, u.name, c),
					strconv.FormatInt(s.Ops, 10), strconv.FormatInt(s.Errors, 10), fmt.Sprintf("%.0f", s.ThroughputOps),
					fmt.Sprintf("%.3f", s.Latency.P50Ms), fmt.Sprintf("%.3f", s.Latency.P99Ms), fmt.Sprintf("%.3f", s.Latency.MaxMs)})
				switch {
				case name == clusterTarget:
					// In redis_cluster only (below).
				case name == floorTarget && c == 1:
					sum.FloorP99Ms = s.Latency.P99Ms
				case name == floorTarget:
					sum.FloorP50MsConcurrent, sum.FloorP99MsConcurrent = s.Latency.P50Ms, s.Latency.P99Ms
					sum.FloorThroughput = s.ThroughputOps
				case u.name == "A" && c == 1:
					sum.ReadP50Ms[name], sum.ReadP99Ms[name] = s.Latency.P50Ms, s.Latency.P99Ms
					cdfNames, cdfRecs = append(cdfNames, name), append(cdfRecs, r.Latency)
				case u.name == "A":
					sum.ReadP50MsConcurrent[name], sum.ReadP99MsConcurrent[name] = s.Latency.P50Ms, s.Latency.P99Ms
					sum.ThroughputUserA[name] = s.ThroughputOps
				case c == 1:
					sum.ReadP50MsUserB[name], sum.ReadP99MsUserB[name] = s.Latency.P50Ms, s.Latency.P99Ms
				}
			}
		}
	}
	sum.SpeedupHybridVsPullUserA = bench.Ratio(sum.ReadP50Ms["pull"], sum.ReadP50Ms["hybrid"])
	sum.HybridP99MsUserAConcurrent = sum.ReadP99MsConcurrent["hybrid"]
	const bootstrapSeed = 1
	speedup := bench.QuantileRatioOverRounds(roundRecs[readKey{"hybrid", "A", 1}], roundRecs[readKey{"pull", "A", 1}], 0.5, bootstrapSeed)
	sum.SpeedupHybridVsPullUserACI95 = speedup.CI95.Around(sum.SpeedupHybridVsPullUserA)
	sum.SpeedupHybridVsPullUserARounds = speedup.Rounds
	hybridA := readKey{"hybrid", "A", cfg.Clients}
	sum.HybridP99MsUserAConcurrentRounds = bench.RoundValuesCI(roundP99[hybridA])
	sum.HybridP99MsUserAConcurrentCI95 = sum.HybridP99MsUserAConcurrentRounds.IntervalAround(sum.HybridP99MsUserAConcurrent)
	overFloor := bench.QuantileRatioOverRounds(roundRecs[readKey{floorTarget, "A", cfg.Clients}], roundRecs[hybridA], 0.99, bootstrapSeed)
	sum.HybridP99OverFloor, sum.HybridP99OverFloorCI95, sum.HybridP99OverFloorRounds = overFloor.Point, overFloor.CI95, overFloor.Rounds
	var clusterSection *bench.Section
	if cluster != nil {
		after, err := cluster.Snapshot(ctx)
		if err != nil {
			return sum, err
		}
		bal, err := cluster.Balance(clusterBefore, clusterGenerated)
		if err != nil {
			return sum, err
		}
		opsRounds := bench.RoundValuesCI(spreadShares)
		bal.OpsShareRounds = &opsRounds
		if bal.LargestKeysByMaster, err = cluster.LargestKeys(ctx, clusterbench.ReportedLargestKeys); err != nil {
			return sum, err
		}
		all, err := cluster.Balance(clusterBefore, after)
		if err != nil {
			return sum, err
		}
		a1, aN := reads[readKey{clusterTarget, "A", 1}].Summary(), reads[readKey{clusterTarget, "A", cfg.Clients}].Summary()
		cf := &ClusterFigures{Balance: bal, SpreadReads: spread.Ops, SpreadReadErrors: spread.Errors, OpsShareMaxOverMinWithUserABReads: all.OpsShareMaxOverMin,
			HybridP99MsUserAConcurrent: aN.Latency.P99Ms, ReadThroughputUserAConcurrent: aN.ThroughputOps, HybridP50MsUserA: a1.Latency.P50Ms,
			SingleHybridP99MsUserAConcurrent: sum.HybridP99MsUserAConcurrent, SingleReadThroughputUserAConcurrent: sum.ThroughputUserA["hybrid"],
			SingleHybridP50MsUserA: sum.ReadP50Ms["hybrid"]}
		for _, u := range []string{"A", "B"} {
			for _, c := range concurrencies {
				cf.ReadErrors += reads[readKey{clusterTarget, u, c}].Errors
			}
		}
		cf.HybridP99MsUserAConcurrentRounds = bench.RoundValuesCI(roundP99[readKey{clusterTarget, "A", cfg.Clients}])
		cf.HybridP99MsUserAConcurrentCI95 = cf.HybridP99MsUserAConcurrentRounds.IntervalAround(cf.HybridP99MsUserAConcurrent)
		cf.HybridP99ClusterOverSingle = bench.Ratio(cf.HybridP99MsUserAConcurrent, cf.SingleHybridP99MsUserAConcurrent)
		cf.HybridP99ClusterOverSingleRounds = bench.PairedRatioCI(roundP99[hybridA], roundP99[readKey{clusterTarget, "A", cfg.Clients}])
		sum.RedisCluster = cf
		clusterSection = &bench.Section{
			Title: fmt.Sprintf("Redis Cluster of %d masters beside the single Redis", bal.Masters),
			Text: fmt.Sprintf("A hybrid deployment on a local Redis Cluster of %d masters (no replicas; its own database, seeded alike) read in the same interleaved rounds as the strategies above (row %q of the table). "+
				"User A, %d clients: p99 %.3f ms on the cluster, %.3f ms on the single Redis (cluster / single %.3f, rounds %.3f–%.3f); %.0f reads/s on the cluster, %.0f on the single Redis. User A, 1 client: p50 %.3f ms on the cluster, %.3f ms on the single Redis. "+
				"Balance over the seeding and %d reads of ordinary users drawn uniformly (%d failed): largest master's share of the commands over the smallest's %.4f, of used_memory_dataset (above each master's empty baseline) %.4f; target <= %.1f each (of used_memory %.4f). "+
				"Over the whole run, with the rounds' reads of users A and B only, the commands' share is %.4f.",
				bal.Masters, clusterTarget, cfg.Clients, cf.HybridP99MsUserAConcurrent, cf.SingleHybridP99MsUserAConcurrent,
				cf.HybridP99ClusterOverSingle, cf.HybridP99ClusterOverSingleRounds.Min, cf.HybridP99ClusterOverSingleRounds.Max, cf.ReadThroughputUserAConcurrent, cf.SingleReadThroughputUserAConcurrent,
				cf.HybridP50MsUserA, cf.SingleHybridP50MsUserA, cf.SpreadReads, cf.SpreadReadErrors, bal.OpsShareMaxOverMin, bal.MemoryShareMaxOverMin, clusterbench.TargetShareMaxOverMin, bal.UsedMemoryShareMaxOverMin,
				cf.OpsShareMaxOverMinWithUserABReads),
			Table: bal.Table(),
		}
	}
	report.Add(bench.Section{
		Title: "1. Feed reads (GET /api/v1/feeds over loopback HTTP, lean keep-alive client)",
		Text: fmt.Sprintf("User A follows %d users and the celebrity; user B follows user 1 and the celebrity. "+
			"Each strategy read for %s per user and concurrency, in %d interleaved rounds. "+
			"The clients are a lean HTTP/1.1 keep-alive client (one connection per client goroutine, like wrk), not net/http, "+
			"so they take less of the CPU the server shares with them; a read counts when its status is 200 and its body a JSON array. "+
			"Speedup hybrid vs pull for user A (p50, 1 client): %.1fx. "+
			"The floor is user A's hybrid page served fixed by a handler that does nothing else, through the same API server and clients, "+
			"interleaved with the strategies: what HTTP over loopback and the scheduling of %d clients and their server on this machine cost alone. "+
			"Hybrid's p99 with %d clients is %.2fx the floor's.",
			cfg.Users, cfg.ReadDuration, cfg.Rounds, sum.SpeedupHybridVsPullUserA, cfg.Clients, cfg.Clients, sum.HybridP99OverFloor),
		Table: readTable,
		Charts: []bench.Chart{
			{Title: "User A, 1 client: latency by percentile", Kind: bench.CDFChart, YLabel: "ms", LogY: true, Series: cdfSeries(cdfNames, cdfRecs)},
			barChart("User A, p50 ms by strategy (1 client and concurrent)", deps, sum.ReadP50Ms, sum.ReadP50MsConcurrent, cfg.Clients),
		},
	})

	// 2. Consistency.
	sum.Consistency, sum.ConsistencyPolls, sum.InconsistentPolls = map[string]float64{}, map[string]int{}, map[string]int{}
	consTable := &bench.Table{Header: []string{"strategy", "polls", "consistent", "share"}}
	var consSides []bench.Side
	for _, d := range deps {
		consSides = append(consSides, bench.Side{Name: string(d.strategy), Run: func(int) error {
			polls, good, err := consistencyRun(ctx, client, d, ids.Celebrity, 1, int64(cfg.Users), cfg.ConsistencyDuration)
			if err != nil {
				return err
			}
			share := 0.0
			if polls > 0 {
				share = float64(good) / float64(polls)
			}
			sum.Consistency[string(d.strategy)] = round4(share)
			sum.ConsistencyPolls[string(d.strategy)] = polls
			sum.InconsistentPolls[string(d.strategy)] = polls - good
			consTable.Rows = append(consTable.Rows, []string{string(d.strategy), strconv.Itoa(polls), strconv.Itoa(good), fmt.Sprintf("%.4f", share)})
			fmt.Fprintf(progress, "consistency %s: %d/%d polls\n", d.strategy, good, polls)
			return nil
		}})
	}
	if err := bench.Interleave(1, consSides...); err != nil {
		return sum, err
	}
	report.Add(bench.Section{
		Title: "2. Consistency while the celebrity posts",
		Text: fmt.Sprintf("Users 1 and %d (both follow only the celebrity) poll GET /v1/users/{id}/feed concurrently for %s; the celebrity posts at 1/6 of it. "+
			"A poll is consistent when both feeds agree on every post whose POST had returned before the poll started. The write-up saw push 71.67%%, pull and hybrid 100%%.",
			cfg.Users, cfg.ConsistencyDuration),
		Table: consTable,
	})

	// 3. Fan-out under push.
	var push *deployment
	for _, d := range deps {
		if d.strategy == feed.StrategyPush {
			push = d
		}
	}
	runs, verified, followers, err := fanoutRuns(ctx, client, push, ids.Celebrity, cfg.FanoutRuns, rdb, cfg)
	if err != nil {
		return sum, err
	}
	sum.FanoutRunsMs, sum.FanoutVerified, sum.FanoutFollowers = runs, verified, followers
	sorted := slices.Clone(runs)
	slices.Sort(sorted)
	sum.FanoutMs = sorted[len(sorted)/2]
	sum.FanoutMsCI95 = bench.RoundValuesCI(runs).IntervalAround(sum.FanoutMs)
	report.Add(bench.Section{
		Title: "3. Push fan-out of one post to every follower",
		Text: fmt.Sprintf("The celebrity (%d followers) posts through POST /api/v1/tweets; the time runs until its fan-out job finished (outbox row gone), "+
			"and afterwards every follower's timeline was checked (verified: %v). Median of %d runs: %.1f ms.", followers, verified, len(runs), sum.FanoutMs),
		Charts: []bench.Chart{{Title: "Fan-out time per run", Kind: bench.BarChart, YLabel: "ms",
			Series: []bench.Series{{Name: "push", Y: runs, Labels: runLabels(len(runs))}}}},
	})

	sum.Targets = bench.Targets{
		"read_speedup_hybrid_vs_pull_user_a":      bench.AtLeast(10).Evaluate(sum.SpeedupHybridVsPullUserA, sum.SpeedupHybridVsPullUserACI95),
		"hybrid_p99_over_floor_user_a_concurrent": HybridOverFloorTarget.Evaluate(sum.HybridP99OverFloor, sum.HybridP99OverFloorCI95),
		"fanout_10k_ms": bench.AtMost(200).Evaluate(sum.FanoutMs, sum.FanoutMsCI95),
		// Correctness checks, not noisy measures: counts, judged as they
		// are. Failed reads are left out of the latencies, so the error
		// target stands beside the latency targets.
		"inconsistent_polls.hybrid": exactlyZero(sum.InconsistentPolls["hybrid"]),
		"read_errors":               exactlyZero(int(sum.ReadErrors)),
	}
	if sum.ConsistencyPolls["hybrid"] == 0 {
		sum.Targets["inconsistent_polls.hybrid"] = bench.AtMost(0).Evaluate(0, bench.NoInterval) // no poll: undecided
	}
	if cf := sum.RedisCluster; cf != nil {
		cf.Balance.Targets(sum.Targets)
	}
	hp := sum.HybridP99MsUserAConcurrentRounds
	report.Add(bench.IntervalSection([]bench.Figure{
		{Name: "speedup hybrid vs pull (p50, 1 client)", Point: sum.SpeedupHybridVsPullUserA, CI95: sum.SpeedupHybridVsPullUserACI95, Rounds: &sum.SpeedupHybridVsPullUserARounds},
		{Name: "hybrid p99 / floor p99, concurrent", Point: sum.HybridP99OverFloor, CI95: sum.HybridP99OverFloorCI95, Rounds: &sum.HybridP99OverFloorRounds},
	}))
	verdicts := bench.TargetsSection(sum.Targets)
	verdicts.Text += fmt.Sprintf(" Hybrid's p99 with %d clients (absolute, no verdict): %.3f ms, by round %.3f–%.3f ms over %d rounds.", cfg.Clients, sum.HybridP99MsUserAConcurrent, hp.Min, hp.Max, hp.Rounds)
	report.Add(verdicts)
	if clusterSection != nil {
		report.Add(*clusterSection)
	}
	if cfg.ReportDir != "" {
		report.SetSummary(sum)
		path, err := report.WriteHTML(cfg.ReportDir)
		if err != nil {
			return sum, err
		}
		sum.Report = path
	}
	return sum, bench.PrintSummary(out, sum)
}

// HybridOverFloorTarget is the feed's latency target: hybrid's p99 for user
// A with Clients clients at most 1.25 times the floor's, served in the same
// rounds by the same HTTP stack with no feed work.
var HybridOverFloorTarget = bench.AtMost(1.25)

// exactlyZero judges a count that must be 0.
func exactlyZero(n int) bench.TargetResult {
	return bench.AtMost(0).Evaluate(float64(n), bench.Exact(float64(n)))
}

// startDeployment creates the database <prefix>_<strategy><dbSuffix>,
// seeds it and serves strategy st on rdb.
func startDeployment(ctx context.Context, cfg Config, st feed.Strategy, dbSuffix string, seed feed.SeedConfig, rdb redis.UniversalClient, progress io.Writer) (*deployment, feed.SeedResult, error) {
	d := &deployment{strategy: st, dbName: cfg.DatabasePrefix + "_" + string(st) + dbSuffix}
	admin, err := pgx.Connect(ctx, cfg.PostgresURL)
	if err != nil {
		return nil, feed.SeedResult{}, fmt.Errorf("feedbench: connect to postgres: %w", err)
	}
	_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+d.dbName+" WITH (FORCE)")
	if err == nil {
		_, err = admin.Exec(ctx, "CREATE DATABASE "+d.dbName)
	}
	admin.Close(ctx)
	if err != nil {
		return nil, feed.SeedResult{}, fmt.Errorf("feedbench: create database %s: %w", d.dbName, err)
	}
	u, err := url.Parse(cfg.PostgresURL)
	if err != nil {
		return d, feed.SeedResult{}, fmt.Errorf("feedbench: postgres url does not parse")
	}
	u.Path = "/" + d.dbName
	pcfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return d, feed.SeedResult{}, fmt.Errorf("feedbench: postgres url does not parse")
	}
	pcfg.MaxConns = 16
	if d.db, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return d, feed.SeedResult{}, fmt.Errorf("feedbench: open %s: %w", d.dbName, err)
	}
	fcfg := feed.Defaults()
	fcfg.Strategy = st
	fcfg.KeyPrefix = cfg.KeyPrefix + string(st) + ":"
	if d.svc, err = feed.NewService(fcfg, d.db, rdb, nil, prometheus.NewRegistry()); err != nil {
		return d, feed.SeedResult{}, err
	}
	res, err := feed.SeedAndRebuild(ctx, d.svc, seed, progress)
	if err != nil {
		return d, res, err
	}
	wctx, cancelWorkers := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { d.svc.RunWorkers(wctx) })
	base, stopServer, err := serve(ctx, d.svc)
	d.stop = func() { stopServer(); cancelWorkers(); wg.Wait() }
	if err != nil {
		return d, res, fmt.Errorf("feedbench: serve %s: %w", st, err)
	}
	d.base = base
	return d, res, nil
}

// serve serves svc's routes on a loopback port until stop is called and
// returns its base URL (http://127.0.0.1:port). Call stop even on error.
func serve(ctx context.Context, svc *feed.Service) (base string, stop func(), err error) {
	return serveRoutes(ctx, func(srv *api.Server) { feed.RegisterRoutes(srv, svc) })
}

// compatFeedURL is the URL of user's compatibility feed on the server at base.
func compatFeedURL(base string, user int64) string {
	return base + "/api/v1/feeds?user-id=" + strconv.FormatInt(user, 10)
}

// floorTarget names the floor's results.
const floorTarget = "floor"

// clusterTarget names the results of hybrid on the Redis Cluster.
const clusterTarget = "hybrid-cluster"

// serveFloor reads user's compatibility feed from the server at base once
// and serves that body as the answer of every GET /api/v1/feeds, through the
// same API server as the feed's routes: the floor of a read's cost on this
// machine, all of it (HTTP over loopback, the clients, the scheduling of both)
// but the feed's own work (Redis, assembling the page). Call stop even on
// error.
func serveFloor(ctx context.Context, base string, user int64) (floorBase string, stop func(), err error) {
	stop = func() {}
	req, err := newLeanRequest(compatFeedURL(base, user))
	if err != nil {
		return "", stop, err
	}
	c := newLeanConn(req.addr, 30*time.Second)
	page, err := c.get(ctx, req)
	c.close()
	if err != nil {
		return "", stop, fmt.Errorf("feedbench: read the floor's page: %w", err)
	}
	body := slices.Clone(page)
	return serveRoutes(ctx, func(srv *api.Server) {
		srv.Handle("GET /api/v1/feeds", func(w http.ResponseWriter, r *http.Request) error {
			h := w.Header()
			h.Set("Content-Type", "application/json")
			h.Set("Content-Length", strconv.Itoa(len(body)))
			_, err := w.Write(body)
			return err
		}, api.Params("user-id", "limit"))
	})
}

// serveRoutes serves the routes register adds on a loopback port until stop
// is called and returns its base URL. Call stop even on error.
func serveRoutes(ctx context.Context, register func(*api.Server)) (base string, stop func(), err error) {
	acfg := api.Defaults()
	acfg.Addr = "127.0.0.1:0"
	srv := api.New(acfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	register(srv)
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	wg.Go(func() { errc <- srv.Run(sctx, func(addr string) { ready <- addr }) })
	stop = func() { cancel(); wg.Wait() }
	select {
	case addr := <-ready:
		return "http://" + addr, stop, nil
	case err := <-errc:
		return "", stop, err
	}
}

func (d *deployment) close(cfg Config, rdb redis.UniversalClient) {
	if d.stop != nil {
		d.stop()
	}
	ctx := context.Background()
	if d.svc != nil && !cfg.Keep {
		d.svc.DeleteRedisState(ctx)
	}
	if d.db != nil {
		d.db.Close()
	}
	if !cfg.Keep {
		if admin, err := pgx.Connect(ctx, cfg.PostgresURL); err == nil {
			admin.Exec(ctx, "DROP DATABASE IF EXISTS "+d.dbName+" WITH (FORCE)")
			admin.Close(ctx)
		}
	}
}

// readSpread reads the feeds of ordinary users 1..users drawn uniformly
// (seeded), with clients closed-loop clients for d, through the server at
// base.
func readSpread(ctx context.Context, base string, users, clients int, d time.Duration, seed uint64) (bench.LoadResult, error) {
	conns := make([]*leanConn, max(clients, 1))
	rngs := make([]*rand.Rand, len(conns))
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(seed, uint64(i)))
	}
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.close()
			}
		}
	}()
	res := bench.RunClosedLoop(ctx, clients, d, func(ctx context.Context, client int) error {
		req, err := newLeanRequest(compatFeedURL(base, 1+rngs[client].Int64N(int64(users))))
		if err != nil {
			return err
		}
		if conns[client] == nil {
			conns[client] = newLeanConn(req.addr, 30*time.Second)
		}
		return leanReadFeed(ctx, conns[client], req)
	})
	if res.Ops == 0 {
		return res, fmt.Errorf("feedbench: no spread read succeeded in %s (%d errors)", d, res.Errors)
	}
	return res, ctx.Err()
}

// leanReadFeed reads a compatibility feed (GET /api/v1/feeds) with c: an
// error unless the status is 200 and the body a JSON array, so failed reads
// are not counted as fast ones.
func leanReadFeed(ctx context.Context, c *leanConn, req leanRequest) error {
	body, err := c.get(ctx, req)
	if err != nil {
		return err
	}
	if len(body) == 0 || body[0] != '[' {
		return fmt.Errorf("feedbench: feed body is not a JSON array: %.100q", body)
	}
	return nil
}

// getJSON GETs url and decodes the body into v (nil: read and discard).
func getJSON(ctx context.Context, client *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %.200s", url, resp.StatusCode, body)
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(body, v)
}

func postTweet(ctx context.Context, client *http.Client, base string, sender int64, text string) (int64, error) {
	body, _ := json.Marshal(feed.CompatTweetRequest{SenderID: sender, Text: text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/tweets", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var p feed.Post
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated {
		return 0, fmt.Errorf("POST /api/v1/tweets: %d %.200s", resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return 0, err
	}
	return p.ID, nil
}

// consistencyRun polls the feeds of users u1 and u2 concurrently until d
// passed; the celebrity posts at d/6. It returns polls and consistent polls.
func consistencyRun(ctx context.Context, client *http.Client, d *deployment, celebrity, u1, u2 int64, dur time.Duration) (int, int, error) {
	var accepted atomic.Int64 // newest post id whose POST returned
	postErr := make(chan error, 1)
	go func() {
		time.Sleep(dur / 6)
		id, err := postTweet(ctx, client, d.base, celebrity, "celebrity post at "+time.Now().Format(time.RFC3339Nano))
		if err == nil {
			accepted.Store(id)
		}
		postErr <- err
	}()
	// Seeded posts are all accepted: any id up to now counts.
	seededCutoff := feed.PostIDAt(time.Now(), 0)
	deadline := time.Now().Add(dur)
	polls, good := 0, 0
	for time.Now().Before(deadline) {
		cutoff := max(seededCutoff, accepted.Load())
		var p1, p2 feed.Page
		var e1, e2 error
		var wg sync.WaitGroup
		wg.Go(func() { e1 = getJSON(ctx, client, fmt.Sprintf("%s/v1/users/%d/feed?limit=20", d.base, u1), &p1) })
		wg.Go(func() { e2 = getJSON(ctx, client, fmt.Sprintf("%s/v1/users/%d/feed?limit=20", d.base, u2), &p2) })
		wg.Wait()
		if err := errors.Join(e1, e2); err != nil {
			return polls, good, err
		}
		polls++
		if sameAcceptedFeed(p1.Posts, p2.Posts, cutoff) {
			good++
		}
	}
	if err := <-postErr; err != nil {
		return polls, good, err
	}
	return polls, good, nil
}

// sameAcceptedFeed compares two feeds on the posts with id <= cutoff (posts
// newer than the poll's start may legitimately be seen by one reader only),
// over the length both pages cover.
func sameAcceptedFeed(a, b []feed.Post, cutoff int64) bool {
	filter := func(ps []feed.Post) []int64 {
		var ids []int64
		for _, p := range ps {
			if p.ID <= cutoff {
				ids = append(ids, p.ID)
			}
		}
		return ids
	}
	x, y := filter(a), filter(b)
	n := min(len(x), len(y))
	if n == 0 && len(x) != len(y) {
		return false
	}
	return slices.Equal(x[:n], y[:n])
}

// fanoutRuns posts as the celebrity under push and times each fan-out.
func fanoutRuns(ctx context.Context, client *http.Client, d *deployment, celebrity int64, n int, rdb *redis.Client, cfg Config) ([]float64, bool, int, error) {
	var runs []float64
	var last int64
	for i := range n {
		start := time.Now()
		id, err := postTweet(ctx, client, d.base, celebrity, fmt.Sprintf("fan-out run %d", i))
		if err != nil {
			return nil, false, 0, err
		}
		for {
			done, err := d.svc.FanoutDone(ctx, id)
			if err != nil {
				return nil, false, 0, err
			}
			if done {
				break
			}
			if time.Since(start) > time.Minute {
				return nil, false, 0, fmt.Errorf("feedbench: fan-out of post %d not done after a minute", id)
			}
			time.Sleep(500 * time.Microsecond)
		}
		runs = append(runs, bench.Ms(time.Since(start)))
		last = id
	}
	// Verify: every follower's timeline has the last post.
	rows, err := d.db.Query(ctx, `SELECT follower_id FROM feed_follows WHERE followee_id = $1`, celebrity)
	if err != nil {
		return nil, false, 0, err
	}
	followers, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, false, 0, err
	}
	pipe := rdb.Pipeline()
	member := strconv.FormatInt(last, 10)
	cmds := make([]*redis.FloatCmd, len(followers))
	for i, f := range followers {
		cmds[i] = pipe.ZScore(ctx, cfg.KeyPrefix+string(feed.StrategyPush)+":tl:"+strconv.FormatInt(f, 10), member)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, false, 0, err
	}
	verified := true
	for _, c := range cmds {
		if c.Err() != nil {
			verified = false
		}
	}
	return runs, verified, len(followers), nil
}

func cdfSeries(names []string, recs []*bench.LatencyRecorder) []bench.Series {
	out := make([]bench.Series, len(names))
	for i := range names {
		out[i] = bench.Series{Name: names[i], Latency: recs[i]}
	}
	return out
}

func barChart(title string, deps []*deployment, one, many map[string]float64, clients int) bench.Chart {
	var labels []string
	var y1, yN []float64
	for _, d := range deps {
		labels = append(labels, string(d.strategy))
		y1 = append(y1, one[string(d.strategy)])
		yN = append(yN, many[string(d.strategy)])
	}
	return bench.Chart{Title: title, Kind: bench.BarChart, YLabel: "ms", LogY: true, Series: []bench.Series{
		{Name: "1 client", Y: y1, Labels: labels},
		{Name: fmt.Sprintf("%d clients", clients), Y: yN, Labels: labels},
	}}
}

func runLabels(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "run " + strconv.Itoa(i+1)
	}
	return out
}

func round4(v float64) float64 { return float64(int64(v*10000+0.5)) / 10000 }
