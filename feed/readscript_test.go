package feed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestReadScriptMatchesPipeline writes random timelines, celebrity lists and
// follows into Redis and checks that the hybrid read script returns the same
// ids as the pipelined reads (feedIDsFrom), for many limits and before
// cursors (on an id, next to one, below everything). Ids overlap between the
// timeline and the celebrities' lists, and some sit next to 2^53.
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

	cases, merged := 0, 0
	svc, push := svcs[StrategyHybrid], svcs[StrategyPush]
	for u := int64(101); u < 101+readers+1; u++ { // 111 has no keys at all
		for _, limit := range []int{1, 2, 7, 20, 200} {
			befores := []int64{0, 1, MaxPostID, MaxPostID - 3}
			for _, id := range pick(6) {
				befores = append(befores, id, id+1, id-1)
			}
			for _, before := range befores {
				ids, err := svc.readPage(ctx, u, before, limit)
				if err != nil {
					t.Fatalf("readPage(%d, %d, %d): %v", u, before, limit, err)
				}
				want, err := svc.feedIDsFrom(ctx, b.rdb, u, before, limit)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(ids, want) && (len(ids) > 0 || len(want) > 0) {
					t.Fatalf("user %d before %d limit %d:\nscript   %v\npipeline %v", u, before, limit, ids, want)
				}
				cases++
				// The timeline alone is what push reads.
				own, err := push.feedIDsFrom(ctx, b.rdb, u, before, limit)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(own, ids) {
					merged++
				}
			}
		}
	}
	// The comparison proves something only if the script merged celebrity
	// lists.
	if merged < 50 {
		t.Fatalf("%d cases, %d merged with celebrities: the data exercise too little", cases, merged)
	}
	t.Logf("%d cases, %d merged with celebrities", cases, merged)
}

// TestFeedReadIsOneRoundTrip: a push or hybrid page whose payloads are all in
// the post cache is one call of the read function (the replica selector's
// hook); with a cold or disabled cache it is two (ids, then one MGET of the
// payloads). The hybrid read still works after the server forgot the script
// (NOSCRIPT).
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
			if got := feedTexts(t, svc, reader, 10); !slices.Equal(got, want) || reads != 2 {
				t.Fatalf("cold cache: feed %q in %d reads, want %q in 2", got, reads, want)
			}
			reads = 0
			if got := feedTexts(t, svc, reader, 10); !slices.Equal(got, want) || reads != 1 {
				t.Fatalf("warm cache: feed %q in %d reads, want %q in 1", got, reads, want)
			}
			if err := b.rdb.ScriptFlush(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			reads = 0
			if got := feedTexts(t, svc, reader, 10); !slices.Equal(got, want) || reads != 1 {
				t.Fatalf("after SCRIPT FLUSH: feed %q in %d reads, want %q in 1", got, reads, want)
			}

			// The same data through a service without a cache.
			cfg.PostCacheEntries = -1
			nocache, err := NewService(cfg, b.db, b.rdb, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			nocache.UseReadClient(func(ctx context.Context, read func(context.Context, redis.Cmdable) error) error {
				reads++
				return read(ctx, b.rdb)
			})
			for range 2 {
				reads = 0
				if got := feedTexts(t, nocache, reader, 10); !slices.Equal(got, want) || reads != 2 {
					t.Fatalf("no cache: feed %q in %d reads, want %q in 2", got, reads, want)
				}
			}
		})
	}
}

// TestParseIDLists parses the read script's reply format, random lists
// written the way the script writes them, and rejects malformed replies.
func TestParseIDLists(t *testing.T) {
	cases := []struct {
		in   string
		want [][]int64
	}{
		{"", [][]int64{{}}},
		{";", [][]int64{{}, {}}},
		{"7", [][]int64{{7}}},
		{"3,2,1;;9007199254740991,5", [][]int64{{3, 2, 1}, {}, {MaxPostID, 5}}},
		{";4", [][]int64{{}, {4}}},
	}
	for _, c := range cases {
		got, err := parseIDLists(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseIDLists(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		want := make([][]int64, 1+rng.IntN(4))
		var lists []string
		for i := range want {
			want[i] = []int64{}
			var ids []string
			for range rng.IntN(5) {
				id := rng.Int64N(MaxPostID + 1)
				want[i] = append(want[i], id)
				ids = append(ids, strconv.FormatInt(id, 10))
			}
			lists = append(lists, strings.Join(ids, ","))
		}
		in := strings.Join(lists, ";")
		got, err := parseIDLists(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("parseIDLists(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{",", "1,", ",1", "1,,2", "1;,", "1;2,", "a", "1 ", "-1", "1234567890123456789", "1:2"} {
		if got, err := parseIDLists(bad); err == nil {
			t.Errorf("parseIDLists(%q) = %v, want an error", bad, got)
		}
	}
}
