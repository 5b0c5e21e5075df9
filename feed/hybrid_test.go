package feed

import (
	"cmp"
	"context"
	"fmt"
	"github.com/baedal/baedal/internal/stacktest"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestHybridPageMatchesItsData writes random timelines, celebrity lists and
// follows into Redis and checks every hybrid page (readPage) against the
// page computed from the data the test wrote, for many limits and before
// cursors (on an id, next to one, below everything). Ids overlap between the
// timeline and the celebrities' lists, and some sit next to 2^53. Then every
// reader follows and unfollows celebrities, so the service's guesses of who
// follows whom are stale both ways, and every page is checked again.
func TestHybridPageMatchesItsData(t *testing.T) {
	stacktest.ForEachRedis(t, testHybridPageMatchesItsData)
}

func testHybridPageMatchesItsData(t *testing.T, rdb redis.UniversalClient) {
	b := newBackendsOn(t, rdb)
	ctx := context.Background()
	svc := newService(t, b, testConfig(StrategyHybrid, b.prefix))
	k := svc.keys
	rng := rand.New(rand.NewPCG(11, 12))

	// A pool of post ids: ordinary ones, and neighbours just under 2^53.
	var pool []int64
	for i := range 300 {
		pool = append(pool, PostIDAt(PostTime(1<<40), 0)+int64(i)*int64(1+rng.IntN(5000)))
	}
	for i := range 40 {
		pool = append(pool, MaxPostID-int64(i))
	}
	pick := func(n int) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = pool[rng.IntN(len(pool))]
		}
		return out
	}
	zadd := func(key string, ids []int64) {
		if len(ids) > 0 {
			if err := b.rdb.ZAdd(ctx, key, idMembers(ids)...).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The model: what the test wrote.
	const authors, readers = 30, 10
	recent := map[int64][]int64{}    // author → recent post ids
	timelines := map[int64][]int64{} // reader → timeline
	follows := map[int64]map[int64]bool{}
	isCeleb := map[int64]bool{}
	var celebs []any
	for a := int64(1); a <= authors; a++ {
		if a%3 == 0 {
			celebs = append(celebs, a)
			isCeleb[a] = true
		}
		if a != 9 { // celebrity 9 has no recent posts
			recent[a] = pick(rng.IntN(40))
			zadd(k.author(a), recent[a])
		}
	}
	// Through the service: on a cluster it fills the hot-key copies.
	if err := svc.changeCelebrities(ctx, b.rdb, "add", celebs...); err != nil {
		t.Fatal(err)
	}
	follow := func(u, a int64, on bool) {
		var err error
		if on {
			err = b.rdb.SAdd(ctx, k.followees(u), a).Err()
		} else {
			err = b.rdb.SRem(ctx, k.followees(u), a).Err()
		}
		if err != nil {
			t.Fatal(err)
		}
		follows[u][a] = on
	}
	for u := int64(101); u < 101+readers; u++ {
		timelines[u] = pick(rng.IntN(150))
		zadd(k.timeline(u), timelines[u])
		follows[u] = map[int64]bool{}
		if u == 102 { // 102 follows nobody
			continue
		}
		for a := int64(1); a <= authors+5; a++ { // 31..35 are not authors
			if rng.IntN(3) == 0 || u == 101 {
				follow(u, a, true)
			}
		}
	}
	// want is the page from the model: the limit newest distinct ids below
	// before of the timeline and the followed celebrities' recent posts.
	want := func(u, before int64, limit int, withCelebs bool) []int64 {
		all := slices.Clone(timelines[u])
		for a, on := range follows[u] {
			if on && isCeleb[a] && withCelebs {
				all = append(all, recent[a]...)
			}
		}
		all = slices.DeleteFunc(all, func(id int64) bool { return before > 0 && id >= before })
		slices.SortFunc(all, func(x, y int64) int { return cmp.Compare(y, x) })
		all = slices.Compact(all)
		return all[:min(len(all), limit)]
	}

	cases, merged := 0, 0
	check := func() {
		for u := int64(101); u < 101+readers+1; u++ { // 111 has no keys at all
			for _, limit := range []int{1, 2, 7, 20, 200} {
				befores := []int64{0, 1, MaxPostID, MaxPostID - 3}
				for _, id := range pick(6) {
					befores = append(befores, id, id+1, id-1)
				}
				for _, before := range befores {
					got, err := svc.readPage(ctx, u, before, limit)
					if err != nil {
						t.Fatalf("readPage(%d, %d, %d): %v", u, before, limit, err)
					}
					w := want(u, before, limit, true)
					if !slices.Equal(got, w) && (len(got) > 0 || len(w) > 0) {
						t.Fatalf("user %d before %d limit %d:\ngot  %v\nwant %v", u, before, limit, got, w)
					}
					cases++
					if !slices.Equal(w, want(u, before, limit, false)) {
						merged++
					}
				}
			}
		}
	}
	check()
	for u := int64(101); u < 101+readers; u++ {
		for a := int64(3); a <= authors; a += 3 {
			if rng.IntN(2) == 0 {
				follow(u, a, !follows[u][a])
			}
		}
	}
	check()
	// The comparison proves something only if pages merged celebrity lists.
	if merged < 100 {
		t.Fatalf("%d cases, %d merged with celebrities: the data exercise too little", cases, merged)
	}
	t.Logf("%d cases, %d merged with celebrities", cases, merged)
}

// TestFeedReadIsOneRoundTrip: a push or hybrid page whose payloads are all in
// the post cache is one call of the read function (the replica selector's
// hook); with a cold or disabled cache it is one more (an MGET of the
// payloads). A hybrid reader's first read, or the first after following a
// celebrity, is one more again (the celebrities' ranges the guess missed);
// after an unfollow it is not. A hybrid service's first read after the
// celebrity set changed (a first read, an author demoted or promoted) is one
// more again (which of the new set the reader follows: SMISMEMBER).
func TestFeedReadIsOneRoundTrip(t *testing.T) {
	stacktest.ForEachRedis(t, testFeedReadIsOneRoundTrip)
}

func testFeedReadIsOneRoundTrip(t *testing.T, rdb redis.UniversalClient) {
	for _, st := range []Strategy{StrategyPush, StrategyHybrid} {
		t.Run(string(st), func(t *testing.T) {
			b := newBackendsOn(t, rdb)
			cfg := testConfig(st, b.prefix)
			cfg.CelebrityThreshold = 2
			svc := newService(t, b, cfg)
			startWorkers(t, svc)
			reads := 0
			counting := func(ctx context.Context, read func(context.Context, redis.Cmdable) error) error {
				reads++
				return read(ctx, b.rdb)
			}
			svc.UseReadClient(counting)
			celeb, other, normal, reader := mustUser(t, svc, "celeb"), mustUser(t, svc, "other"), mustUser(t, svc, "normal"), mustUser(t, svc, "reader")
			for _, fan := range []int64{reader, normal} { // two followers each: celebrities under hybrid
				mustFollow(t, svc, fan, celeb)
				mustFollow(t, svc, fan, other)
			}
			mustFollow(t, svc, reader, normal)
			for i := range 3 {
				mustPost(t, svc, celeb, fmt.Sprintf("c%d", i))
				mustPost(t, svc, normal, fmt.Sprintf("n%d", i))
				mustPost(t, svc, other, fmt.Sprintf("o%d", i))
			}
			waitSettled(t, svc)
			expect := func(svc *Service, state string, want []string, wantReads int) {
				t.Helper()
				reads = 0
				if got := feedTexts(t, svc, reader, 10); !slices.Equal(got, want) || reads != wantReads {
					t.Fatalf("%s: feed %q in %d reads, want %q in %d", state, got, reads, want, wantReads)
				}
			}
			all := []string{"o2", "n2", "c2", "o1", "n1", "c1", "o0", "n0", "c0"}
			guessMissed := 0
			if st == StrategyHybrid {
				guessMissed = 1
			}
			celebsChanged := guessMissed
			expect(svc, "cold cache", all, 2+guessMissed+celebsChanged)
			expect(svc, "warm cache", all, 1)

			ctx := context.Background()
			if err := svc.Unfollow(ctx, reader, other); err != nil {
				t.Fatal(err)
			}
			waitSettled(t, svc)
			withoutOther := []string{"n2", "c2", "n1", "c1", "n0", "c0"}
			// other fell under the threshold: demoted, the set changed.
			expect(svc, "after an unfollow", withoutOther, 1+celebsChanged)
			mustFollow(t, svc, reader, other)
			waitSettled(t, svc)
			// other is a celebrity again: the set changed again.
			expect(svc, "after a follow", all, 1+guessMissed+celebsChanged)
			expect(svc, "after a follow, again", all, 1)

			// The same data through a service without a cache.
			cfg.PostCacheEntries = -1
			nocache, err := NewService(cfg, b.db, b.rdb, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			nocache.UseReadClient(counting)
			expect(nocache, "no cache", all, 2+guessMissed+celebsChanged)
			expect(nocache, "no cache, again", all, 2)
		})
	}
}

// TestCelebrityKeysShareASlot: the celebrity set and its version change in
// one script, so a cluster must hash them to one slot.
func TestCelebrityKeysShareASlot(t *testing.T) {
	cc := stacktest.RedisCluster(t)
	k := newKeys(stacktest.Namespace(t) + ":")
	stacktest.SameSlot(t, cc, k.celebrities, k.celebritiesVersion)
}

// TestKnownCelebritiesFollowTheVersion: a hybrid read sees a celebrity
// added by another process (which raised the version) at once.
func TestKnownCelebritiesFollowTheVersion(t *testing.T) {
	stacktest.ForEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := newBackendsOn(t, rdb)
		ctx := context.Background()
		reader := newService(t, b, testConfig(StrategyHybrid, b.prefix))
		writer := newService(t, b, testConfig(StrategyHybrid, b.prefix))
		k := reader.keys
		if err := rdb.SAdd(ctx, k.followees(7), 1, 2).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.ZAdd(ctx, k.author(2), redis.Z{Score: 500, Member: "500"}).Err(); err != nil {
			t.Fatal(err)
		}
		if err := writer.changeCelebrities(ctx, rdb, "add", "1"); err != nil {
			t.Fatal(err)
		}
		if ids, err := reader.readPage(ctx, 7, 0, 10); err != nil || len(ids) != 0 {
			t.Fatalf("page before 2 is a celebrity = %v, %v; want empty", ids, err)
		}
		if err := writer.changeCelebrities(ctx, rdb, "add", "2"); err != nil {
			t.Fatal(err)
		}
		if ids, err := reader.readPage(ctx, 7, 0, 10); err != nil || !slices.Equal(ids, []int64{500}) {
			t.Fatalf("page after 2 became a celebrity = %v, %v; want [500]", ids, err)
		}
		if err := writer.changeCelebrities(ctx, rdb, "rem", "2"); err != nil {
			t.Fatal(err)
		}
		if ids, err := reader.readPage(ctx, 7, 0, 10); err != nil || len(ids) != 0 {
			t.Fatalf("page after 2 left the celebrities = %v, %v; want empty", ids, err)
		}
	})
}

