package feed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/rediswait"
)

// Fan-out job kinds (the "kind" field of a stream entry).
const (
	jobPost   = "post"   // fields: post, author
	jobDemote = "demote" // fields: author; a celebrity fell under the threshold
)

// RunWorkers runs cfg.Workers fan-out consumers and the outbox relay until
// ctx is cancelled, then returns after all of them stopped (a cancel while
// it starts is a stop, not an error). Any number of
// processes may run workers at once: they share the consumer group.
func (s *Service) RunWorkers(ctx context.Context) error {
	err := s.ensureGroup(ctx)
	if err == nil && s.cfg.Strategy == StrategyHybrid {
		err = s.ReconcileCelebrities(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: nothing was left half done
		}
		return err
	}
	host, _ := os.Hostname()
	var wg sync.WaitGroup
	for i := range s.cfg.Workers {
		name := fmt.Sprintf("%s-%d-%d-%d", host, os.Getpid(), time.Now().UnixNano(), i)
		wg.Go(func() { s.consume(ctx, name) })
	}
	wg.Go(func() { s.relay(ctx) })
	wg.Wait()
	return nil
}

func (s *Service) ensureGroup(ctx context.Context) error {
	// "0": a group created after jobs were added still delivers them.
	err := s.rdb.XGroupCreateMkStream(ctx, s.keys.stream(), consumerGroup, "0").Err()
	if err != nil && !isBusyGroup(err) {
		return fmt.Errorf("feed: create consumer group %s on %s: %w", consumerGroup, s.keys.stream(), err)
	}
	return nil
}

func isBusyGroup(err error) bool {
	return err != nil && len(err.Error()) >= 9 && err.Error()[:9] == "BUSYGROUP"
}

// consume is one consumer: it takes over jobs left pending by dead consumers
// every ClaimInterval and otherwise reads new jobs.
func (s *Service) consume(ctx context.Context, name string) {
	log := s.log.With("consumer", name)
	var lastClaim time.Time
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if time.Since(lastClaim) >= s.cfg.ClaimInterval {
			lastClaim = time.Now()
			if err := s.claimStale(ctx, name); err != nil && ctx.Err() == nil {
				log.Warn("reclaim pending fan-out jobs", "err", err)
			}
		}
		streams, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: consumerGroup, Consumer: name, Streams: []string{s.keys.stream(), ">"},
			Count: int64(s.cfg.JobBatch), Block: s.cfg.ReadBlock,
		}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if isNoGroup(err) || isUnblockedByDeletion(err) {
				// The stream was deleted (e.g. by Rebuild); create it again.
				if err = s.ensureGroup(ctx); err == nil {
					log.Info("the fan-out stream was deleted (by a rebuild?): created it again")
				}
			}
			if err != nil {
				log.Warn("read fan-out jobs", "err", err)
			}
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		for _, st := range streams {
			s.processJobs(ctx, name, st.Messages)
		}
	}
}

func isNoGroup(err error) bool {
	return err != nil && len(err.Error()) >= 7 && err.Error()[:7] == "NOGROUP"
}

// isUnblockedByDeletion: Redis 7 ends an XREADGROUP blocked on a stream
// that is deleted meanwhile with this error (other UNBLOCKED errors, such
// as a master turned replica, are not it).
func isUnblockedByDeletion(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "UNBLOCKED the stream key no longer exists")
}

// claimStale takes over jobs idle longer than ClaimMinIdle and runs them.
func (s *Service) claimStale(ctx context.Context, name string) error {
	start := "0-0"
	for {
		msgs, next, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: s.keys.stream(), Group: consumerGroup, Consumer: name,
			MinIdle: s.cfg.ClaimMinIdle, Start: start, Count: int64(s.cfg.JobBatch),
		}).Result()
		if isNoGroup(err) {
			return nil // the stream was deleted: nothing to take over; the read creates it again
		}
		if err != nil {
			return fmt.Errorf("feed: XAUTOCLAIM %s from %s: %w", s.keys.stream(), start, err)
		}
		if len(msgs) > 0 {
			s.log.Info("took over fan-out jobs of a stalled worker", "jobs", len(msgs))
			s.processJobs(ctx, name, msgs)
		}
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
}

