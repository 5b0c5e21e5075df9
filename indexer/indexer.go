package indexer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
)

// Indexer applies batches of events to one layout: held states, coalescing,
// bulk writes with external versions, retries. It is safe for concurrent use
// by goroutines that work on disjoint sets of shops (one per partition).
type Indexer struct {
	kind  layout.Kind
	cfg   Config
	os    *osapi.Client
	log   *slog.Logger
	m     *metrics
	cache *stateCache
	label string
}

// New returns the indexer of one layout. reg may be nil.
func New(cfg Config, kind layout.Kind, os *osapi.Client, log *slog.Logger, reg prometheus.Registerer) (*Indexer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := layout.ParseKind(string(kind)); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Indexer{
		kind: kind, cfg: cfg, os: os, log: log.With("layout", string(kind)),
		m: newMetrics(reg), cache: newStateCache(cfg.CacheEntries), label: string(kind),
	}, nil
}

// Forget drops every held state: the next event of each shop reads its
// documents again (after operations were lost, durable.go).
func (ix *Indexer) Forget() { ix.cache.Clear() }

// Kind returns the indexer's layout.
func (ix *Indexer) Kind() layout.Kind { return ix.kind }

// Stats describes one Apply.
type Stats struct {
	Events    int // events in the batch
	Applied   int // events that changed a document
	Stale     int // duplicates and out-of-order events (changed nothing)
	Docs      int // documents written (accepted actions, conflicts included)
	Conflicts int // actions answered 409: a newer version was there
	Fetched   int // shops read from OpenSearch (not held)
	Retries   int // bulk requests re-sent
	BulkBytes int64
	Bulk      time.Duration // time spent in bulk requests
	Rejected  []Rejection   // events to dead-letter, with the reason
}

// Apply applies a batch to the layout: it loads the held state of every
// shop of the batch (reading the documents of shops it does not hold with a
// realtime _mget, retried on 429/5xx like the bulks), coalesces the batch
// (CoalesceBatch), and writes one bulk action per changed document,
// retrying 429/5xx items with backoff for up to RetryFor. It returns only when OpenSearch accepted every action, or an
// error (the batch must then be applied again; nothing of it is held).
// Events whose documents OpenSearch refuses with another 4xx are returned in
// Stats.Rejected with the reason, like events that cannot be applied.
func (ix *Indexer) Apply(ctx context.Context, events []catalog.Event) (Stats, error) {
	stats := Stats{Events: len(events)}
	if len(events) == 0 {
		return stats, nil
	}
	held, fetched, err := ix.loadStates(ctx, events)
	if err != nil {
		return stats, err
	}
	stats.Fetched = fetched
	return ix.applyTo(ctx, held, events, stats)
}

// Load writes shops that have no document in the layout yet, such as a
// catalog loaded into fresh indices, and holds their states: Apply of their
// upsert events (catalog.ShopState.UpsertEvent) without the realtime read of
// the documents, which Load knows do not exist. It therefore writes exactly
// the documents Apply would, through the same bulk path. A shop that does
// have documents answers 409 for a version no newer than its own and is
// left as it is (then read again on its next event), as in Apply.
func (ix *Indexer) Load(ctx context.Context, shops []catalog.ShopState) (Stats, error) {
	events := make([]catalog.Event, len(shops))
	for i := range shops {
		events[i] = shops[i].UpsertEvent()
	}
	held := make(map[int64]*ShopParts, len(shops))
	for _, ev := range events {
		held[ev.AggregateID()] = nil // no documents
	}
	return ix.applyTo(ctx, held, events, Stats{Events: len(events)})
}

