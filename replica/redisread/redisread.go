// Package redisread sends Redis reads that tolerate replica lag (feed
// timelines, link records) to the read replica a replica.Policy ranks best,
// and writes to the primary. It is the Redis read path of S3 (adaptive replica
// selection): one go-redis client per server, a policy over the replicas, a
// background sampler that feeds the policy the server-side signals Redis
// exposes, and Prometheus metrics per replica.
//
// Where each C3 term comes from (Redis reports no per-reply service time or
// queue length, so the sampler derives them every SampleInterval):
//
//   - R (response time): measured by Do around every call, client-seen.
//   - os (outstanding): counted by the policy, this client's calls in flight.
//   - µ̄ (service time): INFO commandstats, Δusec / Δcalls summed over every
//     command except the sampler's own (info, ping) between two samples: the
//     mean time Redis spent executing one command. A replica starved of CPU
//     shows it: commands that straddle a throttled period take longer.
//   - q (queue length): 0. Redis has no visible request queue (it reads a
//     socket and runs the command at once). We tried Little's law on the
//     wait a PING sees (q = λ·(RTT_ping − µ̄)); on a loaded 2-core machine
//     the PING round trip is mostly client-side scheduling noise, and the
//     cubed queue term then herded reads onto whichever replica had a lucky
//     PING. The os·n term stands for the queue this client builds.
//   - n (clients): 1. A ReadClient is one client in C3's sense however many
//     goroutines call Do: os already counts all of their reads in flight, so
//     n = goroutines would count each of them that many times over.
//   - ping (lowest-ping ranks by it; C3's ping gate ejects by it): the same
//     PING's round trip.
//
// C3 here ranks by peak-EWMA latency × (outstanding+1) (replica.Config.
// PeakCost, unless Config.PsiRank) and ejects silent replicas and those
// whose pings are slow (replica.Config.PingGate), and
// Read can hedge a read whose replica has gone silent (replica.Hedge,
// Config.Hedge, off by default); see BENCHMARKS.md S3 for what each is
// worth.
//
// On a Redis Cluster (backend --redis-cluster-mode, with
// --redis-cluster-read-from-replicas) Cluster does the same per shard:
// go-redis's ClusterClient picks the node of each command itself and offers
// no hook that sees the slot's nodes (its ShardPicker only gets a count of
// them, its RouteByLatency ranks by PING alone), so Cluster keeps one
// ReadClient per shard from CLUSTER SLOTS and routes each command by its
// key's master (see Cluster).
//
// Main invariant: Do runs fn on exactly one server at a time, best replica
// first, and moves to the next-best (finally the primary) only when the
// server failed (connection, timeout, LOADING/MASTERDOWN/BUSY): an
// application error or redis.Nil is an answer and is returned as is. Read
// does the same but may run fn on a second replica while the first is still
// running (a hedge); the first answer wins. Every attempt is reported to the
// policy, so its outstanding counts stay exact.
package redisread

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/replica"
)

// Defaults used for zero fields of Config.
const (
	// DefaultPullInterval is the Policy.PullInterval used when it is zero:
	// the server stats are sampled 4 times a second, so losers are pulled
	// toward the winner 10 times a second, not on every read.
	DefaultPullInterval = 100 * time.Millisecond
	// DefaultSlowFactor is the Policy.SlowFactor used when it is zero: a
	// replica whose response time, or silence with reads in flight, is
	// over 10x the replicas' lower median is ejected. Ψ alone keeps feeding a CPU-throttled Redis (its per-command
	// service time stays tiny); at 3x, scheduling stalls of healthy replicas
	// on the 2-core benchmark machine ejected them too.
	DefaultSlowFactor = 10
	// DefaultPingGate is the Policy.PingGate used when it is zero: a
	// replica whose PINGs take over 10x the typical replica's, and longer
	// than the best replica's reads, is ejected until they recover. On the benchmark's
	// degraded replica (10% of a core) the ejection by read latency alone
	// still let 4% of reads through after each ejection, and those were
	// the p99.9. A gate at 2x the lowest read time ejected healthy
	// replicas too (BENCHMARKS.md S3).
	DefaultPingGate = 10
	// DefaultMinSilence is the Policy.MinSilence used when it is zero. A
	// healthy Redis executes a command in microseconds, yet on a host whose
	// cores it shares with busy processes it is not scheduled for up to
	// tens of milliseconds; at 10x the typical read time alone (about 3 ms
	// under load, and 70 µs for a replica back from an ejection) such
	// pauses ejected healthy replicas about once a second on the
	// benchmark. A stopped Redis is still ejected within 50 ms, a
	// CPU-throttled one (90 ms pauses every 100 ms) in its first pause.
	DefaultMinSilence     = 50 * time.Millisecond
	DefaultSampleInterval = 250 * time.Millisecond
	DefaultSampleTimeout  = time.Second
	DefaultPath           = "redis"
)

