package linkstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/internal/failovertest"
)

// TestNoAcknowledgedClickIsLostWhenAMasterDies creates clicks under a
// steady load with WaitReplicas 1 on a Redis Cluster of its own, SIGKILLs a
// master, lets its replica take over and starts the old master again, then
// reads back every click Create acknowledged: none may be missing. While
// the cluster fails over a create must fail as Redis being unavailable (503
// with Retry-After) or find that an earlier, refused attempt stored the
// click (ErrExists), never anything else.
func TestNoAcknowledgedClickIsLostWhenAMasterDies(t *testing.T) {
	ctx := context.Background()
	cl := failovertest.New(t)
	s := newTestStore(t, cl.Client, "failover:", StoreConfig{Codec: CodecProto, WaitReplicas: 1, WaitTimeout: time.Second})

	recs := liveRecords(testSeed, 40_000)
	var (
		mu          sync.Mutex
		acked       []int // indexes into recs
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
	const writers = 4
	for w := range writers {
		wg.Go(func() {
			for i := w; i < len(recs); {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err := s.Create(cctx, &recs[i])
				cancel()
				mu.Lock()
				switch _, isUnavailable := api.IsUnavailable(err); {
				case err == nil, errors.Is(err, ErrExists): // stored by a refused attempt: this retry acknowledges it
					acked = append(acked, i)
				case isUnavailable:
					unavailable++
				default:
					unclear = append(unclear, err)
				}
				mu.Unlock()
				if err != nil && !errors.Is(err, ErrExists) {
					time.Sleep(50 * time.Millisecond) // a client backing off, then retrying the same click
					continue
				}
				i += writers
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("timed out after a minute waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitUntil("200 acknowledged clicks before the kill", func() bool { return ackedCount() >= 200 })
	before := ackedCount()
	replicaAddr, tookOver, err := cl.Failover(ctx)
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	afterRestart := ackedCount()
	waitUntil("300 acknowledged clicks after the old master rejoined", func() bool { return ackedCount() >= afterRestart+300 })
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d clicks acknowledged (%d before the kill), %d refused as unavailable; %s took over after %s", len(acked), before, unavailable, replicaAddr, tookOver.Round(100*time.Millisecond))
	for _, err := range unclear[:min(len(unclear), 5)] {
		t.Errorf("a create failed with an error that is not Redis being unavailable (it would not be a 503): %v", err)
	}
	if unavailable == 0 {
		t.Errorf("no create was refused while the master was dead for %s: the failover window was not exercised", tookOver)
	}
	lost := 0
	for _, i := range acked {
		got, err := s.Get(ctx, recs[i].ClickID)
		if err != nil || got.Record == nil || got.Record.ClickID != recs[i].ClickID {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged click %s after the failover: %v", recs[i].ClickID, err)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged clicks lost", lost, len(acked))
	}
}
