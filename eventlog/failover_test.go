package eventlog

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/failovertest"
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
	ctx := context.Background()
	cl := failovertest.New(t)
	rdb := cl.Client
	lcfg := Defaults()
	lcfg.Prefix, lcfg.Partitions = "failover:", 6
	lcfg.WaitReplicas, lcfg.WaitTimeout = 1, time.Second
	l, err := New(lcfg, rdb, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

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
	replicaAddr, failedOver, err := cl.Failover(ctx)
	if err != nil {
		close(stop)
		wg.Wait()
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