// Config configures a ReadClient. Zero fields take the defaults.
type Config struct {
	// Policy chooses and tunes the replica selection policy.
	Policy replica.Config
	// SampleInterval is how often the background sampler reads INFO and
	// PINGs every replica. Negative disables the sampler.
	SampleInterval time.Duration
	// SampleTimeout bounds one sample of one replica.
	SampleTimeout time.Duration
	// EjectedPingInterval, when positive, is how often the sampler PINGs a
	// replica that C3 has ejected, between samples: two fast pings bring it
	// back early, and at the sample interval that takes up to half a
	// second after a 200 ms stall has ended. Zero: only with the samples.
	// Off by default: at 25 ms a stalled replica had its share back
	// within 300 ms instead of about a second, but no run showed more
	// reads/s for it, and with one replica at 10% of a core the p99.9 was
	// higher in three runs of three (BENCHMARKS.md S3).
	EjectedPingInterval time.Duration
	// NoPrimaryFallback stops Do from trying the primary when every replica
	// failed.
	NoPrimaryFallback bool
	// PsiRank keeps C3 ranking by Ψ instead of by peak-EWMA latency ×
	// (outstanding+1) (replica.Config.PeakCost, this client's default).
	PsiRank bool
	// Path names this read path in metrics and logs, e.g. "feed".
	Path string
	// Hedge tunes the hedged reads of Read (not Do): a read that has not
	// answered within its replica's recent p95 is sent again to the
	// next-best replica, within a budget. Off unless Hedge.Budget is set
	// (positive). Only a read to a suspect replica (Hedge.Suspect: its p95
	// over twice the best replica's, or silent) runs in a goroutine of its
	// own so that it can be hedged; hedging every read that way cost more
	// reads/s than the hedges saved (see BENCHMARKS.md S3).
	Hedge replica.HedgeConfig
}

// WithDefaults returns c with zero fields replaced by the defaults.
func (c Config) WithDefaults() Config {
	if c.Policy.PullInterval == 0 {
		c.Policy.PullInterval = DefaultPullInterval
	}
	if c.Policy.SlowFactor == 0 {
		c.Policy.SlowFactor = DefaultSlowFactor
	}
	if c.Policy.PingGate == 0 {
		c.Policy.PingGate = DefaultPingGate
	}
	if c.Policy.MinSilence == 0 {
		c.Policy.MinSilence = DefaultMinSilence
	}
	// See replica.Config.PeakCost and BENCHMARKS.md S3. PsiRank also
	// undoes a PeakCost that Flags set from these defaults.
	c.Policy.PeakCost = (c.Policy.Policy == "" || c.Policy.Policy == replica.PolicyC3) && !c.PsiRank
	c.Policy = c.Policy.WithDefaults()
	if c.Hedge.Budget == 0 {
		c.Hedge.Budget = -1
	}
	c.Hedge = c.Hedge.WithDefaults()
	if c.SampleInterval == 0 {
		c.SampleInterval = DefaultSampleInterval
	}
	if c.SampleTimeout == 0 {
		c.SampleTimeout = DefaultSampleTimeout
	}
	if c.Path == "" {
		c.Path = DefaultPath
	}
	return c
}

// Validate reports every invalid field by name.
func (c Config) Validate() error {
	d := c.WithDefaults()
	return errors.Join(c.Policy.Validate(), c.Hedge.Validate(), replica.ValidateSampler("redisread", d.SampleInterval, d.SampleTimeout),
		replica.ValidateEjectedPingInterval("redisread", d.EjectedPingInterval))
}

