package backend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/stacktest"
)

// TestMain lets the cluster test start a Redis Cluster of its own when the
// test script gave none (stacktest.RedisClusterAddrs).
func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// TestRedisClusterModeConfig: cluster mode builds a cluster client seeded by
// every node of --redis-addr, and refuses what a cluster cannot do, naming
// the flag.
func TestRedisClusterModeConfig(t *testing.T) {
	cfg := Defaults().Redis
	cfg.Addr, cfg.Cluster = "127.0.0.1:7001, redis://127.0.0.1:7002", true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c, err := NewRedis(cfg, cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("NewRedis in cluster mode = %T, want *redis.ClusterClient", c)
	}
	o := cc.Options()
	if !slices.Equal(o.Addrs, []string{"127.0.0.1:7001", "127.0.0.1:7002"}) || o.ReadTimeout != cfg.ReadTimeout || o.PoolSize != cfg.PoolSize || o.RouteByLatency {
		t.Errorf("cluster options: addrs %v, read timeout %s, pool %d, route by latency %v", o.Addrs, o.ReadTimeout, o.PoolSize, o.RouteByLatency)
	}
	cfg.Cluster = false
	if c, _ := NewRedis(cfg, "127.0.0.1:7001"); c == nil {
		t.Fatal("NewRedis without cluster mode returned nil")
	} else if _, ok := c.(*redis.Client); !ok {
		t.Errorf("NewRedis without cluster mode = %T, want *redis.Client", c)
	} else {
		c.Close()
	}

	for _, c := range []struct {
		mutate func(*RedisConfig)
		want   string
	}{
		{func(c *RedisConfig) { c.ReplicaAddrs = []string{"127.0.0.1:7003"} }, "redis-replica-addrs: not used with --redis-cluster-mode"},
		{func(c *RedisConfig) { c.DB = 2 }, "redis-db: got 2, a Redis Cluster has only database 0"},
		{func(c *RedisConfig) { c.Addr = "127.0.0.1:7001,redis://127.0.0.1:7002/3" }, "names database 3"},
		{func(c *RedisConfig) { c.Addr = "127.0.0.1:7001,nope" }, `redis-addr: got "nope"`},
		{func(c *RedisConfig) { c.Cluster = false; c.ClusterReadFromReplicas = true }, "redis-cluster-read-from-replicas: needs --redis-cluster-mode"},
	} {
		cfg := Defaults().Redis
		cfg.Addr, cfg.Cluster = "127.0.0.1:7001", true
		c.mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate() = %v, want %q", err, c.want)
		}
	}
}

// TestRedisClusterClientReachesEveryMaster: the cluster client NewRedis
// builds from one seed node finds the test run's whole cluster and writes
// keys of many slots; a command over two slots is refused (CROSSSLOT),
// which is why the subsystems keep such keys in one slot.
func TestRedisClusterClientReachesEveryMaster(t *testing.T) {
	addrs := stacktest.RedisClusterAddrs(t)
	cfg := Defaults().Redis
	cfg.Addr, cfg.Cluster = addrs[0], true
	c, err := NewRedis(cfg, cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prefix := stacktest.Namespace(t)
	defer stacktest.DeleteKeys(context.Background(), c, prefix+"*")
	for i := range 30 {
		if err := c.Set(ctx, fmt.Sprintf("%s:%d", prefix, i), i, time.Minute).Err(); err != nil {
			t.Fatalf("SET through the cluster client: %v", err)
		}
	}
	var masters, keys atomic.Int64
	err = c.(*redis.ClusterClient).ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		masters.Add(1)
		n, err := m.Keys(ctx, prefix+":*").Result()
		keys.Add(int64(len(n)))
		return err
	})
	if err != nil || masters.Load() < 3 || keys.Load() != 30 {
		t.Fatalf("ForEachMaster: %d masters holding %d of the 30 keys (%v); want at least 3 masters holding all", masters.Load(), keys.Load(), err)
	}
	err = c.MGet(ctx, prefix+":0", prefix+":1", prefix+":2").Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Errorf("MGET over keys of several slots = %v, want CROSSSLOT", err)
	}
	var ue *UnavailableError
	if errors.As(err, &ue) {
		t.Errorf("CROSSSLOT is a programming error, not an unavailable Redis: %v", err)
	}
}
