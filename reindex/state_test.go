package reindex

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/stacktest"
)

// newTestStore is a job store with keys of its own on rdb, deleted when the
// test ends.
func newTestStore(t *testing.T, rdb redis.UniversalClient) *store {
	t.Helper()
	prefix := stacktest.Namespace(t) + ":reindex:"
	t.Cleanup(func() { stacktest.DeleteKeys(context.Background(), rdb, prefix+"*", "{"+prefix+"}*") })
	return &store{rdb: rdb, prefix: prefix}
}

// TestStoreCreateListLease runs the job store's multi-key transaction
// (create: the job hash and the set of ids in one MULTI/EXEC), the alias
// lock and the lease scripts on a single Redis and on a cluster.
func TestStoreCreateListLease(t *testing.T) {
	stacktest.ForEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		s := newTestStore(t, rdb)
		if cc, ok := rdb.(*redis.ClusterClient); ok {
			stacktest.SameSlot(t, cc, s.jobKey("a_v2"), s.jobsKey(), s.lockKey("a"), s.leaseKey("a_v2"))
		}
		spec := Spec{ID: "a_v2", Alias: "a", Source: "a_v1", Target: "a_v2", Partitions: 2, Created: time.Now().UTC()}
		if err := s.create(ctx, spec, []string{"0-0", "5-1"}); err != nil {
			t.Fatalf("create: %v", err)
		}
		if err := s.create(ctx, Spec{ID: "a_v3", Alias: "a"}, nil); !errors.Is(err, ErrBusy) {
			t.Fatalf("second job on alias a: %v, want ErrBusy", err)
		}
		ids, err := s.list(ctx)
		if err != nil || !slices.Equal(ids, []string{"a_v2"}) {
			t.Fatalf("list = %v, %v; want [a_v2]", ids, err)
		}
		st, _, err := s.load(ctx, "a_v2")
		if err != nil || st.Step != StepPlanned || st.Target != "a_v2" {
			t.Fatalf("load = %+v, %v; want step planned, target a_v2", st, err)
		}
		l, err := s.acquireLease(ctx, "a_v2", time.Minute, 0)
		if err != nil {
			t.Fatalf("acquireLease: %v", err)
		}
		if _, err := s.acquireLease(ctx, "a_v2", time.Minute, 0); !errors.Is(err, ErrBusy) {
			t.Fatalf("second lease: %v, want ErrBusy", err)
		}
		l.release(ctx)
		if n, err := rdb.Exists(ctx, s.leaseKey("a_v2")).Result(); err != nil || n != 0 {
			t.Errorf("lease key left after release (%d, %v)", n, err)
		}
		if err := s.releaseLock(ctx, "a", "a_v2"); err != nil {
			t.Fatal(err)
		}
		if err := s.create(ctx, Spec{ID: "a_v3", Alias: "a"}, nil); err != nil {
			t.Fatalf("a job after the lock was released: %v", err)
		}
	})
}

// TestStoreMigratesLegacyKeys: job state written before the hash tag (on a
// single Redis) is renamed to today's keys, with its values and TTL, and
// loads as before.
func TestStoreMigratesLegacyKeys(t *testing.T) {
	rdb := stacktest.SingleRedis(t)
	ctx := context.Background()
	s := newTestStore(t, rdb)
	legacy := &store{rdb: rdb, prefix: s.prefix}
	pipe := rdb.Pipeline()
	pipe.HSet(ctx, s.prefix+"job:b_v2", fSpec, `{"id":"b_v2","alias":"b","target":"b_v2"}`, fStep, string(StepCopying))
	pipe.SAdd(ctx, s.prefix+"jobs", "b_v2")
	pipe.Set(ctx, s.prefix+"active:b", "b_v2", 0)
	pipe.Set(ctx, s.prefix+"lease:b_v2", "someone", time.Minute)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := legacy.migrateLegacyKeys(ctx)
	if err != nil || n != 4 {
		t.Fatalf("migrateLegacyKeys = %d, %v; want 4 renamed", n, err)
	}
	st, _, err := s.load(ctx, "b_v2")
	if err != nil || st.Step != StepCopying {
		t.Fatalf("load after the migration = %+v, %v; want step copying", st, err)
	}
	if err := s.create(ctx, Spec{ID: "b_v3", Alias: "b"}, nil); !errors.Is(err, ErrBusy) {
		t.Errorf("the migrated alias lock did not hold: %v", err)
	}
	if ttl, err := rdb.PTTL(ctx, s.leaseKey("b_v2")).Result(); err != nil || ttl <= 0 {
		t.Errorf("migrated lease TTL = %s, %v; want it kept", ttl, err)
	}
	if n, err := legacy.migrateLegacyKeys(ctx); err != nil || n != 0 {
		t.Errorf("second migrateLegacyKeys = %d, %v; want 0", n, err)
	}
}
