package linkstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/stacktest"
)

// Tests of the click API's guarantees against the real Redis: a create
// never replaces a click (in every migration mode), expires_at is bounded
// and enforced, corrupt values are reported and left unchanged, and URL
// schemes are allow-listed.

// stepTo moves svc from old-only to m one step at a time.
func stepTo(t *testing.T, svc *Service, m Mode) {
	t.Helper()
	for _, step := range Modes()[1 : slices.Index(Modes(), m)+1] {
		if err := svc.SetMode(context.Background(), step); err != nil {
			t.Fatal(err)
		}
	}
}

// writtenStores are the stores mode m writes.
func writtenStores(svc *Service, m Mode) []*Store {
	var out []*Store
	if m.writesOld() {
		out = append(out, svc.old)
	}
	if m.writesNew() {
		out = append(out, svc.new)
	}
	return out
}

// storedBytes returns every written store's value of id ("" when absent).
func storedBytes(t *testing.T, rdb redis.UniversalClient, stores []*Store, id ClickID) []string {
	t.Helper()
	var out []string
	for _, s := range stores {
		v, err := rdb.Get(context.Background(), s.Key(id)).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestHTTPCreateNeverReplacesAClick(t *testing.T) {
	rdb := testRedis(t)
	for _, m := range Modes() {
		t.Run(string(m), func(t *testing.T) {
			svc, _, _ := newMigration(t, rdb, DefaultServiceConfig())
			stepTo(t, svc, m)
			s := newTestAPI(t, svc)
			rec := liveRecords(testSeed, 1)[0]
			if resp := do(t, s, "POST", "/v1/clicks", recordJSON(t, &rec), false); resp.Code != http.StatusCreated {
				t.Fatalf("first POST: %d %s", resp.Code, resp.Body)
			}
			id := rec.ClickID.String()
			if resp := do(t, s, "POST", "/v1/clicks/"+id+"/resolve", "", false); resp.Code != 200 {
				t.Fatalf("resolve: %d %s", resp.Code, resp.Body)
			}
			before := storedBytes(t, rdb, writtenStores(svc, m), rec.ClickID)

			stranger := rec
			stranger.DeepLinkURL = "https://evil.example/steal?click_id=" + id
			resp := do(t, s, "POST", "/v1/clicks", recordJSON(t, &stranger), false)
			if resp.Code != http.StatusConflict {
				t.Fatalf("POST of an existing click_id: %d %s, want 409", resp.Code, resp.Body)
			}
			if p := problemOf(t, resp); p.Field != "click_id" || !strings.Contains(p.Detail, id) {
				t.Fatalf("409 problem %+v, want field click_id and the id in the detail", p)
			}
			if after := storedBytes(t, rdb, writtenStores(svc, m), rec.ClickID); !slices.Equal(before, after) {
				t.Fatalf("the refused POST changed the stored values")
			}
			var got getClickResponse
			resp = do(t, s, "GET", "/v1/clicks/"+id, "", false)
			if resp.Code != 200 || json.Unmarshal(resp.Body.Bytes(), &got) != nil {
				t.Fatalf("GET: %d %s", resp.Code, resp.Body)
			}
			if got.Record.DeepLinkURL != rec.DeepLinkURL || !got.Consumed {
				t.Fatalf("after the refused POST: deep link %q consumed %v, want %q and true", got.Record.DeepLinkURL, got.Consumed, rec.DeepLinkURL)
			}
		})
	}
}

func TestConcurrentCreatesOfOneIDExactlyOneWins(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	for _, m := range Modes() {
		t.Run(string(m), func(t *testing.T) {
			svc, _, _ := newMigration(t, rdb, DefaultServiceConfig())
			stepTo(t, svc, m)
			base := liveRecords(testSeed, 1)[0]
			const n = 8
			errs := make([]error, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rec := base
					rec.DeepLinkURL = fmt.Sprintf("baedal://shop/%d", i)
					<-start
					errs[i] = svc.Create(ctx, &rec)
				}()
			}
			close(start)
			wg.Wait()
			winner := -1
			for i, err := range errs {
				switch {
				case err == nil && winner >= 0:
					t.Fatalf("creates %d and %d both succeeded", winner, i)
				case err == nil:
					winner = i
				case !errors.Is(err, ErrExists):
					t.Fatalf("create %d: %v, want nil or ErrExists", i, err)
				}
			}
			if winner < 0 {
				t.Fatal("no create succeeded")
			}
			want := fmt.Sprintf("baedal://shop/%d", winner)
			for _, s := range writtenStores(svc, m) {
				st, err := s.Get(ctx, base.ClickID)
				if err != nil || st.Record.DeepLinkURL != want {
					t.Fatalf("store %q holds %+v, err %v; want the winner's deep link %s", s.cfg.Namespace, st.Record, err, want)
				}
			}
		})
	}
}

// A step back from new-only leaves clicks in the new store only. A create
// of such an id in dual-write or shadow-read must not land in the old
// store, which is read until the cut-over.
func TestDualWriteCreateOfAnIDOnlyInTheNewStoreIsRefused(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	for _, m := range []Mode{ModeDualWrite, ModeShadowRead} {
		t.Run(string(m), func(t *testing.T) {
			svc, oldStore, newStore := newMigration(t, rdb, DefaultServiceConfig())
			stepTo(t, svc, m)
			owner := liveRecords(testSeed, 1)[0]
			if err := newStore.Create(ctx, &owner); err != nil {
				t.Fatal(err)
			}
			before, _ := rdb.Get(ctx, newStore.Key(owner.ClickID)).Result()
			stranger := owner
			stranger.DeepLinkURL = "https://evil.example/"
			if err := svc.Create(ctx, &stranger); !errors.Is(err, ErrExists) {
				t.Fatalf("create of an id held by the new store: %v, want ErrExists", err)
			}
			if n, _ := rdb.Exists(ctx, oldStore.Key(owner.ClickID)).Result(); n != 0 {
				t.Fatal("the refused create left its record in the old store")
			}
			if after, _ := rdb.Get(ctx, newStore.Key(owner.ClickID)).Result(); after != before {
				t.Fatal("the refused create changed the new store's record")
			}
		})
	}
}

// The undo of a create also removes the record when it was resolved in
// between, but never a record another create wrote.
func TestDeleteIfUnchanged(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	for _, codec := range []string{CodecJSONRaw, CodecProtoS2Dict} {
		t.Run(codec, func(t *testing.T) {
			s := newTestStore(t, rdb, stacktest.Namespace(t)+":", StoreConfig{Codec: codec})
			recs := liveRecords(testSeed, 2)
			value, err := s.create(ctx, &recs[0])
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Resolve(ctx, recs[0].ClickID); err != nil {
				t.Fatal(err)
			}
			if err := s.deleteIfUnchanged(ctx, recs[0].ClickID, value); err != nil {
				t.Fatal(err)
			}
			if n, _ := rdb.Exists(ctx, s.Key(recs[0].ClickID)).Result(); n != 0 {
				t.Fatal("undo kept the create's record after a resolve")
			}
			other := recs[0]
			other.DeepLinkURL = "baedal://other"
			if err := s.Create(ctx, &other); err != nil {
				t.Fatal(err)
			}
			if err := s.deleteIfUnchanged(ctx, recs[0].ClickID, value); err != nil {
				t.Fatal(err)
			}
			if st, err := s.Get(ctx, recs[0].ClickID); err != nil || st.Record.DeepLinkURL != other.DeepLinkURL {
				t.Fatalf("undo removed or changed another create's record: %v", err)
			}
		})
	}
}

func TestHTTPExpiresAtIsBoundedAndSetsTheRedisExpiry(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	cfg := DefaultServiceConfig()
	cfg.MaxLifetime = 2 * time.Hour
	svc, oldStore, _ := newMigration(t, rdb, cfg) // old-only; the new store's TTL is the 1h default
	s := newTestAPI(t, svc)
	now := time.Now()
	for _, tc := range []struct {
		name      string
		expiresIn time.Duration
		status    int
	}{
		{"in the past", -time.Minute, 400},
		{"beyond the max lifetime", 2*time.Hour + time.Minute, 400},
		{"a year ahead", 365 * 24 * time.Hour, 400},
		{"in ten minutes", 10 * time.Minute, 201},
		{"beyond the TTL, within the max lifetime", 90 * time.Minute, 201},
	} {
		rec := liveRecords(testSeed, 1)[0]
		rec.ClickID = NewClickID()
		rec.ExpiresAt = now.Add(tc.expiresIn).UTC().Truncate(time.Millisecond)
		resp := do(t, s, "POST", "/v1/clicks", recordJSON(t, &rec), false)
		if resp.Code != tc.status {
			t.Fatalf("%s: %d %s, want %d", tc.name, resp.Code, resp.Body, tc.status)
		}
		if tc.status == 400 {
			if p := problemOf(t, resp); p.Field != "expires_at" {
				t.Fatalf("%s: problem %+v, want field expires_at", tc.name, p)
			}
			if n, _ := rdb.Exists(ctx, oldStore.Key(rec.ClickID)).Result(); n != 0 {
				t.Fatalf("%s: refused click was stored", tc.name)
			}
			continue
		}
		var created postClickResponse
		if json.Unmarshal(resp.Body.Bytes(), &created) != nil || !created.ExpiresAt.Equal(rec.ExpiresAt) {
			t.Fatalf("%s: echoed %s, want %s", tc.name, resp.Body, rec.ExpiresAt)
		}
		if got, _ := rdb.PExpireTime(ctx, oldStore.Key(rec.ClickID)).Result(); got.Milliseconds() != rec.ExpiresAt.UnixMilli() {
			t.Fatalf("%s: Redis expiry %d ms, want expires_at %d ms", tc.name, got.Milliseconds(), rec.ExpiresAt.UnixMilli())
		}
	}

	// Without expires_at the click lives the default lifetime, min(TTL, max lifetime).
	rec := liveRecords(testSeed, 1)[0]
	rec.ClickID = NewClickID()
	rec.ExpiresAt = time.Time{}
	before := time.Now()
	resp := do(t, s, "POST", "/v1/clicks", strings.Replace(recordJSON(t, &rec), `"expires_at":"0001-01-01T00:00:00Z",`, "", 1), false)
	after := time.Now()
	var created postClickResponse
	if resp.Code != 201 || json.Unmarshal(resp.Body.Bytes(), &created) != nil {
		t.Fatalf("POST without expires_at: %d %s", resp.Code, resp.Body)
	}
	if created.ExpiresAt.Before(before.Add(DefaultTTL).Truncate(time.Millisecond)) || created.ExpiresAt.After(after.Add(DefaultTTL)) {
		t.Fatalf("default expires_at %s, want about now+%s", created.ExpiresAt, DefaultTTL)
	}
	if got, _ := rdb.PExpireTime(ctx, oldStore.Key(rec.ClickID)).Result(); got.Milliseconds() != created.ExpiresAt.UnixMilli() {
		t.Fatalf("Redis expiry %d ms, want the echoed expires_at %d ms", got.Milliseconds(), created.ExpiresAt.UnixMilli())
	}
}

// Once expires_at has passed, GET and resolve answer 410 and change
// nothing, though Redis still holds the key.
func TestHTTPExpiredClickIsGoneBeforeRedisEvictsIt(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	for _, m := range []Mode{ModeOldOnly, ModeNewOnly} {
		t.Run(string(m), func(t *testing.T) {
			svc, _, _ := newMigration(t, rdb, DefaultServiceConfig())
			stepTo(t, svc, m)
			s := newTestAPI(t, svc)
			rec := liveRecords(testSeed, 1)[0]
			rec.ExpiresAt = time.Now().Add(10 * time.Minute).UTC().Truncate(time.Millisecond)
			if resp := do(t, s, "POST", "/v1/clicks", recordJSON(t, &rec), false); resp.Code != 201 {
				t.Fatalf("POST: %d %s", resp.Code, resp.Body)
			}
			store := writtenStores(svc, m)[0]
			before := storedBytes(t, rdb, []*Store{store}, rec.ClickID)
			store.now = func() time.Time { return rec.ExpiresAt } // expires_at has come; Redis has 10 minutes left
			id := rec.ClickID.String()
			for _, req := range [][2]string{{"GET", "/v1/clicks/" + id}, {"POST", "/v1/clicks/" + id + "/resolve"}} {
				resp := do(t, s, req[0], req[1], "", false)
				if resp.Code != http.StatusGone {
					t.Fatalf("%s %s after expires_at: %d %s, want 410", req[0], req[1], resp.Code, resp.Body)
				}
				if p := problemOf(t, resp); !strings.Contains(p.Detail, id) {
					t.Fatalf("410 detail %q does not name the click", p.Detail)
				}
			}
			if after := storedBytes(t, rdb, []*Store{store}, rec.ClickID); !slices.Equal(before, after) || after[0] == "" {
				t.Fatal("GET or resolve of an expired click changed or removed its value")
			}
			if ttl, _ := rdb.PTTL(ctx, store.Key(rec.ClickID)).Result(); ttl <= 0 {
				t.Fatalf("PTTL %s: the test wants the key still in Redis", ttl)
			}
		})
	}
}

// A record stored by Put (the configured TTL) whose expires_at has passed
// is ErrExpired for Get and Resolve, and Resolve leaves it unconsumed.
func TestStoreExpiredRecordBeforeEviction(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	s := newTestStore(t, rdb, stacktest.Namespace(t)+":", StoreConfig{})
	rec := liveRecords(testSeed, 1)[0]
	rec.ExpiresAt = time.Now().Add(-time.Second)
	if err := s.Put(ctx, &rec); err != nil {
		t.Fatal(err)
	}
	before, _ := rdb.Get(ctx, s.Key(rec.ClickID)).Result()
	if _, err := s.Get(ctx, rec.ClickID); !errors.Is(err, ErrExpired) {
		t.Fatalf("Get: %v, want ErrExpired", err)
	}
	if _, err := s.Resolve(ctx, rec.ClickID); !errors.Is(err, ErrExpired) {
		t.Fatalf("Resolve: %v, want ErrExpired", err)
	}
	if after, _ := rdb.Get(ctx, s.Key(rec.ClickID)).Result(); after != before {
		t.Fatal("Resolve of an expired record changed it")
	}
	if err := s.Create(ctx, &rec); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("Create with a past expires_at: %v, want ErrInvalidRecord", err)
	}
}