// processJobs runs each job and acknowledges it once done. A job that
// fails stays pending and is retried after ClaimMinIdle; a malformed one
// goes to the dead-letter stream.
func (s *Service) processJobs(ctx context.Context, consumer string, msgs []redis.XMessage) {
	for _, m := range msgs {
		start := time.Now()
		result, err := s.runJob(ctx, consumer, m)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var poison *poisonError
			if !errors.As(err, &poison) {
				s.metrics.fanoutJobs.WithLabelValues("failed").Inc()
				s.log.Warn("fan-out job failed; it will be retried", "job", m.ID, "err", err)
				continue
			}
			s.metrics.fanoutJobs.WithLabelValues("dead").Inc()
			s.log.Error("poison fan-out job moved to the dead-letter stream", "job", m.ID, "err", err)
			values := map[string]any{"job": m.ID, "error": err.Error()}
			for k, v := range m.Values {
				values["job_"+k] = v
			}
			if err := s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.keys.deadLetters(), MaxLen: s.cfg.StreamMaxLen, Approx: true, Values: values}).Err(); err != nil {
				s.log.Warn("write dead letter", "job", m.ID, "err", err)
				continue
			}
		} else {
			s.metrics.fanoutJobs.WithLabelValues(result).Inc()
			s.metrics.fanoutDuration.Observe(time.Since(start).Seconds())
		}
		pipe := s.rdb.Pipeline()
		pipe.XAck(ctx, s.keys.stream(), consumerGroup, m.ID)
		pipe.XDel(ctx, s.keys.stream(), m.ID)
		if _, err := pipe.Exec(ctx); err != nil {
			s.log.Warn("acknowledge fan-out job", "job", m.ID, "err", err)
		}
	}
}

type poisonError struct{ reason string }

func (e *poisonError) Error() string { return "poison job: " + e.reason }

func jobInt(m redis.XMessage, field string) (int64, error) {
	v, ok := m.Values[field].(string)
	if !ok {
		return 0, &poisonError{fmt.Sprintf("field %q is missing", field)}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, &poisonError{fmt.Sprintf("field %q = %q is not a positive integer", field, v)}
	}
	return n, nil
}

// runJob runs one job and returns the result label for the metrics.
func (s *Service) runJob(ctx context.Context, consumer string, m redis.XMessage) (string, error) {
	author, err := jobInt(m, "author")
	if err != nil {
		return "", err
	}
	switch kind, _ := m.Values["kind"].(string); kind {
	case jobPost:
		postID, err := jobInt(m, "post")
		if err != nil {
			return "", err
		}
		celebrity := false
		if s.cfg.Strategy == StrategyHybrid {
			if celebrity, err = s.rdb.SIsMember(ctx, s.keys.celebrities, author).Result(); err != nil {
				return "", fmt.Errorf("feed: is %d a celebrity: %w", author, err)
			}
		}
		result := "pulled"
		if s.pushes(celebrity) {
			result = "pushed"
			if err := s.fanOut(ctx, consumer, m.ID, author, []int64{postID}); err != nil {
				return "", err
			}
		}
		// publish wrote the author's entry without WAIT, and the
		// celebrity's copies only if its process knew the author as one;
		// write them again (with WAIT, when configured) before the outbox
		// row, the post's last copy of record for Redis, goes.
		var keys []string
		if s.cfg.WaitReplicas > 0 {
			keys = append(keys, s.keys.author(author))
		}
		if celebrity && s.copies.enabled() {
			keys = append(keys, s.copies.postKeys(s.keys.author(author))...)
		}
		if len(keys) > 0 {
			if err := s.writeDurably(ctx, keys, func(pipe redis.Pipeliner, i int) {
				s.addPostTo(ctx, pipe, keys[i], postID)
			}); err != nil {
				return "", fmt.Errorf("feed: recent posts of author %d: %w", author, err)
			}
		}
		if _, err := s.db.Exec(ctx, `DELETE FROM feed_outbox WHERE post_id = $1`, postID); err != nil {
			return "", fmt.Errorf("feed: clear outbox row of post %d: %w", postID, err)
		}
		s.metrics.fanoutLag.Observe(time.Since(PostTime(postID)).Seconds())
		return result, nil
	case jobDemote:
		return "demoted", s.demote(ctx, consumer, m.ID, author)
	default:
		return "", &poisonError{fmt.Sprintf("kind %q is unknown; allowed: %s, %s", kind, jobPost, jobDemote)}
	}
}

