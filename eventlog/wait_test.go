package eventlog

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/stacktest"
)

// TestAppendWaitsForAReplicaOnTheCluster: with WaitReplicas 1 every
// acknowledged append of events spread over the masters is on a replica of
// its stream's master when Append returns.
func TestAppendWaitsForAReplicaOnTheCluster(t *testing.T) {
	cc := stacktest.RedisCluster(t)
	l := newTestLogOn(t, cc)
	l.cfg.WaitReplicas, l.cfg.WaitTimeout = 1, 5*time.Second
	ctx := context.Background()
	var events []catalog.Event
	for shop := int64(1); shop <= 30; shop++ {
		m := int(shop)
		events = append(events, catalog.ShopUpsertEvent(shop, 2, &catalog.ShopFields{DeliveryMinutes: &m}))
	}
	ids, err := l.Append(ctx, events)
	if err != nil || len(ids) != len(events) {
		t.Fatalf("Append with WAIT 1 = %d ids, %v", len(ids), err)
	}
	// Each stream's entries, read on the replicas (READONLY on the same
	// connection): the replica of the stream's master answers, the others
	// redirect.
	want := map[string]int64{}
	for _, ev := range events {
		want[l.StreamKey(l.Partition(ev.AggregateID()))]++
	}
	var mu sync.Mutex
	got := map[string]int64{}
	err = cc.ForEachSlave(ctx, func(ctx context.Context, r *redis.Client) error {
		for stream := range want {
			pipe := r.Pipeline()
			pipe.ReadOnly(ctx)
			n := pipe.XLen(ctx, stream)
			_, _ = pipe.Exec(ctx)
			if n.Err() == nil {
				mu.Lock()
				got[stream] = max(got[stream], n.Val())
				mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for stream, n := range want {
		if got[stream] != n {
			t.Errorf("a replica holds %d entries of %s right after Append, want %d", got[stream], stream, n)
		}
	}
}

// TestAppendWithoutEnoughReplicasIsA503: a Redis without replicas cannot
// acknowledge WaitReplicas 1: Append fails with a NotReplicatedError that
// names Redis as unavailable, and POST /v1/events answers 503 with
// Retry-After, never 202.
func TestAppendWithoutEnoughReplicasIsA503(t *testing.T) {
	rdb := stacktest.SingleRedis(t)
	if info, err := rdb.Info(context.Background(), "replication").Result(); err != nil || !strings.Contains(info, "connected_slaves:0") {
		t.Skipf("the test stack's single Redis has replicas (or INFO failed: %v); this test needs one without", err)
	}
	l := newTestLogOn(t, rdb)
	l.cfg.WaitReplicas, l.cfg.WaitTimeout = 1, 50*time.Millisecond
	m := 20
	_, err := l.Append(context.Background(), []catalog.Event{catalog.ShopUpsertEvent(1, 2, &catalog.ShopFields{DeliveryMinutes: &m})})
	var nr *NotReplicatedError
	if !errors.As(err, &nr) || nr.Got != 0 || nr.Want != 1 {
		t.Fatalf("Append with WAIT 1 and no replica = %v, want a NotReplicatedError (0 of 1)", err)
	}
	if what, ok := api.IsUnavailable(err); !ok || what != "redis" {
		t.Errorf("IsUnavailable(%v) = %q, %v; want redis, true", err, what, ok)
	}
	s := newTestServer(t, l)
	rec := post(s, `{"type":"shop","id":5,"version":2,"op":"upsert","fields":{"delivery_minutes":35}}`)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("POST /v1/events without a replica: status %d, Retry-After %q: %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
}

func TestWaitConfigIsChecked(t *testing.T) {
	for _, c := range []struct {
		replicas int
		timeout  time.Duration
		want     string
	}{
		{-1, time.Second, "eventlog-wait-replicas"},
		{9, time.Second, "eventlog-wait-replicas"},
		{1, 0, "eventlog-wait-timeout"},
		{1, 2 * time.Minute, "eventlog-wait-timeout"},
	} {
		cfg := Defaults()
		cfg.WaitReplicas, cfg.WaitTimeout = c.replicas, c.timeout
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(wait %d, %s) = %v, want %q", c.replicas, c.timeout, err, c.want)
		}
	}
	cfg := Defaults()
	cfg.WaitReplicas = 1
	if err := cfg.Validate(); err != nil {
		t.Errorf("WAIT 1 with the default timeout: %v", err)
	}
}