// corruptions returns values that are not a live record of s under id,
// given good, the value s wrote for it.
func corruptions(t *testing.T, s, other *Store, id ClickID, good []byte) map[string]string {
	t.Helper()
	foreign := liveRecords(testSeed+1, 1)[0]
	foreignValue, err := s.Encode(nil, &foreign)
	if err != nil {
		t.Fatal(err)
	}
	rec := liveRecords(testSeed, 1)[0]
	rec.ClickID = id
	otherFamily, err := other.Encode(nil, &rec)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"garbage":          "\xde\xad\xbe\xef garbage \x00\xff",
		"empty":            "",
		"truncated half":   string(good[:len(good)/2]),
		"truncated by one": string(good[:len(good)-1]),
		"header only":      string(good[:HeaderLen]),
		"empty object":     "{}",
		"other format":     string(otherFamily),
		"foreign record":   string(foreignValue),
	}
}

func TestHTTPCorruptRecordIsReportedAndLeftUnchanged(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	for _, m := range []Mode{ModeOldOnly, ModeNewOnly} {
		t.Run(string(m), func(t *testing.T) {
			svc, oldStore, newStore := newMigration(t, rdb, DefaultServiceConfig())
			stepTo(t, svc, m)
			s := newTestAPI(t, svc)
			store, other := oldStore, newStore
			if m == ModeNewOnly {
				store, other = newStore, oldStore
			}
			rec := liveRecords(testSeed, 1)[0]
			if resp := do(t, s, "POST", "/v1/clicks", recordJSON(t, &rec), false); resp.Code != 201 {
				t.Fatalf("POST: %d %s", resp.Code, resp.Body)
			}
			key := store.Key(rec.ClickID)
			good, err := rdb.Get(ctx, key).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			id := rec.ClickID.String()
			assertCorruptProblem := func(name string) {
				t.Helper()
				for _, req := range [][2]string{{"GET", "/v1/clicks/" + id}, {"POST", "/v1/clicks/" + id + "/resolve"}} {
					resp := do(t, s, req[0], req[1], "", false)
					p := problemOf(t, resp)
					if resp.Code != 500 || p.Title != "corrupt click record" || !strings.Contains(p.Detail, id) {
						t.Fatalf("%s: %s %s: %d %+v, want 500 'corrupt click record' naming %s", name, req[0], req[1], resp.Code, p, id)
					}
					for _, internal := range append([]string{"linkstore", "proto", "s2", "json", "WRONGTYPE"}, CodecNames()...) {
						if strings.Contains(p.Detail, internal) {
							t.Fatalf("%s: problem detail %q shows internals (%q)", name, p.Detail, internal)
						}
					}
				}
			}
			expireAt := time.Now().Add(20 * time.Minute).Truncate(time.Millisecond)
			for name, value := range corruptions(t, store, other, rec.ClickID, good) {
				if err := rdb.Set(ctx, key, value, 0).Err(); err != nil {
					t.Fatal(err)
				}
				rdb.PExpireAt(ctx, key, expireAt)
				assertCorruptProblem(name)
				if got, err := rdb.Get(ctx, key).Result(); err != nil || got != value {
					t.Fatalf("%s: the stored value changed (err %v)", name, err)
				}
				if got, _ := rdb.PExpireTime(ctx, key).Result(); got.Milliseconds() != expireAt.UnixMilli() {
					t.Fatalf("%s: the expiry changed", name)
				}
			}

			// A key of another Redis type.
			rdb.Del(ctx, key)
			if err := rdb.RPush(ctx, key, "a", "b").Err(); err != nil {
				t.Fatal(err)
			}
			assertCorruptProblem("list")
			if got, _ := rdb.LRange(ctx, key, 0, -1).Result(); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("list: the stored list changed to %q", got)
			}
		})
	}
}

