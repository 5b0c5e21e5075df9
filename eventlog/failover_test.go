package eventlog

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/localstack"
)

// TestNoAcknowledgedEventIsLostWhenAMasterDies appends events under a steady
// load with WaitReplicas 1 to a Redis Cluster of its own (3 masters, one
// replica each; the shared test cluster is left alone), SIGKILLs a master,
// lets its replica take over, starts the killed node again (it rejoins as a
// replica, so WAIT 1 can be met again on that shard) and then reads back
// every event Append acknowledged: none may be missing. While the cluster
// fails over, an append must fail as Redis being unavailable (503 with
// Retry-After), never with another error and never silently.
func TestNoAcknowledgedEventIsLostWhenAMasterDies(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a Redis master and waits for the failover (~15 s)")
	}
	dir := t.TempDir()
	ctx := context.Background()
	st, err := localstack.UpRedisCluster(ctx, dir, localstack.RedisClusterSpec{Masters: 3, ReplicasPerMaster: 1}, 2*time.Minute)
	if err != nil {
		testenv.Unavailable(t, err)
	}
	defer func() {
		if err := localstack.Down(dir, io.Discard); err != nil {
			t.Errorf("stop the test's cluster: %v", err)
		}
	}()
	cfg := backend.Defaults().Redis
	cfg.Addr, cfg.Cluster = strings.Join(st.RedisClusterAddrs, ","), true
	cfg.DialTimeout, cfg.ReadTimeout, cfg.WriteTimeout = 500*time.Millisecond, 2*time.Second, 2*time.Second
	rdb, err := backend.NewRedis(cfg, cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	lcfg := Defaults()
	lcfg.Prefix, lcfg.Partitions = "failover:", 6
	lcfg.WaitReplicas, lcfg.WaitTimeout = 1, time.Second
	l, err := New(lcfg, rdb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	// The victim: the first node, a master as redis-cli formed the cluster.
	victim := st.Processes[0].Component
	victimAddr := st.RedisClusterAddrs[0]
	victimClient := redis.NewClient(&redis.Options{Addr: victimAddr})
	role, err := victimClient.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) < 3 || role[0] != "master" {
		t.Fatalf("ROLE of %s = %v, %v; want a master with a replica to kill", victimAddr, role, err)
	}
	// ROLE of a master: "master", offset, [[ip, port, offset], ...].
	replicas, _ := role[2].([]any)
	first, _ := replicas[0].([]any)
	if len(first) < 2 {
		t.Fatalf("ROLE of %s lists no replica: %v", victimAddr, role)
	}
	replicaAddr := first[0].(string) + ":" + first[1].(string)
	victimClient.Close()
	replica := redis.NewClient(&redis.Options{Addr: replicaAddr, ReadTimeout: time.Second})
	defer replica.Close()

	type ack struct{ stream, id string }
	var (
		mu          sync.Mutex
		acked       []ack
		unavailable int
		unclear     []error
	)
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			m := 20
			for shop := int64(w)*1_000_000 + 1; ; shop++ {
				select {
				case <-stop:
					return
				default:
				}
				ev := catalog.ShopUpsertEvent(shop, 1, &catalog.ShopFields{DeliveryMinutes: &m})
				actx, cancel := context.WithTimeout(ctx, 5*time.Second)
				ids, err := l.Append(actx, []catalog.Event{ev})
				cancel()
				mu.Lock()
				switch _, isUnavailable := api.IsUnavailable(err); {
				case err == nil:
					acked = append(acked, ack{l.StreamKey(l.Partition(shop)), ids[0]})
				case isUnavailable:
					unavailable++
				default:
					unclear = append(unclear, err)
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(50 * time.Millisecond) // a client backing off
				} else {
					time.Sleep(2 * time.Millisecond)
				}
			}
		})
	}
	waitUntil := func(what string, limit time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !cond() {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("timed out after %s waiting for %s", limit, what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitUntil("200 acknowledged appends before the kill", 30*time.Second, func() bool { return ackedCount() >= 200 })
	before := ackedCount()
	if err := st.Kill(victim); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	// The victim's replica takes over: it is a master and the cluster,
	// as it sees it, serves every slot again.
	waitUntil("the victim's replica "+replicaAddr+" to take over", 60*time.Second, func() bool {
		role, err := replica.Do(ctx, "ROLE").Slice()
		if err != nil || len(role) == 0 || role[0] != "master" {
			return false
		}
		info, err := replica.ClusterInfo(ctx).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	})
	failedOver := time.Since(killedAt)
	if err := st.RestartRedisClusterNode(ctx, victim); err != nil {
		t.Fatal(err)
	}
	afterRestart := ackedCount()
	waitUntil("300 acknowledged appends after the old master rejoined", 60*time.Second, func() bool { return ackedCount() >= afterRestart+300 })
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d appends acknowledged (%d before the kill), %d refused as unavailable; %s took over after %s", len(acked), before, unavailable, replicaAddr, failedOver.Round(100*time.Millisecond))
	for _, err := range unclear[:min(len(unclear), 5)] {
		t.Errorf("an append failed with an error that is not Redis being unavailable (it would not be a 503): %v", err)
	}
	if unavailable == 0 {
		t.Errorf("no append was refused while the master was dead for %s: the failover window was not exercised", failedOver)
	}
	// Every acknowledged append, read back by id from today's masters.
	lost := 0
	for start := 0; start < len(acked); start += 500 {
		batch := acked[start:min(start+500, len(acked))]
		pipe := rdb.Pipeline()
		cmds := make([]*redis.XMessageSliceCmd, len(batch))
		for i, a := range batch {
			cmds[i] = pipe.XRangeN(ctx, a.stream, a.id, a.id, 1)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("read back acknowledged appends: %v", err)
		}
		for i, c := range cmds {
			if len(c.Val()) != 1 {
				lost++
				if lost <= 5 {
					t.Errorf("acknowledged append %s %s is missing after the failover", batch[i].stream, batch[i].id)
				}
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged appends lost", lost, len(acked))
	}
}
