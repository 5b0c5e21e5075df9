package linkstore

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/stacktest"
)

// migrationToBucketed is the migration of TestMigrationToBucketedLosesNothingWhenWritersAreKilled:
// from today's layout as stored before the link store (json-raw values
// under text keys) to the bucketed layout, in two namespaces of one Redis.
func migrationToBucketed(ns string) (oldCfg, newCfg StoreConfig, svcCfg ServiceConfig) {
	oldCfg = StoreConfig{Namespace: ns + "old:", Codec: CodecJSONRaw, KeyFormat: KeyFormatNameText}
	newCfg = StoreConfig{Namespace: ns + "new:", Layout: LayoutBucketed, Buckets: BucketConfig{Shards: 8}}
	svcCfg = DefaultServiceConfig()
	svcCfg.RefreshInterval = 20 * time.Millisecond
	return oldCfg, newCfg, svcCfg
}

// TestMigrationToBucketedLosesNothingWhenWritersAreKilled walks the
// migration from the keys layout to the bucketed one (old-only →
// dual-write → shadow-read → new-only) while writer processes create
// clicks through the Service (3 in 4 with new UUIDv7 ids, 1 in 4 with a
// client's UUIDv4), and SIGKILLs a writer in shadow-read and another in
// new-only. Every click a writer acknowledged once dual-write was on must
// then read from the new store, equal to the old store's copy where there
// is one: 0 lost, 0 different. The shadow-read report must show no
// difference either.
func TestMigrationToBucketedLosesNothingWhenWritersAreKilled(t *testing.T) {
	if os.Getenv("LINKSTORE_MIGRATION_CHILD") == "1" {
		runMigrationWriterChild()
		return
	}
	rdb := testRedis(t)
	ctx := context.Background()
	ns := stacktest.Namespace(t) + ":"
	oldCfg, newCfg, svcCfg := migrationToBucketed(ns)
	oldStore := newTestStore(t, rdb, oldCfg.Namespace, oldCfg)
	newStore := newTestStore(t, rdb, newCfg.Namespace, newCfg)
	svc, err := NewService(ctx, svcCfg, oldStore, newStore, rdb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	if err := svc.SetMode(ctx, ModeDualWrite); err != nil {
		t.Fatal(err)
	}

	var acked []ClickID
	// writer starts a writer process and returns a function that reads its
	// acknowledgements until it has n more, then SIGKILLs it.
	writer := func(seed int) func(n int) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMigrationToBucketedLosesNothingWhenWritersAreKilled$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LINKSTORE_MIGRATION_CHILD=1", "LINKSTORE_MIGRATION_NS="+ns,
			"LINKSTORE_MIGRATION_ADDR="+rdb.Options().Addr, fmt.Sprintf("LINKSTORE_MIGRATION_SEED=%d", seed))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lastWriter = cmd
		sc := bufio.NewScanner(out)
		return func(n int) {
			t.Helper()
			for got := 0; got < n; {
				if !sc.Scan() {
					t.Fatalf("writer %d ended after %d acknowledgements", seed, got)
				}
				text, ok := strings.CutPrefix(sc.Text(), "ACK ")
				if !ok {
					continue
				}
				id, err := ParseClickID(text)
				if err != nil {
					t.Fatalf("writer printed %q: %v", sc.Text(), err)
				}
				acked = append(acked, id)
				got++
			}
		}
	}
	first := writer(1)
	first(300)
	if err := svc.SetMode(ctx, ModeShadowRead); err != nil {
		t.Fatal(err)
	}
	first(300)
	for _, id := range acked { // served by the old store, compared with the new one
		if _, err := svc.Get(ctx, id); err != nil {
			t.Fatalf("shadow-read Get %s: %v", id, err)
		}
	}
	waitFor(t, "the shadow reads", func() bool {
		rep, _ := svc.Report(ctx)
		return rep.Compared+rep.Skipped >= int64(len(acked))
	})
	killLastWriter(t)
	second := writer(2)
	second(300)
	if err := svc.SetMode(ctx, ModeNewOnly); err != nil {
		t.Fatal(err)
	}
	second(300)
	killLastWriter(t)

	lost, different := 0, 0
	for _, id := range acked {
		got, err := newStore.Get(ctx, id)
		if err != nil {
			lost++
			t.Errorf("acknowledged click %s (UUIDv%d): %v", id, id.Version(), err)
			continue
		}
		if old, err := oldStore.Get(ctx, id); err == nil {
			if d := DiffRecords(old.Record, got.Record); len(d) > 0 {
				different++
				t.Errorf("click %s differs between the stores: %+v", id, d)
			}
		}
	}
	rep, err := svc.Report(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lost != 0 || different != 0 || rep.Different != 0 || rep.MissingInNew != 0 || rep.Errors != 0 {
		t.Fatalf("%d of %d acknowledged clicks lost, %d different; shadow report %+v", lost, len(acked), different, rep)
	}
	t.Logf("%d acknowledged clicks, all in the bucketed store; shadow-read compared %d, equal %d", len(acked), rep.Compared, rep.Equal)
}

// lastWriter is the writer process killLastWriter ends.
var lastWriter *exec.Cmd

// killLastWriter SIGKILLs the writer started last, mid-stream.
func killLastWriter(t *testing.T) {
	t.Helper()
	if lastWriter == nil {
		t.Fatal("no writer to kill")
	}
	if err := lastWriter.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = lastWriter.Wait()
	lastWriter = nil
}

// runMigrationWriterChild creates clicks through a Service that follows
// the mode from Redis, creating and resolving, and prints ACK <id> once
// Create returned, until it is killed.
func runMigrationWriterChild() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("LINKSTORE_MIGRATION_ADDR")})
	oldCfg, newCfg, svcCfg := migrationToBucketed(os.Getenv("LINKSTORE_MIGRATION_NS"))
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "migration writer:", err)
		os.Exit(2)
	}
	oldStore, err := NewStore(ctx, oldCfg, rdb, nil, nil)
	if err != nil {
		fail(err)
	}
	newStore, err := NewStore(ctx, newCfg, rdb, nil, nil)
	if err != nil {
		fail(err)
	}
	svc, err := NewService(ctx, svcCfg, oldStore, newStore, rdb, nil, nil)
	if err != nil {
		fail(err)
	}
	var seed uint64
	fmt.Sscan(os.Getenv("LINKSTORE_MIGRATION_SEED"), &seed)
	g := NewGenerator(seed)
	w := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		rec := g.Next()
		if i%4 != 0 {
			rec.ClickID = NewClickID()
		}
		rec.ExpiresAt = time.Now().Add(time.Hour).Truncate(time.Millisecond)
		if err := svc.Create(ctx, &rec); err != nil {
			fail(err)
		}
		if i%10 == 0 { // a resolve now and then: the consumed state goes along
			if _, err := svc.Resolve(ctx, rec.ClickID); err != nil {
				fail(err)
			}
		}
		fmt.Fprintf(w, "ACK %s\n", rec.ClickID)
		w.Flush()
	}
}
