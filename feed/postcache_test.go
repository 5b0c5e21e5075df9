package feed

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestPostCacheBound adds many more payloads than the cache holds, looking
// one "hot" id up after every add, and checks the bound (never more than
// 2·max entries), that the hot id survives every rotation, that a lookup
// returns what was added under that id, and that old entries go.
func TestPostCacheBound(t *testing.T) {
	const max = 50
	c := newPostCache(max)
	payload := func(id int64) json.RawMessage { return json.RawMessage("p" + strconv.FormatInt(id, 10)) }
	hot := []int64{-1}
	c.add(hot, []json.RawMessage{payload(-1)})
	got := make([]json.RawMessage, 1)
	for id := int64(1); id <= 20*max; id++ {
		c.add([]int64{id}, []json.RawMessage{payload(id)})
		if n := c.len(); n > 2*max {
			t.Fatalf("after %d adds the cache holds %d entries, more than 2·%d", id, n, max)
		}
		got[0] = nil
		if c.lookup(hot, got) != 1 || string(got[0]) != "p-1" {
			t.Fatalf("after %d adds the hot entry is %q", id, got[0])
		}
	}
	// The newest entries are there with their own payloads, the first ones
	// are gone.
	ids := []int64{20 * max, 20*max - 1, 1, 2}
	out := make([]json.RawMessage, len(ids))
	if n := c.lookup(ids, out); n != 2 || string(out[0]) != "p1000" || string(out[1]) != "p999" || out[2] != nil || out[3] != nil {
		t.Fatalf("lookup %v: %d found, %q", ids, n, out)
	}
	// nil payloads (posts found nowhere) are not cached.
	c.add([]int64{5000}, []json.RawMessage{nil})
	if c.lookup([]int64{5000}, out[:1]) != 0 {
		t.Error("a nil payload was cached")
	}
	c.reset()
	if n := c.len(); n != 0 {
		t.Errorf("after reset the cache holds %d entries", n)
	}
}

// TestPostCacheDisabled: a cache of 0 or fewer entries is nil, finds nothing
// and keeps nothing.
func TestPostCacheDisabled(t *testing.T) {
	for _, max := range []int{0, -1} {
		c := newPostCache(max)
		if c != nil {
			t.Fatalf("newPostCache(%d) = %v, want nil", max, c)
		}
		c.add([]int64{1}, []json.RawMessage{json.RawMessage("x")})
		out := make([]json.RawMessage, 1)
		if n := c.lookup([]int64{1}, out); n != 0 || out[0] != nil || c.len() != 0 {
			t.Errorf("disabled cache found %d: %q", n, out[0])
		}
		c.reset()
	}
}

// TestFeedServedFromPostCache reads a feed once, then deletes its posts from
// both Redis and PostgreSQL: a service with a cache still serves the same
// page (so it came from the cache), its hit counter counts them, and a service
// without one serves an empty page.
func TestFeedServedFromPostCache(t *testing.T) {
	for _, st := range Strategies() {
		t.Run(string(st), func(t *testing.T) {
			b := newBackends(t)
			cfg := testConfig(st, b.prefix)
			cfg.CelebrityThreshold = 2
			svc := newService(t, b, cfg)
			reg := prometheus.NewRegistry()
			cached, err := NewService(cfg, b.db, b.rdb, nil, reg)
			if err != nil {
				t.Fatal(err)
			}
			startWorkers(t, svc)
			ctx := context.Background()
			celeb, normal, r1, r2 := mustUser(t, svc, "celeb"), mustUser(t, svc, "normal"), mustUser(t, svc, "r1"), mustUser(t, svc, "r2")
			mustFollow(t, svc, r1, celeb)
			mustFollow(t, svc, r2, celeb) // pulled under hybrid
			mustFollow(t, svc, r1, normal)
			for i := range 4 {
				mustPost(t, svc, normal, fmt.Sprintf("n%d", i))
				mustPost(t, svc, celeb, fmt.Sprintf("c%d", i))
			}
			waitSettled(t, svc)
			want, err := cached.Feed(ctx, r1, 0, 10)
			if err != nil || len(want.Posts) != 8 {
				t.Fatalf("feed: %d posts, %v", len(want.Posts), err)
			}
			counts := func() (hits, misses float64) {
				t.Helper()
				lookups := gatherCounter(t, reg, "baedal_feed_post_cache_lookups_total")
				return lookups["hit"], lookups["miss"]
			}
			if hits, misses := counts(); hits != 0 || misses != 8 {
				t.Fatalf("first read: %v hits, %v misses, want 0 and 8", hits, misses)
			}
			for _, p := range want.Posts {
				if err := b.rdb.Del(ctx, svc.keys.post(p.ID)).Err(); err != nil {
					t.Fatal(err)
				}
				if _, err := b.db.Exec(ctx, `DELETE FROM feed_posts WHERE id = $1`, p.ID); err != nil {
					t.Fatal(err)
				}
			}
			got, err := cached.Feed(ctx, r1, 0, 10)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("from the cache: %v\n got %+v\nwant %+v", err, got, want)
			}
			if hits, misses := counts(); hits != 8 || misses != 8 {
				t.Fatalf("second read: %v hits, %v misses in all, want 8 and 8", hits, misses)
			}
			nocfg := cfg
			nocfg.PostCacheEntries = -1
			nocache, err := NewService(nocfg, b.db, b.rdb, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := nocache.Feed(ctx, r1, 0, 10); err != nil || len(got.Posts) != 0 {
				t.Fatalf("without a cache: %d posts (%v), want none: they are gone from Redis and PostgreSQL", len(got.Posts), err)
			}
			if err := cached.DeleteRedisState(ctx); err != nil {
				t.Fatal(err)
			}
			if n := cached.cache.len(); n != 0 {
				t.Errorf("DeleteRedisState left %d cached payloads", n)
			}
		})
	}
}

// gatherCounter returns the values of a counter vector with one label in reg,
// by label value.
func gatherCounter(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}
