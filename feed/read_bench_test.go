package feed

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/stacktest"
)

// BenchmarkMergeNewest measures the read-time merge: pull merges one list
// per followee (user A: 10,001), hybrid merges the timeline with the few
// pulled celebrities.
//
//	go test ./feed -run '^$' -bench MergeNewest -benchmem
func BenchmarkMergeNewest(b *testing.B) {
	for _, lists := range []int{2, 100, 10_001} {
		b.Run(fmt.Sprintf("lists=%d", lists), func(b *testing.B) {
			in := make([][]int64, lists)
			for i := range in {
				in[i] = make([]int64, 20)
				for j := range in[i] {
					in[i][j] = int64((20-j)*lists + i) // interleaved, descending
				}
			}
			work := make([][]int64, lists)
			b.ReportAllocs()
			b.SetBytes(int64(lists * 20 * 8))
			for b.Loop() {
				copy(work, in)
				if got := mergeNewest(work, 20); len(got) != 20 {
					b.Fatalf("merged %d ids", len(got))
				}
			}
		})
	}
}

// BenchmarkHybridFeedRead reads hybrid feed pages of a seeded social graph
// (300 users, celebrities pulled) on the single Redis and on the Redis
// Cluster, with the post cache off (every page reads its payloads: one MGET
// on a single Redis, single-key MGETs on a cluster) and on. One reader at a
// time, so ns/op is one page's latency.
//
//	go test ./feed -run '^$' -bench HybridFeedRead -benchtime 2000x
func BenchmarkHybridFeedRead(b *testing.B) {
	for _, target := range []string{"single", "cluster"} {
		b.Run("redis="+target, func(b *testing.B) {
			var rdb redis.UniversalClient = stacktest.SingleRedis(b)
			if target == "cluster" {
				rdb = stacktest.RedisCluster(b)
			}
			bk := newBackendsOn(b, rdb)
			cfg := testConfig(StrategyHybrid, bk.prefix)
			cfg.CelebrityThreshold = 12
			svc := newService(b, bk, cfg)
			ctx := context.Background()
			seed := SeedConfig{Preset: PresetSocial, Users: 300, PostsPerUser: 4, Seed: 3, Reset: true}
			if _, err := SeedAndRebuild(ctx, svc, seed, io.Discard); err != nil {
				b.Fatalf("seed: %v", err)
			}
			for _, cache := range []int{-1, 0} {
				name := "post-cache=on"
				if cache < 0 {
					name = "post-cache=off"
				}
				b.Run(name, func(b *testing.B) {
					c := cfg
					c.PostCacheEntries = cache
					reader, err := NewService(c, bk.db, rdb, nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					user := int64(0)
					for b.Loop() {
						user = user%300 + 1
						if _, err := reader.FeedRaw(ctx, user, 0, 20); err != nil {
							b.Fatalf("feed of %d: %v", user, err)
						}
					}
				})
			}
		})
	}
}