func TestHTTPRejectsUnsafeURLSchemes(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	svc, oldStore, _ := newMigration(t, rdb, DefaultServiceConfig())
	s := newTestAPI(t, svc)
	for _, tc := range []struct {
		field, value string
		allowed      []string
	}{
		{"deep_link_url", "javascript:alert(document.cookie)", []string{"https", "http", "baedal"}},
		{"fallback_url", "javascript:alert(1)", []string{"https", "http"}},
		{"tracking_link", "data:text/html,<script>alert(1)</script>", []string{"https", "http"}},
	} {
		rec := liveRecords(testSeed, 1)[0]
		switch tc.field {
		case "deep_link_url":
			rec.DeepLinkURL = tc.value
		case "fallback_url":
			rec.FallbackURL = tc.value
		case "tracking_link":
			rec.TrackingLink = tc.value
		}
		resp := do(t, s, "POST", "/v1/clicks", recordJSON(t, &rec), false)
		if resp.Code != 400 {
			t.Fatalf("%s %q: %d %s, want 400", tc.field, tc.value, resp.Code, resp.Body)
		}
		if p := problemOf(t, resp); p.Field != tc.field || !slices.Equal(p.Allowed, tc.allowed) {
			t.Fatalf("%s %q: problem %+v, want field %s allowing %v", tc.field, tc.value, p, tc.field, tc.allowed)
		}
		if n, _ := rdb.Exists(ctx, oldStore.Key(rec.ClickID)).Result(); n != 0 {
			t.Fatalf("%s %q: the click was stored", tc.field, tc.value)
		}
	}
}

