package indexer

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/layout"
)

// Config is the indexer's configuration. Layout and Log are shared with other
// components; Flags binds only the indexer's own fields, so bind those two
// with their own Flags once per command.
type Config struct {
	// Layouts the worker feeds, each through its own consumer group.
	Layouts []layout.Kind
	Layout  layout.Config
	Log     eventlog.Config

	// BatchSize and BatchWait: a batch closes at BatchSize events or BatchWait
	// after its first event, whichever comes first.
	BatchSize int
	BatchWait time.Duration
	// HotBatchWait is BatchWait for the hot layout: its updates are visible
	// as soon as the baedal-hot table has them, so its batch window is most
	// of what a user waits for; the other layouts wait for a refresh anyway.
	// Under load a batch fills while the previous one is written, so the
	// window matters only when the stream is nearly idle.
	HotBatchWait time.Duration
	// CacheEntries bounds the held shop states per layout (LRU).
	CacheEntries int
	// MaxAttempts: an entry delivered more often than this is dead-lettered.
	MaxAttempts int
	// ClaimIdle: pending entries of other consumer names idle this long are
	// claimed (scale-in).
	ClaimIdle time.Duration
	// RetryBase, RetryMax: exponential backoff with full jitter between bulk
	// retries of 429/5xx items; RetryFor bounds one batch's retrying, after
	// which the worker keeps the batch (unacknowledged) and tries it again.
	RetryBase, RetryMax, RetryFor time.Duration
	// WorkerIndex of Workers owns partitions p with p mod Workers == WorkerIndex.
	WorkerIndex, Workers int
	// LagEvery is how often consumer lag is sampled.
	LagEvery time.Duration
	// FreshnessPoll and FreshnessTimeout: how often and how long the
	// freshness probe searches for a sampled event.
	FreshnessPoll, FreshnessTimeout time.Duration
	// FreshnessSampleEvery is the least time between two sampled events of
	// one partition. The probe is a search of its own: sampling every batch
	// would add a search per batch to the cluster the indexer writes to
	// (about 100/s at 500 hot updates/s).
	FreshnessSampleEvery time.Duration
	// HotTombstoneRetention is how long the hot layout keeps a deleted
	// shop's head tombstone (and the plugin's table its row): an event
	// older than the delete, arriving within it, cannot bring the shop
	// back. Worker 0 purges older tombstones every HotTombstonePurgeEvery.
	HotTombstoneRetention, HotTombstonePurgeEvery time.Duration
	// FlushEvery is how often a worker whose layout has an async translog
	// (layout.IndexSettings.TranslogDurability) flushes the layout's
	// indices and acknowledges the event-log entries it applied before the
	// flush. Until then they stay pending, and a restarted worker applies
	// them again; a primary that changed meanwhile (a node restarted, a
	// copy promoted) makes the worker apply every unacknowledged entry
	// again, since the operations since the last flush may be gone.
	FlushEvery time.Duration
	// RefetchOnGap re-reads a cached shop from OpenSearch when a batch's first
	// event for it skips versions (version > held version + 1): the held state
	// may be stale (another worker wrote the shop).
	RefetchOnGap bool
}

// Defaults returns every layout, batches of 1,000 events or 50 ms (2 ms for hot), 200,000
// held shops per layout, 5 attempts, 30 s claim idle time, backoff 100 ms..5 s
// for up to 2 minutes, one worker, lag every 5 s, freshness sampled at most
// once a second per partition, polled every 50 ms for up to 30 s, and a
// flush (async translogs) every second.
func Defaults() Config {
	return Config{
		Layouts: layout.Kinds(),
		Layout:  layout.Defaults(), Log: eventlog.Defaults(),
		BatchSize: 1000, BatchWait: 50 * time.Millisecond, HotBatchWait: 2 * time.Millisecond,
		CacheEntries: 200_000, MaxAttempts: 5, ClaimIdle: 30 * time.Second,
		RetryBase: 100 * time.Millisecond, RetryMax: 5 * time.Second, RetryFor: 2 * time.Minute,
		WorkerIndex: 0, Workers: 1, LagEvery: 5 * time.Second,
		FreshnessPoll: 50 * time.Millisecond, FreshnessTimeout: 30 * time.Second, FreshnessSampleEvery: time.Second,
		FlushEvery:            time.Second,
		RefetchOnGap:          true,
		HotTombstoneRetention: 7 * 24 * time.Hour, HotTombstonePurgeEvery: time.Hour,
	}
}