// applyTo coalesces events onto the held states of their shops, writes the
// changed documents and holds the new states (Apply after its reads).
func (ix *Indexer) applyTo(ctx context.Context, held map[int64]*ShopParts, events []catalog.Event, stats Stats) (Stats, error) {
	if len(events) == 0 {
		return stats, nil
	}
	c := CoalesceBatch(ix.kind, held, events)
	stats.Applied, stats.Stale, stats.Rejected = c.Applied, c.Stale, c.Rejected

	out, err := ix.write(ctx, c, &stats)
	if err != nil {
		for shopID := range c.States {
			ix.cache.Remove(shopID)
		}
		return stats, err
	}
	for shopID, st := range c.States {
		if reason, bad := out.poisoned[shopID]; bad {
			ix.cache.Remove(shopID) // some of its documents may not match the held state
			for _, i := range c.ShopEvents[shopID] {
				stats.Rejected = append(stats.Rejected, Rejection{Event: i, ShopID: shopID, Reason: reason})
			}
			continue
		}
		if out.conflicted[shopID] {
			// OpenSearch holds a version at least as new as the one written
			// (a redelivery, or a delete whose tombstone the held state had
			// lost): the held state may not be what the index has, so the
			// next event of the shop reads it again.
			ix.cache.Remove(shopID)
			continue
		}
		ix.cache.Put(shopID, st)
	}
	ix.m.events.WithLabelValues(ix.label).Add(float64(len(events)))
	return stats, nil
}

// loadStates returns the held state of every shop of the batch.
func (ix *Indexer) loadStates(ctx context.Context, events []catalog.Event) (map[int64]*ShopParts, int, error) {
	held := make(map[int64]*ShopParts)
	var missing []int64
	for _, ev := range events {
		shopID := ev.AggregateID()
		if _, seen := held[shopID]; seen {
			continue
		}
		st, ok := ix.cache.Get(shopID)
		if ok && ix.cfg.RefetchOnGap && ev.Version > st.Version()+1 {
			ok = false
		}
		if !ok {
			missing = append(missing, shopID)
			st = nil
		}
		held[shopID] = st
	}
	if len(missing) == 0 {
		return held, 0, nil
	}
	fetched, err := ix.Fetch(ctx, missing)
	if err != nil {
		return nil, 0, err
	}
	for _, id := range missing {
		held[id] = fetched[id]
	}
	return held, len(missing), nil
}

// Fetch reads the current documents of shops from the layout's aliases
// (realtime _mget) and rebuilds their part states. A shop without documents
// gets a zero ShopParts.
func (ix *Indexer) Fetch(ctx context.Context, shopIDs []int64) (map[int64]*ShopParts, error) {
	out := make(map[int64]*ShopParts, len(shopIDs))
	for _, id := range shopIDs {
		out[id] = new(ShopParts)
	}
	const chunk = 1000
	for start := 0; start < len(shopIDs); start += chunk {
		ids := shopIDs[start:min(start+chunk, len(shopIDs))]
		strIDs := make([]string, len(ids))
		for i, id := range ids {
			strIDs[i] = strconv.FormatInt(id, 10)
		}
		body, _ := json.Marshal(map[string]any{"ids": strIDs})
		for _, p := range LayoutParts(ix.kind) {
			alias := ix.cfg.Layout.Alias(p.Role())
			var resp struct {
				Docs []mgetDoc `json:"docs"`
			}
			if err := ix.mget(ctx, alias, body, &resp); err != nil {
				return nil, fmt.Errorf("indexer: mget %d shops from %s: %w", len(ids), alias, err)
			}
			if err := mgetFailures(alias, resp.Docs); err != nil {
				return nil, err
			}
			for _, d := range resp.Docs {
				if !d.Found {
					continue
				}
				id, err := strconv.ParseInt(d.ID, 10, 64)
				if err != nil || out[id] == nil {
					return nil, fmt.Errorf("indexer: mget from %s returned unexpected _id %q", alias, d.ID)
				}
				st, err := stateFromSource(p, d.Source)
				if err != nil {
					return nil, fmt.Errorf("indexer: decode %s document %s: %w", alias, d.ID, err)
				}
				out[id].Parts[p] = st
			}
		}
	}
	return out, nil
}

