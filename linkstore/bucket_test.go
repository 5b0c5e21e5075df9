package linkstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/redisproc"
	"github.com/baedal/baedal/internal/redisslot"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/internal/testenv"
)

func TestNewClickIDIsUUIDv7OfItsTime(t *testing.T) {
	at := time.Date(2026, 11, 28, 3, 4, 5, 678_900_000, time.UTC)
	id := NewClickIDAt(at)
	if id.Version() != 7 || id[8]&0xc0 != 0x80 {
		t.Fatalf("id %s: version %d, variant bits %02b; want 7 and 10", id, id.Version(), id[8]>>6)
	}
	got, ok := id.V7Time()
	if !ok || !got.Equal(at.Truncate(time.Millisecond)) {
		t.Fatalf("V7Time() = %s, %v; want %s", got, ok, at.Truncate(time.Millisecond))
	}
	// RFC 9562 appendix A.6's example: 017F22E2-79B0-7CC3-98C4-DC0C0C07398F
	// is 2022-02-22 19:22:22 UTC (0x017F22E279B0 ms).
	example, err := ParseClickID("017f22e2-79b0-7cc3-98c4-dc0c0c07398f")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := example.V7Time(); !ok || !got.Equal(time.Date(2022, 2, 22, 19, 22, 22, 0, time.UTC)) {
		t.Fatalf("RFC 9562 example: V7Time() = %s, %v", got, ok)
	}
	if _, ok := Generate(testSeed, 1)[0].ClickID.V7Time(); ok {
		t.Fatal("a version 4 id carries a time")
	}
	if a, b := NewClickIDAt(at), NewClickIDAt(at); a == b {
		t.Fatal("two ids of the same millisecond are equal: no random bits")
	}
}

func TestSlotTags(t *testing.T) {
	for slot := range uint16(MaxBucketShards) {
		tag := slotTag(slot)
		if bytes.ContainsAny(tag[:], "{}") || redisslot.Of("x{"+string(tag[:])+"}y") != int(slot) {
			t.Fatalf("slotTag(%d) = %q hashes to %d", slot, tag, redisslot.Of("{"+string(tag[:])+"}"))
		}
	}
}

func TestBucketPlacement(t *testing.T) {
	b := newBucketLayout("ns:", BucketConfig{Width: time.Minute, Shards: 8}, time.Hour)
	now := time.Date(2026, 11, 28, 10, 30, 15, 0, time.UTC)
	v7 := NewClickIDAt(now.Add(-90 * time.Second))
	home, ok := b.homeKey(v7)
	if !ok || !strings.HasPrefix(home, "ns:b:{") || len(home) != len("ns:")+bucketKeyLen {
		t.Fatalf("homeKey = %q, %v", home, ok)
	}
	for _, at := range []time.Time{now, now.Add(time.Hour), now.Add(-time.Hour)} {
		if p := b.place(v7, at); p.key != home || len(p.others) != 0 {
			t.Fatalf("a UUIDv7's placement at %s = %+v, want its home bucket alone", at, p)
		}
	}
	if b.key(b.shard(v7), b.index(now)) == home {
		t.Fatal("the id's bucket is the bucket of now, not of its time")
	}
	v4 := Generate(testSeed, 1)[0].ClickID
	probes := b.probeKeys(v4, now)
	if want := int(time.Hour/time.Minute) + 3; len(probes) != want {
		t.Fatalf("%d probe buckets, want lookback/width + 3 = %d", len(probes), want)
	}
	p := b.place(v4, now)
	if p.key != probes[1] || len(p.others) != len(probes)-1 {
		t.Fatalf("a UUIDv4 goes to %q with %d others; want the bucket of now (%q, second newest probe) and the %d others", p.key, len(p.others), probes[1], len(probes)-1)
	}
	// An hour later the bucket of the create is still probed.
	later := b.probeKeys(v4, now.Add(time.Hour))
	found := false
	for _, k := range later {
		found = found || k == p.key
	}
	if !found {
		t.Fatal("the probes an hour after a create miss its bucket")
	}
	// Shards spread ids and their slots.
	count := make([]int, 8)
	for _, rec := range Generate(testSeed, 8000) {
		count[b.shard(rec.ClickID)]++
	}
	for shard, n := range count {
		if n < 800 || n > 1200 {
			t.Fatalf("shard %d has %d of 8000 ids: %v", shard, n, count)
		}
	}
}

