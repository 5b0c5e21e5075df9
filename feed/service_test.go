package feed

import (
	"context"
	"errors"
	"fmt"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/redis/go-redis/v9"
	"slices"
	"sync"
	"testing"
)

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	b := newBackends(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	applied := make([][]int, 3)
	errs := make([]error, 3)
	for i := range 3 {
		wg.Go(func() { applied[i], errs[i] = Migrate(ctx, b.db) })
	}
	wg.Wait()
	total := 0
	for i := range 3 {
		if errs[i] != nil {
			t.Fatalf("concurrent Migrate %d: %v", i, errs[i])
		}
		total += len(applied[i])
	}
	ms, _ := Migrations()
	if total != len(ms) {
		t.Errorf("three concurrent runs applied %d migrations in total, want %d (each exactly once)", total, len(ms))
	}
	again, err := Migrate(ctx, b.db)
	if err != nil || len(again) != 0 {
		t.Errorf("second Migrate applied %v, %v; want nothing", again, err)
	}
	var tables int
	b.db.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_name IN ('feed_users','feed_follows','feed_posts','feed_outbox')`).Scan(&tables)
	if tables != 4 {
		t.Errorf("%d of the 4 feed tables exist", tables)
	}
	if _, err := b.db.Exec(ctx, `INSERT INTO `+migrationsTable+` (version, name) VALUES (999, 'future')`); err != nil {
		t.Fatal(err)
	}
	if _, err := Migrate(ctx, b.db); err == nil {
		t.Error("Migrate accepted a database newer than the binary")
	}
}

func TestFeedPerStrategy(t *testing.T) {
	stacktest.ForEachRedis(t, testFeedPerStrategy)
}

func testFeedPerStrategy(t *testing.T, rdb redis.UniversalClient) {
	for _, st := range Strategies() {
		t.Run(string(st), func(t *testing.T) {
			b := newBackendsOn(t, rdb)
			cfg := testConfig(st, b.prefix)
			cfg.CelebrityThreshold = 2
			cfg.TimelineCap = 10
			svc := newService(t, b, cfg)
			startWorkers(t, svc)
			ctx := context.Background()
			celeb, normal, r1, r2 := mustUser(t, svc, "celeb"), mustUser(t, svc, "normal"), mustUser(t, svc, "r1"), mustUser(t, svc, "r2")
			mustFollow(t, svc, r1, celeb)
			mustFollow(t, svc, r2, celeb) // celeb reaches the threshold of 2
			mustFollow(t, svc, r1, normal)
			for i := range 12 {
				mustPost(t, svc, normal, fmt.Sprintf("n%d", i))
			}
			mustPost(t, svc, celeb, "c0")
			waitSettled(t, svc)

			got := feedTexts(t, svc, r1, 5)
			if want := []string{"c0", "n11", "n10", "n9", "n8"}; !slices.Equal(got, want) {
				t.Errorf("r1's feed = %q, want %q", got, want)
			}
			if got := feedTexts(t, svc, r2, 5); !slices.Equal(got, []string{"c0"}) {
				t.Errorf("r2's feed = %q, want [c0]", got)
			}
			// Where the celebrity's post lives tells the strategies apart.
			inTimeline, _ := b.rdb.ZCard(ctx, svc.keys.timeline(r2)).Result()
			wantInTimeline := map[Strategy]int64{StrategyPull: 0, StrategyPush: 1, StrategyHybrid: 0}[st]
			if inTimeline != wantInTimeline {
				t.Errorf("r2's timeline holds %d posts, want %d", inTimeline, wantInTimeline)
			}
			if st != StrategyPull {
				if n, _ := b.rdb.ZCard(ctx, svc.keys.timeline(r1)).Result(); n != 10 {
					t.Errorf("r1's timeline holds %d ids, want the cap of 10", n)
				}
			}
			// Unfollow removes, follow backfills.
			if err := svc.Unfollow(ctx, r1, normal); err != nil {
				t.Fatal(err)
			}
			if got := feedTexts(t, svc, r1, 5); !slices.Equal(got, []string{"c0"}) {
				t.Errorf("after unfollow r1's feed = %q, want [c0]", got)
			}
			mustFollow(t, svc, r2, normal)
			if got := feedTexts(t, svc, r2, 3); !slices.Equal(got, []string{"c0", "n11", "n10"}) {
				t.Errorf("after follow r2's feed = %q, want [c0 n11 n10]", got)
			}
			// Cursor paging: the second page starts after the first.
			page, err := svc.Feed(ctx, r2, 0, 2)
			if err != nil || page.NextBefore == 0 {
				t.Fatalf("first page %+v, %v", page, err)
			}
			page2, err := svc.Feed(ctx, r2, page.NextBefore, 2)
			if err != nil || len(page2.Posts) != 2 || page2.Posts[0].Text != "n10" {
				t.Errorf("second page = %+v, %v; want n10 first", page2.Posts, err)
			}
			// Errors.
			if _, err := svc.Feed(ctx, 999, 0, 5); !errors.Is(err, ErrUnknownUser) {
				t.Errorf("feed of an unknown user: %v", err)
			}
			if err := svc.Follow(ctx, r1, r1); !errors.Is(err, ErrSelfFollow) {
				t.Errorf("self-follow: %v", err)
			}
			if err := svc.Follow(ctx, r1, 999); !errors.Is(err, ErrUnknownUser) {
				t.Errorf("follow an unknown user: %v", err)
			}
		})
	}
}
