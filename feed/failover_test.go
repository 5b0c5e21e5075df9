package feed

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/baedal/baedal/internal/failovertest"
)

// TestNoAcknowledgedPostIsLostWhenAMasterDies posts under a steady load to
// a hybrid feed on a Redis Cluster of its own with WaitReplicas 1 (fan-out
// workers running, two celebrities pulled, everyone else pushed), SIGKILLs
// a master, lets its replica take over and starts the old master again.
// Once the fan-out has settled, every follower's feed must hold every post
// CreatePost acknowledged of everyone they follow: a fan-out job finishes
// only after its timeline entries and the author's recent-post entry
// reached a replica, and until then the outbox relay publishes it again.
func TestNoAcknowledgedPostIsLostWhenAMasterDies(t *testing.T) {
	ctx := context.Background()
	cl := failovertest.New(t)
	b := newBackendsOn(t, cl.Client)
	cfg := testConfig(StrategyHybrid, b.prefix)
	cfg.CelebrityThreshold = 5
	cfg.WaitReplicas, cfg.WaitTimeout = 1, time.Second
	cfg.RelayAfter = 2 * time.Second
	svc := newService(t, b, cfg)

	const users = 12
	ids := make([]int64, users)
	for i := range ids {
		u, err := svc.CreateUser(ctx, fmt.Sprintf("failover%d", i), "")
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = u.ID
	}
	// ids[0] and ids[1] are followed by everyone (celebrities, pulled);
	// everyone also follows the next two users (pushed).
	followees := map[int64][]int64{}
	follow := func(a, b int64) {
		if err := svc.Follow(ctx, a, b); err != nil {
			t.Fatalf("follow %d → %d: %v", a, b, err)
		}
		followees[a] = append(followees[a], b)
	}
	for i, u := range ids {
		for _, j := range []int{0, 1, (i + 1) % users, (i + 2) % users} {
			if ids[j] != u && !slices.Contains(followees[u], ids[j]) {
				follow(u, ids[j])
			}
		}
	}
	startWorkers(t, svc)

	var (
		mu      sync.Mutex
		acked   = map[int64][]int64{} // author → acknowledged post ids
		nAcked  int
		refused []error
	)
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return nAcked
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				author := ids[(w+3*n)%users]
				p, err := svc.CreatePost(ctx, author, fmt.Sprintf("post %d of writer %d", n, w))
				mu.Lock()
				if err == nil {
					acked[author] = append(acked[author], p.ID)
					nAcked++
				} else {
					refused = append(refused, err) // PostgreSQL is not failing over: none expected
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("timed out after a minute waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitUntil("100 posts before the kill", func() bool { return ackedCount() >= 100 })
	before := ackedCount()
	replicaAddr, tookOver, err := cl.Failover(ctx)
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	afterRestart := ackedCount()
	waitUntil("100 posts after the old master rejoined", func() bool { return ackedCount() >= afterRestart+100 })
	close(stop)
	wg.Wait()
	for _, err := range refused[:min(len(refused), 5)] {
		t.Errorf("CreatePost failed although PostgreSQL kept running: %v", err)
	}
	waitSettled(t, svc)
	t.Logf("%d posts acknowledged (%d before the kill); %s took over after %s", nAcked, before, replicaAddr, tookOver.Round(100*time.Millisecond))

	lost := 0
	for _, u := range ids {
		seen := map[int64]bool{}
		var before int64
		for {
			page, err := svc.Feed(ctx, u, before, cfg.MaxPageSize)
			if err != nil {
				t.Fatalf("feed of %d: %v", u, err)
			}
			for _, p := range page.Posts {
				seen[p.ID] = true
			}
			if page.NextBefore == 0 || len(page.Posts) == 0 {
				break
			}
			before = page.NextBefore
		}
		for _, author := range followees[u] {
			for _, id := range acked[author] {
				if !seen[id] {
					lost++
					if lost <= 5 {
						t.Errorf("post %d by %d is missing from the feed of follower %d after the failover", id, author, u)
					}
				}
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d acknowledged (post, follower) deliveries lost", lost)
	}
}
