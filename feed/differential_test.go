package feed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestStrategiesReturnTheSameFeed runs one random history of users, follows,
// posts and unfollows against a pull, a push and a hybrid deployment (each
// with its own database and Redis prefix) and checks that, once fan-out has
// settled, every user's feed is the same in all three, page by page. The
// celebrity threshold is low, so hybrid both pulls and pushes, and some
// authors cross it in both directions (promotion and demotion).
// Add a seed that ever fails to the list.
func TestStrategiesReturnTheSameFeed(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runDifferential(t, seed) })
	}
}

func runDifferential(t *testing.T, seed uint64) {
	const users, threshold = 24, 6
	rng := rand.New(rand.NewPCG(seed, 7))
	var svcs []*Service
	for _, st := range Strategies() {
		b := newBackends(t)
		cfg := testConfig(st, b.prefix)
		cfg.CelebrityThreshold = threshold
		svc := newService(t, b, cfg)
		startWorkers(t, svc)
		svcs = append(svcs, svc)
	}
	ctx := context.Background()
	each := func(f func(svc *Service) error) {
		t.Helper()
		for _, svc := range svcs {
			if err := f(svc); err != nil {
				t.Fatalf("%s: %v", svc.cfg.Strategy, err)
			}
		}
	}
	settle := func() {
		for _, svc := range svcs {
			waitSettled(t, svc)
		}
	}
	for i := 1; i <= users; i++ {
		each(func(svc *Service) error {
			u, err := svc.CreateUser(ctx, fmt.Sprintf("u%d", i), "")
			if err == nil && u.ID != int64(i) {
				err = fmt.Errorf("user id %d, want %d", u.ID, i)
			}
			return err
		})
	}
	// Users 1..3 are popular: they get most follows and cross the threshold.
	pickFollowee := func() int64 {
		if rng.IntN(2) == 0 {
			return int64(1 + rng.IntN(3))
		}
		return int64(1 + rng.IntN(users))
	}
	follows := map[[2]int64]bool{}
	follow := func(a, b int64) {
		if a == b {
			return
		}
		follows[[2]int64{a, b}] = true
		each(func(svc *Service) error { return svc.Follow(ctx, a, b) })
	}
	posts := 0
	post := func(n int) {
		for range n {
			author := int64(1 + rng.IntN(users))
			posts++
			text := fmt.Sprintf("post %d by %d", posts, author)
			each(func(svc *Service) error { _, err := svc.CreatePost(ctx, author, text); return err })
		}
	}
	for u := int64(1); u <= users; u++ {
		for range 3 {
			follow(u, pickFollowee())
		}
	}
	post(60)
	settle()
	// Later follows backfill, unfollows remove; both can cross the threshold.
	for range 3 {
		for range 8 {
			follow(int64(1+rng.IntN(users)), pickFollowee())
		}
		post(20)
		settle()
		var edges [][2]int64
		for e := range follows {
			edges = append(edges, e)
		}
		slices.SortFunc(edges, func(x, y [2]int64) int { return int(x[0]*1000 + x[1] - y[0]*1000 - y[1]) })
		for range 8 {
			e := edges[rng.IntN(len(edges))]
			delete(follows, e)
			each(func(svc *Service) error { return svc.Unfollow(ctx, e[0], e[1]) })
		}
		post(20)
		settle()
	}

	nonEmpty := 0
	for u := int64(1); u <= users; u++ {
		var want []string
		for i, svc := range svcs {
			got := allPages(t, svc, u, 7)
			if i == 0 {
				want = got
				if len(got) > 0 {
					nonEmpty++
				}
				continue
			}
			if !slices.Equal(got, want) {
				t.Errorf("user %d: %s feed differs from %s:\n%s: %q\n%s: %q", u, svc.cfg.Strategy, svcs[0].cfg.Strategy,
					svcs[0].cfg.Strategy, want, svc.cfg.Strategy, got)
			}
		}
	}
	if nonEmpty < users/2 {
		t.Fatalf("only %d of %d users have a non-empty feed; the test proves little", nonEmpty, users)
	}
	celebs, err := svcs[2].rdb.SCard(ctx, svcs[2].keys.celebrities).Result()
	if err != nil || celebs == 0 {
		t.Errorf("hybrid ended with %d celebrities (%v); the test should exercise pulling", celebs, err)
	}
}

// allPages follows the cursor to the end and returns every text.
func allPages(t *testing.T, svc *Service, user int64, limit int) []string {
	t.Helper()
	var texts []string
	var before int64
	for range 1000 {
		page, err := svc.Feed(context.Background(), user, before, limit)
		if err != nil {
			t.Fatalf("%s: Feed(%d, before %d): %v", svc.cfg.Strategy, user, before, err)
		}
		for _, p := range page.Posts {
			texts = append(texts, p.Text)
		}
		if page.NextBefore == 0 {
			return texts
		}
		before = page.NextBefore
	}
	t.Fatalf("more than 1000 pages")
	return nil
}
