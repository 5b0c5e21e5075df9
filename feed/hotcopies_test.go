package feed

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/stacktest"
)

// TestClusterSlotSpecVector: the Redis Cluster specification gives CRC16
// ("123456789") = 0x31C3.
func TestClusterSlotSpecVector(t *testing.T) {
	if got := clusterSlot("123456789"); got != 0x31C3 {
		t.Fatalf("slot of 123456789 = %#x, want 0x31c3", got)
	}
	// A hash tag hashes only its text; an empty one hashes the whole key.
	if clusterSlot("{123456789}:v") != 0x31C3 || clusterSlot("a{}b") == clusterSlot("") {
		t.Fatal("hash tags are not applied as the specification says")
	}
}

// TestSpreadNamesFallInTheirRanges: copy i of a key hashes into the i-th of
// k equal slot ranges, for several k.
func TestSpreadNamesFallInTheirRanges(t *testing.T) {
	for _, k := range []int{2, 3, 12, 60} {
		names := spreadNames("feed:au:42", k)
		if len(names) != k {
			t.Fatalf("k=%d: %d names", k, len(names))
		}
		for i, n := range names {
			if lo, hi := i*slotCount/k, (i+1)*slotCount/k; clusterSlot(n) < lo || clusterSlot(n) >= hi {
				t.Errorf("k=%d: copy %d %q in slot %d, want [%d, %d)", k, i, n, clusterSlot(n), lo, hi)
			}
		}
	}
	if got := spreadNames("x", 1); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("k=1: %q, want the key itself", got)
	}
}

// TestClusterSlotMatchesTheServer compares clusterSlot with CLUSTER KEYSLOT
// of a real cluster, hash tags included.
func TestClusterSlotMatchesTheServer(t *testing.T) {
	cc := stacktest.RedisCluster(t)
	ctx := context.Background()
	for i := range 300 {
		for _, key := range []string{fmt.Sprintf("feed:au:%d~%d", i, i%17), fmt.Sprintf("{feed:celebs}:ver%d", i), fmt.Sprintf("x{}%d", i)} {
			want, err := cc.ClusterKeySlot(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got := clusterSlot(key); int64(got) != want {
				t.Fatalf("slot of %q = %d, server says %d", key, got, want)
			}
		}
	}
}

// TestHotKeyCopiesServeEveryReader: on a cluster, a celebrity's posts reach
// every copy (those from before the promotion, and a new post once Post
// returned), each reader reads its own copy, and the copies sit on every
// master.
func TestHotKeyCopiesServeEveryReader(t *testing.T) {
	cc := stacktest.RedisCluster(t)
	b := newBackendsOn(t, cc)
	cfg := testConfig(StrategyHybrid, b.prefix)
	cfg.CelebrityThreshold = defaultClusterHotKeyCopies
	svc := newService(t, b, cfg)
	if !svc.copies.enabled() || svc.copies.k != defaultClusterHotKeyCopies {
		t.Fatalf("copies on a cluster: %d, want %d", svc.copies.k, defaultClusterHotKeyCopies)
	}
	startWorkers(t, svc)
	ctx := context.Background()
	celeb := mustUser(t, svc, "celeb")
	before := mustPost(t, svc, celeb, "before the promotion")
	var readers []int64
	for len(readers) < defaultClusterHotKeyCopies {
		readers = append(readers, mustUser(t, svc, "reader"+strconv.Itoa(len(readers))))
		mustFollow(t, svc, readers[len(readers)-1], celeb) // the last follow promotes
	}
	waitSettled(t, svc)
	if ok, err := cc.SIsMember(ctx, svc.keys.celebrities, celeb).Result(); err != nil || !ok {
		t.Fatalf("celebrity %d not promoted (%v)", celeb, err)
	}
	after := mustPost(t, svc, celeb, "after the promotion")
	copiesRead := map[int]bool{}
	for _, r := range readers {
		ids, err := svc.readPage(ctx, r, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, []int64{after.ID, before.ID}) {
			t.Fatalf("reader %d (copy %d): page %v, want [%d %d]", r, copyOf(r, svc.copies.k), ids, after.ID, before.ID)
		}
		copiesRead[copyOf(r, svc.copies.k)] = true
	}
	if len(copiesRead) != defaultClusterHotKeyCopies {
		t.Fatalf("readers read %d distinct copies, want %d", len(copiesRead), defaultClusterHotKeyCopies)
	}
	masters := map[string]bool{}
	for _, key := range svc.copies.postKeys(svc.keys.author(celeb)) {
		if n, err := cc.ZCard(ctx, key).Result(); err != nil || n != 2 {
			t.Fatalf("post copy %s holds %d posts (%v), want 2", key, n, err)
		}
		slot, _ := cc.ClusterKeySlot(ctx, key).Result()
		masters[masterOfSlot(t, cc, slot)] = true
	}
	for _, key := range svc.copies.version {
		if v, err := cc.Get(ctx, key).Result(); err != nil || v == "" {
			t.Fatalf("version copy %s = %q, %v", key, v, err)
		}
	}
	if n := len(masterAddrs(t, cc)); len(masters) != n {
		t.Fatalf("copies on %d masters, want all %d", len(masters), n)
	}
}

func masterAddrs(t *testing.T, cc *redis.ClusterClient) []string {
	t.Helper()
	var addrs []string
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		addrs = append(addrs, c.Options().Addr)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return addrs
}

func masterOfSlot(t *testing.T, cc *redis.ClusterClient, slot int64) string {
	t.Helper()
	slots, err := cc.ClusterSlots(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
			return s.Nodes[0].Addr
		}
	}
	t.Fatalf("no master serves slot %d", slot)
	return ""
}

