// Package indexer keeps the OpenSearch layouts up to date with the event log:
// it reads change events from Redis Streams (eventlog), applies them in
// batches to held shop states, and writes one full document per changed
// document with an external version.
//
// # Ownership and order
//
// Each layout ("nested", "split") has its own consumer group
// ("indexer-nested", "indexer-split") on the same partition streams, so the
// layouts are fed independently. All events of a shop are in one partition,
// in order, and each partition is processed by exactly one goroutine of one
// worker at a time: worker i of n owns the partitions p with p mod n == i
// (--indexer-worker-index/--indexer-workers). This matters because the indexer writes FULL
// documents computed from a held state: two consumers applying different
// events of one shop at once could each write a document missing the other's
// event. The consumer name is stable per (layout, partition), so a restarted
// worker first re-reads its own pending entries, then new ones; entries that
// other consumer names left idle longer than ClaimIdle are claimed (scale-in).
// Running two workers with the same index at once breaks the invariant below;
// RefetchOnGap (a batch's first event for a held shop skips versions → re-read
// the shop from OpenSearch) narrows that window but does not close it.
//
// # Held state
//
// An LRU (CacheEntries shops per layout) holds the current part states of
// each shop; on a miss the current documents are read with a realtime _mget
// from the layout's aliases and rebuilt (layout.StateFrom*). The nested
// layout has one part; the split layout has two: the shop part (the shop
// document) and the menus part (the menu document).
//
// Every layout applies the same events (docs/search.md, "Version model"): a
// shop and its menus share one version counter, and an event applies iff its
// version is above the version of the shop's *aggregate* and it is valid for
// the aggregate's state. The aggregate's version is the version of the head
// part (HeadPart: the nested document, or the split shop document), which
// every applied event rewrites; the split menu document is rewritten only by
// the events that change what it holds, at the version of the last of them.
// The head is written only after every other part of its batch was accepted
// (a second bulk request when a batch touches menu documents), so a head at
// version v promises that the other parts reflect every event up to v: a
// worker killed between the two writes leaves the old head, and the
// redelivered batch is applied again (events are idempotent field sets, so
// re-applying one the menu document already holds changes nothing).
// A shop delete leaves a tombstone in the held state; after the shop falls out
// of the LRU the indexer knows only what OpenSearch still has: its delete
// tombstone lives index.gc_deletes (60 s) and an even older event for that
// shop would then be applied (a partial one is dead-lettered as "shop does not
// exist").
//
// # Batches
//
// A batch closes at BatchSize events or BatchWait after its first event.
// CoalesceBatch (pure) applies every event of a shop in order to its state(s),
// marks which documents changed, and yields ONE bulk action per changed
// document at the version of the last event applied to it. Actions are full
// `index` actions (partial `update`s measured slower) or `delete`s, with
// version_type external, so duplicates and out-of-order events never make a
// document older. Item results: 2xx, and 404 on a delete, = written;
// 409 version_conflict = a newer version is already there = success; 429 and
// 5xx (and transport errors) = retried with capped exponential backoff and
// full jitter for up to RetryFor; any other 4xx (mapper_parsing,
// strict_dynamic_mapping, ...) = poison: the shop's events of the batch go to
// the dead-letter stream with the reason. Events that fail validation or
// cannot be applied are dead-lettered too, and so is an entry delivered more
// than MaxAttempts times (a poison entry that crashes its worker).
//
// Main invariant: an entry is acknowledged only after OpenSearch accepted
// every action of its batch (or the entry was dead-lettered), and a batch that
// fails is neither acknowledged nor held, so a worker killed at any point
// loses nothing: the restarted worker re-reads its pending entries, rebuilds
// state from the documents, and external versions turn the replays into no-ops
// or 409s. TestKillMidBatchLosesNothing proves it with SIGKILL.
//
// With an async translog (the hot layout's default,
// layout.IndexSettings.TranslogDurability) "accepted" is not yet durable: a
// bulk answers before its translog fsync, which keeps a slow disk's fsync out
// of every change's path. Acknowledgements then wait for a flush: every
// FlushEvery the worker flushes the layout's indices and acknowledges what it
// applied before, unless a primary term changed since (a node restarted, a
// copy promoted), in which case it drops its held states and applies every
// unacknowledged entry again (durable.go). TestAsyncTranslogAcknowledgesAfterAFlush
// and app/nodeloss's TestSingleNodeKillRebuildsTheHotTable (SIGKILL of the
// only node under load) prove it.
//
// [Indexer.Apply] is the core that the stream worker and the `bench index`
// benchmark share, so the benchmark measures the layouts, not Redis.
//
// # Metrics (label layout)
//
// baedal_indexer_consumer_lag (XINFO GROUPS lag, per partition, sampled) and
// baedal_indexer_consumer_lag_seconds (age of the oldest undelivered entry),
// baedal_indexer_events_total, baedal_indexer_docs_written_total,
// baedal_indexer_bulk_seconds, baedal_indexer_freshness_seconds (a batch's
// event, at most one per partition and FreshnessSampleEvery: after its bulk, _search on the alias for the shop id at
// version >= v every 50 ms until it is visible; append time → now),
// baedal_indexer_dead_lettered_total, baedal_indexer_bulk_retries_total,
// baedal_indexer_version_conflicts_total,
// baedal_indexer_durability_replays_total (async translog: replays after a
// primary changed before a flush).
//
// Documents have _id = the shop id in decimal, in every index.
package indexer
