package feed

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/baedal/baedal/api"
)

// Example is who to show the feed with, found in the data as it is (a
// seed's graph or one made by hand): the console's Feed view opens on it
// and the demo posts as its users. On the write-up's experiment graph the
// reader is user A, the author user 1 and the most followed the celebrity.
// It is the body of GET /v1/feed/example.
type Example struct {
	// Users is the number of feed users; 0 means there is nothing to show
	// yet. A user that does not exist (no follows yet) is nil, and left out
	// of the JSON.
	Users int64 `json:"users"`
	// Reader is the user who follows the most users; ReaderFollowees, how
	// many.
	Reader          *User `json:"reader,omitempty"`
	ReaderFollowees int64 `json:"reader_followees"`
	// Author is the reader's followee with the most followers whose posts
	// are pushed into timelines (under hybrid: fewer followers than the
	// celebrity threshold; under pull, nobody's are).
	Author *User `json:"author,omitempty"`
	// MostFollowed is the user with the most followers; under hybrid, with
	// at least CelebrityThreshold of them, a celebrity whose posts are
	// pulled at read time.
	MostFollowed *User `json:"most_followed,omitempty"`
	// Strategy and CelebrityThreshold are this deployment's.
	Strategy           Strategy `json:"strategy"`
	CelebrityThreshold int      `json:"celebrity_threshold"`
}

// Example finds the example users. It reads every follow once (a GROUP
// BY), so it is for the console and the demo, not for a hot path.
func (s *Service) Example(ctx context.Context) (Example, error) {
	ex := Example{Strategy: s.cfg.Strategy, CelebrityThreshold: s.cfg.CelebrityThreshold}
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM feed_users`).Scan(&ex.Users); err != nil {
		return Example{}, fmt.Errorf("feed: example: count users: %w", err)
	}
	if ex.Users == 0 {
		return ex, nil
	}
	var reader int64
	err := s.db.QueryRow(ctx, `SELECT follower_id, count(*) FROM feed_follows
		GROUP BY follower_id ORDER BY count(*) DESC, follower_id LIMIT 1`).Scan(&reader, &ex.ReaderFollowees)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Example{}, fmt.Errorf("feed: example: the user who follows the most: %w", err)
	}
	if err == nil {
		if ex.Reader, err = s.exampleUser(ctx, `SELECT id, username, profile_pic, follower_count, created_at FROM feed_users WHERE id = $1`, reader); err != nil {
			return Example{}, err
		}
		// Under push every author is pushed, under pull none is.
		threshold := int64(-1)
		switch s.cfg.Strategy {
		case StrategyHybrid:
			threshold = int64(s.cfg.CelebrityThreshold)
		case StrategyPull:
			threshold = 0
		}
		ex.Author, err = s.exampleUser(ctx, `SELECT u.id, u.username, u.profile_pic, u.follower_count, u.created_at
			FROM feed_follows f JOIN feed_users u ON u.id = f.followee_id
			WHERE f.follower_id = $1 AND ($2 < 0 OR u.follower_count < $2)
			ORDER BY u.follower_count DESC, u.id LIMIT 1`, reader, threshold)
		if err != nil {
			return Example{}, err
		}
	}
	ex.MostFollowed, err = s.exampleUser(ctx, `SELECT id, username, profile_pic, follower_count, created_at FROM feed_users
		WHERE follower_count > 0 ORDER BY follower_count DESC, id LIMIT 1`)
	if err != nil {
		return Example{}, err
	}
	return ex, nil
}

// exampleUser reads the user a query selects, or nil when it selects none.
func (s *Service) exampleUser(ctx context.Context, query string, args ...any) (*User, error) {
	var u User
	err := s.db.QueryRow(ctx, query, args...).Scan(&u.ID, &u.Username, &u.ProfilePic, &u.FollowerCount, &u.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("feed: example user: %w", err)
	}
	u.CreatedAt = u.CreatedAt.UTC()
	return &u, nil
}

// SampleFollowees returns up to n of user's followees, chosen at random,
// leaving out except.
func (s *Service) SampleFollowees(ctx context.Context, user int64, n int, except ...int64) ([]int64, error) {
	if except == nil {
		except = []int64{} // NULL would exclude every row
	}
	rows, err := s.db.Query(ctx, `SELECT followee_id FROM feed_follows
		WHERE follower_id = $1 AND NOT (followee_id = ANY($2)) ORDER BY random() LIMIT $3`, user, except, n)
	if err != nil {
		return nil, fmt.Errorf("feed: sample followees of %d: %w", user, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("feed: sample followees of %d: %w", user, err)
	}
	return ids, nil
}

func (h handlers) example(w http.ResponseWriter, r *http.Request) error {
	ex, err := h.svc.Example(r.Context())
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, ex)
	return nil
}