// mget sends one realtime _mget, retrying a whole request that OpenSearch
// refused with 429 or 5xx (a tripped circuit breaker under a large load) or
// a transport error, with backoff, for up to RetryFor, as the bulks are.
func (ix *Indexer) mget(ctx context.Context, alias string, body []byte, resp any) error {
	deadline := time.Now().Add(ix.cfg.RetryFor)
	for attempt := 1; ; attempt++ {
		err := ix.os.Do(ctx, http.MethodPost, "/"+alias+"/_mget?realtime=true", body, resp)
		if err == nil || !osapi.Retryable(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		ix.log.Warn("mget failed, retrying", "alias", alias, "attempt", attempt, "err", err)
		if err := sleepCtx(ctx, backoff(attempt, ix.cfg.RetryBase, ix.cfg.RetryMax)); err != nil {
			return err
		}
	}
}

// mgetDoc is one document of an _mget response.
type mgetDoc struct {
	ID     string          `json:"_id"`
	Found  bool            `json:"found"`
	Source json.RawMessage `json:"_source"`
	// Error is set instead of Found when the document's shard could not
	// answer (no shard copy available while a node is down).
	Error json.RawMessage `json:"error"`
}

// ErrShardUnavailable is a realtime read that a shard could not answer.
var ErrShardUnavailable = errors.New("indexer: shard unavailable")

// mgetFailures returns an error when a document of an _mget could not be
// read. Such a document is unknown, not missing: taking it for a shop that
// does not exist would dead-letter the shop's partial updates while a node
// is down. The batch is retried instead.
func mgetFailures(alias string, docs []mgetDoc) error {
	for _, d := range docs {
		if len(d.Error) > 0 && string(d.Error) != "null" {
			return fmt.Errorf("%w: mget of shop %s from %s: %.300s", ErrShardUnavailable, d.ID, alias, d.Error)
		}
	}
	return nil
}

func stateFromSource(p Part, src []byte) (catalog.ShopState, error) {
	switch p {
	case PartShop:
		var d layout.ShopDoc
		err := json.Unmarshal(src, &d)
		return layout.StateFromShop(d), err
	case PartMenus:
		var d layout.MenusDoc
		err := json.Unmarshal(src, &d)
		return layout.StateFromMenus(d), err
	case PartHotShop:
		return layout.StateFromHotHead(src)
	case PartHotMenus:
		var d layout.HotMenusDoc
		err := json.Unmarshal(src, &d)
		return layout.StateFromHotMenus(d), err
	}
	var d layout.NestedDoc
	err := json.Unmarshal(src, &d)
	return layout.StateFromNested(d), err
}

// AppendAction appends the bulk lines of one action to dst: an index action
// with the part's full document, or a delete, both with version_type
// external and the part's version. The hot layout's head is never deleted:
// a delete writes its tombstone (layout.HotHeadTombstone).
func AppendAction(dst []byte, cfg *layout.Config, a Action, st *catalog.ShopState) ([]byte, error) {
	op := "index"
	tombstone := a.Delete && a.Part == PartHotShop
	if a.Delete && !tombstone {
		op = "delete"
	}
	dst = fmt.Appendf(dst, `{%q:{"_index":%q,"_id":"%d","version":%d,"version_type":"external"}}`+"\n",
		op, cfg.Alias(a.Part.Role()), a.ShopID, a.Version)
	if op == "delete" {
		return dst, nil
	}
	var doc any
	switch {
	case tombstone:
		doc = layout.HotHeadTombstone{ID: a.ShopID, Version: a.Version, Deleted: true, DeletedAt: time.Now().UTC().Format(time.RFC3339)}
	case a.Part == PartShop:
		doc = layout.BuildShop(st, a.Version)
	case a.Part == PartHotShop:
		doc = layout.BuildHotHead(st, a.Version)
	case a.Part == PartMenus:
		doc = layout.BuildMenus(st, a.Version)
	case a.Part == PartHotMenus:
		doc = layout.BuildHotMenus(st, a.Version)
	default:
		doc = layout.BuildNested(st, a.Version)
	}
	buf := bytes.NewBuffer(dst)
	enc := json.NewEncoder(buf) // ends the document with '\n'
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return dst, fmt.Errorf("indexer: encode %s document of shop %d: %w", a.Part, a.ShopID, err)
	}
	return buf.Bytes(), nil
}

