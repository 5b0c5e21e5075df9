// Package failovertest gives the tests that kill a Redis Cluster master
// under load (the event log's, the link store's, the feed's) a cluster of
// their own and the failover itself: kill a master, wait for its replica to
// take over, start the old master again.
package failovertest

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/localstack"
)

// Cluster is a Redis Cluster of one test's own (3 masters, one
// replica each; the run's shared cluster is left alone), for tests that
// kill a master under load and count what survived.
type Cluster struct {
	State  *localstack.State
	Client *redis.ClusterClient // short timeouts: a dead master fails fast
}

// New starts the cluster in a temporary directory of t's and
// stops it when t ends.
func New(t *testing.T) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("kills a Redis master and waits for the failover (~15 s)")
	}
	dir := t.TempDir()
	ctx := context.Background()
	st, err := localstack.UpRedisCluster(ctx, dir, localstack.RedisClusterSpec{Masters: 3, ReplicasPerMaster: 1}, 2*time.Minute)
	if err != nil {
		testenv.Unavailable(t, err)
	}
	t.Cleanup(func() {
		if err := localstack.Down(dir, io.Discard); err != nil {
			t.Errorf("stop the test's cluster: %v", err)
		}
	})
	cfg := backend.Defaults().Redis
	cfg.Addr, cfg.Cluster = strings.Join(st.RedisClusterAddrs, ","), true
	cfg.DialTimeout, cfg.ReadTimeout, cfg.WriteTimeout = 500*time.Millisecond, 2*time.Second, 2*time.Second
	rdb, err := backend.NewRedis(cfg, cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("backend.NewRedis in cluster mode returned a %T", rdb)
	}
	return &Cluster{State: st, Client: cc}
}

// Failover SIGKILLs the first node (a master, as redis-cli formed the
// cluster), waits until its replica is a master and sees every slot served,
// then starts the killed node again (it rejoins as a replica, so WAIT 1 can
// be met again on that shard). It returns the replica's address and how
// long the takeover took.
func (c *Cluster) Failover(ctx context.Context) (replicaAddr string, tookOver time.Duration, err error) {
	victim := c.State.Processes[0].Component
	victimAddr := c.State.RedisClusterAddrs[0]
	vc := redis.NewClient(&redis.Options{Addr: victimAddr})
	role, err := vc.Do(ctx, "ROLE").Slice()
	vc.Close()
	if err != nil || len(role) < 3 || role[0] != "master" {
		return "", 0, fmt.Errorf("ROLE of %s = %v, %v; want a master with a replica to kill", victimAddr, role, err)
	}
	// ROLE of a master: "master", offset, [[ip, port, offset], ...].
	replicas, _ := role[2].([]any)
	var first []any
	if len(replicas) > 0 {
		first, _ = replicas[0].([]any)
	}
	if len(first) < 2 {
		return "", 0, fmt.Errorf("ROLE of %s lists no replica: %v", victimAddr, role)
	}
	replicaAddr = fmt.Sprint(first[0]) + ":" + fmt.Sprint(first[1])
	rc := redis.NewClient(&redis.Options{Addr: replicaAddr, ReadTimeout: time.Second})
	defer rc.Close()

	if err := c.State.Kill(victim); err != nil {
		return replicaAddr, 0, err
	}
	killedAt := time.Now()
	for {
		role, err := rc.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			info, err := rc.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
		}
		if time.Since(killedAt) > time.Minute {
			return replicaAddr, 0, fmt.Errorf("the replica %s of the killed master %s did not take over in a minute", replicaAddr, victimAddr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	tookOver = time.Since(killedAt)
	return replicaAddr, tookOver, c.State.RestartRedisClusterNode(ctx, victim)
}
