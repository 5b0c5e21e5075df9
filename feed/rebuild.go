package feed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/baedal/baedal/internal/redisscan"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// rebuildBatch is the number of Redis commands per pipeline while rebuilding.
const rebuildBatch = 2000

// Rebuild recreates this deployment's Redis state (payloads, recent-post
// sets, followee sets, celebrities, timelines) from PostgreSQL. It is for
// loading seeded data and for recovering a lost Redis; run it while no posts
// are being written. progress, if not nil, receives one line per phase.
func (s *Service) Rebuild(ctx context.Context, progress io.Writer) error {
	if progress == nil {
		progress = io.Discard
	}
	if err := s.DeleteRedisState(ctx); err != nil {
		return err
	}
	b := &batcher{ctx: ctx, rdb: s.rdb}

	// Payloads and recent-post sets.
	rows, err := s.db.Query(ctx, `SELECT p.id, p.author_id, u.username, u.profile_pic, p.text, p.created_at
		FROM feed_posts p JOIN feed_users u ON u.id = p.author_id`)
	if err != nil {
		return fmt.Errorf("feed: rebuild: read posts: %w", err)
	}
	authors := map[int64]bool{}
	var posts int
	var p Post
	_, err = pgx.ForEachRow(rows, []any{&p.ID, &p.AuthorID, &p.Username, &p.ProfilePic, &p.Text, &p.CreatedAt}, func() error {
		p.CreatedAt = p.CreatedAt.UTC()
		payload, err := json.Marshal(p)
		if err != nil {
			return err
		}
		b.pipe().Set(ctx, s.keys.post(p.ID), payload, 0)
		b.pipe().ZAdd(ctx, s.keys.author(p.AuthorID), redis.Z{Score: float64(p.ID), Member: strconv.FormatInt(p.ID, 10)})
		authors[p.AuthorID] = true
		posts++
		return b.added(2)
	})
	if err != nil {
		return fmt.Errorf("feed: rebuild: posts: %w", err)
	}
	for a := range authors {
		b.pipe().ZRemRangeByRank(ctx, s.keys.author(a), 0, int64(-s.cfg.AuthorPostsCap-1))
		if err := b.added(1); err != nil {
			return err
		}
	}
	fmt.Fprintf(progress, "feed rebuild (%s): %d post payloads, %d authors' recent posts\n", s.cfg.Strategy, posts, len(authors))

	// Followee sets.
	rows, err = s.db.Query(ctx, `SELECT follower_id, followee_id FROM feed_follows`)
	if err != nil {
		return fmt.Errorf("feed: rebuild: read follows: %w", err)
	}
	var follower, followee int64
	var follows int
	_, err = pgx.ForEachRow(rows, []any{&follower, &followee}, func() error {
		b.pipe().SAdd(ctx, s.keys.followees(follower), followee)
		follows++
		return b.added(1)
	})
	if err != nil {
		return fmt.Errorf("feed: rebuild: follows: %w", err)
	}
	fmt.Fprintf(progress, "feed rebuild (%s): %d follows\n", s.cfg.Strategy, follows)

	// Celebrities and timelines.
	threshold := int64(-1) // push: nobody is pulled
	switch s.cfg.Strategy {
	case StrategyPull:
		return b.flush()
	case StrategyHybrid:
		threshold = int64(s.cfg.CelebrityThreshold)
		rows, err = s.db.Query(ctx, `SELECT id FROM feed_users WHERE follower_count >= $1`, threshold)
		if err != nil {
			return fmt.Errorf("feed: rebuild: read celebrities: %w", err)
		}
		celebs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("feed: rebuild: celebrities: %w", err)
		}
		// The recent-post sets must be in Redis before the celebrities
		// join: their hot-key copies are filled from them.
		if err := b.flush(); err != nil {
			return err
		}
		if err := s.changeCelebrities(ctx, s.rdb, "add", idStrings(celebs)...); err != nil {
			return err
		}
	}
	// Each follower gets the newest TimelineCap posts of the authors pushed
	// to them, ranked per follower in SQL.
	rows, err = s.db.Query(ctx, `SELECT follower_id, id FROM (
			SELECT f.follower_id, p.id, row_number() OVER (PARTITION BY f.follower_id ORDER BY p.id DESC) AS rank
			FROM feed_posts p
			JOIN feed_follows f ON f.followee_id = p.author_id
			JOIN feed_users u ON u.id = p.author_id
			WHERE $1 < 0 OR u.follower_count < $1) ranked
		WHERE rank <= $2`, threshold, s.cfg.TimelineCap)
	if err != nil {
		return fmt.Errorf("feed: rebuild: read timelines: %w", err)
	}
	var postID int64
	var entries int
	_, err = pgx.ForEachRow(rows, []any{&follower, &postID}, func() error {
		b.pipe().ZAdd(ctx, s.keys.timeline(follower), redis.Z{Score: float64(postID), Member: strconv.FormatInt(postID, 10)})
		entries++
		return b.added(1)
	})
	if err != nil {
		return fmt.Errorf("feed: rebuild: timelines: %w", err)
	}
	fmt.Fprintf(progress, "feed rebuild (%s): %d timeline entries\n", s.cfg.Strategy, entries)
	return b.flush()
}