// TestVersionCopiesCatchUpAfterADeadChanger: a changer that died between
// the change script and raising the version's copies leaves them behind;
// a reader that loads the set afterwards sees the change and raises its
// copy, and a worker's start raises every copy.
func TestVersionCopiesCatchUpAfterADeadChanger(t *testing.T) {
	cc := stacktest.RedisCluster(t)
	b := newBackendsOn(t, cc)
	ctx := context.Background()
	svc := newService(t, b, testConfig(StrategyHybrid, b.prefix))
	k := svc.keys
	if err := cc.SAdd(ctx, k.followees(7), 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := svc.changeCelebrities(ctx, cc, "add", "1"); err != nil {
		t.Fatal(err)
	}
	// The change of a changer that dies after the script: 2 joins, its
	// copies filled, the version's copies left behind.
	if err := svc.fillCelebrityPostCopies(ctx, []string{"2"}); err != nil {
		t.Fatal(err)
	}
	for _, key := range svc.copies.postKeys(k.author(2)) {
		if err := cc.ZAdd(ctx, key, redis.Z{Score: 500, Member: "500"}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	version, err := celebrityChangeScript.Run(ctx, cc, []string{k.celebrities, k.celebritiesVersion}, "add", "1", "2").Text()
	if err != nil {
		t.Fatal(err)
	}
	reader := newService(t, b, testConfig(StrategyHybrid, b.prefix))
	if ids, err := reader.readPage(ctx, 7, 0, 10); err != nil || !slices.Equal(ids, []int64{500}) {
		t.Fatalf("a fresh reader's page = %v, %v; want [500]", ids, err)
	}
	if got, _ := cc.Get(ctx, reader.copies.versionKey(7)).Result(); got != version {
		t.Fatalf("the reader's version copy = %q after its load, want %s", got, version)
	}
	if err := svc.ReconcileCelebrities(ctx); err != nil {
		t.Fatal(err)
	}
	for _, key := range svc.copies.version {
		if got, _ := cc.Get(ctx, key).Result(); got != version {
			t.Fatalf("version copy %s = %q after a worker's start, want %s", key, got, version)
		}
	}
}
