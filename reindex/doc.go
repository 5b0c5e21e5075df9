// Package reindex rebuilds one index of a layout (a new mapping, analyzer,
// settings or shard count) while the indexer keeps writing, then swaps the
// layout's alias to it atomically, and can roll the swap back.
//
// # Steps
//
// A job reindexes the concrete index behind one alias (<prefix><role>) into
// the next generation <alias>_v<N+1>. Each step is persisted in a Redis hash
// ({<state prefix>}job:<id>) before the next begins, so an orchestrator killed
// at any point resumes where it stopped (Run on the same job id):
//
//  1. planned: the job records, per event-log partition, the replay start:
//     the first entry the live indexer's consumer group has not yet
//     acknowledged (its smallest pending id, else its last-delivered id).
//     Every event before it was written to the source before the copy reads
//     it (the source is refreshed right before the copy starts).
//  2. created: the target is created with the new body and copy-time
//     settings (replicas --replicas-during-copy, default 0, with
//     auto-expansion off; refresh --refresh-during-copy, default -1).
//  3. copying: `_reindex` runs as a task (wait_for_completion=false) with
//     slices (auto or N), requests_per_second, dest.version_type external and
//     conflicts=proceed. The task id is persisted; a resumed orchestrator
//     follows it (GET _tasks/<id>), and a copy whose id was not yet saved is
//     found again by its description ("reindex from [src] to [dst]").
//  4. copied: the task ended without failures (failures fail the job, with
//     counts and samples; the alias stays on the source).
//  5. restored: final replicas (--replicas, by default the layout's
//     configured setting, auto-expanding 0-1) and refresh interval are set
//     on the target and the orchestrator waits for green (the replica build
//     is timed), all before the swap.
//  6. caught_up: the event log is replayed from the recorded start into the
//     target with the indexer's own code (indexer.Apply) through a catch-up
//     alias (<index>_cu_<role>) that points the role at the target, in
//     passes, until a pass replays fewer than Config.FreezeBelow events.
//  7. swapped: the alias moves (see "Swap" below).
//  8. done: the source is kept for rollback until cleanup deletes it.
//
// # Concurrent writes and the guarantee
//
// The live indexer writes to the alias, so to the source, during the whole
// copy. Three things make the target exact:
//
//   - versions: the indexer writes full documents with version_type external
//     (version = the shop aggregate's event version), `_reindex` keeps them
//     (dest.version_type external), so a copy never overwrites a newer
//     document; such conflicts are counted as "skipped newer".
//   - catch-up: every event the copy may have missed was appended after the
//     recorded start, and is replayed into the target; replay is idempotent
//     (a replayed event at or below a document's version is a no-op or 409).
//   - swap under a write freeze: right before the swap the source gets the
//     index.blocks.read_only_allow_delete block, which answers the live
//     indexer's index actions with 429, which it retries with backoff (it
//     never dead-letters them). A final catch-up pass then brings the target
//     up to the log's end, the block is lifted and the alias is swapped in
//     one `_aliases` request (remove source, add target as write index;
//     OpenSearch refuses alias changes on a blocked index, hence the order).
//     A post-swap pass replays from the final pass's end to the log's end
//     again, which covers the deletes the block lets through and any retry
//     that landed in the milliseconds between unblock and swap.
//
// Guarantee: after the swap (and its post-swap pass), every document in the
// new index equals the state after the latest accepted event of its shop:
// no lost update (every event after the start is replayed), no stale
// overwrite (external versions). Residual risk, documented rather than
// hidden: a live-indexer write retried into the old index in the
// milliseconds between unblock and swap is repaired by the post-swap pass,
// unless the live indexer, before that pass, evicts the same shop from its
// state cache and rebuilds it from the new index (it would then apply a
// later event to a state missing that write). An indexer-side pause flag
// would close this window completely; see the report to the lead.
//
// # Rollback, cleanup, throttling
//
// Rollback after the swap runs the same freeze-and-swap in reverse: the
// source is caught up from the swap positions (events the live indexer
// wrote only into the target), then the alias moves back in one request.
// Rollback before the swap cancels the task and deletes the target; the
// alias never moved. Cleanup deletes the index the alias no longer points
// at. pause, resume and rethrottle call _reindex/<task>/_rethrottle: resume
// and rethrottle take effect at once; pause sets requests_per_second to
// Config.PauseRequestsPerSecond (0.001: with 1,000-document batches one
// batch per ~11 days), which OpenSearch applies after the batch in flight;
// the scroll stays open meanwhile.
//
// # Redis Cluster
//
// Every key of the job state (job hashes, the set of job ids, the alias
// locks, the leases) starts with the hash tag {<state prefix>}, so they
// share one slot: creating a job (hash and id set in one MULTI/EXEC) works
// on a cluster as on a single Redis. The catch-up reads the event log's
// partition streams one at a time (see eventlog for their slots). State
// written before the tag is renamed at start (Orchestrator.MigrateLegacyKeys).
//
// Main invariant: the alias points at exactly one index at every moment,
// and only a completed copy that was caught up moves it; any failure before
// the `_aliases` request leaves it on the source.
package reindex