// DeleteRedisState deletes every Redis key of this deployment (its prefix,
// and the celebrity set's version, {<prefix>celebs}:v) and empties the
// service's post payload cache. On a Redis Cluster it scans every master
// and unlinks one key per command (the keys are in many slots).
func (s *Service) DeleteRedisState(ctx context.Context) error {
	nodes, err := redisscan.Nodes(ctx, s.rdb)
	if err != nil {
		return fmt.Errorf("feed: list the cluster's masters: %w", err)
	}
	unlink := func(batch []string) error {
		if !s.cluster {
			return s.rdb.Unlink(ctx, batch...).Err()
		}
		_, err := s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, k := range batch {
				pipe.Unlink(ctx, k)
			}
			return nil
		})
		return err
	}
	for _, node := range nodes {
		for _, pattern := range []string{s.cfg.KeyPrefix + "*", s.keys.celebritiesVersion} {
			iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
			var batch []string
			for iter.Next(ctx) {
				batch = append(batch, iter.Val())
				if len(batch) == 1000 {
					if err := unlink(batch); err != nil {
						return fmt.Errorf("feed: delete keys under %q: %w", s.cfg.KeyPrefix, err)
					}
					batch = batch[:0]
				}
			}
			if err := iter.Err(); err != nil {
				return fmt.Errorf("feed: scan keys under %q: %w", s.cfg.KeyPrefix, err)
			}
			if len(batch) > 0 {
				if err := unlink(batch); err != nil {
					return fmt.Errorf("feed: delete keys under %q: %w", s.cfg.KeyPrefix, err)
				}
			}
		}
	}
	// The state may be rebuilt from a database seeded again, whose post ids
	// could name other posts: forget the cached payloads too.
	s.cache.reset()
	s.compat.reset()
	s.known.forget()
	return nil
}

// batcher sends queued commands every rebuildBatch commands.
type batcher struct {
	ctx context.Context
	rdb redis.UniversalClient
	p   redis.Pipeliner
	n   int
}

func (b *batcher) pipe() redis.Pipeliner {
	if b.p == nil {
		b.p = b.rdb.Pipeline()
	}
	return b.p
}

func (b *batcher) added(n int) error {
	b.n += n
	if b.n < rebuildBatch {
		return nil
	}
	return b.flush()
}

func (b *batcher) flush() error {
	if b.p == nil || b.n == 0 {
		return nil
	}
	_, err := b.p.Exec(b.ctx)
	b.p, b.n = nil, 0
	if err != nil {
		return fmt.Errorf("feed: rebuild: write to redis: %w", err)
	}
	return nil
}