// fanOut writes post ids of one author into every follower's timeline,
// paging followers from PostgreSQL and writing each page in one pipeline.
// Between pages it renews its claim on the job, so a long fan-out is not
// taken over by another consumer while it is alive.
func (s *Service) fanOut(ctx context.Context, consumer, jobID string, author int64, postIDs []int64) error {
	members := idMembers(postIDs)
	var after int64
	for page := 0; ; page++ {
		rows, err := s.db.Query(ctx, `SELECT follower_id FROM feed_follows WHERE followee_id = $1 AND follower_id > $2
			ORDER BY follower_id LIMIT $3`, author, after, s.cfg.FollowerPageSize)
		if err != nil {
			return fmt.Errorf("feed: followers of %d after %d: %w", author, after, err)
		}
		followers, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return fmt.Errorf("feed: followers of %d after %d: %w", author, after, err)
		}
		if len(followers) == 0 {
			return nil
		}
		keys := make([]string, len(followers), len(followers)+1)
		for i, f := range followers {
			keys[i] = s.keys.timeline(f)
		}
		if page > 0 && jobID != "" {
			keys = append(keys, s.keys.stream())
		}
		if err := s.writeDurably(ctx, keys, func(pipe redis.Pipeliner, i int) {
			if i == len(followers) {
				pipe.XClaimJustID(ctx, &redis.XClaimArgs{Stream: keys[i], Group: consumerGroup, Consumer: consumer, Messages: []string{jobID}})
				return
			}
			pipe.ZAdd(ctx, keys[i], members...)
			pipe.ZRemRangeByRank(ctx, keys[i], 0, int64(-s.cfg.TimelineCap-1))
		}); err != nil {
			return fmt.Errorf("feed: write %d timelines for author %d: %w", len(followers), author, err)
		}
		if s.afterFanoutPage != nil {
			s.afterFanoutPage()
		}
		after = followers[len(followers)-1]
		if len(followers) < s.cfg.FollowerPageSize {
			return nil
		}
	}
}

