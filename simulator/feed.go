package simulator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/feed"
)

// FeedPoster is the demo's follow feed. At start it seeds the write-up's
// experiment graph (Config.FeedUsers ordinary users, user A, user B and the
// celebrity) when the database has no feed users at all; then it posts
// Config.FeedPostsPerMinute times a minute as one of the example reader's
// followees (feed.Example: user A's, on the experiment graph), and every
// Config.FeedCelebrityEvery-th post as the most followed user, so that the
// console's Feed view shows new posts under each strategy and its fan-out
// chart shows both paths: pushed into timelines, and pulled at read time.
//
// Invariant: it never deletes or replaces feed data. A database with users
// (an earlier demo's, a `baedal feed seed`, users made by hand) is used as it
// is; a post that fails (the data being replaced by `baedal feed seed`
// meanwhile) is logged and skipped, and the next one looks the users up again.
type FeedPoster struct {
	cfg    Config
	svc    *feed.Service
	logger *slog.Logger
	posted *prometheus.CounterVec
}

// NewFeedPoster builds the feed demo on svc; logger and reg may be nil.
func NewFeedPoster(cfg Config, svc *feed.Service, logger *slog.Logger, reg prometheus.Registerer) *FeedPoster {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &FeedPoster{cfg: cfg, svc: svc, logger: logger.With("component", "feed demo"),
		posted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baedal_simulator_feed_posts_total",
			Help: "Posts made by the feed demo, by author: followee (pushed under hybrid) or most_followed (the celebrity: pulled under hybrid).",
		}, []string{"author"})}
	if reg != nil {
		reg.MustRegister(p.posted)
	}
	return p
}

// dishes are what the demo's posts are about.
var dishes = []string{"치킨", "피자", "떡볶이", "짜장면", "김밥", "족발", "초밥", "햄버거", "비빔밥", "냉면"}

// Run seeds an empty database, then posts until ctx ends. It returns an
// error only when the seed fails.
func (p *FeedPoster) Run(ctx context.Context, progress io.Writer) error {
	if err := p.cfg.Validate(); err != nil || p.cfg.FeedUsers == 0 {
		return err
	}
	if progress == nil {
		progress = io.Discard
	}
	if err := p.seedIfEmpty(ctx, progress); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if p.cfg.FeedPostsPerMinute == 0 {
		<-ctx.Done()
		return nil
	}
	every := time.Duration(float64(time.Minute) / p.cfg.FeedPostsPerMinute)
	p.logger.Info("posting", "every", every, "celebrity_every", p.cfg.FeedCelebrityEvery)
	rng := rand.New(rand.NewPCG(p.cfg.Seed, 0xfeed))
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := p.post(ctx, n, rng); err != nil && ctx.Err() == nil {
			p.logger.Warn("a demo post failed; the next one looks the users up again", "err", err)
		}
	}
}

// seedIfEmpty seeds the experiment graph when the database has no feed
// users, and rebuilds the Redis state from it.
func (p *FeedPoster) seedIfEmpty(ctx context.Context, progress io.Writer) error {
	ex, err := p.svc.Example(ctx)
	if err != nil {
		return fmt.Errorf("simulator: feed demo: %w", err)
	}
	if ex.Users > 0 {
		p.logger.Info("the database has feed users: using them as they are", "users", ex.Users)
		return nil
	}
	start := time.Now()
	seed := feed.SeedConfig{Preset: feed.PresetExperiment, Users: p.cfg.FeedUsers, Seed: p.cfg.Seed}
	res, err := feed.SeedAndRebuild(ctx, p.svc, seed, progress)
	if err != nil {
		return fmt.Errorf("simulator: feed demo: %w", err)
	}
	fmt.Fprintf(progress, "feed demo: the write-up's experiment seeded in %s: user A is %d, user B %d, the celebrity %d (%d followers; celebrity threshold %d); console: /console/#feed\n",
		time.Since(start).Round(time.Millisecond), res.UserA, res.UserB, res.Celebrity, p.cfg.FeedUsers+2, p.svc.Config().CelebrityThreshold)
	return nil
}

// post makes the n-th post (from 1): as the most followed user when it is
// the celebrity's turn, else as one of the example reader's followees.
func (p *FeedPoster) post(ctx context.Context, n int, rng *rand.Rand) error {
	ex, err := p.svc.Example(ctx)
	if err != nil || ex.Reader == nil {
		return err // nothing to post as: no follows yet
	}
	author, kind := int64(0), "followee"
	if c := p.cfg.FeedCelebrityEvery; c > 0 && n%c == 0 && ex.MostFollowed != nil {
		author, kind = ex.MostFollowed.ID, "most_followed"
	} else {
		var except []int64
		if ex.MostFollowed != nil {
			except = append(except, ex.MostFollowed.ID)
		}
		ids, err := p.svc.SampleFollowees(ctx, ex.Reader.ID, 1, except...)
		if err != nil || len(ids) == 0 {
			return err
		}
		author = ids[0]
	}
	// No number in the text: a second `up` counts from 1 again.
	text := fmt.Sprintf("오늘은 %s 주문했어요 (demo post)", dishes[rng.IntN(len(dishes))])
	if _, err := p.svc.CreatePost(ctx, author, text); err != nil {
		return err
	}
	p.posted.WithLabelValues(kind).Inc()
	return nil
}
