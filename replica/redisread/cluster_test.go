package redisread

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/internal/rediswait"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/replica"
)

// replicaGetCalls sums the GET calls every replica of the cluster executed
// (INFO commandstats), to see where reads went from the servers' side.
func replicaGetCalls(t *testing.T, cc *redis.ClusterClient) int64 {
	t.Helper()
	var total int64
	err := cc.ForEachSlave(context.Background(), func(ctx context.Context, r *redis.Client) error {
		info, err := r.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		total += int64(parseCommandStats(info, nil).calls - parseCommandStats(info, []string{"get"}).calls)
		return nil
	})
	if err != nil {
		t.Fatalf("INFO commandstats of the replicas: %v", err)
	}
	return total
}

// TestClusterReadsGoToEachShardsReplica writes keys over every slot of the
// test run's cluster (3 masters, one replica each), waits until a replica
// of each has them, and reads them through Cluster's client: one command, a
// pipeline over every shard with a missing key and a keyless command. Every
// reply must be right, every shard's replica must have served reads and
// none may have fallen back to a master; the replicas' own command counts
// must have grown by the GETs sent.
func TestClusterReadsGoToEachShardsReplica(t *testing.T) {
	cc := stacktest.RedisCluster(t)
	ctx := context.Background()
	ns := stacktest.Namespace(t)
	t.Cleanup(func() { stacktest.DeleteKeys(context.Background(), cc, ns+":*") })
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s:k%d", ns, i)
	}
	if err := rediswait.Pipelines(ctx, cc, 1, 5*time.Second, keys, func(pipe redis.Pipeliner, i int) {
		pipe.Set(ctx, keys[i], "v"+keys[i], time.Hour)
	}); err != nil {
		t.Fatalf("write the keys with WAIT 1: %v", err)
	}

	rc := backend.Defaults().Redis
	cl, err := OpenCluster(ctx, cc, rc, Config{Policy: replica.Config{Policy: replica.PolicyC3}, Path: "test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	before := replicaGetCalls(t, cc)
	rdb := cl.Client()
	if got, err := rdb.Get(ctx, keys[0]).Result(); err != nil || got != "v"+keys[0] {
		t.Fatalf("GET %s = %q, %v", keys[0], got, err)
	}
	pipe := rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		gets[i] = pipe.Get(ctx, k)
	}
	missing := pipe.Get(ctx, ns+":missing")
	ping := pipe.Ping(ctx)
	if _, err := pipe.Exec(ctx); !errors.Is(err, redis.Nil) {
		t.Fatalf("pipeline Exec = %v, want redis.Nil (the missing key's)", err)
	}
	for i, g := range gets {
		if g.Val() != "v"+keys[i] || g.Err() != nil {
			t.Fatalf("GET %s in the pipeline = %q, %v", keys[i], g.Val(), g.Err())
		}
	}
	if !errors.Is(missing.Err(), redis.Nil) {
		t.Errorf("GET of a missing key = %q, %v; want redis.Nil", missing.Val(), missing.Err())
	}
	if ping.Val() != "PONG" {
		t.Errorf("PING through the cluster client = %q, %v", ping.Val(), ping.Err())
	}
	if served := replicaGetCalls(t, cc) - before; served < int64(len(keys)+2) {
		t.Errorf("the replicas executed %d GETs, want at least the %d sent", served, len(keys)+2)
	}
	st := cl.Status()
	if len(st.Shards) != 3 {
		t.Fatalf("%d shards, want 3: %+v", len(st.Shards), st)
	}
	for _, s := range st.Shards {
		if len(s.Replicas) != 1 || s.Replicas[0].Chosen == 0 || s.PrimaryReads != 0 {
			t.Errorf("shard of %s: replicas %+v, %d reads on the master; want its one replica to serve every read", s.Primary, s.Replicas, s.PrimaryReads)
		}
	}
	if st.ClusterFallbacks != 1 {
		t.Errorf("%d commands went to the cluster client, want 1 (the PING)", st.ClusterFallbacks)
	}
}

// TestClusterReadsSurviveAnUnknownShard removes a shard from the topology
// Cluster knows, as a failover would make its master unknown: its reads go
// to the cluster client (right answers, counted), and the refresh they
// trigger brings the shard back.
func TestClusterReadsSurviveAnUnknownShard(t *testing.T) {
	cc := stacktest.RedisCluster(t)
	ctx := context.Background()
	ns := stacktest.Namespace(t)
	t.Cleanup(func() { stacktest.DeleteKeys(context.Background(), cc, ns+":*") })
	key := ns + ":k"
	if err := cc.Set(ctx, key, "v", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	cl, err := OpenCluster(ctx, cc, backend.Defaults().Redis, Config{Path: "test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	m, err := cc.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	master := m.Options().Addr
	cl.mu.Lock()
	delete(cl.shards, master)
	cl.mu.Unlock()
	if got, err := cl.Client().Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET through an unknown shard = %q, %v", got, err)
	}
	if n := cl.Status().ClusterFallbacks; n != 1 {
		t.Errorf("%d commands went to the cluster client, want 1", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		cl.mu.RLock()
		_, back := cl.shards[master]
		cl.mu.RUnlock()
		if back {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shard of %s did not come back within 10 s of the read that missed it", master)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
