// Package simulator is the demo's live traffic: it loads a generated catalog
// into the event log once, then keeps appending realistic change events (mostly
// hot shop fields: delivery minutes, open/closed, fees) at a fixed rate, as a
// marketplace's shop services would. Its FeedPoster does the same for the
// follow feed (feed.go): it seeds the write-up's experiment graph into a
// database without feed users, then posts a few times a minute.
//
// Invariant: the events are one deterministic stream per (seed, shops), and
// the number appended so far is persisted in Redis; a restarted simulator
// regenerates the stream up to that point without appending it again, so
// versions keep growing across restarts. A stop finishes the batch in flight
// and its count. Only a crash between an append and its count makes the
// count lag; the events appended again then carry versions the indexer
// already has and are skipped as duplicates: nothing is applied twice.
package simulator

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/eventlog"
)

// Config sizes the simulated marketplace.
type Config struct {
	// Shops in the generated catalog; 0 disables the simulator.
	Shops int
	Seed  uint64
	// Rate is change events per second after the initial load.
	Rate float64
	// FeedUsers is the number of ordinary users of the demo's follow feed,
	// the write-up's experiment graph (user A follows them all and a
	// celebrity all of them follow), seeded at start into a database
	// without feed users; 0 disables the feed demo.
	FeedUsers int
	// FeedPostsPerMinute is how often the feed demo posts, as one of user
	// A's followees; every FeedCelebrityEvery-th post (0: none) is the
	// celebrity's.
	FeedPostsPerMinute float64
	FeedCelebrityEvery int
}

// Defaults is the demo: 20,000 shops and 100 events/s, a rate at which a
// 2-core machine stays responsive. At 1,000/s the nested layout's indexer
// (~800/s at most there) never caught up and every demo search took ~0.5 s;
// at 300/s it kept up but OpenSearch still used ~1.7 cores and searches took
// 0.1–0.3 s; at 100/s they took 35–90 ms. A higher --demo-rate shows nested
// falling behind while split keeps up.
//
// The feed demo seeds 2,000 users (6,003 posts): with the default celebrity
// threshold of 1,000 the celebrity's 2,002 followers make it one, and the
// console's pull read of user A merges 2,001 authors, not the write-up's
// 10,001, every 2 s. It posts 4 times a minute, one post in 4 the celebrity's.
func Defaults() Config {
	return Config{Shops: 20000, Seed: 1, Rate: 100, FeedUsers: 2000, FeedPostsPerMinute: 4, FeedCelebrityEvery: 4}
}

// Flags binds the configuration.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.IntVar(&c.Shops, "demo-shops", c.Shops, "shops in the demo catalog (0: no demo data or traffic)")
	fs.Uint64Var(&c.Seed, "demo-seed", c.Seed, "seed of the demo catalog and its change events")
	fs.Float64Var(&c.Rate, "demo-rate", c.Rate, "live change events per second applied by the traffic simulator")
	fs.IntVar(&c.FeedUsers, "demo-feed-users", c.FeedUsers, "ordinary users of the demo's follow feed (the write-up's experiment graph), seeded at start\ninto a database without feed users (0: no feed demo)")
	fs.Float64Var(&c.FeedPostsPerMinute, "demo-feed-posts", c.FeedPostsPerMinute, "posts per minute of the feed demo, as user A's followees")
	fs.IntVar(&c.FeedCelebrityEvery, "demo-feed-celebrity-every", c.FeedCelebrityEvery, "every this many posts of the feed demo, one is the celebrity's (0: none)")
}

// Validate names the first invalid field.
func (c *Config) Validate() error {
	if c.Shops < 0 || c.Shops > 1_000_000 {
		return fmt.Errorf("demo-shops: got %d, allowed: 0..1000000 (the indices' max_terms_count)", c.Shops)
	}
	if c.Rate < 0 || c.Rate > 100_000 {
		return fmt.Errorf("demo-rate: got %g, allowed: 0..100000", c.Rate)
	}
	if c.FeedUsers != 0 && (c.FeedUsers < 2 || c.FeedUsers > 100_000) {
		return fmt.Errorf("demo-feed-users: got %d, allowed: 0 (no feed demo) or 2..100000", c.FeedUsers)
	}
	if !(c.FeedPostsPerMinute >= 0 && c.FeedPostsPerMinute <= 6000) { // NaN too
		return fmt.Errorf("demo-feed-posts: got %g, allowed: 0..6000", c.FeedPostsPerMinute)
	}
	if c.FeedCelebrityEvery < 0 || c.FeedCelebrityEvery > 1_000_000 {
		return fmt.Errorf("demo-feed-celebrity-every: got %d, allowed: 0 (never) .. 1000000", c.FeedCelebrityEvery)
	}
	return nil
}

