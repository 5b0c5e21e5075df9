package indexer

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
)

// Run is the indexer worker of `baedal serve`: for every configured layout it
// makes sure the indices exist and consumes every owned partition (one
// goroutine per layout and partition) until ctx is cancelled. It returns nil
// on cancellation, or the first error that stops a partition.
func Run(ctx context.Context, cfg Config, clients *backend.Clients, log *slog.Logger, reg prometheus.Registerer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	evlog, err := eventlog.New(cfg.Log, clients.Redis, log, reg)
	if err != nil {
		return err
	}
	// Event logs written before the keys had hash tags move to them once.
	if _, err := evlog.MigrateLegacyKeys(ctx); err != nil {
		return err
	}
	os := osapi.New(clients.OpenSearch)
	var workers []*Worker
	for _, k := range cfg.Layouts {
		w, err := NewWorker(cfg, k, evlog, os, log, reg)
		if err != nil {
			return err
		}
		workers = append(workers, w)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(workers))
	for _, w := range workers {
		go func() { errs <- w.Run(ctx) }()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// Worker feeds one layout from the event log: the owned partitions, one
// goroutine each, all sharing one Indexer (partitions hold disjoint shops).
type Worker struct {
	cfg     Config
	kind    layout.Kind
	log     *slog.Logger
	evlog   *eventlog.Log
	os      *osapi.Client
	Indexer *Indexer
	m       *metrics
	// OnFreshness, if set, also receives every freshness sample (benchmarks).
	OnFreshness func(time.Duration)
	// OnBatch, if set, is called after each batch was written (and
	// acknowledged, unless acknowledgements wait for a flush).
	OnBatch func(partition int, st Stats)
}

// NewWorker returns the worker of one layout. reg may be nil.
func NewWorker(cfg Config, kind layout.Kind, evlog *eventlog.Log, os *osapi.Client, log *slog.Logger, reg prometheus.Registerer) (*Worker, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ix, err := New(cfg, kind, os, log, reg)
	if err != nil {
		return nil, err
	}
	return &Worker{cfg: cfg, kind: kind, log: log.With("layout", string(kind)), evlog: evlog, os: os, Indexer: ix, m: ix.m}, nil
}

// Run ensures the layout's indices and consumes the owned partitions until
// ctx is cancelled (then it returns nil).
func (w *Worker) Run(ctx context.Context) error {
	if err := w.cfg.Layout.EnsureIndices(ctx, w.os, w.kind); err != nil {
		return err
	}
	parts := w.cfg.OwnedPartitions()
	consumers := make([]*eventlog.Consumer, len(parts))
	for i, p := range parts {
		consumers[i] = w.evlog.Consumer(GroupName(w.kind), p)
		if err := consumers[i].EnsureGroup(ctx); err != nil {
			return err
		}
	}
	async, err := w.asyncTranslog(ctx)
	if err != nil {
		return err
	}
	// With an async translog, acknowledgements wait for a flush (durable.go);
	// the primary terms are read before anything is applied.
	var queues []*ackQueue
	var terms map[string]int64
	if async {
		if terms, err = primaryTerms(ctx, w.os, strings.Join(w.cfg.Layout.Aliases(w.kind), ",")); err != nil {
			return err
		}
		queues = make([]*ackQueue, len(consumers))
		for i := range queues {
			queues[i] = &ackQueue{}
		}
	}
	w.log.Info("indexer started", "partitions", parts, "batch_size", w.cfg.BatchSize, "batch_wait", w.batchWait(), "ack_after_flush", async)
	var wg sync.WaitGroup
	errs := make(chan error, len(consumers)+1)
	for i, c := range consumers {
		var q *ackQueue
		if async {
			q = queues[i]
		}
		wg.Go(func() { errs <- w.consume(ctx, c, q) })
	}
	if async {
		wg.Go(func() { w.confirmDurable(ctx, consumers, queues, terms) })
	}
	if w.kind == layout.Hot && w.cfg.WorkerIndex == 0 {
		wg.Go(func() { w.purgeHotTombstones(ctx) })
	}
	wg.Go(func() { w.sampleLag(ctx, consumers) })
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// consume is the loop of one partition: first its own pending entries (a
// previous run's unacknowledged batches), then entries idle at other
// consumer names, then new entries. A batch that fails is kept in memory and
// tried again after a backoff, so an OpenSearch outage does not count
// deliveries. With acks (async translog) applied entries are acknowledged
// by the flush loop, which may ask for a replay: the held states are
// dropped and the pending entries read again from the oldest.
func (w *Worker) consume(ctx context.Context, c *eventlog.Consumer, acks *ackQueue) error {
	log := w.log.With("stream", c.Stream())
	pendingMode, cursor := true, "0"
	var lastClaim time.Time
	var carry []eventlog.Entry
	failures := 0
	fresh := &freshnessProbe{w: w}
	for ctx.Err() == nil {
		if acks != nil && acks.startReplay() {
			w.Indexer.Forget()
			pendingMode, cursor, carry = true, "0", nil
			log.Info("applying the unacknowledged events again")
		}
		entries := carry
		var err error
		if entries == nil && pendingMode {
			entries, err = c.ReadPending(ctx, cursor, w.cfg.BatchSize)
			switch {
			case err == nil && len(entries) == 0:
				pendingMode = false
			case err == nil:
				cursor = entries[len(entries)-1].ID
			}
		}
		if err == nil && entries == nil && time.Since(lastClaim) > w.cfg.ClaimIdle/2 {
			lastClaim = time.Now()
			entries, err = c.Claim(ctx, w.cfg.ClaimIdle, w.cfg.BatchSize)
			if len(entries) > 0 {
				log.Info("claimed idle pending entries", "entries", len(entries))
			}
		}
		if err == nil && entries == nil {
			entries, err = w.readBatch(ctx, c)
		}
		if err == nil && len(entries) > 0 {
			err = w.process(ctx, c, entries, acks, fresh)
		}
		if err == nil {
			carry, failures = nil, 0
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		carry = entries
		failures++
		d := backoff(failures, w.cfg.RetryBase, w.cfg.RetryMax)
		log.Error("batch failed; keeping it and retrying", "entries", len(entries), "failures", failures, "backoff", d, "err", err)
		if sleepCtx(ctx, d) != nil {
			return nil
		}
	}
	return nil
}

// batchWait is the layout's batch window: HotBatchWait for hot, else
// BatchWait.
func (w *Worker) batchWait() time.Duration {
	if w.kind == layout.Hot {
		return w.cfg.HotBatchWait
	}
	return w.cfg.BatchWait
}

// readBatch reads up to BatchSize new entries, waiting up to a second for
// the first and then at most BatchWait (HotBatchWait in the hot layout) for
// the rest.
func (w *Worker) readBatch(ctx context.Context, c *eventlog.Consumer) ([]eventlog.Entry, error) {
	entries, err := c.ReadNew(ctx, w.cfg.BatchSize, time.Second)
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	deadline := time.Now().Add(w.batchWait())
	for len(entries) < w.cfg.BatchSize {
		left := time.Until(deadline)
		if left < time.Millisecond {
			break
		}
		more, err := c.ReadNew(ctx, w.cfg.BatchSize-len(entries), left)
		if err != nil {
			return entries, nil // the first part is pending under our name; process it
		}
		entries = append(entries, more...)
	}
	return entries, nil
}

// process applies one batch and then dead-letters the entries it cannot
// apply and acknowledges the others, or, with acks, leaves them to the
// flush loop.
func (w *Worker) process(ctx context.Context, c *eventlog.Consumer, entries []eventlog.Entry, acks *ackQueue, fresh *freshnessProbe) error {
	var dead []eventlog.DeadLetter
	events := make([]catalog.Event, 0, len(entries))
	eventEntry := make([]int, 0, len(entries))
	for i, e := range entries {
		switch {
		case e.Err != nil:
			dead = append(dead, eventlog.DeadLetter{Entry: e, Reason: "invalid event: " + e.Err.Error()})
		case e.Deliveries > int64(w.cfg.MaxAttempts):
			dead = append(dead, eventlog.DeadLetter{Entry: e, Reason: fmt.Sprintf("delivered %d times, more than max-attempts %d", e.Deliveries, w.cfg.MaxAttempts)})
		default:
			events = append(events, e.Event)
			eventEntry = append(eventEntry, i)
		}
	}
	st, err := w.Indexer.Apply(ctx, events)
	if err != nil {
		return err
	}
	rejected := make(map[int]bool, len(st.Rejected))
	for _, r := range st.Rejected {
		i := eventEntry[r.Event]
		if !rejected[i] {
			rejected[i] = true
			dead = append(dead, eventlog.DeadLetter{Entry: entries[i], Reason: r.Reason})
		}
	}
	var ack []string
	deadIDs := make(map[string]bool, len(dead))
	for _, d := range dead {
		deadIDs[d.Entry.ID] = true
	}
	for _, e := range entries {
		if !deadIDs[e.ID] {
			ack = append(ack, e.ID)
		}
	}
	if err := c.DeadLetter(ctx, dead); err != nil {
		return err
	}
	w.m.deadLettered.WithLabelValues(string(w.kind)).Add(float64(len(dead)))
	if acks != nil {
		acks.add(ack)
	} else if err := c.Ack(ctx, ack...); err != nil {
		return err
	}
	if w.OnBatch != nil {
		w.OnBatch(c.Partition(), st)
	}
	// Sample the batch's last applied, non-delete event for freshness.
	for j := len(events) - 1; j >= 0; j-- {
		e := entries[eventEntry[j]]
		if !rejected[eventEntry[j]] && e.Event.Op == catalog.OpUpsert && !e.AppendedAt.IsZero() {
			fresh.start(ctx, e)
			break
		}
	}
	return nil
}

// sampleLag sets the lag gauges of every partition every LagEvery.
func (w *Worker) sampleLag(ctx context.Context, consumers []*eventlog.Consumer) {
	t := time.NewTicker(w.cfg.LagEvery)
	defer t.Stop()
	for {
		for _, c := range consumers {
			b, err := c.Backlog(ctx)
			if err == nil {
				labels := []string{string(w.kind), strconv.Itoa(c.Partition())}
				w.m.lag.WithLabelValues(labels...).Set(float64(b.Entries))
				w.m.lagSeconds.WithLabelValues(labels...).Set(b.OldestUndelivered.Seconds())
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// freshnessProbe measures, for at most one sampled event at a time and one
// per FreshnessSampleEvery, the time from its append to its visibility in
// search: it polls _search on the alias of the document the event touched
// for the shop id at a version >= the event's until a hit appears.
type freshnessProbe struct {
	w       *Worker
	running atomic.Bool
	next    time.Time // no sample before; used by the partition's goroutine only
}

func (f *freshnessProbe) start(ctx context.Context, e eventlog.Entry) {
	now := time.Now()
	if now.Before(f.next) || !f.running.CompareAndSwap(false, true) {
		return
	}
	f.next = now.Add(f.w.cfg.FreshnessSampleEvery)
	go func() {
		defer f.running.Store(false)
		d, err := f.w.WaitVisible(ctx, e.Event, e.AppendedAt)
		if err != nil {
			if ctx.Err() == nil {
				f.w.log.Debug("freshness probe gave up", "shop", e.Event.AggregateID(), "version", e.Event.Version, "err", err)
			}
			return
		}
		f.w.m.freshness.WithLabelValues(string(f.w.kind)).Observe(d.Seconds())
		if f.w.OnFreshness != nil {
			f.w.OnFreshness(d)
		}
	}()
}

// WaitVisible polls search until the event's shop is visible at a version >=
// the event's, and returns the time since appendedAt. Nested and split are
// polled on the head document (it carries the aggregate version and becomes
// searchable at a refresh); hot is polled as its search reads it: the hot
// menu document with the version the baedal-hot table holds, which needs no
// refresh.
func (w *Worker) WaitVisible(ctx context.Context, ev catalog.Event, appendedAt time.Time) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.FreshnessTimeout)
	defer cancel()
	for {
		ok, err := w.visible(ctx, ev)
		if err != nil {
			return 0, err
		}
		if ok {
			return time.Since(appendedAt), nil
		}
		if err := sleepCtx(ctx, w.cfg.FreshnessPoll); err != nil {
			return 0, err
		}
	}
}

// visible reports whether search shows the shop of ev at ev's version or later.
func (w *Worker) visible(ctx context.Context, ev catalog.Event) (bool, error) {
	var resp struct {
		Hits struct {
			Total struct {
				Value int `json:"value"`
			} `json:"total"`
			Hits []struct {
				Fields map[string][]struct {
					Version int64 `json:"version"`
				} `json:"fields"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if w.kind == layout.Hot {
		table := w.cfg.Layout.Alias(layout.RoleHotShops)
		body := fmt.Appendf(nil, `{"size":1,"_source":false,"query":{"term":{"id":%d}},"ext":{"baedal_hot":{"table":%q}}}`, ev.AggregateID(), table)
		if err := w.os.Do(ctx, http.MethodPost, "/"+w.cfg.Layout.Alias(layout.RoleHotMenus)+"/_search", body, &resp); err != nil {
			return false, err
		}
		for _, h := range resp.Hits.Hits {
			for _, row := range h.Fields["baedal_hot"] {
				if row.Version >= ev.Version {
					return true, nil
				}
			}
		}
		return false, nil
	}
	head := w.cfg.Layout.Alias(HeadPart(w.kind).Role())
	body := fmt.Appendf(nil, `{"size":0,"terminate_after":1,"track_total_hits":true,"query":{"bool":{"filter":[{"term":{"id":%d}},{"range":{"version":{"gte":%d}}}]}}}`,
		ev.AggregateID(), ev.Version)
	if err := w.os.Do(ctx, http.MethodPost, "/"+head+"/_search", body, &resp); err != nil {
		return false, err
	}
	return resp.Hits.Total.Value > 0, nil
}

// purgeHotTombstones runs PurgeHotTombstones every HotTombstonePurgeEvery
// until ctx ends; a failed purge is logged and tried again next time.
func (w *Worker) purgeHotTombstones(ctx context.Context) {
	alias := w.cfg.Layout.Alias(layout.RoleHotShops)
	t := time.NewTicker(w.cfg.HotTombstonePurgeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := PurgeHotTombstones(ctx, w.os, alias, w.cfg.HotTombstoneRetention)
		switch {
		case err != nil && ctx.Err() == nil:
			w.log.Warn("purging hot tombstones failed; trying again later", "err", err)
		case n > 0:
			w.log.Info("purged hot tombstones past their retention", "deleted", n, "retention", w.cfg.HotTombstoneRetention)
		}
	}
}