// Resolve checks the value before it marks it, with a compare-and-set (the
// keys layout) or reads and marks it in one script (the bucketed layout):
// of concurrent Resolves exactly one is the first, and none fails because
// another one changed the value between its read and its mark.
func TestConcurrentResolvesExactlyOneIsFirst(t *testing.T) {
	stacktest.ForEachRedis(t, testConcurrentResolvesExactlyOneIsFirst)
}

func testConcurrentResolvesExactlyOneIsFirst(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cfg  StoreConfig
		v7   bool // UUIDv7 ids (the bucketed layout finds them by their time)
	}{
		{CodecJSONRaw, StoreConfig{Codec: CodecJSONRaw}, false},
		{CodecProtoS2Dict, StoreConfig{Codec: CodecProtoS2Dict}, false},
		{"bucketed/uuidv7", StoreConfig{Codec: CodecProtoS2Dict, Layout: LayoutBucketed}, true},
		{"bucketed/uuidv4", StoreConfig{Codec: CodecProtoS2Dict, Layout: LayoutBucketed}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t, rdb, stacktest.Namespace(t)+":", tc.cfg)
			for round, rec := range liveRecords(testSeed, 5) {
				if tc.v7 {
					rec.ClickID = NewClickID()
				}
				if err := s.Create(ctx, &rec); err != nil {
					t.Fatal(err)
				}
				const n = 8
				already := make([]bool, n)
				errs := make([]error, n)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						res, err := s.Resolve(ctx, rec.ClickID)
						already[i], errs[i] = res.AlreadyConsumed, err
					}()
				}
				close(start)
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if first := slices.Index(already, false); first < 0 || slices.Index(already[first+1:], false) >= 0 {
					t.Fatalf("round %d: already_consumed %v, want exactly one false", round, already)
				}
			}
		})
	}
}