// bucketedStore is a bucketed store with a test clock.
func bucketedStore(t *testing.T, rdb redis.UniversalClient, ns string, cfg StoreConfig) *Store {
	t.Helper()
	cfg.Layout = LayoutBucketed
	return newTestStore(t, rdb, ns, cfg)
}

func TestBucketedCreateGetResolve(t *testing.T) {
	stacktest.ForEachRedis(t, testBucketedCreateGetResolve)
}

func testBucketedCreateGetResolve(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := bucketedStore(t, rdb, stacktest.Namespace(t)+":", StoreConfig{Buckets: BucketConfig{Shards: 4}})
	recs := liveRecords(testSeed, 200)
	for i := range recs {
		recs[i].ClickID = NewClickID()
		if err := s.Create(ctx, &recs[i]); err != nil {
			t.Fatalf("Create %d: %v", i, err)
		}
	}
	dup := recs[5]
	dup.DeepLinkURL = "baedal://other"
	if err := s.Create(ctx, &dup); !errors.Is(err, ErrExists) {
		t.Fatalf("second Create of one id = %v, want ErrExists", err)
	}
	for i := range recs {
		st, err := s.Get(ctx, recs[i].ClickID)
		if err != nil {
			t.Fatalf("Get %d: %v", i, err)
		}
		want := recs[i].Normalized()
		assertRecordEqual(t, &want, st.Record)
	}
	for i, wantAlready := range []bool{false, true} {
		res, err := s.Resolve(ctx, recs[7].ClickID)
		if err != nil || res.AlreadyConsumed != wantAlready || res.Record.DeepLinkURL != recs[7].DeepLinkURL {
			t.Fatalf("Resolve #%d = %+v, %v; want already consumed %v", i+1, res, err, wantAlready)
		}
	}
	if st, err := s.Get(ctx, recs[7].ClickID); err != nil || !st.Consumed {
		t.Fatalf("Get after Resolve: consumed %v, %v", st.Consumed, err)
	}
	if st, err := s.Get(ctx, recs[8].ClickID); err != nil || st.Consumed {
		t.Fatalf("a neighbour in the bucket: consumed %v, %v", st.Consumed, err)
	}
	// 200 records of one minute in 4 shards: at most 8 buckets (the minute
	// may turn), each a listpack whose expiry is its latest record's.
	key, _ := s.buckets.homeKey(recs[0].ClickID)
	if enc, err := rdb.ObjectEncoding(ctx, key).Result(); err != nil || enc != "listpack" {
		t.Fatalf("bucket encoding %q, %v; want listpack", enc, err)
	}
	if at, err := rdb.PExpireTime(ctx, key).Result(); err != nil || at != time.Duration(recs[0].ExpiresAt.UnixMilli())*time.Millisecond {
		t.Fatalf("bucket expires at %v (%v), want the records' expires_at %d ms", at, err, recs[0].ExpiresAt.UnixMilli())
	}
	buckets := map[string]bool{}
	for i := range recs {
		k, _ := s.buckets.homeKey(recs[i].ClickID)
		buckets[k] = true
	}
	if len(buckets) > 8 {
		t.Fatalf("%d buckets for 200 records of one minute in 4 shards", len(buckets))
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		for k := range buckets {
			slot, err := cc.ClusterKeySlot(ctx, k).Result()
			want := int64(redisslot.Of(k))
			if err != nil || slot != want {
				t.Fatalf("bucket %q in slot %d (%v), want its tag's %d", k, slot, err, want)
			}
		}
	}
	if _, err := s.Get(ctx, NewClickID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of an unknown id = %v, want ErrNotFound", err)
	}
	if _, err := s.Resolve(ctx, NewClickID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resolve of an unknown id = %v, want ErrNotFound", err)
	}
}

