package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/api"
)

// What the console shows of the feed: a user's feed as each strategy
// assembles it from the data in Redis, and how far a post's fan-out got.

// StrategyPage is the newest page of a user's feed as one strategy reads it.
type StrategyPage struct {
	Strategy Strategy `json:"strategy"`
	// Served is true for the strategy this deployment serves (what
	// GET /v1/users/{id}/feed answers).
	Served bool   `json:"served"`
	Posts  []Post `json:"posts"`
}

// StrategiesView is the body of GET /v1/users/{id}/feed/strategies.
type StrategiesView struct {
	User               int64          `json:"user"`
	CelebrityThreshold int            `json:"celebrity_threshold"`
	Strategies         []StrategyPage `json:"strategies"`
}

// FeedByStrategy reads the newest limit posts of user's feed three ways
// from the same data: pull (merge the followees' recent posts), push (the
// user's timeline, as the fan-out wrote it) and hybrid (the timeline plus
// the celebrities' recent posts). Right after a post, pull has it while push
// waits for the fan-out; a celebrity's post reaches only pull and hybrid.
func (s *Service) FeedByStrategy(ctx context.Context, user int64, limit int) (StrategiesView, error) {
	if limit <= 0 {
		limit = s.cfg.DefaultPageSize
	}
	if limit > s.cfg.MaxPageSize {
		return StrategiesView{}, &InvalidError{Field: "limit", Detail: fmt.Sprintf("must be 1..%d, got %d", s.cfg.MaxPageSize, limit)}
	}
	rng := idRange(0, limit)
	view := StrategiesView{User: user, CelebrityThreshold: s.cfg.CelebrityThreshold}
	empty := true
	for _, st := range Strategies() {
		var ids []int64
		var err error
		switch st {
		case StrategyPull:
			ids, err = s.pullIDs(ctx, s.rdb, user, rng, limit)
		case StrategyPush:
			var members []string
			if members, err = s.rdb.ZRevRangeByScore(ctx, s.keys.timeline(user), rng).Result(); err == nil {
				ids, err = parseIDs(members)
			}
		case StrategyHybrid:
			ids, err = s.readPage(ctx, user, 0, limit)
		}
		if err != nil {
			return StrategiesView{}, fmt.Errorf("feed: read %d's feed by %s: %w", user, st, err)
		}
		posts, err := s.decodedPosts(ctx, ids)
		if err != nil {
			return StrategiesView{}, err
		}
		empty = empty && len(posts) == 0
		view.Strategies = append(view.Strategies, StrategyPage{Strategy: st, Served: st == s.cfg.Strategy, Posts: posts})
	}
	if empty {
		if err := requireUsers(ctx, s.db, user); err != nil {
			return StrategiesView{}, err
		}
	}
	return view, nil
}

// decodedPosts hydrates ids into posts, newest first as given.
func (s *Service) decodedPosts(ctx context.Context, ids []int64) ([]Post, error) {
	raw, err := s.hydrate(ctx, ids)
	if err != nil {
		return nil, err
	}
	posts := make([]Post, len(raw))
	for i, p := range raw {
		if err := json.Unmarshal(p, &posts[i]); err != nil {
			return nil, fmt.Errorf("feed: decode payload %.100s: %w", p, err)
		}
	}
	return posts, nil
}

// MaxFanoutFollowers bounds the followers one GET /v1/posts/{id}/fanout
// checks, so a public request costs at most this many ZSCOREs.
const MaxFanoutFollowers = 50_000

// FanoutProgress is how far one post's delivery got: the body of
// GET /v1/posts/{id}/fanout.
type FanoutProgress struct {
	Post               int64    `json:"post"`
	Author             int64    `json:"author"`
	Strategy           Strategy `json:"strategy"`
	CelebrityThreshold int      `json:"celebrity_threshold"`
	// Celebrity is true when the author is in the celebrity set: in hybrid
	// the post is pulled at read time and no timeline receives it.
	Celebrity bool `json:"celebrity"`
	// Followers is the author's follower count now; Reached, how many of
	// them have the post in their timeline.
	Followers int64 `json:"followers"`
	Reached   int64 `json:"reached"`
	// Truncated is true when the author has more than MaxFanoutFollowers
	// followers: Followers and Reached count the first ones only.
	Truncated bool `json:"truncated"`
	// Pending is true while the post's outbox row exists: its fan-out job
	// has not finished.
	Pending   bool      `json:"pending"`
	CheckedAt time.Time `json:"checked_at"`
}

// FanoutProgress counts the followers of the post's author whose timeline
// holds the post, paging the followers from PostgreSQL and asking Redis one
// page at a time (pipelined ZSCORE), up to MaxFanoutFollowers.
func (s *Service) FanoutProgress(ctx context.Context, postID int64) (FanoutProgress, error) {
	post, err := s.GetPost(ctx, postID)
	if err != nil {
		return FanoutProgress{}, err
	}
	p := FanoutProgress{Post: post.ID, Author: post.AuthorID, Strategy: s.cfg.Strategy, CelebrityThreshold: s.cfg.CelebrityThreshold}
	if p.Celebrity, err = s.rdb.SIsMember(ctx, s.keys.celebrities, post.AuthorID).Result(); err != nil {
		return FanoutProgress{}, fmt.Errorf("feed: is %d a celebrity: %w", post.AuthorID, err)
	}
	if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM feed_outbox WHERE post_id = $1)`, postID).Scan(&p.Pending); err != nil {
		return FanoutProgress{}, fmt.Errorf("feed: outbox row of post %d: %w", postID, err)
	}
	member := fmt.Sprint(postID)
	var after int64
	for {
		rows, err := s.db.Query(ctx, `SELECT follower_id FROM feed_follows WHERE followee_id = $1 AND follower_id > $2
			ORDER BY follower_id LIMIT $3`, post.AuthorID, after, s.cfg.FollowerPageSize)
		if err != nil {
			return FanoutProgress{}, fmt.Errorf("feed: followers of %d: %w", post.AuthorID, err)
		}
		followers, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return FanoutProgress{}, fmt.Errorf("feed: followers of %d: %w", post.AuthorID, err)
		}
		if len(followers) == 0 {
			break
		}
		pipe := s.rdb.Pipeline()
		scores := make([]*redis.FloatCmd, len(followers))
		for i, f := range followers {
			scores[i] = pipe.ZScore(ctx, s.keys.timeline(f), member)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return FanoutProgress{}, fmt.Errorf("feed: timelines of %d followers: %w", len(followers), err)
		}
		for _, c := range scores {
			if c.Err() == nil {
				p.Reached++
			}
		}
		p.Followers += int64(len(followers))
		after = followers[len(followers)-1]
		if len(followers) < s.cfg.FollowerPageSize {
			break
		}
		if p.Followers >= MaxFanoutFollowers {
			p.Truncated = true
			break
		}
	}
	p.CheckedAt = time.Now().UTC()
	return p, nil
}

func (h handlers) feedStrategies(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q, err := api.Query(r)
	if err != nil {
		return err
	}
	limit, err := queryInt(q.Get("limit"), "limit", 1, int64(h.svc.cfg.MaxPageSize))
	if err != nil {
		return err
	}
	view, err := h.svc.FeedByStrategy(r.Context(), id, int(limit))
	if err != nil {
		return problemFor(err, "id")
	}
	api.WriteJSON(w, http.StatusOK, view)
	return nil
}

func (h handlers) postFanout(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	p, err := h.svc.FanoutProgress(r.Context(), id)
	if err != nil {
		return problemFor(err)
	}
	api.WriteJSON(w, http.StatusOK, p)
	return nil
}