// bulkItem is one item of a _bulk response.
type bulkItem struct {
	Status int `json:"status"`
	Error  *struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	} `json:"error"`
}

// write sends the actions, retrying what is retryable, in two phases: first
// every part but the head (HeadPart), then the heads of the shops whose other
// parts were accepted.
// A head at version v thus promises that the shop's
// other documents reflect every event up to v, which is what lets a
// redelivered batch be judged against the head's version alone (Aggregate):
// a worker killed between the phases leaves older heads, and the redelivery
// applies the batch again.
func (ix *Indexer) write(ctx context.Context, c Coalesced, stats *Stats) (writeOutcome, error) {
	out := writeOutcome{poisoned: make(map[int64]string), conflicted: make(map[int64]bool)}
	lines := make([][]byte, len(c.Actions))
	var others, heads []int
	for i, a := range c.Actions {
		var err error
		if lines[i], err = AppendAction(nil, &ix.cfg.Layout, a, &c.States[a.ShopID].Parts[a.Part]); err != nil {
			return out, err
		}
		if a.Part == HeadPart(ix.kind) {
			heads = append(heads, i)
		} else {
			others = append(others, i)
		}
	}
	deadline := time.Now().Add(ix.cfg.RetryFor)
	if err := ix.writePhase(ctx, c, lines, others, deadline, out, stats); err != nil {
		return out, err
	}
	heads = slices.DeleteFunc(heads, func(i int) bool {
		_, bad := out.poisoned[c.Actions[i].ShopID]
		return bad
	})
	if err := ix.writePhase(ctx, c, lines, heads, deadline, out, stats); err != nil {
		return out, err
	}
	ix.m.docs.WithLabelValues(ix.label).Add(float64(stats.Docs))
	ix.m.conflicts.WithLabelValues(ix.label).Add(float64(stats.Conflicts))
	return out, nil
}

// writeOutcome is what OpenSearch answered for the shops of a written batch.
type writeOutcome struct {
	poisoned   map[int64]string // shops with a document refused for good, with the reason
	conflicted map[int64]bool   // shops with a document answered 409 (a newer or equal version was there)
}

// writePhase sends the actions todo (indexes into c.Actions and lines) until
// OpenSearch accepted or refused each for good, retrying 429s, 5xx and
// transport errors with backoff until deadline, and records refusals and
// conflicts in out.
func (ix *Indexer) writePhase(ctx context.Context, c Coalesced, lines [][]byte, todo []int, deadline time.Time, out writeOutcome, stats *Stats) error {
	for attempt := 0; len(todo) > 0; attempt++ {
		if attempt > 0 {
			stats.Retries++
			ix.m.retries.WithLabelValues(ix.label).Inc()
			if err := sleepCtx(ctx, backoff(attempt, ix.cfg.RetryBase, ix.cfg.RetryMax)); err != nil {
				return fmt.Errorf("indexer: %s bulk of %d actions: %w", ix.kind, len(todo), err)
			}
		}
		items, err := ix.bulkInChunks(ctx, lines, todo, stats)
		if err != nil {
			if !osapi.Retryable(err) || ctx.Err() != nil || time.Now().After(deadline) {
				return fmt.Errorf("indexer: %s bulk of %d actions, attempt %d: %w", ix.kind, len(todo), attempt+1, err)
			}
			ix.log.Warn("bulk failed, retrying", "actions", len(todo), "attempt", attempt+1, "err", err)
			continue
		}
		if len(items) != len(todo) {
			return fmt.Errorf("indexer: %s bulk of %d actions answered %d items", ix.kind, len(todo), len(items))
		}
		var retry []int
		var lastRetryReason string
		for j, i := range todo {
			it, a := items[j], c.Actions[i]
			switch {
			case it.Status >= 200 && it.Status < 300, a.Delete && it.Status == http.StatusNotFound:
				stats.Docs++
			case it.Status == http.StatusConflict:
				stats.Docs++
				stats.Conflicts++
				out.conflicted[a.ShopID] = true
			case it.Status == http.StatusTooManyRequests || it.Status >= 500:
				retry = append(retry, i)
				lastRetryReason = itemReason(it)
			default:
				out.poisoned[a.ShopID] = fmt.Sprintf("OpenSearch refused the %s document version %d: HTTP %d %s", a.Part, a.Version, it.Status, itemReason(it))
			}
		}
		if len(retry) > 0 && (ctx.Err() != nil || time.Now().After(deadline)) {
			return fmt.Errorf("indexer: %s: %d of %d actions still refused after %d attempts (%s): %w",
				ix.kind, len(retry), len(c.Actions), attempt+1, lastRetryReason, errRetriesExhausted)
		}
		if len(retry) > 0 {
			ix.log.Warn("bulk items refused, retrying", "items", len(retry), "attempt", attempt+1, "reason", lastRetryReason)
		}
		todo = retry
	}
	return nil
}