// Flags binds the configuration to flags named prefix+"policy",
// prefix+"sample-interval", … (e.g. prefix "redis-replica-").
func (c *Config) Flags(fs *flag.FlagSet, prefix string) {
	*c = c.WithDefaults()
	c.Policy.Flags(fs, prefix)
	fs.DurationVar(&c.SampleInterval, prefix+"sample-interval", c.SampleInterval, "how often to sample INFO commandstats and PING on each replica (negative: off)")
	fs.DurationVar(&c.SampleTimeout, prefix+"sample-timeout", c.SampleTimeout, "timeout of one sample of one replica")
	fs.DurationVar(&c.EjectedPingInterval, prefix+"ejected-ping-interval", c.EjectedPingInterval, "how often to PING a replica C3 has ejected, between samples (0: only with the samples)")
	fs.BoolVar(&c.NoPrimaryFallback, prefix+"no-primary-fallback", c.NoPrimaryFallback, "do not read from the primary when every replica failed")
	fs.BoolVar(&c.PsiRank, prefix+"psi-rank", c.PsiRank, "C3: rank by Ψ instead of peak-EWMA latency × (outstanding+1)")
	fs.Float64Var(&c.Hedge.Budget, prefix+"hedge-budget", c.Hedge.Budget, "hedged reads of Read: at most this fraction of reads is sent a second time (0 or negative: off)")
	fs.Float64Var(&c.Hedge.Quantile, prefix+"hedge-quantile", c.Hedge.Quantile, "hedged reads: hedge after this quantile of the replica's recent latencies")
}

// ReadClient routes reads to replicas through a replica.Policy and writes to
// the primary. It is safe for concurrent use.
type ReadClient struct {
	cfg      Config
	log      *slog.Logger
	primary  *redis.Client
	replicas []*redis.Client
	addrs    []string
	policy   replica.Policy
	hedger   *replica.Hedger // nil when hedging is off
	owned    bool

	orders          sync.Pool // *[]int
	primaryReads    atomic.Uint64
	primaryFailures atomic.Uint64

	stopSampler context.CancelFunc
	samplerDone sync.WaitGroup
	closeOnce   sync.Once
}

// Open builds one go-redis client per server from cfg (timeouts, pool size)
// and a ReadClient over them; Close closes them. Replica clients do not
// retry on their own (MaxRetries -1): Do retries on the next replica instead.
func Open(rc backend.RedisConfig, cfg Config, log *slog.Logger, reg prometheus.Registerer) (*ReadClient, error) {
	if err := rc.Validate(); err != nil {
		return nil, err
	}
	newClient := func(addr string, retries int) *redis.Client {
		return redis.NewClient(&redis.Options{
			Addr:         addr,
			DialTimeout:  rc.DialTimeout,
			ReadTimeout:  rc.ReadTimeout,
			WriteTimeout: rc.WriteTimeout,
			PoolSize:     rc.PoolSize,
			MaxRetries:   retries,
		})
	}
	primary := newClient(rc.Addr, 0)
	replicas := make([]*redis.Client, len(rc.ReplicaAddrs))
	for i, addr := range rc.ReplicaAddrs {
		replicas[i] = newClient(addr, -1)
	}
	c, err := New(primary, replicas, cfg, log, reg)
	if err != nil {
		primary.Close()
		for _, r := range replicas {
			r.Close()
		}
		return nil, err
	}
	c.owned = true
	return c, nil
}

