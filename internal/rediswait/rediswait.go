// Package rediswait runs Redis writes that must survive the loss of their
// primary: it pipelines them on the primary that owns their keys and
// follows them with a WAIT on the same connection, so it returns only once
// that many replicas have every one of them.
//
// WAIT counts the replicas that acknowledged the replication offset of the
// calling connection's last write, so the writes and their WAIT must share a
// connection: one single-server pipeline per primary. On a Redis Cluster the
// writes are grouped by the master of their key's slot and each group runs
// on that master's own client (ClusterClient.MasterForKey), its WAIT last.
// The event log (appends), the link store (clicks) and the feed (fan-out)
// use it.
package rediswait

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/api"
)

// Pipelines adds the commands of each item i (add(pipe, i), in order) to
// one pipeline per primary owning keys[i], appends WAIT want timeout to
// each, and runs them. An answer such as redis.Nil is not an error here: the
// caller reads its own commands. Fewer than want replicas within timeout,
// or a cluster whose slot map moved under the writes (a MOVED, a dead
// master: a failover), is a *NotReplicatedError; the slot map is then
// reloaded for the next call. A primary that cannot be reached returns its
// connection error. Items already written stay written: the caller's writes
// must be idempotent, since its client retries them.
func Pipelines(ctx context.Context, rdb redis.Cmdable, want int, timeout time.Duration, keys []string, add func(pipe redis.Pipeliner, i int)) error {
	if len(keys) == 0 {
		return nil
	}
	cc, cluster := rdb.(*redis.ClusterClient)
	if !cluster {
		return pipelineAndWait(ctx, rdb, want, timeout, keys, nil, add)
	}
	// Group by master, keeping the order within a group (a stream's
	// appends stay in order).
	var masters []*redis.Client
	groups := map[*redis.Client][]int{}
	for i, key := range keys {
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return &NotReplicatedError{Key: key, Want: want, Err: err}
		}
		if _, ok := groups[m]; !ok {
			masters = append(masters, m)
		}
		groups[m] = append(groups[m], i)
	}
	for _, m := range masters {
		err := pipelineAndWait(ctx, m, want, timeout, keys, groups[m], add)
		if err == nil {
			continue
		}
		var nr *NotReplicatedError
		if _, unavailable := api.IsUnavailable(err); !unavailable && !errors.As(err, &nr) {
			// A MOVED or a refused connection: the slot map changed (a
			// failover); the next call asks the cluster again.
			cc.ReloadState(ctx)
			err = &NotReplicatedError{Key: keys[groups[m][0]], Want: want, Err: err}
		}
		return err
	}
	return nil
}

// pipelineAndWait runs the items which (every one when nil) and a WAIT in
// one pipeline on rc, a single server.
func pipelineAndWait(ctx context.Context, rc redis.Cmdable, want int, timeout time.Duration, keys []string, which []int, add func(redis.Pipeliner, int)) error {
	pipe, ok := rc.Pipeline().(*redis.Pipeline)
	if !ok {
		return fmt.Errorf("rediswait: WAIT needs a single-server pipeline, got %T", rc.Pipeline())
	}
	if which == nil {
		for i := range keys {
			add(pipe, i)
		}
	} else {
		for _, i := range which {
			add(pipe, i)
		}
	}
	// Wait (not Do("WAIT")): go-redis extends the read deadline by the WAIT
	// timeout.
	wait := pipe.Wait(ctx, want, timeout)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if got := wait.Val(); got < int64(want) {
		first := 0
		if which != nil {
			first = which[0]
		}
		return &NotReplicatedError{Key: keys[first], Want: want, Got: got, Timeout: timeout}
	}
	return nil
}

// NotReplicatedError: writes reached their primary but not Want replicas
// within Timeout (Got did), or the cluster's slot map was moving (Err). They
// were not acknowledged: the caller answers 503 with Retry-After
// (api.BackendUnavailable) or retries; the writes may be stored.
type NotReplicatedError struct {
	Key     string // the first key of the unacknowledged group
	Want    int
	Got     int64
	Timeout time.Duration
	Err     error
}

func (e *NotReplicatedError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("redis: writes to %s not acknowledged by %d replica(s): %v", e.Key, e.Want, e.Err)
	}
	return fmt.Sprintf("redis: writes to %s reached %d of %d replica(s) within %s", e.Key, e.Got, e.Want, e.Timeout)
}

func (e *NotReplicatedError) Unwrap() error { return e.Err }

// UnavailableBackend names Redis (api.BackendUnavailable: 503 with
// Retry-After).
func (e *NotReplicatedError) UnavailableBackend() string { return "redis" }