// writeDurably runs add(pipe, i) for every key in pipelines: with
// WaitReplicas, one per primary followed by a WAIT (rediswait), else one
// pipeline. The writes must be idempotent: a failed call is retried whole.
func (s *Service) writeDurably(ctx context.Context, keys []string, add func(pipe redis.Pipeliner, i int)) error {
	if s.cfg.WaitReplicas > 0 {
		return rediswait.Pipelines(ctx, s.rdb, s.cfg.WaitReplicas, s.cfg.WaitTimeout, keys, add)
	}
	pipe := s.rdb.Pipeline()
	for i := range keys {
		add(pipe, i)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// demote pushes a former celebrity's recent posts to their followers and
// then stops pulling them. It pushes twice, before and after leaving the
// celebrity set, so a post whose job ran in between is not missed.
func (s *Service) demote(ctx context.Context, consumer, jobID string, author int64) error {
	var followers int
	if err := s.db.QueryRow(ctx, `SELECT follower_count FROM feed_users WHERE id = $1`, author).Scan(&followers); err != nil {
		return fmt.Errorf("feed: follower count of %d: %w", author, err)
	}
	if followers >= s.cfg.CelebrityThreshold {
		return nil // back above the threshold: stays pulled
	}
	for pass := 0; pass < 2; pass++ {
		ids, err := s.recentPostIDs(ctx, author, s.cfg.TimelineCap)
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			if err := s.fanOut(ctx, consumer, jobID, author, ids); err != nil {
				return err
			}
		}
		if pass == 0 {
			if err := s.changeCelebrities(ctx, s.rdb, "rem", strconv.FormatInt(author, 10)); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReconcileCelebrities makes the celebrity set agree with the follower
// counts in PostgreSQL and the configured threshold (hybrid only): authors
// over it are added; authors under it are demoted by a job. Workers call it
// on start, so changing the threshold needs only a restart.
func (s *Service) ReconcileCelebrities(ctx context.Context) error {
	rows, err := s.db.Query(ctx, `SELECT id FROM feed_users WHERE follower_count >= $1`, s.cfg.CelebrityThreshold)
	if err != nil {
		return fmt.Errorf("feed: list celebrities: %w", err)
	}
	want, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("feed: list celebrities: %w", err)
	}
	have, err := s.rdb.SMembers(ctx, s.keys.celebrities).Result()
	if err != nil {
		return fmt.Errorf("feed: read celebrities: %w", err)
	}
	if len(want) > 0 {
		if err := s.changeCelebrities(ctx, s.rdb, "add", idStrings(want)...); err != nil {
			return err
		}
	}
	if err := s.repairHotCopies(ctx, have, want); err != nil {
		return err
	}
	haveIDs, err := parseIDs(have)
	if err != nil {
		return err
	}
	for _, id := range haveIDs {
		if !containsID(want, id) {
			if err := s.enqueueDemote(ctx, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// relay publishes again the posts whose outbox row is older than
// RelayAfter: their job was lost or their process died before publishing.
func (s *Service) relay(ctx context.Context) {
	t := time.NewTicker(s.cfg.RelayInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := s.RelayOnce(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("outbox relay", "err", err)
		} else if n > 0 {
			s.log.Info("outbox relay published posts again", "posts", n)
		}
	}
}

// RelayOnce publishes again up to 500 posts whose outbox row is older than
// RelayAfter and returns how many it published. Several processes may run
// it at once: rows are locked with SKIP LOCKED.
func (s *Service) RelayOnce(ctx context.Context) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT p.id, p.author_id, u.username, u.profile_pic, p.text, p.created_at
			FROM feed_outbox o JOIN feed_posts p ON p.id = o.post_id JOIN feed_users u ON u.id = p.author_id
			WHERE o.enqueued_at < now() - make_interval(secs => $1)
			ORDER BY o.post_id LIMIT 500 FOR UPDATE OF o SKIP LOCKED`, s.cfg.RelayAfter.Seconds())
		if err != nil {
			return err
		}
		posts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Post, error) {
			var p Post
			err := r.Scan(&p.ID, &p.AuthorID, &p.Username, &p.ProfilePic, &p.Text, &p.CreatedAt)
			p.CreatedAt = p.CreatedAt.UTC()
			return p, err
		})
		if err != nil || len(posts) == 0 {
			return err
		}
		if err := s.publish(ctx, posts); err != nil {
			return err
		}
		ids := make([]int64, len(posts))
		for i, p := range posts {
			ids[i] = p.ID
		}
		if _, err := tx.Exec(ctx, `UPDATE feed_outbox SET enqueued_at = now() WHERE post_id = ANY($1)`, ids); err != nil {
			return err
		}
		n = len(posts)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("feed: relay outbox: %w", err)
	}
	s.metrics.relayed.Add(float64(n))
	return n, nil
}

// Backlog returns the posts whose fan-out has not finished (outbox rows)
// plus the jobs still in the stream. Zero means fan-out has settled.
func (s *Service) Backlog(ctx context.Context) (int64, error) {
	var outbox int64
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM feed_outbox`).Scan(&outbox); err != nil {
		return 0, fmt.Errorf("feed: count outbox rows: %w", err)
	}
	stream, err := s.rdb.XLen(ctx, s.keys.stream()).Result()
	if err != nil {
		return 0, fmt.Errorf("feed: length of %s: %w", s.keys.stream(), err)
	}
	return outbox + stream, nil
}

// FanoutDone reports whether the post's fan-out has finished.
func (s *Service) FanoutDone(ctx context.Context, postID int64) (bool, error) {
	var pending bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM feed_outbox WHERE post_id = $1)`, postID).Scan(&pending)
	if err != nil {
		return false, fmt.Errorf("feed: outbox row of post %d: %w", postID, err)
	}
	return !pending, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