// Flags binds the indexer's own fields (not Layout and Log).
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.Func("indexer-layouts", "comma-separated layouts to index: nested, split, hot (default all; hot only where the cluster has the baedal-hot plugin)", func(s string) error {
		c.Layouts = nil
		for _, part := range strings.Split(s, ",") {
			k, err := layout.ParseKind(strings.TrimSpace(part))
			if err != nil {
				return err
			}
			c.Layouts = append(c.Layouts, k)
		}
		return nil
	})
	fs.IntVar(&c.BatchSize, "indexer-batch-size", c.BatchSize, "most events per indexing batch")
	fs.DurationVar(&c.BatchWait, "indexer-batch-wait", c.BatchWait, "longest wait after a batch's first event")
	fs.DurationVar(&c.HotBatchWait, "indexer-hot-batch-wait", c.HotBatchWait, "longest wait after a batch's first event, for the hot layout (its updates need no refresh to be seen)")
	fs.DurationVar(&c.FreshnessSampleEvery, "indexer-freshness-sample-every", c.FreshnessSampleEvery, "least time between two freshness samples of one partition (each is a search; 0: one per batch)")
	fs.IntVar(&c.CacheEntries, "indexer-state-cache-entries", c.CacheEntries, "held shop states per layout (LRU)")
	fs.IntVar(&c.MaxAttempts, "indexer-max-attempts", c.MaxAttempts, "deliveries before an event is dead-lettered")
	fs.DurationVar(&c.ClaimIdle, "indexer-claim-idle", c.ClaimIdle, "claim other consumers' pending events idle this long")
	fs.DurationVar(&c.RetryBase, "indexer-retry-base", c.RetryBase, "first bulk retry backoff")
	fs.DurationVar(&c.RetryMax, "indexer-retry-max", c.RetryMax, "largest bulk retry backoff")
	fs.DurationVar(&c.RetryFor, "indexer-retry-for", c.RetryFor, "how long one batch is retried before it is kept for later")
	fs.IntVar(&c.WorkerIndex, "indexer-worker-index", c.WorkerIndex, "this worker's index, 0..workers-1")
	fs.IntVar(&c.Workers, "indexer-workers", c.Workers, "number of indexer workers sharing the partitions")
	fs.DurationVar(&c.LagEvery, "indexer-lag-every", c.LagEvery, "consumer lag sampling period")
	fs.DurationVar(&c.FlushEvery, "indexer-flush-every", c.FlushEvery, "how often the indexer flushes a layout with an async translog and acknowledges the events it applied before (they are applied again after a crash until then)")
	fs.DurationVar(&c.HotTombstoneRetention, "hot-tombstone-retention", c.HotTombstoneRetention, "how long the hot layout keeps a deleted shop's tombstone (an older event cannot revive the shop within it)")
	fs.DurationVar(&c.HotTombstonePurgeEvery, "hot-tombstone-purge-every", c.HotTombstonePurgeEvery, "how often indexer worker 0 purges hot tombstones past their retention")
}

// Validate names the first invalid field.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Layouts) == 0 {
		errs = append(errs, errors.New("layouts: at least one, allowed: "+strings.Join(layout.KindNames(), ", ")))
	}
	for _, k := range c.Layouts {
		if _, err := layout.ParseKind(string(k)); err != nil {
			errs = append(errs, fmt.Errorf("layouts: %w", err))
		}
	}
	if c.BatchSize < 1 || c.BatchSize > 100_000 {
		errs = append(errs, fmt.Errorf("batch-size: got %d, allowed: 1..100000", c.BatchSize))
	}
	if c.BatchWait < time.Millisecond || c.BatchWait > time.Minute {
		errs = append(errs, fmt.Errorf("batch-wait: got %s, allowed: 1ms..1m", c.BatchWait))
	}
	if c.HotBatchWait < time.Millisecond || c.HotBatchWait > time.Minute {
		errs = append(errs, fmt.Errorf("hot-batch-wait: got %s, allowed: 1ms..1m", c.HotBatchWait))
	}
	if c.CacheEntries < 1 {
		errs = append(errs, fmt.Errorf("state-cache-entries: got %d, allowed: >= 1", c.CacheEntries))
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > 1000 {
		errs = append(errs, fmt.Errorf("max-attempts: got %d, allowed: 1..1000", c.MaxAttempts))
	}
	if c.ClaimIdle < time.Second {
		errs = append(errs, fmt.Errorf("claim-idle: got %s, allowed: >= 1s", c.ClaimIdle))
	}
	if c.RetryBase <= 0 || c.RetryMax < c.RetryBase || c.RetryFor <= 0 {
		errs = append(errs, fmt.Errorf("retry-base %s, retry-max %s, retry-for %s: need 0 < retry-base <= retry-max and retry-for > 0", c.RetryBase, c.RetryMax, c.RetryFor))
	}
	if c.HotTombstoneRetention < time.Hour {
		errs = append(errs, fmt.Errorf("hot-tombstone-retention: got %s, allowed: >= 1h (longer than any event can wait in the log)", c.HotTombstoneRetention))
	}
	if c.HotTombstonePurgeEvery < time.Second {
		errs = append(errs, fmt.Errorf("hot-tombstone-purge-every: got %s, allowed: >= 1s", c.HotTombstonePurgeEvery))
	}
	if c.Workers < 1 || c.Workers > 1024 {
		errs = append(errs, fmt.Errorf("workers: got %d, allowed: 1..1024", c.Workers))
	} else if c.WorkerIndex < 0 || c.WorkerIndex >= c.Workers {
		errs = append(errs, fmt.Errorf("worker-index: got %d, allowed: 0..%d", c.WorkerIndex, c.Workers-1))
	}
	if c.LagEvery <= 0 || c.FreshnessPoll <= 0 || c.FreshnessTimeout <= 0 {
		errs = append(errs, errors.New("lag-every, freshness poll and timeout: each must be > 0"))
	}
	if c.FlushEvery < 10*time.Millisecond || c.FlushEvery > time.Minute {
		errs = append(errs, fmt.Errorf("flush-every: got %s, allowed: 10ms..1m", c.FlushEvery))
	}
	if c.FreshnessSampleEvery < 0 || c.FreshnessSampleEvery > time.Hour {
		errs = append(errs, fmt.Errorf("freshness-sample-every: got %s, allowed: 0..1h (0 samples every batch)", c.FreshnessSampleEvery))
	}
	errs = append(errs, c.Layout.Validate(), c.Log.Validate())
	return errors.Join(errs...)
}

// OwnedPartitions returns the partitions this worker processes.
func (c *Config) OwnedPartitions() []int {
	var out []int
	for p := range c.Log.Partitions {
		if p%c.Workers == c.WorkerIndex {
			out = append(out, p)
		}
	}
	return out
}

// GroupName returns the consumer group of a layout: "indexer-nested" or
// "indexer-split".
func GroupName(k layout.Kind) string { return "indexer-" + string(k) }