// Simulator appends the demo's events.
type Simulator struct {
	cfg      Config
	log      *eventlog.Log
	rdb      redis.UniversalClient
	logger   *slog.Logger
	appended prometheus.Counter
	loaded   chan struct{}
}

// New builds a simulator; reg may be nil.
func New(cfg Config, evlog *eventlog.Log, logger *slog.Logger, reg prometheus.Registerer) *Simulator {
	s := &Simulator{cfg: cfg, log: evlog, rdb: evlog.Redis(), logger: logger, loaded: make(chan struct{}),
		appended: prometheus.NewCounter(prometheus.CounterOpts{Name: "baedal_simulator_events_total", Help: "Change events appended by the demo traffic simulator."})}
	if reg != nil {
		reg.MustRegister(s.appended)
	}
	return s
}

func (s *Simulator) key(what string) string {
	return fmt.Sprintf("%ssimulator:%d:%d:%s", s.log.Config().Prefix, s.cfg.Shops, s.cfg.Seed, what)
}

// Loaded is closed once the catalog is in the event log: loaded by this
// run, or found loaded by an earlier one.
func (s *Simulator) Loaded() <-chan struct{} { return s.loaded }

// tick is how often the simulator appends a batch.
const tick = 50 * time.Millisecond

// Run loads the catalog if this (shops, seed) was never loaded, then appends
// events at the configured rate until ctx ends.
func (s *Simulator) Run(ctx context.Context, progress io.Writer) error {
	if err := s.cfg.Validate(); err != nil || s.cfg.Shops == 0 {
		return err
	}
	loaded, err := s.rdb.Exists(ctx, s.key("loaded")).Result()
	if err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	if loaded == 0 {
		if err := eventlog.LoadCatalog(ctx, s.log, eventlog.CatalogConfig{Shops: s.cfg.Shops, Seed: s.cfg.Seed}, progress); err != nil {
			return err
		}
		if err := s.rdb.Set(ctx, s.key("loaded"), time.Now().UTC().Format(time.RFC3339), 0).Err(); err != nil {
			return fmt.Errorf("simulator: %w", err)
		}
	}
	close(s.loaded)
	stream := catalog.NewEventStream(s.cfg.Seed, s.cfg.Shops)
	done, err := s.rdb.Get(ctx, s.key("appended")).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("simulator: %w", err)
	}
	for range done {
		stream.Next() // replay without appending: versions continue from here
	}
	if s.cfg.Rate == 0 {
		<-ctx.Done()
		return nil
	}
	s.logger.Info("simulating live traffic", "events_per_s", s.cfg.Rate, "shops", s.cfg.Shops, "resumed_at", done)
	perTick := s.cfg.Rate * tick.Seconds()
	owed := 0.0
	t := time.NewTicker(tick)
	defer t.Stop()
	batch := make([]catalog.Event, 0, int(perTick)+1)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		owed += perTick
		batch = batch[:0]
		for ; owed >= 1; owed-- {
			batch = append(batch, stream.Next())
		}
		if len(batch) == 0 {
			continue
		}
		if err := s.appendCounted(ctx, batch, done+int64(len(batch))); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		done += int64(len(batch))
		s.appended.Add(float64(len(batch)))
	}
}

// appendTimeout bounds appendCounted once the run's context has ended.
const appendTimeout = 5 * time.Second

// appendCounted appends batch and then persists total, the events appended
// so far. It finishes even if ctx ends meanwhile (within appendTimeout): a
// batch appended without its count would be appended again by the next run.
func (s *Simulator) appendCounted(ctx context.Context, batch []catalog.Event, total int64) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appendTimeout)
	defer cancel()
	if _, err := s.log.Append(ctx, batch); err != nil {
		return fmt.Errorf("simulator: append %d events: %w", len(batch), err)
	}
	if err := s.rdb.Set(ctx, s.key("appended"), strconv.FormatInt(total, 10), 0).Err(); err != nil {
		return fmt.Errorf("simulator: persist the appended count: %w", err)
	}
	return nil
}
