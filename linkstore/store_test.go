package linkstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/internal/redisscan"
	"github.com/baedal/baedal/internal/stacktest"
)

// Tests against the real Redis of the shared stack. Each test works under
// its own key namespace (stacktest.Namespace); "old" and "new" stores of a
// migration are two namespaces on the same Redis (NewStore takes any client,
// so two addresses work the same way).
func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

func testRedis(t *testing.T) *redis.Client {
	t.Helper()
	st := stacktest.Require(t)
	rdb := redis.NewClient(&redis.Options{Addr: st.RedisAddr, DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func newTestStore(t *testing.T, rdb redis.UniversalClient, ns string, cfg StoreConfig) *Store {
	t.Helper()
	cfg.Namespace = ns
	s, err := NewStore(context.Background(), cfg, rdb, nil, nil)
	if err != nil {
		t.Fatalf("NewStore(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { deleteNamespace(rdb, ns) })
	return s
}

func deleteNamespace(rdb redis.UniversalClient, ns string) {
	stacktest.DeleteKeys(context.Background(), rdb, redisscan.EscapeGlob(ns)+"*")
}

func TestResolveSetsOneBitAndKeepsTTL(t *testing.T) {
	stacktest.ForEachRedis(t, testResolveSetsOneBitAndKeepsTTL)
}

func testResolveSetsOneBitAndKeepsTTL(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	ns := stacktest.Namespace(t) + ":"
	for _, codec := range []string{CodecProtoS2Dict, CodecProtoZstdDict, CodecProto, CodecJSON} {
		t.Run(codec, func(t *testing.T) {
			s := newTestStore(t, rdb, ns+codec+":", StoreConfig{Codec: codec})
			rec := liveRecords(testSeed, 1)[0]
			if err := s.Put(ctx, &rec); err != nil {
				t.Fatal(err)
			}
			key := s.Key(rec.ClickID)
			// A fixed expiry time, so "TTL untouched" is an exact comparison.
			expireAt := time.Now().Add(37 * time.Minute).Truncate(time.Millisecond)
			if err := rdb.PExpireAt(ctx, key, expireAt).Err(); err != nil {
				t.Fatal(err)
			}
			before, _ := rdb.Get(ctx, key).Bytes()
			res, err := s.Resolve(ctx, rec.ClickID)
			if err != nil {
				t.Fatal(err)
			}
			if res.AlreadyConsumed {
				t.Fatal("first Resolve says already consumed")
			}
			if res.Record.DeepLinkURL != rec.DeepLinkURL {
				t.Fatalf("deep link %q, want %q", res.Record.DeepLinkURL, rec.DeepLinkURL)
			}
			after, _ := rdb.Get(ctx, key).Bytes()
			if diff := differingBytes(before, after); len(before) != len(after) || len(diff) != 1 || diff[0] != FlagsOffset || after[FlagsOffset] != before[FlagsOffset]|FlagConsumed {
				t.Fatalf("Resolve changed bytes at %v (len %d -> %d), want only the flags byte at %d", diff, len(before), len(after), FlagsOffset)
			}
			gotExpire, err := rdb.PExpireTime(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if gotExpire != time.Duration(expireAt.UnixMilli())*time.Millisecond {
				t.Fatalf("PEXPIRETIME after Resolve = %v ms, want %d ms", gotExpire.Milliseconds(), expireAt.UnixMilli())
			}
			res, err = s.Resolve(ctx, rec.ClickID)
			if err != nil || !res.AlreadyConsumed {
				t.Fatalf("second Resolve: already consumed %v, err %v; want true, nil", res.AlreadyConsumed, err)
			}
			st, err := s.Get(ctx, rec.ClickID)
			if err != nil || !st.Consumed {
				t.Fatalf("Get after Resolve: consumed %v, err %v", st.Consumed, err)
			}
			want := rec.Normalized()
			assertRecordEqual(t, &want, st.Record)
		})
	}
}

func TestResolveBaselineRewritesWithKeepTTL(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	s := newTestStore(t, rdb, stacktest.Namespace(t)+":", StoreConfig{Codec: CodecJSONRaw, KeyFormat: KeyFormatNameText})
	rec := liveRecords(testSeed, 1)[0]
	if err := s.Put(ctx, &rec); err != nil {
		t.Fatal(err)
	}
	key := s.Key(rec.ClickID)
	if key != s.cfg.Namespace+rec.ClickID.String() {
		t.Fatalf("baseline key %q is not the text UUID", key)
	}
	expireAt := time.Now().Add(11 * time.Minute).Truncate(time.Millisecond)
	rdb.PExpireAt(ctx, key, expireAt)
	for i, wantAlready := range []bool{false, true} {
		res, err := s.Resolve(ctx, rec.ClickID)
		if err != nil || res.AlreadyConsumed != wantAlready {
			t.Fatalf("Resolve #%d: already %v err %v, want %v", i+1, res.AlreadyConsumed, err, wantAlready)
		}
	}
	v, _ := rdb.Get(ctx, key).Result()
	if !strings.HasPrefix(v, `{"consumed":true,"click_id":`) {
		t.Fatalf("baseline value after resolve starts %.40q", v)
	}
	if got, _ := rdb.PExpireTime(ctx, key).Result(); got.Milliseconds() != expireAt.UnixMilli() {
		t.Fatalf("KEEPTTL lost the expiry: %d, want %d", got.Milliseconds(), expireAt.UnixMilli())
	}
}

func TestResolveMissingDoesNotCreateKey(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	s := newTestStore(t, rdb, stacktest.Namespace(t)+":", StoreConfig{})
	id := NewClickID()
	if _, err := s.Resolve(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resolve of a missing click: %v, want ErrNotFound", err)
	}
	if n, _ := rdb.Exists(ctx, s.Key(id)).Result(); n != 0 {
		t.Fatal("Resolve created the key of a missing click")
	}
	if _, err := s.Get(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing click: %v, want ErrNotFound", err)
	}
}

func TestRecordsExpire(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	s := newTestStore(t, rdb, stacktest.Namespace(t)+":", StoreConfig{TTL: time.Second})
	recs := liveRecords(testSeed, 3)
	for i := range recs {
		if err := s.Put(ctx, &recs[i]); err != nil {
			t.Fatal(err)
		}
		ttl, _ := rdb.PTTL(ctx, s.Key(recs[i].ClickID)).Result()
		if ttl <= 0 || ttl > time.Second {
			t.Fatalf("PTTL right after Put = %v, want in (0, 1s]", ttl)
		}
	}
	if _, err := s.Resolve(ctx, recs[0].ClickID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1300 * time.Millisecond)
	for i := range recs {
		if _, err := s.Get(ctx, recs[i].ClickID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("record %d after its TTL: err %v, want ErrNotFound", i, err)
		}
	}
}

func TestDictionaryRotationInRedisKeepsOldRecordsReadable(t *testing.T) {
	stacktest.ForEachRedis(t, testDictionaryRotationInRedisKeepsOldRecordsReadable)
}

func testDictionaryRotationInRedisKeepsOldRecordsReadable(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	ns := stacktest.Namespace(t) + ":"
	for _, codec := range []string{CodecProtoS2Dict, CodecProtoZstdDict} {
		t.Run(codec, func(t *testing.T) {
			cfg := StoreConfig{Codec: codec}
			a := newTestStore(t, rdb, ns+codec+":", cfg)
			stale := newTestStore(t, rdb, ns+codec+":", cfg) // another process, not told about the rotation
			if got := a.Dictionaries().Current().Version(); got != 1 {
				t.Fatalf("bootstrap dictionary version %d, want 1", got)
			}
			first := liveRecords(testSeed, 20)
			for i := range first {
				if err := a.Put(ctx, &first[i]); err != nil {
					t.Fatal(err)
				}
			}
			d2, err := a.RotateDictionary(ctx, Generate(trainSeed, 500), TrainOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if d2.Version() != 2 {
				t.Fatalf("rotated to version %d, want 2", d2.Version())
			}
			second := liveRecords(testSeed+1, 20)
			for i := range second {
				if err := a.Put(ctx, &second[i]); err != nil {
					t.Fatal(err)
				}
			}
			if v, _ := rdb.Get(ctx, a.Key(second[0].ClickID)).Bytes(); v[DictionaryVersionOffset] != 2 {
				t.Fatalf("new record written with dictionary %d, want 2", v[DictionaryVersionOffset])
			}
			fresh := newTestStore(t, rdb, ns+codec+":", cfg) // a process started after the rotation
			for _, s := range []*Store{a, stale, fresh} {
				for _, recs := range [][]Record{first, second} {
					for i := range recs {
						st, err := s.Get(ctx, recs[i].ClickID)
						if err != nil {
							t.Fatalf("read record %d: %v", i, err)
						}
						want := recs[i].Normalized()
						assertRecordEqual(t, &want, st.Record)
					}
				}
			}
			if got := fresh.Dictionaries().Versions(); len(got) != 2 || fresh.Dictionaries().Current().Version() != 2 {
				t.Fatalf("fresh store loaded versions %v current %d, want [1 2] current 2", got, fresh.Dictionaries().Current().Version())
			}
		})
	}
}

func TestTrainFromStore(t *testing.T) {
	stacktest.ForEachRedis(t, testTrainFromStore)
}

func testTrainFromStore(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := newTestStore(t, rdb, stacktest.Namespace(t)+":", StoreConfig{})
	recs := liveRecords(testSeed, 100)
	for i := range recs {
		if err := s.Put(ctx, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	d, err := s.TrainFromStore(ctx, 80)
	if err != nil {
		t.Fatal(err)
	}
	if d.Version() != 2 || s.Dictionaries().Current() != d {
		t.Fatalf("trained version %d, current %d; want 2, 2", d.Version(), s.Dictionaries().Current().Version())
	}
}

// newMigration builds an old store in the baseline format (text keys, raw
// JSON) and a new one (raw keys, proto+s2+dict) with a service over them.
func newMigration(t *testing.T, rdb redis.UniversalClient, cfg ServiceConfig) (*Service, *Store, *Store) {
	t.Helper()
	ns := stacktest.Namespace(t)
	oldStore := newTestStore(t, rdb, ns+":old:", StoreConfig{Codec: CodecJSONRaw, KeyFormat: KeyFormatNameText})
	newStore := newTestStore(t, rdb, ns+":new:", StoreConfig{})
	svc, err := NewService(context.Background(), cfg, oldStore, newStore, rdb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	return svc, oldStore, newStore
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestShadowReadCatchesPlantedDifference(t *testing.T) {
	stacktest.ForEachRedis(t, testShadowReadCatchesPlantedDifference)
}

func testShadowReadCatchesPlantedDifference(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	svc, _, newStore := newMigration(t, rdb, DefaultServiceConfig())
	if svc.Mode() != ModeOldOnly {
		t.Fatalf("initial mode %s, want old-only", svc.Mode())
	}
	if err := svc.SetMode(ctx, ModeShadowRead); !errors.Is(err, ErrModeTransition) {
		t.Fatalf("old-only -> shadow-read: %v, want ErrModeTransition", err)
	}
	for _, m := range []Mode{ModeDualWrite, ModeShadowRead} {
		if err := svc.SetMode(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	recs := liveRecords(testSeed, 10)
	for i := range recs {
		if err := svc.Create(ctx, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Plant a difference and a hole directly in the new store.
	planted := recs[3]
	planted.Device.Model = "planted-model"
	if err := newStore.Put(ctx, &planted); err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, newStore.Key(recs[7].ClickID))

	for i := range recs {
		st, err := svc.Get(ctx, recs[i].ClickID)
		if err != nil {
			t.Fatalf("shadow-read Get %d: %v", i, err)
		}
		if st.Record.Device.Model != recs[i].Device.Model {
			t.Fatalf("served record %d from the new store (model %q)", i, st.Record.Device.Model)
		}
	}
	var rep Report
	waitFor(t, "10 comparisons", func() bool {
		rep, _ = svc.Report(ctx)
		return rep.Compared == 10
	})
	if rep.Equal != 8 || rep.Different != 1 || rep.MissingInNew != 1 || rep.Errors != 0 {
		t.Fatalf("report %+v, want 8 equal, 1 different, 1 missing", rep)
	}
	if rep.FieldCounts["device.model"] != 1 || len(rep.FieldCounts) != 1 {
		t.Fatalf("field counts %v, want only device.model: 1", rep.FieldCounts)
	}
	want := FieldDiff{ClickID: recs[3].ClickID.String(), Field: "device.model", Old: recs[3].Device.Model, New: "planted-model"}
	if len(rep.Samples) != 1 || rep.Samples[0] != want {
		t.Fatalf("samples %+v, want [%+v]", rep.Samples, want)
	}
}

func TestNoReadFailsWhileSwitchingModes(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	cfg := DefaultServiceConfig()
	cfg.RefreshInterval = 20 * time.Millisecond
	svc, oldStore, newStore := newMigration(t, rdb, cfg)
	// A second process over the same stores, following the mode from Redis.
	other, err := NewService(ctx, cfg, oldStore, newStore, rdb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := svc.SetMode(ctx, ModeDualWrite); err != nil {
		t.Fatal(err)
	}
	recs := liveRecords(testSeed, 200)
	for i := range recs {
		if err := svc.Create(ctx, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	var reads, failures atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		s := svc
		if g%2 == 1 {
			s = other
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				rec := &recs[i%len(recs)]
				st, err := s.Get(ctx, rec.ClickID)
				if err == nil && st.Record.DeepLinkURL != rec.DeepLinkURL {
					err = fmt.Errorf("click %s: wrong deep link %q", rec.ClickID, st.Record.DeepLinkURL)
				}
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
				reads.Add(1)
			}
		}()
	}
	cycle := []Mode{ModeShadowRead, ModeNewOnly, ModeShadowRead, ModeDualWrite, ModeOldOnly, ModeDualWrite, ModeShadowRead, ModeNewOnly}
	seen := map[Mode]bool{ModeDualWrite: true}
	for _, m := range cycle {
		time.Sleep(60 * time.Millisecond)
		if err := svc.SetMode(ctx, m); err != nil {
			t.Fatal(err)
		}
		seen[m] = true
	}
	time.Sleep(60 * time.Millisecond)
	close(stop)
	wg.Wait()
	if len(seen) != 4 {
		t.Fatalf("went through modes %v, want all four", seen)
	}
	if other.Mode() != ModeNewOnly {
		t.Fatalf("the other process is in mode %s, want new-only", other.Mode())
	}
	if failures.Load() != 0 {
		t.Fatalf("%d of %d reads failed while switching modes; first: %v", failures.Load(), reads.Load(), firstErr.Load())
	}
	if reads.Load() < 100 {
		t.Fatalf("only %d reads ran", reads.Load())
	}
}

// TestAcknowledgedWritesSurviveKilledWriter re-executes the test binary as
// a writer that stores records and prints each click id once Put returned,
// kills it with SIGKILL mid-stream, and checks that every acknowledged
// record is in Redis and decodes (a killed writer leaves no torn values:
// each value is one SET).
func TestAcknowledgedWritesSurviveKilledWriter(t *testing.T) {
	if os.Getenv("LINKSTORE_WRITER_CHILD") == "1" {
		runWriterChild()
		return
	}
	rdb := testRedis(t)
	ctx := context.Background()
	ns := stacktest.Namespace(t) + ":"
	s := newTestStore(t, rdb, ns, StoreConfig{}) // publishes the dictionary first
	cmd := exec.Command(os.Args[0], "-test.run=^TestAcknowledgedWritesSurviveKilledWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LINKSTORE_WRITER_CHILD=1", "LINKSTORE_WRITER_NS="+ns, "LINKSTORE_WRITER_ADDR="+rdb.Options().Addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []ClickID
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(acked) < 300 {
		line := sc.Text()
		text, ok := strings.CutPrefix(line, "ACK ")
		if !ok {
			continue
		}
		id, err := ParseClickID(text)
		if err != nil {
			t.Fatalf("child printed %q: %v", line, err)
		}
		acked = append(acked, id)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if len(acked) < 300 {
		t.Fatalf("child acknowledged only %d writes before ending", len(acked))
	}
	for _, id := range acked {
		if _, err := s.Get(ctx, id); err != nil {
			t.Fatalf("acknowledged click %s: %v", id, err)
		}
	}
	bad := 0
	err = s.Scan(ctx, 1<<30, func(key string, value []byte) error {
		if _, err := s.codecs.Decode(value); err != nil {
			bad++
		}
		return nil
	})
	if err != nil || bad != 0 {
		t.Fatalf("scan after kill: %d undecodable values, err %v", bad, err)
	}
}

func runWriterChild() {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("LINKSTORE_WRITER_ADDR")})
	ctx := context.Background()
	s, err := NewStore(ctx, StoreConfig{Namespace: os.Getenv("LINKSTORE_WRITER_NS")}, rdb, nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	g := NewGenerator(99)
	w := bufio.NewWriter(os.Stdout)
	for {
		rec := g.Next()
		rec.ExpiresAt = time.Now().Add(time.Hour) // Generate's clock is in 2025: the parent's Get would say expired
		if err := s.Put(ctx, &rec); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		fmt.Fprintf(w, "ACK %s\n", rec.ClickID)
		w.Flush()
	}
}

// With a tiny queue, comparisons that do not fit are dropped, never
// waited for, and every read is accounted for as compared or skipped.
func TestShadowReadBoundedQueueCountsSkipped(t *testing.T) {
	rdb := testRedis(t)
	ctx := context.Background()
	cfg := DefaultServiceConfig()
	cfg.ShadowQueue, cfg.ShadowWorkers, cfg.RefreshInterval = 1, 1, 20*time.Millisecond
	svc, _, _ := newMigration(t, rdb, cfg)
	for _, m := range []Mode{ModeDualWrite, ModeShadowRead} {
		if err := svc.SetMode(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	recs := liveRecords(testSeed, 20)
	for i := range recs {
		if err := svc.Create(ctx, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	const reads = 300
	for i := range reads {
		if _, err := svc.Get(ctx, recs[i%len(recs)].ClickID); err != nil {
			t.Fatal(err)
		}
	}
	var rep Report
	waitFor(t, "every read compared or skipped", func() bool {
		rep, _ = svc.Report(ctx)
		return rep.Compared+rep.Skipped == reads
	})
	if rep.Equal != rep.Compared || rep.Different != 0 || rep.MissingInNew != 0 {
		t.Fatalf("report %+v: want every comparison equal", rep)
	}
	t.Logf("%d compared, %d skipped by the 1-slot queue", rep.Compared, rep.Skipped)
}

// TestResetReportEmptiesBothKeys: the report and its samples are two keys
// (two slots on a cluster), emptied together.
func TestResetReportEmptiesBothKeys(t *testing.T) {
	stacktest.ForEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		svc, _, _ := newMigration(t, rdb, DefaultServiceConfig())
		svc.bumpReport(ctx, "different", []FieldDiff{{ClickID: "x", Field: "device.model", Old: "a", New: "b"}})
		if rep, err := svc.Report(ctx); err != nil || rep.Compared != 1 || len(rep.Samples) != 1 {
			t.Fatalf("report after one comparison = %+v, %v; want 1 compared, 1 sample", rep, err)
		}
		if err := svc.ResetReport(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := rdb.Exists(ctx, svc.reportKey()).Result(); err != nil || n != 0 {
			t.Errorf("report key left after ResetReport (%d, %v)", n, err)
		}
		if n, err := rdb.Exists(ctx, svc.samplesKey()).Result(); err != nil || n != 0 {
			t.Errorf("samples key left after ResetReport (%d, %v)", n, err)
		}
	})
}

// TestGetValuesAcrossSlots: getValues reads keys of many slots in order,
// with nil for a missing one, on both kinds of Redis.
func TestGetValuesAcrossSlots(t *testing.T) {
	stacktest.ForEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		ns := stacktest.Namespace(t) + ":"
		t.Cleanup(func() { deleteNamespace(rdb, ns) })
		var keys []string
		for i := range 40 {
			k := fmt.Sprintf("%sk%d", ns, i)
			keys = append(keys, k)
			if i%5 != 0 {
				if err := rdb.Set(ctx, k, fmt.Sprint(i), time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		values, err := getValues(ctx, rdb, keys)
		if err != nil || len(values) != len(keys) {
			t.Fatalf("getValues = %d values, %v; want %d", len(values), err, len(keys))
		}
		for i, v := range values {
			if i%5 == 0 && v != nil || i%5 != 0 && v != fmt.Sprint(i) {
				t.Errorf("value of %s = %v", keys[i], v)
			}
		}
	})
}

// TestCreateWaitsForAReplica: with WaitReplicas 1, Create on the cluster
// returns once a replica of the key's master has the click; on the single
// Redis of the test stack, which has no replica, it fails as Redis being
// unavailable (a 503 with Retry-After), not as a created click.
func TestCreateWaitsForAReplica(t *testing.T) {
	ctx := context.Background()
	t.Run("cluster", func(t *testing.T) {
		cc := stacktest.RedisCluster(t)
		s := newTestStore(t, cc, stacktest.Namespace(t)+":", StoreConfig{Codec: CodecProto, WaitReplicas: 1, WaitTimeout: 5 * time.Second})
		recs := liveRecords(testSeed, 20)
		for i := range recs {
			if err := s.Create(ctx, &recs[i]); err != nil {
				t.Fatalf("Create %d with WAIT 1: %v", i, err)
			}
		}
		if err := s.Create(ctx, &recs[0]); !errors.Is(err, ErrExists) {
			t.Errorf("second Create of a click with WAIT 1 = %v, want ErrExists", err)
		}
		var onReplica atomic.Int64
		err := cc.ForEachSlave(ctx, func(ctx context.Context, r *redis.Client) error {
			for i := range recs {
				pipe := r.Pipeline()
				pipe.ReadOnly(ctx)
				get := pipe.Exists(ctx, s.Key(recs[i].ClickID))
				_, _ = pipe.Exec(ctx)
				if get.Err() == nil && get.Val() == 1 {
					onReplica.Add(1)
				}
			}
			return nil
		})
		if err != nil || onReplica.Load() != int64(len(recs)) {
			t.Errorf("%d of %d created clicks on a replica right after Create (%v)", onReplica.Load(), len(recs), err)
		}
	})
	t.Run("single without a replica", func(t *testing.T) {
		rdb := stacktest.SingleRedis(t)
		if info, err := rdb.Info(ctx, "replication").Result(); err != nil || !strings.Contains(info, "connected_slaves:0") {
			t.Skipf("the test stack's single Redis has replicas (or INFO failed: %v)", err)
		}
		s := newTestStore(t, rdb, stacktest.Namespace(t)+":", StoreConfig{Codec: CodecProto, WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond})
		rec := liveRecords(testSeed, 1)[0]
		err := s.Create(ctx, &rec)
		var nr *NotReplicatedError
		if !errors.As(err, &nr) || nr.Got != 0 {
			t.Fatalf("Create with WAIT 1 and no replica = %v, want a NotReplicatedError (0 of 1)", err)
		}
		if what, ok := api.IsUnavailable(err); !ok || what != "redis" {
			t.Errorf("IsUnavailable(%v) = %q, %v; want redis, true", err, what, ok)
		}
	})
}
