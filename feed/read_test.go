package feed

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/redis/go-redis/v9"
	"reflect"
	"slices"
	"testing"
)

// TestFeedPayloadFallbacks breaks post payloads in Redis (deleted, another
// post's payload under the key, garbage) and checks every strategy serves
// the same feed from PostgreSQL, and that the HTTP bodies, spliced from the
// payloads, are what encoding/json makes of the decoded page. The service
// under test has no post cache, so every read meets the broken payloads; a
// second service with a cache, started after the breakage, must serve the
// same feed and cache only the right payloads.
func TestFeedPayloadFallbacks(t *testing.T) {
	stacktest.ForEachRedis(t, testFeedPayloadFallbacks)
}

func testFeedPayloadFallbacks(t *testing.T, rdb redis.UniversalClient) {
	for _, st := range Strategies() {
		t.Run(string(st), func(t *testing.T) {
			b := newBackendsOn(t, rdb)
			cfg := testConfig(st, b.prefix)
			cfg.CelebrityThreshold = 2
			cfg.PostCacheEntries = -1
			svc := newService(t, b, cfg)
			startWorkers(t, svc)
			s := newTestAPI(t, svc)
			ctx := context.Background()
			celeb, normal, r1, r2 := mustUser(t, svc, "celeb"), mustUser(t, svc, "normal"), mustUser(t, svc, "r1"), mustUser(t, svc, "r2")
			mustFollow(t, svc, r1, celeb)
			mustFollow(t, svc, r2, celeb) // pulled under hybrid
			mustFollow(t, svc, r1, normal)
			for i := range 6 {
				mustPost(t, svc, normal, fmt.Sprintf("n%d <&> \"quoted\" \\ %d", i, i))
				mustPost(t, svc, celeb, fmt.Sprintf("c%d", i))
			}
			waitSettled(t, svc)
			want, err := svc.Feed(ctx, r1, 0, 10)
			if err != nil || len(want.Posts) != 10 {
				t.Fatalf("feed: %d posts, %v", len(want.Posts), err)
			}
			ids := make([]int64, len(want.Posts))
			for i, p := range want.Posts {
				ids[i] = p.ID
			}
			other, err := b.rdb.Get(ctx, svc.keys.post(ids[3])).Result()
			if err != nil {
				t.Fatal(err)
			}
			pipe := b.rdb.Pipeline()
			pipe.Del(ctx, svc.keys.post(ids[1]))
			pipe.Set(ctx, svc.keys.post(ids[2]), other, 0) // post 3's payload under post 2's key
			pipe.Set(ctx, svc.keys.post(ids[4]), "not json", 0)
			pipe.Set(ctx, svc.keys.post(ids[5]), other[:len(other)-1]+`,"x":1}`, 0) // post 3 again, and an extra field
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := svc.Feed(ctx, r1, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("with broken payloads:\n got %+v\nwant %+v", got, want)
			}
			cachedCfg := cfg
			cachedCfg.PostCacheEntries = 100
			cached, err := NewService(cachedCfg, b.db, b.rdb, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := cached.Feed(ctx, r1, 0, 10); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("cached service with broken payloads: %v\n got %+v\nwant %+v", err, got, want)
			}
			inCache := make([]json.RawMessage, len(ids))
			if n := cached.cache.lookup(ids, inCache); n != len(ids) {
				t.Fatalf("%d of %d payloads cached after one read", n, len(ids))
			}
			for i, p := range want.Posts {
				enc, _ := json.Marshal(p)
				if string(inCache[i]) != string(enc) {
					t.Errorf("cached payload of post %d (broken in Redis: %v):\n got %s\nwant %s", ids[i], i == 2 || i == 4 || i == 5, inCache[i], enc)
				}
			}

			// HTTP: the spliced bodies equal the encoded decoded page.
			for _, limit := range []int{1, 4, 10, 20} {
				page, err := svc.Feed(ctx, r1, 0, limit)
				if err != nil {
					t.Fatal(err)
				}
				if page.Posts == nil {
					page.Posts = []Post{}
				}
				enc, _ := json.Marshal(page)
				rec := do(s, "GET", fmt.Sprintf("/v1/users/%d/feed?limit=%d", r1, limit), "")
				if rec.Code != 200 || rec.Body.String() != string(enc)+"\n" || rec.Header().Get("Content-Type") != "application/json" {
					t.Errorf("limit %d: %d %q\n got %s\nwant %s", limit, rec.Code, rec.Header().Get("Content-Type"), rec.Body, enc)
				}
				if limit == 4 {
					rec := do(s, "GET", fmt.Sprintf("/v1/users/%d/feed?limit=4&before=%d", r1, page.NextBefore), "")
					next, _ := svc.Feed(ctx, r1, page.NextBefore, 4)
					enc, _ := json.Marshal(next)
					if rec.Code != 200 || rec.Body.String() != string(enc)+"\n" || len(next.Posts) != 4 {
						t.Errorf("second page: %d\n got %s\nwant %s", rec.Code, rec.Body, enc)
					}
				}
			}
			page, err := svc.Feed(ctx, r1, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			items := make([]CompatFeedItem, len(page.Posts))
			for i, p := range page.Posts {
				items[i] = CompatFeedItem{Username: p.Username, ProfilePic: p.ProfilePic, Text: p.Text, Timestamp: p.CreatedAt}
			}
			enc, _ := json.Marshal(items)
			if rec := do(s, "GET", fmt.Sprintf("/api/v1/feeds?user-id=%d", r1), ""); rec.Code != 200 || rec.Body.String() != string(enc)+"\n" {
				t.Errorf("compat feed: %d\n got %s\nwant %s", rec.Code, rec.Body, enc)
			}

			// A post gone from both Redis and PostgreSQL is left out.
			if _, err := b.db.Exec(ctx, `DELETE FROM feed_posts WHERE id = $1`, ids[1]); err != nil {
				t.Fatal(err)
			}
			got, err = svc.Feed(ctx, r1, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			wantIDs := slices.Delete(slices.Clone(ids), 1, 2)
			var gotIDs []int64
			for _, p := range got.Posts {
				gotIDs = append(gotIDs, p.ID)
			}
			if !slices.Equal(gotIDs, wantIDs) || got.NextBefore != ids[9] {
				t.Errorf("after deleting post %d: ids %v next %d, want %v next %d", ids[1], gotIDs, got.NextBefore, wantIDs, ids[9])
			}
		})
	}
}