// New returns a ReadClient over existing clients and starts its sampler.
// The caller keeps ownership of the clients (Close does not close them).
// reg may be nil.
func New(primary *redis.Client, replicas []*redis.Client, cfg Config, log *slog.Logger, reg prometheus.Registerer) (*ReadClient, error) {
	if primary == nil {
		return nil, errors.New("redisread: primary client is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &ReadClient{cfg: cfg, log: log, primary: primary, replicas: replicas}
	for _, r := range replicas {
		c.addrs = append(c.addrs, r.Options().Addr)
	}
	n := len(replicas)
	c.orders.New = func() any { s := make([]int, 0, n); return &s }
	if n > 0 {
		p, err := replica.New(n, cfg.Policy)
		if err != nil {
			return nil, fmt.Errorf("redisread: %w", err)
		}
		c.policy = p
		if cfg.Hedge.Enabled() {
			if c.hedger, err = replica.NewHedger(n, cfg.Hedge); err != nil {
				return nil, fmt.Errorf("redisread: %w", err)
			}
		}
		if reg != nil {
			if err := reg.Register(replica.NewCollector(p, "baedal_redis_read", cfg.Path, c.addrs)); err != nil {
				return nil, fmt.Errorf("redisread: register metrics of path %q: %w", cfg.Path, err)
			}
			if err := reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name:        "baedal_redis_read_primary_fallbacks_total",
				Help:        "reads sent to the primary because every replica failed",
				ConstLabels: prometheus.Labels{"path": cfg.Path},
			}, func() float64 { return float64(c.primaryReads.Load()) })); err != nil {
				return nil, fmt.Errorf("redisread: register metrics of path %q: %w", cfg.Path, err)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stopSampler = cancel
	if cfg.SampleInterval > 0 {
		for r := range n {
			c.samplerDone.Add(1)
			go c.sampleLoop(ctx, r)
		}
	}
	return c, nil
}

// Primary returns the primary's client, for writes and for reads that must
// see the latest write.
func (c *ReadClient) Primary() *redis.Client { return c.primary }

// Replicas returns the replicas' addresses in policy order (replica i).
func (c *ReadClient) Replicas() []string { return append([]string(nil), c.addrs...) }

// Policy returns the policy ranking the replicas, nil without replicas.
func (c *ReadClient) Policy() replica.Policy { return c.policy }

// Close stops the sampler and, for a client built by Open, closes every
// server's client.
func (c *ReadClient) Close() error {
	var errs []error
	c.closeOnce.Do(func() {
		c.stopSampler()
		c.samplerDone.Wait()
		if c.owned {
			errs = append(errs, c.primary.Close())
			for _, r := range c.replicas {
				errs = append(errs, r.Close())
			}
		}
	})
	return errors.Join(errs...)
}

// ErrAllFailed is returned (wrapped, with each server's error) by Do when no
// server could answer.
var ErrAllFailed error = allFailed{}

// allFailed is ErrAllFailed: it says the backend is unavailable
// (api.BackendUnavailable), so an API route answers it 503.
type allFailed struct{}

func (allFailed) Error() string              { return "redisread: every server failed" }
func (allFailed) UnavailableBackend() string { return "redis" }

// Do runs fn on the best replica; when that server fails it runs fn again on
// the next-best, and finally on the primary. fn must be a read: it may run
// more than once. Its error is returned unchanged when it is an answer
// (nil, redis.Nil, an error reply such as WRONGTYPE, or ctx ending).
func (c *ReadClient) Do(ctx context.Context, fn func(ctx context.Context, rdb *redis.Client) error) error {
	_, err := Read(ctx, c, func(ctx context.Context, rdb *redis.Client) (struct{}, error) {
		return struct{}{}, fn(ctx, rdb)
	})
	return err
}

// Read runs fn on the best replica and returns its value, as Do, and, with
// Config.Hedge, hedges it: when the replica has not answered within its
// recent p95, fn runs again on the next-best replica, the first answer wins
// and the other call's context is cancelled (within the budget; see
// replica.Hedge). fn must be a read that keeps its results in its own
// variables and returns them: it may run twice at once. When every replica
// failed, fn runs on the primary (unless NoPrimaryFallback).
func Read[T any](ctx context.Context, c *ReadClient, fn func(ctx context.Context, rdb *redis.Client) (T, error)) (T, error) {
	if len(c.replicas) == 0 {
		return fn(ctx, c.primary)
	}
	bufp := c.orders.Get().(*[]int)
	defer c.orders.Put(bufp)
	onReplica := func(ctx context.Context, r int) (T, error) { return fn(ctx, c.replicas[r]) }
	var v T
	var err error
	if c.hedger != nil {
		v, err = replica.Hedge(ctx, c.policy, c.hedger, (*bufp)[:0], onReplica, serverFailed)
	} else {
		*bufp = c.policy.Select((*bufp)[:0])
		v, err = replica.TryInOrder(ctx, c.policy, nil, *bufp, onReplica, serverFailed)
	}
	if !errors.Is(err, replica.ErrNoAnswer) {
		return v, err
	}
	if !c.cfg.NoPrimaryFallback && ctx.Err() == nil {
		c.primaryReads.Add(1)
		pv, perr := fn(ctx, c.primary)
		if !serverFailed(ctx, perr) {
			return pv, perr
		}
		c.primaryFailures.Add(1)
		err = errors.Join(err, fmt.Errorf("primary %s: %w", c.primary.Options().Addr, perr))
	}
	c.log.Warn("redis read failed on every server", "path", c.cfg.Path, "replicas", c.addrs, "error", err)
	var zero T
	return zero, fmt.Errorf("%w (path %s, replicas %v in policy order): %w", ErrAllFailed, c.cfg.Path, c.addrs, err)
}

// serverFailed says whether err means the server could not answer, so the
// read should move to another server. An answer (redis.Nil, an error reply
// about the request) or the caller's context ending is not a server failure.
func serverFailed(ctx context.Context, err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	if ctx.Err() != nil {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		for _, prefix := range []string{"LOADING", "MASTERDOWN", "BUSY", "TRYAGAIN"} {
			if redis.HasErrorPrefix(err, prefix) {
				return true
			}
		}
		return strings.HasPrefix(reply.Error(), "ERR max number of clients")
	}
	return true
}

// ReplicaStatus is one replica's state, for metrics and the web console.
type ReplicaStatus struct {
	Addr string `json:"addr"`
	replica.ReplicaStats
	// Share is the fraction of all replica reads started on this one.
	Share float64 `json:"share"`
}

// Status is a snapshot of the read path.
type Status struct {
	Path     string          `json:"path"`
	Policy   string          `json:"policy"`
	Primary  string          `json:"primary"`
	Replicas []ReplicaStatus `json:"replicas"`
	// PrimaryReads counts reads that fell back to the primary.
	PrimaryReads uint64 `json:"primary_reads"`
	// Hedges counts Read's hedged reads; nil when hedging is off.
	Hedges *replica.HedgeStats `json:"hedges,omitempty"`
}

// Status returns the current statistics of every replica.
func (c *ReadClient) Status() Status {
	st := Status{Path: c.cfg.Path, Policy: string(c.cfg.Policy.Policy), Primary: c.primary.Options().Addr, PrimaryReads: c.primaryReads.Load()}
	if c.policy == nil {
		return st
	}
	if c.hedger != nil {
		hs := c.hedger.Stats()
		st.Hedges = &hs
	}
	stats := c.policy.Snapshot(nil)
	var total uint64
	for _, s := range stats {
		total += s.Chosen
	}
	for _, s := range stats {
		rs := ReplicaStatus{Addr: c.addrs[s.Replica], ReplicaStats: s}
		if total > 0 {
			rs.Share = float64(s.Chosen) / float64(total)
		}
		st.Replicas = append(st.Replicas, rs)
	}
	return st
}

// sampleLoop samples replica r each SampleInterval until ctx ends, and
// between samples PINGs it each EjectedPingInterval while C3 has it
// ejected. Each replica has a loop of its own: a stopped replica's PING,
// waiting out its SampleTimeout, must not hold back the samples of the
// others (with one loop for all, a replica stopped for 200 ms froze every
// replica's ping for those 200 ms, just when the ping gate compares them).
func (c *ReadClient) sampleLoop(ctx context.Context, r int) {
	defer c.samplerDone.Done()
	var s serverSampler
	var sampledAt time.Time
	tick := c.cfg.SampleInterval
	if c.cfg.EjectedPingInterval > 0 {
		tick = min(tick, c.cfg.EjectedPingInterval)
	}
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		if time.Since(sampledAt) >= c.cfg.SampleInterval {
			sampledAt = time.Now()
			c.sampleReplica(ctx, r, &s)
		} else if c.cfg.EjectedPingInterval > 0 && c.policy.Ejected(r) {
			pingCtx, cancel := context.WithTimeout(ctx, c.cfg.SampleTimeout)
			c.pingReplica(pingCtx, r, &s)
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// serverSampler keeps the previous INFO commandstats totals of one replica.
type serverSampler struct {
	prev      commandTotals
	prevAt    time.Time
	hasPrev   bool
	lastSvc   time.Duration
	hasSvc    bool
	loggedErr bool
}

// pingReplica PINGs replica r within ctx and reports the round trip to the
// policy; a PING that fails reports nothing (it is logged once until a
// sample succeeds again) and returns false.
func (c *ReadClient) pingReplica(ctx context.Context, r int, s *serverSampler) bool {
	start := time.Now()
	if err := c.replicas[r].Ping(ctx).Err(); err != nil {
		if ctx.Err() == nil && !s.loggedErr {
			c.log.Warn("redis replica sample failed", "path", c.cfg.Path, "replica", c.addrs[r], "error", err)
			s.loggedErr = true
		}
		return false
	}
	c.policy.ObservePing(r, time.Since(start))
	return true
}

// sampleReplica PINGs replica r, reads INFO commandstats and feeds the policy.
func (c *ReadClient) sampleReplica(ctx context.Context, r int, s *serverSampler) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.SampleTimeout)
	defer cancel()
	if !c.pingReplica(ctx, r, s) {
		return
	}
	info, err := c.replicas[r].Info(ctx, "commandstats").Result()
	if err != nil {
		return
	}
	s.loggedErr = false
	now := time.Now()
	totals := parseCommandStats(info, samplerCommands)
	defer func() { s.prev, s.prevAt, s.hasPrev = totals, now, true }()
	if !s.hasPrev {
		return
	}
	est, ok := estimate(s.prev, totals, now.Sub(s.prevAt))
	if ok {
		s.lastSvc, s.hasSvc = est.serviceTime, true
	}
	if !s.hasSvc {
		return
	}
	c.policy.ObserveServer(r, s.lastSvc, 0)
}

// samplerCommands are the sampler's own commands, left out of the service
// time so an idle replica is not judged by the cost of INFO.
var samplerCommands = []string{"info", "ping"}

// commandTotals sums INFO commandstats over commands.
type commandTotals struct {
	calls uint64
	usec  uint64
}

// parseCommandStats sums calls and usec over the "cmdstat_NAME:calls=…,
// usec=…,…" lines of an INFO commandstats reply, skipping the commands in
// skip. Lines it cannot read are ignored.
func parseCommandStats(info string, skip []string) commandTotals {
	var t commandTotals
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		cmd := strings.TrimPrefix(name, "cmdstat_")
		skipped := false
		for _, s := range skip {
			if strings.EqualFold(cmd, s) {
				skipped = true
				break
			}
		}
		if skipped {
			continue
		}
		var calls, usec uint64
		var haveCalls, haveUsec bool
		for _, kv := range strings.Split(fields, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			switch k {
			case "calls":
				n, err := strconv.ParseUint(v, 10, 64)
				calls, haveCalls = n, err == nil
			case "usec":
				n, err := strconv.ParseUint(v, 10, 64)
				usec, haveUsec = n, err == nil
			}
		}
		if haveCalls && haveUsec {
			t.calls += calls
			t.usec += usec
		}
	}
	return t
}

// serverEstimate is what one pair of samples says about a server.
type serverEstimate struct {
	serviceTime time.Duration // mean execution time of one command
	rate        float64       // commands per second, all clients
}

// estimate derives the service time and command rate from two commandstats
// totals taken elapsed apart. ok is false when no command ran in between
// (the service time is then unknown) or a counter went backwards (CONFIG
// RESETSTAT, a restart).
func estimate(prev, cur commandTotals, elapsed time.Duration) (serverEstimate, bool) {
	if cur.calls <= prev.calls || cur.usec < prev.usec || elapsed <= 0 {
		return serverEstimate{}, false
	}
	calls := float64(cur.calls - prev.calls)
	usec := float64(cur.usec - prev.usec)
	return serverEstimate{
		serviceTime: time.Duration(math.Round(usec / calls * float64(time.Microsecond))),
		rate:        calls / elapsed.Seconds(),
	}, true
}
