package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/stacktest"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

func newTestLog(t testing.TB) *Log {
	t.Helper()
	return newTestLogOn(t, stacktest.SingleRedis(t))
}

// newTestLogOn is a log with keys of its own on rdb (a single Redis or a
// cluster).
func newTestLogOn(t testing.TB, rdb redis.UniversalClient) *Log {
	t.Helper()
	cfg := Defaults()
	cfg.Prefix = stacktest.Namespace(t) + ":"
	cfg.Partitions = 3
	l, err := New(cfg, rdb, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stacktest.DeleteKeys(context.Background(), rdb, cfg.Prefix+"*", "{"+cfg.Prefix+"*") })
	return l
}

func TestAppendPartitionsByShopInOrder(t *testing.T) {
	l := newTestLog(t)
	ctx := context.Background()
	var events []catalog.Event
	for v := int64(2); v <= 6; v++ {
		for shop := int64(1); shop <= 4; shop++ {
			m := int(10 + v)
			events = append(events, catalog.ShopUpsertEvent(shop, v, &catalog.ShopFields{DeliveryMinutes: &m}))
		}
	}
	ids, err := l.Append(ctx, events)
	if err != nil || len(ids) != len(events) {
		t.Fatalf("append: %d ids, %v", len(ids), err)
	}
	for p := range 3 {
		c := l.Consumer("g", p)
		if err := c.EnsureGroup(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := c.ReadNew(ctx, 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		last := map[int64]int64{}
		for _, e := range got {
			if e.Err != nil {
				t.Fatal(e.Err)
			}
			shop := e.Event.AggregateID()
			if int(shop%3) != p {
				t.Errorf("shop %d in partition %d", shop, p)
			}
			if e.Event.Version <= last[shop] {
				t.Errorf("shop %d: version %d after %d", shop, e.Event.Version, last[shop])
			}
			last[shop] = e.Event.Version
			if e.AppendedAt.IsZero() {
				t.Errorf("entry %s has no append time", e.ID)
			}
		}
		for shop, v := range last {
			if v != 6 {
				t.Errorf("shop %d: last version %d, want 6", shop, v)
			}
		}
	}
}

func TestPendingIsRereadWithDeliveryCountsUntilAcked(t *testing.T) {
	stacktest.ForEachRedis(t, testPendingIsRereadWithDeliveryCountsUntilAcked)
}

func testPendingIsRereadWithDeliveryCountsUntilAcked(t *testing.T, rdb redis.UniversalClient) {
	l := newTestLogOn(t, rdb)
	ctx := context.Background()
	m := 30
	if _, err := l.Append(ctx, []catalog.Event{catalog.ShopUpsertEvent(3, 2, &catalog.ShopFields{DeliveryMinutes: &m})}); err != nil {
		t.Fatal(err)
	}
	c := l.Consumer("g", 0)
	if err := c.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	first, err := c.ReadNew(ctx, 10, 0)
	if err != nil || len(first) != 1 || first[0].Deliveries != 1 {
		t.Fatalf("first read: %+v %v", first, err)
	}
	// A restarted worker under the same consumer name sees it again.
	again, err := l.Consumer("g", 0).ReadPending(ctx, "0", 10)
	if err != nil || len(again) != 1 || again[0].ID != first[0].ID || again[0].Deliveries != 2 {
		t.Fatalf("re-read: %+v %v", again, err)
	}
	// Read after its id (a cursor through the pending list), it is not there.
	if after, err := c.ReadPending(ctx, first[0].ID, 10); err != nil || len(after) != 0 {
		t.Fatalf("pending after %s: %+v %v, want none", first[0].ID, after, err)
	}
	if lag, pending, err := c.Lag(ctx); err != nil || lag != 0 || pending != 1 {
		t.Fatalf("lag %d pending %d err %v, want 0 1", lag, pending, err)
	}
	if err := c.DeadLetter(ctx, []DeadLetter{{Entry: again[0], Reason: "test reason"}}); err != nil {
		t.Fatal(err)
	}
	if rest, err := c.ReadPending(ctx, "0", 10); err != nil || len(rest) != 0 {
		t.Fatalf("pending after dead-letter: %+v %v", rest, err)
	}
	letters, err := l.DeadLetters(ctx, 10)
	if err != nil || len(letters) != 1 || letters[0].Reason != "test reason" || letters[0].Attempts != 2 || letters[0].EntryID != first[0].ID {
		t.Fatalf("dead letters: %+v %v", letters, err)
	}
}

func TestClaimTakesOnlyOtherConsumersEntries(t *testing.T) {
	stacktest.ForEachRedis(t, testClaimTakesOnlyOtherConsumersEntries)
}

// An entry a consumer holds pending (an indexer waiting for a flush before
// it acknowledges) is never claimed by that consumer itself, however long
// it waits; another consumer name's idle entries are.
func testClaimTakesOnlyOtherConsumersEntries(t *testing.T, rdb redis.UniversalClient) {
	l := newTestLogOn(t, rdb)
	ctx := context.Background()
	var events []catalog.Event
	for v := int64(2); v <= 4; v++ {
		m := int(30 + v)
		events = append(events, catalog.ShopUpsertEvent(3, v, &catalog.ShopFields{DeliveryMinutes: &m}))
	}
	if _, err := l.Append(ctx, events); err != nil {
		t.Fatal(err)
	}
	c := l.Consumer("g", 0)
	if err := c.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	old := &Consumer{log: l, group: "g", partition: 0, stream: l.StreamKey(0), name: "scaled-in-worker"}
	theirs, err := old.ReadNew(ctx, 2, 0)
	if err != nil || len(theirs) != 2 {
		t.Fatalf("the other consumer's read: %+v %v", theirs, err)
	}
	mine, err := c.ReadNew(ctx, 1, 0)
	if err != nil || len(mine) != 1 {
		t.Fatalf("own read: %+v %v", mine, err)
	}
	time.Sleep(50 * time.Millisecond)
	claimed, err := c.Claim(ctx, 10*time.Millisecond, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 2 || claimed[0].ID != theirs[0].ID || claimed[1].ID != theirs[1].ID || claimed[0].Deliveries != 2 {
		t.Fatalf("claimed %+v, want the other consumer's two entries, delivered twice", claimed)
	}
	pending, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: c.Stream(), Group: "g", Start: "-", End: "+", Count: 10}).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pending {
		if p.Consumer != c.Name() {
			t.Errorf("entry %s still pending at %s", p.ID, p.Consumer)
		}
		if p.ID == mine[0].ID && p.RetryCount != 1 {
			t.Errorf("own entry %s delivered %d times, want 1: Claim must not take it", p.ID, p.RetryCount)
		}
	}
	if again, err := c.Claim(ctx, 10*time.Millisecond, 10); err != nil || len(again) != 0 {
		t.Errorf("second claim: %+v %v, want nothing (every pending entry is its own)", again, err)
	}
}

func newTestServer(t testing.TB, l *Log) *api.Server {
	cfg := api.Defaults()
	cfg.MaxBodyBytes = 64 << 10
	s := api.New(cfg, nil, prometheus.NewRegistry())
	RegisterRoutes(s, l)
	return s
}

func post(s *api.Server, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/events", strings.NewReader(body)))
	return rec
}

func totalLength(t testing.TB, l *Log) int64 {
	var n int64
	for p := range l.cfg.Partitions {
		k, err := l.Length(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	return n
}

func TestPostEvents(t *testing.T) {
	l := newTestLog(t)
	s := newTestServer(t, l)
	good := `{"type":"shop","id":5,"version":2,"op":"upsert","fields":{"delivery_minutes":35}}`
	rec := post(s, good+"\n"+`{"type":"shop","id":6,"version":9,"op":"delete"}`)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var resp AppendResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || resp.Accepted != 2 || len(resp.IDs) != 2 {
		t.Fatalf("response %s: %v", rec.Body, err)
	}
	if n := totalLength(t, l); n != 2 {
		t.Fatalf("%d entries in the log, want 2", n)
	}

	cases := []struct {
		name, body, field string
		allowed           string
	}{
		{"bad enum in the second event", "[" + good + `,{"type":"shoop","id":1,"version":1,"op":"delete"}]`, "[1].type", "shop"},
		{"bad op", `{"type":"shop","id":1,"version":1,"op":"merge"}`, "[0].op", "upsert"},
		{"malformed", `{"type":`, "[0]", ""},
		{"empty", "  ", "body", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := post(s, tc.body)
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Fatalf("status %d %s: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
			var p api.Problem
			json.Unmarshal(rec.Body.Bytes(), &p)
			if p.Field != tc.field {
				t.Errorf("problem field %q, want %q (%s)", p.Field, tc.field, rec.Body)
			}
			if tc.allowed != "" && !strings.Contains(strings.Join(p.Allowed, ","), tc.allowed) {
				t.Errorf("problem allowed %v lacks %q", p.Allowed, tc.allowed)
			}
		})
	}
	if n := totalLength(t, l); n != 2 {
		t.Fatalf("%d entries in the log after rejected requests, want still 2", n)
	}
	big := post(s, "["+strings.Repeat(good+",", 1000)+good+"]")
	if big.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: status %d", big.Code)
	}
}

// FuzzPostEvents: whatever the body, the handler answers 202 with one id per
// event and appends exactly those, or a 4xx problem and appends nothing.
//
//	go test ./eventlog -run '^$' -fuzz FuzzPostEvents -fuzztime 30s
func FuzzPostEvents(f *testing.F) {
	for _, seed := range []string{
		`{"type":"shop","id":5,"version":2,"op":"upsert","fields":{"delivery_minutes":35}}`,
		`[{"type":"menu","id":5001,"shop_id":5,"version":3,"op":"upsert","fields":{"price":12000}}]`,
		`{"type":"shop","id":6,"version":9,"op":"delete"}` + "\n\n" + `{"type":"shop","id":7,"version":1,"op":"delete"}`,
		`[{"type":"shop","id":-1,"version":0,"op":"upsert"}]`, `[`, `{}`, `null`, "\x00", `[{"type":"shop","id":1e400}]`,
	} {
		f.Add([]byte(seed))
	}
	l := newTestLog(f)
	s := newTestServer(f, l)
	f.Fuzz(func(t *testing.T, body []byte) {
		before := totalLength(t, l)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/events", bytes.NewReader(body)))
		after := totalLength(t, l)
		switch {
		case rec.Code == http.StatusAccepted:
			var resp AppendResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || resp.Accepted != len(resp.IDs) || int64(resp.Accepted) != after-before {
				t.Fatalf("202 body %s (%v) but %d entries appended", rec.Body, err, after-before)
			}
		case rec.Code >= 400 && rec.Code < 500:
			var p api.Problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Status != rec.Code || p.Field == "" && rec.Code == http.StatusBadRequest {
				t.Fatalf("status %d with body %s (%v)", rec.Code, rec.Body, err)
			}
			if after != before {
				t.Fatalf("rejected with %d but %d entries appended", rec.Code, after-before)
			}
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}

// TestBacklogAfterTrim: the backlog counts the entries after the group's
// last delivered one, even when entries were trimmed before the group read
// them (Redis 7.0's XINFO GROUPS lag keeps counting those, for good), and the
// age of the oldest undelivered entry is its time in the stream; both are 0
// once everything is read.
func TestBacklogAfterTrim(t *testing.T) {
	l := newTestLog(t)
	ctx := context.Background()
	var events []catalog.Event
	for v := int64(1); v <= 100; v++ {
		m := int(v)
		events = append(events, catalog.ShopUpsertEvent(3, v, &catalog.ShopFields{DeliveryMinutes: &m}))
	}
	if _, err := l.Append(ctx, events); err != nil {
		t.Fatal(err)
	}
	c := l.Consumer("g", l.Partition(3))
	if err := c.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ReadNew(ctx, 10, 0); err != nil || len(got) != 10 {
		t.Fatalf("first read: %d entries, %v", len(got), err)
	}
	time.Sleep(30 * time.Millisecond)
	b, err := c.Backlog(ctx)
	if err != nil || b.Entries != 90 || b.Pending != 10 || b.OldestUndelivered < 30*time.Millisecond || b.OldestUndelivered > time.Minute {
		t.Fatalf("before the trim: %+v, %v; want 90 entries, 10 pending, an age of 30 ms..1 min", b, err)
	}
	// Trim to the newest 50: entries 11..50 go unread.
	if err := l.rdb.XTrimMaxLen(ctx, c.stream, 50).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ReadNew(ctx, 10, 0); err != nil || len(got) != 10 {
		t.Fatalf("read after the trim: %d entries, %v", len(got), err)
	}
	// 40 are undelivered; Redis 7.0 says 80 (it still counts the trimmed
	// ones, and 40 once everything is read).
	if b, err = c.Backlog(ctx); err != nil || b.Entries != 40 || b.OldestUndelivered <= 0 {
		t.Fatalf("after the trim: %+v, %v; want 40 entries, an age > 0", b, err)
	}
	if got, err := c.ReadNew(ctx, 100, 0); err != nil || len(got) != 40 {
		t.Fatalf("last read: %d entries, %v", len(got), err)
	}
	if b, err = c.Backlog(ctx); err != nil || b.Entries != 0 || b.OldestUndelivered != 0 {
		t.Fatalf("everything read: %+v, %v; want no entries, age 0", b, err)
	}
	// Above backlogCounted the count is Redis' (150 undelivered; Redis says
	// 190), bounded by the stream's 200 entries.
	if _, err := l.Append(ctx, append(events, events[:50]...)); err != nil {
		t.Fatal(err)
	}
	if b, err = c.Backlog(ctx); err != nil || b.Entries < 150 || b.Entries > 200 {
		t.Fatalf("150 undelivered: %+v, %v; want 150..200 entries", b, err)
	}
}

func adminDo(s *api.Server, method, target string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

const testAdminToken = "eventlog-test-admin-token"

// What the API can know without a lookup is refused at once; events for a
// shop that does not exist are accepted (the log is asynchronous), end in
// the dead-letter stream, and are listed, counted by reason, replayed or
// dropped through the admin routes.
func TestDeadLettersAreVisibleAndReplayable(t *testing.T) {
	stacktest.ForEachRedis(t, testDeadLettersAreVisibleAndReplayable)
}

func testDeadLettersAreVisibleAndReplayable(t *testing.T, rdb redis.UniversalClient) {
	l := newTestLogOn(t, rdb)
	ctx := context.Background()
	cfg := api.Defaults()
	cfg.AdminToken = testAdminToken
	reg := prometheus.NewRegistry()
	l2, err := New(l.cfg, l.rdb, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	s := api.New(cfg, nil, reg)
	RegisterRoutes(s, l2)

	for body, field := range map[string]string{
		`{"type":"shop","id":9223372036854775807,"version":1,"op":"delete"}`:                                                                         "[0].id",
		`{"type":"menu","id":5,"shop_id":9223372036854775807,"version":1,"op":"delete"}`:                                                             "[0].shop_id",
		`{"type":"menu","id":7001,"shop_id":7,"version":1,"op":"delete"}` + "\n" + `{"type":"menu","id":7001,"shop_id":8,"version":1,"op":"delete"}`: "[1].shop_id",
	} {
		rec := post(s, body)
		var p api.Problem
		if rec.Code != 400 || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Field != field {
			t.Errorf("%s: %d %s, want a 400 naming %s", body, rec.Code, rec.Body, field)
		}
	}

	// A menu event for shop 4242, which does not exist: accepted.
	menuEvent := `{"type":"menu","id":4242001,"shop_id":4242,"version":3,"op":"upsert","fields":{"price":9000}}`
	if rec := post(s, menuEvent); rec.Code != http.StatusAccepted {
		t.Fatalf("a menu of an unknown shop: %d %s, want 202 (the API cannot know)", rec.Code, rec.Body)
	}
	// The indexer gives up on it the way it does (consumer + reason).
	c := l2.Consumer("idx", l2.Partition(4242))
	if err := c.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := c.ReadNew(ctx, 10, 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("read: %v %v", got, err)
	}
	reason := "cannot apply to the menus document: " + catalog.ErrShopNotFound.Error() + ": menu 4242001 event version 3 for shop 4242"
	if err := c.DeadLetter(ctx, []DeadLetter{{Entry: got[0], Reason: reason}}); err != nil {
		t.Fatal(err)
	}
	var m dto.Metric
	if err := l2.dead.WithLabelValues(ReasonShopNotFound).Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetCounter().GetValue(); n != 1 {
		t.Errorf("dead-letter metric {reason=shop_not_found} = %v, want 1", n)
	}

	list := func() deadLetterPage {
		t.Helper()
		rec := adminDo(s, "GET", "/v1/admin/dead-letters?limit=10")
		var page deadLetterPage
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &page) != nil {
			t.Fatalf("list: %d %s", rec.Code, rec.Body)
		}
		return page
	}
	page := list()
	if page.Total != 1 || len(page.DeadLetters) != 1 {
		t.Fatalf("list: %+v, want the one dead letter", page)
	}
	dl := page.DeadLetters[0]
	if dl.Kind != ReasonShopNotFound || dl.Reason != reason || dl.EntryID != got[0].ID || !strings.Contains(string(dl.Event), `"shop_id":4242`) {
		t.Errorf("dead letter %+v", dl)
	}
	for target, status := range map[string]int{
		"/v1/admin/dead-letters?limit=0":    400,
		"/v1/admin/dead-letters?limit=abc":  400,
		"/v1/admin/dead-letters?after=zzz":  400,
		"/v1/admin/dead-letters?cursor=zzz": 400,
	} {
		if rec := adminDo(s, "GET", target); rec.Code != status {
			t.Errorf("GET %s: %d, want %d", target, rec.Code, status)
		}
	}
	if rec := httptest.NewRecorder(); true {
		s.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/admin/dead-letters", nil))
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("list without the token: %d, want 401", rec.Code)
		}
	}

	// Replay: back in its partition, gone from the dead letters.
	before, _ := l2.Length(ctx, l2.Partition(4242))
	rec := adminDo(s, "POST", "/v1/admin/dead-letters/"+dl.ID+"/replay")
	if rec.Code != 200 {
		t.Fatalf("replay: %d %s", rec.Code, rec.Body)
	}
	if after, _ := l2.Length(ctx, l2.Partition(4242)); after != before+1 {
		t.Errorf("partition length %d after replay, want %d", after, before+1)
	}
	again, err := c.ReadNew(ctx, 10, 0)
	if err != nil || len(again) != 1 || string(again[0].Raw) != string(got[0].Raw) {
		t.Fatalf("the replayed event is not delivered again: %+v %v", again, err)
	}
	if page := list(); page.Total != 0 {
		t.Errorf("dead letters after replay: %+v", page)
	}
	for _, tc := range []struct {
		method, target string
		status         int
	}{
		{"POST", "/v1/admin/dead-letters/" + dl.ID + "/replay", 404},
		{"DELETE", "/v1/admin/dead-letters/" + dl.ID, 404},
		{"DELETE", "/v1/admin/dead-letters/abc", 400},
		{"POST", "/v1/admin/dead-letters/1-01/replay", 400},
	} {
		if rec := adminDo(s, tc.method, tc.target); rec.Code != tc.status {
			t.Errorf("%s %s: %d, want %d: %s", tc.method, tc.target, rec.Code, tc.status, rec.Body)
		}
	}

	// Drop: dead-letter it again, then delete it.
	if err := c.DeadLetter(ctx, []DeadLetter{{Entry: again[0], Reason: reason}}); err != nil {
		t.Fatal(err)
	}
	id := list().DeadLetters[0].ID
	if rec := adminDo(s, "DELETE", "/v1/admin/dead-letters/"+id); rec.Code != http.StatusNoContent {
		t.Fatalf("drop: %d %s", rec.Code, rec.Body)
	}
	if page := list(); page.Total != 0 {
		t.Errorf("dead letters after drop: %+v", page)
	}
}

func TestReasonKind(t *testing.T) {
	for reason, want := range map[string]string{
		"invalid event: field \"id\": got 0":                                                              ReasonInvalidEvent,
		"delivered 9 times, more than max-attempts 8":                                                     ReasonMaxAttempts,
		"cannot apply to the shop document: " + catalog.ErrIncompleteShop.Error() + ": shop 5 lacks name": ReasonIncompleteShop,
		"cannot apply to the menus document: " + catalog.ErrIncompleteMenu.Error():                        ReasonIncompleteMenu,
		"cannot apply to the menus document: " + catalog.ErrShopNotFound.Error():                          ReasonShopNotFound,
		"OpenSearch refused the shop document version 3: HTTP 400 mapper_parsing_exception":               ReasonOpenSearchRefused,
		"test reason": ReasonOther,
	} {
		if got := ReasonKind(reason); got != want {
			t.Errorf("ReasonKind(%q) = %s, want %s", reason, got, want)
		}
	}
}

// TestKeysOfOneTransactionShareASlot checks the key layout a cluster needs:
// a partition stream and its dead-letter stream (DeadLetter's and
// ReplayDeadLetter's MULTI/EXEC) in one slot, and the partitions spread
// over more than one slot.
func TestKeysOfOneTransactionShareASlot(t *testing.T) {
	cc := stacktest.RedisCluster(t)
	l := newTestLogOn(t, cc)
	slots := map[int64]bool{}
	for p := range l.cfg.Partitions {
		stacktest.SameSlot(t, cc, l.StreamKey(p), l.DeadLetterKey(p))
		slot, err := cc.ClusterKeySlot(context.Background(), l.StreamKey(p)).Result()
		if err != nil {
			t.Fatal(err)
		}
		slots[slot] = true
	}
	if len(slots) < 2 {
		t.Errorf("the %d partitions share %d slot(s): a cluster could not spread them", l.cfg.Partitions, len(slots))
	}
}

// TestMigrateLegacyKeys moves an event log written before hash tags (one
// partition stream with a consumer group, one global dead-letter stream) to
// today's keys, keeping entries, group and dead-letter ids.
func TestMigrateLegacyKeys(t *testing.T) {
	l := newTestLog(t)
	ctx := context.Background()
	rdb := l.rdb
	legacy := l.legacyStreamKey(1)
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: legacy, ID: "5-1", Values: []any{fieldEvent, "{}", fieldAppended, "1"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XGroupCreate(ctx, legacy, "g", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: l.legacyDeadLetterKey(), ID: "7-0", Values: []any{fieldEvent, "x", "stream", legacy, "entry_id", "5-1", "reason", "r"}}).Err(); err != nil {
		t.Fatal(err)
	}
	moved, err := l.MigrateLegacyKeys(ctx)
	if err != nil || moved != 2 {
		t.Fatalf("MigrateLegacyKeys = %d, %v; want 2 moved (a stream, a dead letter)", moved, err)
	}
	if n, _ := rdb.Exists(ctx, legacy, l.legacyDeadLetterKey()).Result(); n != 0 {
		t.Errorf("%d legacy keys are left after the migration", n)
	}
	groups, err := rdb.XInfoGroups(ctx, l.StreamKey(1)).Result()
	if err != nil || len(groups) != 1 || groups[0].Name != "g" {
		t.Errorf("groups of %s after the migration = %+v, %v; want the group g", l.StreamKey(1), groups, err)
	}
	letters, err := l.DeadLetters(ctx, 10)
	if err != nil || len(letters) != 1 || letters[0].ID != "7-0" || letters[0].EntryID != "5-1" {
		t.Errorf("dead letters after the migration = %+v, %v; want the one with id 7-0", letters, err)
	}
	if moved, err := l.MigrateLegacyKeys(ctx); err != nil || moved != 0 {
		t.Errorf("second MigrateLegacyKeys = %d, %v; want nothing to move", moved, err)
	}
}

func TestCompareStreamIDs(t *testing.T) {
	ordered := []string{"9-5", "10-0", "10-2", "100-0"}
	for i := 1; i < len(ordered); i++ {
		if compareStreamIDs(ordered[i-1], ordered[i]) >= 0 || compareStreamIDs(ordered[i], ordered[i-1]) <= 0 {
			t.Errorf("%s must sort before %s", ordered[i-1], ordered[i])
		}
	}
}
