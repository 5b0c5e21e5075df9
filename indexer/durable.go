package indexer

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
)

// With an async translog (the hot layout's default) a bulk answers before
// its operations are fsynced, so an acknowledged bulk can still be lost:
// OpenSearch killed loses the translog buffer, and a node restarted or a
// copy promoted starts a new primary term without the operations since the
// last fsync. The worker therefore acknowledges an event-log entry only
// after a flush that follows its bulk (a Lucene commit on every copy), and
// only when no primary term of the layout's indices changed between the
// bulk and the flush. When one did, it applies every entry it has not
// acknowledged again, from the event log's pending list and with its held
// states dropped (they may hold what was lost); re-applying is idempotent,
// because every document carries its external version.

// ackQueue holds one partition's entries that were applied but not yet
// made durable. The partition's goroutine adds to it; the flush loop takes
// from it and acknowledges, or asks for a replay.
type ackQueue struct {
	mu       sync.Mutex
	ids      []string
	replayOn bool // a replay was asked for and has not started yet
}

func (q *ackQueue) add(ids []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ids = append(q.ids, ids...)
}

// take returns the applied entries and empties the queue; nothing while a
// replay is asked for (those entries are applied again first).
func (q *ackQueue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.replayOn {
		return nil
	}
	ids := q.ids
	q.ids = nil
	return ids
}

// putBack returns entries that take handed out and that could not be
// acknowledged, to be tried at the next flush.
func (q *ackQueue) putBack(ids []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.replayOn {
		q.ids = append(ids, q.ids...)
	}
}

// askReplay asks the partition to apply its unacknowledged entries again.
func (q *ackQueue) askReplay() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.replayOn = true
	q.ids = nil
}

// startReplay reports whether a replay was asked for, and if so forgets the
// applied entries: the partition reads them again from its pending list.
func (q *ackQueue) startReplay() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.replayOn {
		return false
	}
	q.replayOn, q.ids = false, nil
	return true
}

// confirmDurable is the flush loop of a worker whose layout has an async
// translog: every FlushEvery, if any partition applied entries, it flushes
// the layout's indices, checks the primary terms against those read before
// the entries were applied, and then acknowledges the entries, or asks
// every partition to replay. terms are the primary terms read before any
// partition started.
func (w *Worker) confirmDurable(ctx context.Context, consumers []*eventlog.Consumer, queues []*ackQueue, terms map[string]int64) {
	t := time.NewTicker(w.cfg.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		taken := make([][]string, len(queues))
		n := 0
		for i, q := range queues {
			taken[i] = q.take()
			n += len(taken[i])
		}
		if n == 0 {
			continue
		}
		now, err := w.Indexer.Flush(ctx)
		if err != nil {
			for i, q := range queues {
				q.putBack(taken[i])
			}
			if ctx.Err() == nil {
				w.log.Warn("flush before acknowledging failed; the applied events stay pending", "entries", n, "err", err)
			}
			continue
		}
		if !maps.Equal(now, terms) {
			// Operations since the last flush may be gone; everything
			// unacknowledged is applied again (its writes then follow
			// these terms).
			w.log.Warn("a primary changed before the flush confirmed the applied events; applying the unacknowledged events again",
				"entries", n, "terms_before", terms, "terms_now", now)
			w.m.replays.WithLabelValues(string(w.kind)).Inc()
			terms = now
			for _, q := range queues {
				q.askReplay()
			}
			continue
		}
		for i, c := range consumers {
			if err := c.Ack(ctx, taken[i]...); err != nil {
				queues[i].putBack(taken[i])
				w.log.Warn("acknowledging durable events failed; trying again at the next flush", "stream", c.Stream(), "err", err)
			}
		}
	}
}

// Flush flushes the layout's indices (a Lucene commit and a translog fsync
// on every started copy) and returns their primary terms, read after it.
func (ix *Indexer) Flush(ctx context.Context) (map[string]int64, error) {
	aliases := strings.Join(ix.cfg.Layout.Aliases(ix.kind), ",")
	var resp struct {
		Shards struct {
			Failed int `json:"failed"`
		} `json:"_shards"`
	}
	if err := ix.os.Do(ctx, http.MethodPost, "/"+aliases+"/_flush", nil, &resp); err != nil {
		return nil, err
	}
	if resp.Shards.Failed > 0 {
		return nil, fmt.Errorf("flush of %s: %d shard copies failed", aliases, resp.Shards.Failed)
	}
	return primaryTerms(ctx, ix.os, aliases)
}

// primaryTerms returns the primary term of every shard of the indices
// behind aliases (comma-separated), keyed "index/shard".
func primaryTerms(ctx context.Context, os *osapi.Client, aliases string) (map[string]int64, error) {
	var resp struct {
		Metadata struct {
			Indices map[string]struct {
				PrimaryTerms map[string]int64 `json:"primary_terms"`
			} `json:"indices"`
		} `json:"metadata"`
	}
	path := "/_cluster/state/metadata/" + aliases + "?filter_path=metadata.indices.*.primary_terms"
	if err := os.Do(ctx, http.MethodGet, path, nil, &resp); err != nil {
		return nil, fmt.Errorf("primary terms of %s: %w", aliases, err)
	}
	terms := make(map[string]int64)
	for index, md := range resp.Metadata.Indices {
		for shard, term := range md.PrimaryTerms {
			terms[index+"/"+shard] = term
		}
	}
	if len(terms) == 0 {
		return nil, fmt.Errorf("primary terms of %s: none in the cluster state", aliases)
	}
	return terms, nil
}

// asyncTranslog reports whether the worker must hold its acknowledgements
// until a flush: the layout is configured with an async translog, or an
// index behind its aliases has one (made so by hand or by an older
// configuration).
func (w *Worker) asyncTranslog(ctx context.Context) (bool, error) {
	if w.cfg.Layout.AsyncTranslog(w.kind) {
		return true, nil
	}
	aliases := strings.Join(w.cfg.Layout.Aliases(w.kind), ",")
	var resp map[string]struct {
		Settings map[string]string `json:"settings"`
	}
	if err := w.os.Do(ctx, http.MethodGet, "/"+aliases+"/_settings/index.translog.durability?flat_settings=true", nil, &resp); err != nil {
		return false, fmt.Errorf("translog durability of %s: %w", aliases, err)
	}
	for _, r := range resp {
		if r.Settings["index.translog.durability"] == layout.DurabilityAsync {
			return true, nil
		}
	}
	return false, nil
}
