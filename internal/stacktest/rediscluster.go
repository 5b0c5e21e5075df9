package stacktest

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/localstack"
)

// EnvRedisClusterStateDir names the variable that points the Redis-using
// tests at a stack started with --redis-cluster (scripts/test.sh starts its
// one stack so and sets it to the same directory as EnvStateDir). Unset, a
// package whose TestMain calls Main starts a cluster of its own (3 masters,
// one replica each) the first time a test asks for it, and stops it when
// its tests end.
const EnvRedisClusterStateDir = "BAEDAL_TEST_REDIS_CLUSTER_STATE_DIR"

var (
	clusterOnce   sync.Once
	clusterAddrs  []string
	clusterErr    error
	ownClusterDir string
)

// RedisClusterAddrs returns the nodes of the test run's Redis Cluster, or
// fails (CI) / skips (locally) the test when there is none.
func RedisClusterAddrs(t testing.TB) []string {
	t.Helper()
	clusterOnce.Do(func() { clusterAddrs, clusterErr = findRedisCluster() })
	if clusterErr != nil {
		testenv.Unavailable(t, clusterErr)
	}
	return clusterAddrs
}

func findRedisCluster() ([]string, error) {
	if dir := os.Getenv(EnvRedisClusterStateDir); dir != "" {
		st, err := localstack.Load(dir)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", EnvRedisClusterStateDir, dir, err)
		}
		if len(st.RedisClusterAddrs) == 0 {
			return nil, fmt.Errorf("%s=%s: the stack there runs no Redis Cluster (start it with --redis-cluster 3,1)", EnvRedisClusterStateDir, dir)
		}
		return st.RedisClusterAddrs, nil
	}
	mu.Lock()
	used := mainUsed
	mu.Unlock()
	if !used {
		return nil, fmt.Errorf("%s is not set and this package's TestMain does not call stacktest.Main, so it cannot start a Redis Cluster of its own", EnvRedisClusterStateDir)
	}
	dir, err := os.MkdirTemp("", "baedal-test-redis-cluster-")
	if err != nil {
		return nil, err
	}
	mu.Lock()
	ownClusterDir = dir
	mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := localstack.UpRedisCluster(ctx, dir, localstack.RedisClusterSpec{Masters: 3, ReplicasPerMaster: 1}, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	return st.RedisClusterAddrs, nil
}

// stopOwnRedisCluster stops the cluster this package started, if any.
func stopOwnRedisCluster(code int) {
	mu.Lock()
	dir := ownClusterDir
	mu.Unlock()
	if dir == "" {
		return
	}
	if err := localstack.Down(dir, io.Discard); err != nil {
		fmt.Fprintf(os.Stderr, "stacktest: stop the Redis Cluster in %s: %v\n", dir, err)
	}
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "stacktest: kept the Redis Cluster's logs in %s/logs\n", dir)
	}
}

// RedisCluster returns a cluster client of the test run's Redis Cluster,
// closed when the test ends (see RedisClusterAddrs for when it skips).
func RedisCluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	addrs := RedisClusterAddrs(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// SingleRedis returns a client of the test stack's single Redis, closed
// when the test ends.
func SingleRedis(t testing.TB) *redis.Client {
	t.Helper()
	st := Require(t)
	rdb := redis.NewClient(&redis.Options{Addr: st.RedisAddr, DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// ForEachRedis runs test once against the single Redis ("single") and once
// against the Redis Cluster ("cluster"), as subtests. Use it for the tests
// of multi-key paths (MULTI/EXEC, scripts, multi-key commands), whose keys
// must share a slot in a cluster.
func ForEachRedis(t *testing.T, test func(t *testing.T, rdb redis.UniversalClient)) {
	t.Run("single", func(t *testing.T) { test(t, SingleRedis(t)) })
	t.Run("cluster", func(t *testing.T) { test(t, RedisCluster(t)) })
}

// DeleteKeys deletes the keys matching each pattern, on every master of a
// cluster (KEYS only sees its own node), one key at a time there (DEL of
// many keys must stay within a slot).
func DeleteKeys(ctx context.Context, rdb redis.UniversalClient, patterns ...string) {
	del := func(ctx context.Context, node redis.Cmdable, one bool) {
		for _, p := range patterns {
			keys, err := node.Keys(ctx, p).Result()
			if err != nil || len(keys) == 0 {
				continue
			}
			if !one {
				node.Del(ctx, keys...)
				continue
			}
			for _, k := range keys {
				node.Del(ctx, k)
			}
		}
	}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			del(ctx, m, true)
			return nil
		})
		return
	}
	del(ctx, rdb, false)
}

// SameSlot fails the test unless every key hashes to one cluster slot
// (CLUSTER KEYSLOT on the cluster): what a MULTI/EXEC, a script or a
// multi-key command over them needs. (The cluster would refuse such a
// command with CROSSSLOT when it runs; this names the keys at fault before.)
func SameSlot(t testing.TB, cc *redis.ClusterClient, keys ...string) {
	t.Helper()
	ctx := context.Background()
	first := int64(-1)
	for _, k := range keys {
		slot, err := cc.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", k, err)
		}
		if first < 0 {
			first = slot
		} else if slot != first {
			t.Errorf("key %q is in slot %d, %q in slot %d: they must share a slot", k, slot, keys[0], first)
		}
	}
}