var errRetriesExhausted = errors.New("indexer: retry time exhausted")

func itemReason(it bulkItem) string {
	if it.Error == nil {
		return ""
	}
	r := it.Error.Type + ": " + it.Error.Reason
	if len(r) > 300 {
		r = r[:300]
	}
	return r
}

// maxBulkBytes caps one bulk request. A batch of 1,000 full shops with ~30
// menus is ~7 MB; several in flight exceed OpenSearch's indexing-pressure
// limit (10% of the heap: ~53 MB at 512 MB) and come back as 429s.
const maxBulkBytes = 4 << 20

// bulkInChunks sends the actions todo (indexes into lines) in bulk requests
// of at most maxBulkBytes, in order, and returns one item per action. If a
// chunk fails the whole attempt is retried; chunks already written then
// answer 409 (same external version), which counts as success.
func (ix *Indexer) bulkInChunks(ctx context.Context, lines [][]byte, todo []int, stats *Stats) ([]bulkItem, error) {
	items := make([]bulkItem, 0, len(todo))
	var body []byte
	flush := func() error {
		if len(body) == 0 {
			return nil
		}
		got, err := ix.bulk(ctx, body, stats)
		if err != nil {
			return err
		}
		items = append(items, got...)
		body = body[:0]
		return nil
	}
	for _, i := range todo {
		if len(body) > 0 && len(body)+len(lines[i]) > maxBulkBytes {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		body = append(body, lines[i]...)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return items, nil
}

func (ix *Indexer) bulk(ctx context.Context, body []byte, stats *Stats) ([]bulkItem, error) {
	var resp struct {
		Items []map[string]bulkItem `json:"items"`
	}
	start := time.Now()
	err := ix.os.DoContentType(ctx, http.MethodPost, "/_bulk?filter_path=items.*.status,items.*.error.type,items.*.error.reason",
		"application/x-ndjson", body, &resp)
	d := time.Since(start)
	stats.Bulk += d
	stats.BulkBytes += int64(len(body))
	ix.m.bulkSeconds.WithLabelValues(ix.label).Observe(d.Seconds())
	if err != nil {
		return nil, err
	}
	items := make([]bulkItem, len(resp.Items))
	for i, m := range resp.Items {
		for _, it := range m { // one key: index or delete
			items[i] = it
		}
	}
	ix.log.Debug("bulk written", "bytes", len(body), "items", len(items), "ms", d.Milliseconds())
	return items, nil
}

// backoff returns a full-jitter exponential delay for a retry attempt (1..).
func backoff(attempt int, base, maxDelay time.Duration) time.Duration {
	d := base << min(attempt-1, 20)
	if d <= 0 || d > maxDelay {
		d = maxDelay
	}
	return d/2 + rand.N(d/2+1)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