// TestBucketedClientIDsWithoutTime: a client's UUIDv4 goes to the bucket
// of the time it was created; reads find it later by probing back, and a
// create of the same id in a later minute is refused.
func TestBucketedClientIDsWithoutTime(t *testing.T) {
	stacktest.ForEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s := bucketedStore(t, rdb, stacktest.Namespace(t)+":", StoreConfig{TTL: time.Hour, Buckets: BucketConfig{Shards: 4}})
		recs := liveRecords(testSeed, 20) // version 4 ids, expiring in an hour
		start := time.Now()               // after the records' clock: their expiry is within an hour of it
		s.now = func() time.Time { return start }
		for i := range recs {
			if err := s.Create(ctx, &recs[i]); err != nil {
				t.Fatalf("Create %d: %v", i, err)
			}
		}
		for _, later := range []time.Duration{0, 7 * time.Minute, 59 * time.Minute} {
			s.now = func() time.Time { return start.Add(later) }
			for i := range recs {
				if st, err := s.Get(ctx, recs[i].ClickID); err != nil || st.Record.DeepLinkURL != recs[i].DeepLinkURL {
					t.Fatalf("%s later: Get %d: %v", later, i, err)
				}
			}
			if err := s.Create(ctx, &recs[3]); !errors.Is(err, ErrExists) {
				t.Fatalf("%s later: Create of a stored UUIDv4 = %v, want ErrExists", later, err)
			}
		}
		if res, err := s.Resolve(ctx, recs[2].ClickID); err != nil || res.AlreadyConsumed {
			t.Fatalf("Resolve of a UUIDv4 = %+v, %v", res, err)
		}
		too := liveRecords(testSeed+1, 1)[0]
		too.ExpiresAt = s.now().Add(2 * time.Hour)
		if err := s.Create(ctx, &too); !errors.Is(err, ErrInvalidRecord) || !strings.Contains(err.Error(), "longest lifetime") {
			t.Fatalf("a UUIDv4 expiring after the longest lifetime: %v, want ErrInvalidRecord", err)
		}
	})
}

