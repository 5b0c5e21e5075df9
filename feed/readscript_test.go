package feed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestReadScriptMatchesPipeline writes random timelines, celebrity lists,
// follows and payloads into Redis and checks that the read script returns
// the same ids as the pipelined reads (feedIDsFrom) and the same values as an
// MGET of their payload keys, for push and hybrid, many limits and before
// cursors (on an id, next to one, below everything). Ids overlap between the
// timeline and the celebrities' lists, some sit next to 2^53, and some
// payloads are missing.
func TestReadScriptMatchesPipeline(t *testing.T) {
	b := newBackends(t)
	ctx := context.Background()
	svcs := map[Strategy]*Service{}
	for _, st := range []Strategy{StrategyPush, StrategyHybrid} {
		svcs[st] = newService(t, b, testConfig(st, b.prefix))
	}
	k := svcs[StrategyHybrid].keys
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
	const authors, readers = 30, 10
	var celebs []any
	for a := int64(1); a <= authors; a++ {
		if a%3 == 0 {
			celebs = append(celebs, a)
		}
		if a != 9 { // celebrity 9 has no recent posts
			zadd(k.author(a), pick(rng.IntN(40)))
		}
	}
	if err := b.rdb.SAdd(ctx, k.celebrities, celebs...).Err(); err != nil {
		t.Fatal(err)
	}
	for u := int64(101); u < 101+readers; u++ {
		zadd(k.timeline(u), pick(rng.IntN(150)))
		var follows []any
		for a := int64(1); a <= authors+5; a++ { // 31..35 are not authors
			if rng.IntN(3) == 0 || u == 101 {
				follows = append(follows, a)
			}
		}
		if u != 102 { // 102 follows nobody
			if err := b.rdb.SAdd(ctx, k.followees(u), follows...).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range pool {
		if rng.IntN(5) > 0 {
			if err := b.rdb.Set(ctx, k.post(id), "payload of "+strconv.FormatInt(id, 10), 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}

	cases, merged, missing := 0, 0, 0
	for st, svc := range svcs {
		for u := int64(101); u < 101+readers+1; u++ { // 111 has no keys at all
			for _, limit := range []int{1, 2, 7, 20, 200} {
				befores := []int64{0, 1, MaxPostID, MaxPostID - 3}
				for _, id := range pick(6) {
					befores = append(befores, id, id+1, id-1)
				}
				for _, before := range befores {
					ids, vals, err := svc.readPage(ctx, u, before, limit)
					if err != nil {
						t.Fatalf("%s readPage(%d, %d, %d): %v", st, u, before, limit, err)
					}
					want, err := svc.feedIDsFrom(ctx, b.rdb, u, before, limit)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(ids, want) && (len(ids) > 0 || len(want) > 0) {
						t.Fatalf("%s user %d before %d limit %d:\nscript   %v\npipeline %v", st, u, before, limit, ids, want)
					}
					var wantVals []any
					if len(ids) > 0 {
						keys := make([]string, len(ids))
						for i, id := range ids {
							keys[i] = k.post(id)
						}
						if wantVals, err = b.rdb.MGet(ctx, keys...).Result(); err != nil {
							t.Fatal(err)
						}
					}
					if len(vals) != len(wantVals) || len(vals) > 0 && !reflect.DeepEqual(vals, wantVals) {
						t.Fatalf("%s user %d before %d limit %d: payloads\n%v\nwant %v", st, u, before, limit, vals, wantVals)
					}
					cases++
					for _, v := range vals {
						if v == nil {
							missing++
						}
					}
					if st == StrategyHybrid {
						// The timeline alone is what push reads.
						own, err := svcs[StrategyPush].feedIDsFrom(ctx, b.rdb, u, before, limit)
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(own, ids) {
							merged++
						}
					}
				}
			}
		}
	}
	// The comparison proves something only if the script merged celebrity
	// lists and met missing payloads.
	if merged < 50 || missing == 0 {
		t.Fatalf("%d cases, %d merged with celebrities, %d missing payloads: the data exercise too little", cases, merged, missing)
	}
	t.Logf("%d cases, %d merged with celebrities, %d missing payloads", cases, merged, missing)
}

// TestFeedReadIsOneRoundTrip: a push or hybrid page whose payloads are all in
// Redis is one call of the read function (the replica selector's hook), and
// the read still works after the server forgot the script (NOSCRIPT).
func TestFeedReadIsOneRoundTrip(t *testing.T) {
	for _, st := range []Strategy{StrategyPush, StrategyHybrid} {
		t.Run(string(st), func(t *testing.T) {
			b := newBackends(t)
			cfg := testConfig(st, b.prefix)
			cfg.CelebrityThreshold = 1
			svc := newService(t, b, cfg)
			startWorkers(t, svc)
			reads := 0
			svc.UseReadClient(func(ctx context.Context, read func(context.Context, redis.Cmdable) error) error {
				reads++
				return read(ctx, b.rdb)
			})
			celeb, normal, reader := mustUser(t, svc, "celeb"), mustUser(t, svc, "normal"), mustUser(t, svc, "reader")
			mustFollow(t, svc, reader, celeb) // a celebrity under hybrid: threshold 1
			mustFollow(t, svc, normal, reader)
			mustFollow(t, svc, reader, normal)
			for i := range 3 {
				mustPost(t, svc, celeb, fmt.Sprintf("c%d", i))
				mustPost(t, svc, normal, fmt.Sprintf("n%d", i))
			}
			waitSettled(t, svc)
			want := []string{"n2", "c2", "n1", "c1", "n0", "c0"}
			reads = 0
			if got := feedTexts(t, svc, reader, 10); !slices.Equal(got, want) || reads != 1 {
				t.Fatalf("feed %q in %d reads, want %q in 1", got, reads, want)
			}
			if err := b.rdb.ScriptFlush(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			reads = 0
			if got := feedTexts(t, svc, reader, 10); !slices.Equal(got, want) || reads != 1 {
				t.Fatalf("after SCRIPT FLUSH: feed %q in %d reads, want %q in 1", got, reads, want)
			}
		})
	}
}
