package simulator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baedal/baedal/feed"
	"github.com/baedal/baedal/internal/stacktest"
)

// The feed demo seeds the experiment graph into an empty database, posts as
// user A's followees and now and then as the celebrity, and run again on
// the same data neither seeds again nor loses a post.
func TestFeedPosterSeedsOnceAndPosts(t *testing.T) {
	svc, db := newFeedService(t)
	ctx := context.Background()
	cfg := Config{Seed: 1, FeedUsers: 50, FeedPostsPerMinute: 3000, FeedCelebrityEvery: 3}
	run := func(d time.Duration) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		var progress strings.Builder
		if err := NewFeedPoster(cfg, svc, nil, nil).Run(ctx, &progress); err != nil {
			t.Fatal(err)
		}
		return progress.String()
	}
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRow(ctx, query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	out := run(2 * time.Second)
	if !strings.Contains(out, "feed demo: the write-up's experiment seeded") {
		t.Errorf("first run's progress = %q, want the seed", out)
	}
	ex, err := svc.Example(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Users != 53 || ex.Reader == nil || ex.Reader.Username != "user_a" || ex.MostFollowed == nil || ex.MostFollowed.Username != "celebrity" {
		t.Fatalf("after the demo's seed: %+v", ex)
	}
	seeded := 50*3 + 3 // feed.SeedDefaults: 3 posts per user and 3 of the celebrity
	demoPosts := `SELECT count(*) FROM feed_posts WHERE text LIKE '%demo post%' AND author_id = ANY($1)`
	byFollowees := count(demoPosts, followeesOf(t, db, ex.Reader.ID, ex.MostFollowed.ID))
	byCelebrity := count(demoPosts, []int64{ex.MostFollowed.ID})
	if byFollowees < 2 || byCelebrity < 1 {
		t.Errorf("the demo posted %d times as A's followees and %d as the celebrity in 2 s at 50/s, one in 3 the celebrity's; want both", byFollowees, byCelebrity)
	}
	before := count(`SELECT count(*) FROM feed_posts`)
	if before != seeded+byFollowees+byCelebrity {
		t.Errorf("%d posts, want %d seeded + %d by the demo", before, seeded, byFollowees+byCelebrity)
	}

	// Again, on the same data: no seed, nothing lost, more posts.
	if out := run(500 * time.Millisecond); strings.Contains(out, "seeded") {
		t.Errorf("the second run seeded again: %q", out)
	}
	if users, after := count(`SELECT count(*) FROM feed_users`), count(`SELECT count(*) FROM feed_posts`); users != 53 || after <= before {
		t.Errorf("after the second run: %d users, %d posts (%d before); want the 53 users and more posts", users, after, before)
	}
}

// A database with users made by hand is left as it is: no seed, and no
// post when nobody follows anybody.
func TestFeedPosterLeavesOtherDataAlone(t *testing.T) {
	svc, db := newFeedService(t)
	ctx := context.Background()
	if _, err := svc.CreateUser(ctx, "handmade", ""); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	cfg := Config{Seed: 1, FeedUsers: 50, FeedPostsPerMinute: 3000, FeedCelebrityEvery: 3}
	if err := NewFeedPoster(cfg, svc, nil, nil).Run(runCtx, nil); err != nil {
		t.Fatal(err)
	}
	var users, posts int
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM feed_users), (SELECT count(*) FROM feed_posts)`).Scan(&users, &posts); err != nil {
		t.Fatal(err)
	}
	if users != 1 || posts != 0 {
		t.Errorf("%d users and %d posts after the demo ran on a hand-made user; want that one user, no posts", users, posts)
	}
}

// newFeedService is a hybrid feed service on a database and a Redis key
// prefix of this test's own.
func newFeedService(t *testing.T) (*feed.Service, *pgxpool.Pool) {
	t.Helper()
	rdb := stacktest.SingleRedis(t)
	db, err := pgxpool.New(context.Background(), stacktest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := feed.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	cfg := feed.Defaults()
	cfg.KeyPrefix = stacktest.Namespace(t) + ":"
	cfg.CelebrityThreshold = 20
	t.Cleanup(func() { stacktest.DeleteKeys(context.Background(), rdb, cfg.KeyPrefix+"*", "{"+cfg.KeyPrefix+"*") })
	svc, err := feed.NewService(cfg, db, rdb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return svc, db
}

// followeesOf lists whom user follows, leaving out except.
func followeesOf(t *testing.T, db *pgxpool.Pool, user, except int64) []int64 {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT followee_id FROM feed_follows WHERE follower_id = $1 AND followee_id <> $2`, user, except)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}