// TestBucketedCorruptFieldIsNamedAndUnchanged: a field that does not
// decode is an error naming the bucket and the click, and Resolve leaves
// it and its neighbours as they were.
func TestBucketedCorruptFieldIsNamedAndUnchanged(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	s := bucketedStore(t, rdb, stacktest.Namespace(t)+":", StoreConfig{Buckets: BucketConfig{Shards: 1}})
	recs := liveRecords(testSeed, 2)
	for i := range recs {
		recs[i].ClickID = NewClickID()
		if err := s.Create(ctx, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	key, _ := s.buckets.homeKey(recs[0].ClickID)
	garbage := []byte{byte(FormatProtoS2Dict), 1, 0, 0xff, 0xfe, 0xfd}
	if err := rdb.HSet(ctx, key, field(recs[0].ClickID), garbage).Err(); err != nil {
		t.Fatal(err)
	}
	before, _ := rdb.HGetAll(ctx, key).Result()
	for name, op := range map[string]func() error{
		"Get":     func() error { _, err := s.Get(ctx, recs[0].ClickID); return err },
		"Resolve": func() error { _, err := s.Resolve(ctx, recs[0].ClickID); return err },
	} {
		err := op()
		if !unreadable(err) || !strings.Contains(err.Error(), recs[0].ClickID.String()) || !strings.Contains(err.Error(), "bucket") {
			t.Fatalf("%s of a corrupt field = %v; want an unreadable-record error naming the click and its bucket", name, err)
		}
	}
	after, _ := rdb.HGetAll(ctx, key).Result()
	if len(after) != len(before) || after[field(recs[0].ClickID)] != string(garbage) || after[field(recs[1].ClickID)] != before[field(recs[1].ClickID)] {
		t.Fatal("a failed Resolve changed the bucket")
	}
	if _, err := s.Resolve(ctx, recs[1].ClickID); err != nil {
		t.Fatalf("the corrupt field's neighbour: %v", err)
	}
}

// TestBucketedResolveOfExpiredRecordLeavesItUnconsumed: Resolve marks a
// field in the same script that reads it, so a record past its expires_at
// (410) must have that mark undone: a later Get still finds it unconsumed
// and its bytes as they were.
func TestBucketedResolveOfExpiredRecordLeavesItUnconsumed(t *testing.T) {
	stacktest.ForEachRedis(t, testBucketedResolveOfExpiredRecordLeavesItUnconsumed)
}

func testBucketedResolveOfExpiredRecordLeavesItUnconsumed(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := bucketedStore(t, rdb, stacktest.Namespace(t)+":", StoreConfig{Buckets: BucketConfig{Shards: 2}})
	recs := liveRecords(testSeed, 2)
	recs[0].ClickID = NewClickID() // found by its time
	for i := range recs {
		if err := s.Create(ctx, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, rec := range recs {
		before, err := s.GetValue(ctx, rec.ClickID)
		if err != nil {
			t.Fatal(err)
		}
		s.now = func() time.Time { return rec.ExpiresAt }
		if _, err := s.Resolve(ctx, rec.ClickID); !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "bucket") {
			t.Fatalf("Resolve of click %s past its expires_at = %v, want ErrExpired naming its bucket", rec.ClickID, err)
		}
		after, err := s.GetValue(ctx, rec.ClickID)
		if err != nil || !bytes.Equal(after, before) || valueConsumed(after) {
			t.Fatalf("click %s after a Resolve that answered 410: consumed %v, unchanged %v, %v", rec.ClickID, valueConsumed(after), bytes.Equal(after, before), err)
		}
		s.now = time.Now
		if res, err := s.Resolve(ctx, rec.ClickID); err != nil || res.AlreadyConsumed {
			t.Fatalf("Resolve of click %s before its expires_at = %+v, %v; want its first resolve", rec.ClickID, res, err)
		}
	}
}

// TestBucketedBucketsExpire: after the longest lifetime plus one bucket
// width, every bucket of a load is gone and used_memory is back where it
// started. used_memory is the whole server's, so the test runs on a
// redis-server of its own (other packages' tests share the stack's).
func TestBucketedBucketsExpire(t *testing.T) {
	stacktest.Require(t) // the stack's start installed redis-server; fails in CI without it
	ctx := context.Background()
	srv, err := redisproc.Start(ctx, "redis-server", BucketRedisArgs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	ns := stacktest.Namespace(t) + ":"
	const lifetime, width = 2 * time.Second, time.Second
	s := bucketedStore(t, rdb, ns, StoreConfig{TTL: lifetime, Buckets: BucketConfig{Width: width, Shards: 8}})
	countKeys := func() int {
		keys, _ := rdb.Keys(ctx, ns+"b:*").Result()
		return len(keys)
	}
	// Warm up what a load leaves behind that is not the records: the
	// store's scripts and the client's buffers.
	warm := liveRecords(testSeed+1, 1)
	warm[0].ExpiresAt = time.Now().Add(lifetime)
	if err := s.Create(ctx, &warm[0]); err != nil {
		t.Fatal(err)
	}
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := usedMemory(t, rdb)
	recs := liveRecords(testSeed, 3000)
	start := time.Now()
	for i := range recs {
		recs[i].ClickID = NewClickID()
		recs[i].ExpiresAt = time.Now().Add(lifetime)
		if i%4 == 0 {
			recs[i].ClickID = Generate(uint64(i), 1)[0].ClickID // a client's UUIDv4
		}
		if err := s.Create(ctx, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	loaded := usedMemory(t, rdb) - before
	if n := countKeys(); n < 8 || loaded < 500_000 {
		t.Fatalf("after the load: %d buckets, used_memory +%d B; want >= 8 buckets and ~1 MB", n, loaded)
	}
	time.Sleep(time.Until(start.Add(lifetime + width)))
	waitFor(t, "every bucket to expire", func() bool { return countKeys() == 0 })
	if elapsed := time.Since(start); elapsed > lifetime+width+5*time.Second {
		t.Fatalf("the buckets took %s to go, lifetime + width is %s", elapsed, lifetime+width)
	}
	if left := usedMemory(t, rdb) - before; left > loaded/20 {
		t.Fatalf("used_memory %d B above the start after expiry, of %d B loaded", left, loaded)
	}
}

func usedMemory(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			var n int64
			for _, c := range v {
				n = n*10 + int64(c-'0')
			}
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}

// TestBucketedFieldExpiry: on the stack's Redis 7.0 (no HPEXPIREAT) auto
// falls back to whole-bucket expiry and on refuses to start. On a Valkey 9.1
// of its own (scripts/valkey.sh 9.1, which scripts/test.sh fetches), which
// has HPEXPIREAT but turns a hash with a field expiry into a hash table,
// auto keeps whole-bucket expiry and listpack buckets; on expires each
// record's field at its expires_at, and a Resolve keeps that expiry, for a
// UUIDv7 and for a client's UUIDv4.
func TestBucketedFieldExpiry(t *testing.T) {
	ctx := context.Background()
	rdb := testRedis(t)
	has, err := hasFieldExpiry(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	if !has {
		_, err := NewStore(ctx, StoreConfig{Layout: LayoutBucketed, Namespace: stacktest.Namespace(t) + ":", Buckets: BucketConfig{FieldExpiry: FieldExpiryOn}}, rdb, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "field-expiry") {
			t.Fatalf("field expiry on, on a Redis without HPEXPIREAT: %v, want an error naming field-expiry", err)
		}
		if s := bucketedStore(t, rdb, stacktest.Namespace(t)+":auto:", StoreConfig{}); s.FieldExpiry() {
			t.Fatal("field expiry auto, on a Redis without HPEXPIREAT: the store expires fields")
		}
		rdb = valkey9(t)
	}
	if encoding, err := fieldExpiryEncoding(ctx, rdb, stacktest.Namespace(t)+":"); err != nil || encoding != "hashtable" {
		t.Logf("a hash with a field expiry is a %q (%v) here", encoding, err)
	} else {
		auto := bucketedStore(t, rdb, stacktest.Namespace(t)+":auto:", StoreConfig{Buckets: BucketConfig{Shards: 1}})
		if auto.FieldExpiry() {
			t.Fatal("field expiry auto, on a server that turns such hashes into hash tables: the store expires fields")
		}
		rec := liveRecords(testSeed, 1)[0]
		rec.ClickID = NewClickID()
		if err := auto.Create(ctx, &rec); err != nil {
			t.Fatal(err)
		}
		key, _ := auto.buckets.homeKey(rec.ClickID)
		if enc, err := rdb.ObjectEncoding(ctx, key).Result(); err != nil || enc != "listpack" {
			t.Fatalf("field expiry auto: bucket encoding %q, %v; want listpack", enc, err)
		}
	}

	s := bucketedStore(t, rdb, stacktest.Namespace(t)+":", StoreConfig{Buckets: BucketConfig{FieldExpiry: FieldExpiryOn, Shards: 1}})
	if !s.FieldExpiry() {
		t.Fatal("field expiry on, on a server with HPEXPIREAT: the store does not expire fields")
	}
	recs := liveRecords(testSeed, 3)
	recs[0].ClickID, recs[1].ClickID = NewClickID(), NewClickID()
	recs[2].ClickID = Generate(7, 1)[0].ClickID // a client's UUIDv4
	recs[0].ExpiresAt = time.Now().Add(time.Second).Truncate(time.Millisecond)
	for i := range recs {
		if err := s.Create(ctx, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range recs[1:] {
		if _, err := s.Resolve(ctx, r.ClickID); err != nil {
			t.Fatal(err)
		}
		key, _, err := s.bucketFind(ctx, r.ClickID, false)
		if err != nil {
			t.Fatal(err)
		}
		at, err := rdb.HPExpireTime(ctx, key, field(r.ClickID)).Result()
		if err != nil || len(at) != 1 || at[0] != r.ExpiresAt.UnixMilli() {
			t.Fatalf("%s: field expiry after Resolve = %v, %v; want %d", r.ClickID, at, err, r.ExpiresAt.UnixMilli())
		}
	}
	key, _ := s.buckets.homeKey(recs[0].ClickID)
	waitFor(t, "the short-lived field to expire", func() bool {
		n, _ := rdb.HExists(ctx, key, field(recs[0].ClickID)).Result()
		return !n
	})
	if _, err := s.Get(ctx, recs[0].ClickID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of the expired record = %v, want ErrNotFound", err)
	}
	for _, r := range recs[1:] {
		if _, err := s.Get(ctx, r.ClickID); err != nil {
			t.Fatalf("%s after its neighbour expired: %v", r.ClickID, err)
		}
	}
}

// valkey9 starts a Valkey 9.1 of the test's own (BAEDAL_TEST_VALKEY9_SERVER,
// set by scripts/test.sh to what scripts/valkey.sh 9.1 prints) with the
// stack's listpack settings; it fails the test in CI when there is none.
func valkey9(t *testing.T) *redis.Client {
	t.Helper()
	bin := os.Getenv("BAEDAL_TEST_VALKEY9_SERVER")
	if bin == "" {
		testenv.Unavailable(t, errors.New("BAEDAL_TEST_VALKEY9_SERVER is not set (scripts/valkey.sh 9.1 prints the server to set it to)"))
	}
	srv, err := redisproc.Start(context.Background(), bin, BucketRedisArgs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestCheckRedisSettings(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	if low := CheckRedisSettings(ctx, rdb, nil); len(low) != 0 {
		t.Fatalf("the test stack's Redis: settings too low: %v", low)
	}
	old, err := rdb.ConfigGet(ctx, "hash-max-listpack-value").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "hash-max-listpack-value", "64").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.ConfigSet(ctx, "hash-max-listpack-value", old["hash-max-listpack-value"]) })
	low := CheckRedisSettings(ctx, rdb, nil)
	if len(low) != 1 || !strings.Contains(low[0], "hash-max-listpack-value=64") {
		t.Fatalf("with hash-max-listpack-value 64: %v, want it named", low)
	}
}
