package feed

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// Strategy says how posts reach readers; see the package documentation.
type Strategy string

// The three delivery strategies.
const (
	StrategyPull   Strategy = "pull"
	StrategyPush   Strategy = "push"
	StrategyHybrid Strategy = "hybrid"
)

// Strategies lists every strategy, in the order reports show them.
var strategies = []Strategy{StrategyPull, StrategyPush, StrategyHybrid}

// Strategies returns every strategy: pull, push, hybrid.
func Strategies() []Strategy { return append([]Strategy(nil), strategies...) }

// ParseStrategy parses "pull", "push" or "hybrid".
func ParseStrategy(s string) (Strategy, error) {
	for _, st := range strategies {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("feed strategy %q is unknown; allowed: %s", s, strategyNames())
}

func strategyNames() string {
	names := make([]string, len(strategies))
	for i, s := range strategies {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// String implements flag.Value.
func (s Strategy) String() string { return string(s) }

// Set implements flag.Value.
func (s *Strategy) Set(v string) error {
	st, err := ParseStrategy(v)
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// Config configures one feed deployment. The zero value of a field means its
// default (see Defaults); call EnsureDefaults then Validate.
type Config struct {
	// Strategy is the delivery strategy (default hybrid).
	Strategy Strategy
	// CelebrityThreshold: in hybrid, authors with at least this many
	// followers are pulled at read time instead of pushed.
	CelebrityThreshold int
	// TimelineCap is the number of post ids kept per user timeline; older
	// ones are trimmed on write.
	TimelineCap int
	// AuthorPostsCap is the number of recent post ids kept per author for
	// pulling.
	AuthorPostsCap int
	// MaxTextRunes caps a post's text (in Unicode code points).
	MaxTextRunes int
	// DefaultPageSize and MaxPageSize bound a feed page (the limit parameter).
	DefaultPageSize, MaxPageSize int
	// KeyPrefix starts every Redis key of this deployment, so several
	// deployments (or tests) share one Redis.
	KeyPrefix string
	// Workers is the number of fan-out consumers RunWorkers starts.
	Workers int
	// FollowerPageSize is how many followers one fan-out step reads from
	// PostgreSQL and writes to Redis in one pipeline.
	FollowerPageSize int
	// JobBatch is the number of fan-out jobs one consumer reads at a time.
	JobBatch int
	// ReadBlock is how long a consumer waits for new jobs per XREADGROUP.
	ReadBlock time.Duration
	// ClaimMinIdle: a job pending this long on one consumer is taken over
	// by another (the first one is presumed dead); ClaimInterval is how often
	// a consumer looks for such jobs.
	ClaimMinIdle, ClaimInterval time.Duration
	// RelayAfter: an outbox row older than this is published again;
	// RelayInterval is how often the relay looks.
	RelayAfter, RelayInterval time.Duration
	// StreamMaxLen caps the fan-out stream (approximately) as a safety net;
	// processed jobs are deleted from it anyway.
	StreamMaxLen int64
	// PostCacheEntries bounds the in-process cache of post payloads (see
	// postCache): it holds at most twice this many. -1 disables the cache
	// (0 takes the default, as for every field).
	PostCacheEntries int
	// ReadBatch is the most reads (a hybrid page's ranges, a push timeline
	// range, an MGET of payloads) that concurrent callers send to Redis
	// together in one pipeline (see readBatcher). -1 sends each read alone.
	ReadBatch int
	// ReadBatchesInFlight is the number of such pipelines sent at once. One
	// (the default) makes the reads that arrive while a pipeline is on the
	// wire wait for it and share the next one: at 50 concurrent feed reads
	// that doubled the reads per pipeline (4 → 8), cut Redis CPU per read
	// by a quarter and the 99th percentile read time by 15–25% against two
	// (BENCHMARKS.md, S5). More than one lets a slow pipeline (a read of
	// thousands of celebrities' ranges) hold back fewer readers.
	ReadBatchesInFlight int
	// WaitReplicas, when above 0, makes a fan-out job finish (its outbox
	// row deleted, its post no longer published again) only after that many
	// replicas of each primary it wrote have its timeline entries and the
	// author's recent-post entry (Redis WAIT, within WaitTimeout). Until
	// then a primary that dies loses nothing: the outbox relay publishes
	// the post again.
	WaitReplicas int
	WaitTimeout  time.Duration
	// HotKeyCopies is how many copies of the hot keys (the celebrity set's
	// version, each celebrity's recent posts) are written, spread over a
	// Redis Cluster's slots, each user reading one (see hotcopies.go).
	// 0 (the default) means 12 on a Redis Cluster and none on a single
	// Redis; 1 means none.
	HotKeyCopies int
}

// Defaults returns the default configuration.
func Defaults() Config {
	return Config{
		Strategy:            StrategyHybrid,
		CelebrityThreshold:  1000,
		TimelineCap:         800,
		AuthorPostsCap:      800,
		MaxTextRunes:        280,
		DefaultPageSize:     20,
		MaxPageSize:         200,
		KeyPrefix:           "feed:",
		Workers:             2,
		FollowerPageSize:    1000,
		JobBatch:            16,
		ReadBlock:           time.Second,
		ClaimMinIdle:        15 * time.Second,
		ClaimInterval:       5 * time.Second,
		RelayAfter:          60 * time.Second,
		RelayInterval:       10 * time.Second,
		StreamMaxLen:        1_000_000,
		PostCacheEntries:    100_000,
		ReadBatch:           64,
		ReadBatchesInFlight: 1,
		WaitTimeout:         time.Second,
	}
}

// EnsureDefaults fills zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	d := Defaults()
	setIfZero(&c.Strategy, d.Strategy)
	setIfZero(&c.CelebrityThreshold, d.CelebrityThreshold)
	setIfZero(&c.TimelineCap, d.TimelineCap)
	setIfZero(&c.AuthorPostsCap, d.AuthorPostsCap)
	setIfZero(&c.MaxTextRunes, d.MaxTextRunes)
	setIfZero(&c.DefaultPageSize, d.DefaultPageSize)
	setIfZero(&c.MaxPageSize, d.MaxPageSize)
	setIfZero(&c.KeyPrefix, d.KeyPrefix)
	setIfZero(&c.Workers, d.Workers)
	setIfZero(&c.FollowerPageSize, d.FollowerPageSize)
	setIfZero(&c.JobBatch, d.JobBatch)
	setIfZero(&c.ReadBlock, d.ReadBlock)
	setIfZero(&c.ClaimMinIdle, d.ClaimMinIdle)
	setIfZero(&c.ClaimInterval, d.ClaimInterval)
	setIfZero(&c.RelayAfter, d.RelayAfter)
	setIfZero(&c.RelayInterval, d.RelayInterval)
	setIfZero(&c.StreamMaxLen, d.StreamMaxLen)
	setIfZero(&c.PostCacheEntries, d.PostCacheEntries)
	setIfZero(&c.ReadBatch, d.ReadBatch)
	setIfZero(&c.ReadBatchesInFlight, d.ReadBatchesInFlight)
	setIfZero(&c.WaitTimeout, d.WaitTimeout)
}

func setIfZero[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// Flags binds the configuration to command-line flags named feed-*.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Var(&c.Strategy, "feed-strategy", "feed delivery strategy: "+strategyNames())
	fs.IntVar(&c.CelebrityThreshold, "feed-celebrity-threshold", c.CelebrityThreshold, "hybrid: authors with at least this many followers are pulled at read time")
	fs.IntVar(&c.TimelineCap, "feed-timeline-cap", c.TimelineCap, "post ids kept per user timeline")
	fs.IntVar(&c.AuthorPostsCap, "feed-author-posts-cap", c.AuthorPostsCap, "recent post ids kept per author for pulling")
	fs.IntVar(&c.MaxTextRunes, "feed-max-text", c.MaxTextRunes, "longest post text in characters")
	fs.IntVar(&c.MaxPageSize, "feed-max-page", c.MaxPageSize, "largest feed page (limit parameter)")
	fs.StringVar(&c.KeyPrefix, "feed-key-prefix", c.KeyPrefix, "prefix of every Redis key of the feed")
	fs.IntVar(&c.Workers, "feed-workers", c.Workers, "fan-out consumers per process")
	fs.IntVar(&c.FollowerPageSize, "feed-follower-page", c.FollowerPageSize, "followers written per fan-out pipeline")
	fs.DurationVar(&c.ClaimMinIdle, "feed-claim-min-idle", c.ClaimMinIdle, "take over fan-out jobs pending this long on a dead worker")
	fs.DurationVar(&c.RelayAfter, "feed-relay-after", c.RelayAfter, "publish again posts whose fan-out has not finished after this long")
	fs.IntVar(&c.PostCacheEntries, "feed-post-cache", c.PostCacheEntries, "post payloads cached in memory per generation (at most twice this many held); -1 disables the cache")
	fs.IntVar(&c.ReadBatch, "feed-read-batch", c.ReadBatch, "most concurrent reads sent to Redis in one pipeline; -1 sends each read alone")
	fs.IntVar(&c.ReadBatchesInFlight, "feed-read-batches-in-flight", c.ReadBatchesInFlight, "pipelines of concurrent reads sent at once")
	fs.IntVar(&c.WaitReplicas, "feed-wait-replicas", c.WaitReplicas, "finish a fan-out job only after this many replicas of each primary it wrote have its entries (Redis WAIT; 0: do not wait; until then the outbox relay publishes the post again)")
	fs.DurationVar(&c.WaitTimeout, "feed-wait-timeout", c.WaitTimeout, "how long one WAIT of --feed-wait-replicas waits")
	fs.IntVar(&c.HotKeyCopies, "feed-hot-key-copies", c.HotKeyCopies, "copies of the celebrity set's version and of each celebrity's recent posts, spread over a Redis Cluster's slots (0: 12 on a cluster, none on a single Redis; 1: none); a multiple of the masters' number balances them")
}

// Validate names the first invalid field and its allowed values.
func (c *Config) Validate() error {
	if _, err := ParseStrategy(string(c.Strategy)); err != nil {
		return fmt.Errorf("feed-strategy: %w", err)
	}
	type bound struct {
		name     string
		v        int
		min, max int
	}
	for _, b := range []bound{
		{"feed-celebrity-threshold", c.CelebrityThreshold, 1, 1 << 30},
		{"feed-timeline-cap", c.TimelineCap, 10, 100_000},
		{"feed-author-posts-cap", c.AuthorPostsCap, 10, 100_000},
		{"feed-max-text", c.MaxTextRunes, 1, 100_000},
		{"feed-default-page", c.DefaultPageSize, 1, c.MaxPageSize},
		{"feed-max-page", c.MaxPageSize, 1, 1000},
		{"feed-workers", c.Workers, 1, 256},
		{"feed-follower-page", c.FollowerPageSize, 1, 100_000},
		{"feed-job-batch", c.JobBatch, 1, 10_000},
		{"feed-post-cache", c.PostCacheEntries, -1, 10_000_000},
		{"feed-read-batches-in-flight", c.ReadBatchesInFlight, 1, 64},
		{"feed-wait-replicas", c.WaitReplicas, 0, 8},
		{"feed-hot-key-copies", c.HotKeyCopies, 0, 256},
	} {
		if b.v < b.min || b.v > b.max {
			return fmt.Errorf("%s: got %d, allowed: %d..%d", b.name, b.v, b.min, b.max)
		}
	}
	if c.ReadBatch != -1 && (c.ReadBatch < 1 || c.ReadBatch > 1024) {
		return fmt.Errorf("feed-read-batch: got %d, allowed: -1 (each read alone) or 1..1024", c.ReadBatch)
	}
	if c.KeyPrefix == "" || strings.ContainsAny(c.KeyPrefix, " \r\n\t*?[") {
		return fmt.Errorf("feed-key-prefix: got %q, want a non-empty prefix without spaces or glob characters", c.KeyPrefix)
	}
	for name, d := range map[string]time.Duration{
		"feed-read-block": c.ReadBlock, "feed-claim-min-idle": c.ClaimMinIdle, "feed-claim-interval": c.ClaimInterval,
		"feed-relay-after": c.RelayAfter, "feed-relay-interval": c.RelayInterval, "feed-wait-timeout": c.WaitTimeout,
	} {
		if d <= 0 {
			return fmt.Errorf("%s: got %s, must be > 0", name, d)
		}
	}
	if c.ClaimMinIdle <= c.ReadBlock {
		return fmt.Errorf("feed-claim-min-idle: got %s, must be longer than feed-read-block %s", c.ClaimMinIdle, c.ReadBlock)
	}
	if c.StreamMaxLen < 1000 {
		return errors.New("feed-stream-max-len: must be at least 1000")
	}
	return nil
}