// TestDeleteRedisStateOnEveryNode: DeleteRedisState removes the keys of the
// deployment from every master of a cluster (keys of many slots), the
// celebrity set's version included, and the process forgets its copy of
// the set.
func TestDeleteRedisStateOnEveryNode(t *testing.T) {
	stacktest.ForEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := newBackendsOn(t, rdb)
		ctx := context.Background()
		svc := newService(t, b, testConfig(StrategyHybrid, b.prefix))
		for i := range 30 {
			if err := rdb.Set(ctx, svc.keys.post(int64(i)), "{}", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := svc.changeCelebrities(ctx, rdb, "add", "1", "2"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.loadCelebrities(ctx); err != nil {
			t.Fatal(err)
		}
		if err := svc.DeleteRedisState(ctx); err != nil {
			t.Fatal(err)
		}
		keys := []string{svc.keys.celebrities, svc.keys.celebritiesVersion}
		for i := range 30 {
			keys = append(keys, svc.keys.post(int64(i)))
		}
		for _, k := range keys {
			if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 0 {
				t.Errorf("%s left after DeleteRedisState (%d, %v)", k, n, err)
			}
		}
		if _, _, loaded := svc.known.get(); loaded {
			t.Error("the process still has its copy of the deleted celebrity set")
		}
	})
}
