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
//  5. restored: the target is flushed (a Lucene commit of the copy, so
//     that peer recovery copies segment files instead of replaying every
//     operation), then final replicas (--replicas, by default the layout's
//     configured setting, auto-expanding 0-1) and refresh interval are set
//     on the target and the orchestrator waits for green (the replica build
//     is timed), all before the swap.
//     For the hot layout's shop-head index (<prefix>hot_shops), the
//     replica setting is always layout.HotShopsReplicas (0-all): the
//     baedal-hot plugin keeps each node's table from that node's copy, so
//     the copy's writes fill the primary's table and each replica's table is
//     built from its recovered copy (docs/hot-layout.md, "Consistency").
//  6. caught_up: the event log is replayed from the recorded start into the
//     target with the indexer's own code (indexer.Apply) through a catch-up
//     alias (<index>_cu_<role>) that points the role at the target, in
//     passes, until a pass replays fewer than Config.FreezeBelow events.
//     The copy task has ended before the first pass, so every document the
//     copy wrote precedes every replayed event (see "Deletes" below).
//  7. verified: every document's checksum (external _version and a hash
//     of its canonical _source) is compared in source and target (see
//     "Verification"); a mismatch fails the job, the alias stays.
//  8. swapped: the alias moves without a write freeze (see "Dual-write
//     swap").
//  9. done: a post-swap pass replayed the log from the swap positions; the
//     source is kept for rollback until cleanup deletes it.
//
// A step's phases are recorded too (Status.Phase: copy_started,
// copy_finished, verifying, dual_write, swapped), and Orchestrator.OnPhase
// lets a test stop the process there.
//
// # Concurrent writes and the guarantee
//
// The live indexer writes to the alias, so to the source, during the whole
// copy and the verification, and nothing ever stops it:
//
//   - versions: the indexer writes full documents with version_type external
//     (version = the shop aggregate's event version), `_reindex` keeps them
//     (dest.version_type external), so a copy never overwrites a newer
//     document; such conflicts are counted as "skipped newer".
//   - catch-up: every event the copy may have missed was appended after the
//     recorded start, and is replayed into the target; replay is idempotent
//     (a replayed event at or below a document's version is a no-op or 409).
//
// # Dual-write swap
//
// After the catch-up passes, a tailer replays every entry appended to the
// log into the target as soon as it appears (back-to-back passes; cursors
// persisted per batch), while the live indexer keeps writing the same
// events into the source through the alias: both indices receive every
// event, each writer with external versions, so whichever writes a document
// last, the newer version stays. Once the tailer has replayed up to the
// log's end as read at most 200 ms before (Status.SwapLagSeconds; after 5 s
// of trying it swaps with the lag it has), its position is persisted
// (positions:swap) and the alias moves in one `_aliases` request (remove
// source, add target as write index). No index is blocked: live updates
// keep flowing (live_freeze_seconds is 0). The live indexer wrote the source
// only with entries appended before the swap, so the tailer keeps running
// until it has passed the log's end as read after the swap; then the
// catch-up aliases go. A resumed orchestrator that finds the alias moved
// replays from positions:swap (persisted before the request); one that
// finds it unmoved starts the dual-write again.
//
// Guarantee: after the swap and its post-swap replay, every document in
// the new index equals the state after the latest accepted event of its
// shop: no lost update (every event after the start is replayed into the
// target by the catch-up, the tailer or the post-swap pass), no stale
// overwrite (external versions), no resurrected delete (below), and before
// the swap every document of the target was verified against the source.
//
// Residual window (narrower than the old freeze's, not closed): the live
// indexer may apply an entry e of shop S to the source in the last moments
// before the swap (e appended at most SwapLagSeconds plus the alias
// request's duration before it) that the tailer has not yet written into
// the target. e itself is not lost: the tailer writes it a few
// milliseconds later. But if, in between, the live indexer no longer holds
// S's state (it holds every shop it just wrote, in an LRU; it drops one
// only on a 409, a refused document or a restart) and applies a later
// event of S, it rebuilds S from the target without e and writes a
// document at a higher version that lacks e's fields; the tailer's e then
// answers 409. An orchestrator killed between the swap and the end of the
// dual-write widens the window to the time until the job resumes (the
// post-swap pass then replays from positions:swap). Closing it needs the
// live indexer's help (e.g. to refetch
// a shop whose first event after a fetch skips versions and wait for the
// gap to fill), not a freeze.
//
// # Deletes and re-creates during the copy
//
// `_reindex` copies the scroll snapshot taken when it starts, so a shop
// deleted during the copy is copied back into the target (at its version
// before the delete). The catch-up replays the delete afterwards with its
// higher external version, and external versioning deletes a document
// whose version is lower: this relies only on the document, never on a
// delete tombstone (index.gc_deletes, 60 s), because the copy task has
// completed before the first catch-up pass, and every later writer
// (catch-up, tailer, live indexer, post-swap pass) applies a shop's events
// in log order. A tombstone would matter only if an older write of a shop
// could reach the target after its delete: the copy cannot (it has ended;
// a copy that must start again, its task lost, does so before any pass),
// and a replay re-read after a kill repeats at most one batch, in order, so
// the delete follows any re-created older state again. A re-created shop
// (upsert after a delete) is replayed as a full document at its newer
// version. The kill test's churned shops and the benchmark's
// resurrected_docs check it.
//
// # Verification
//
// A scroll over both indices yields candidates whose version or hash
// differ. Writes continue, so each re-check round (Config.VerifyRounds)
// first replays the log into the target up to P (the target then holds
// exactly the events up to P), waits for the live indexer to acknowledge
// up to P and reads its frontier F, reads both sides of the candidates
// (realtime _mget), then the log's end E. A candidate that still differs
// is explained if its shop has an event in (min(F, P), E] and re-checked
// in the next round; otherwise both sides hold the same events of the
// shop and the difference is a mismatch: the job fails in step caught_up
// with the differing documents (Status.Mismatches, mismatched_docs,
// verified_docs; the CLI and HTTP status show them) and the alias stays on
// the source. Candidates still explained after the last round (a shop
// updated during every round) are counted in explained_docs, not as
// verified; the dual-write applies their newer events. The scan keeps one
// checksum per document in memory (~50 bytes: 50 MB per million shops).
//
// # Rollback, cleanup, throttling
//
// Rollback after the swap runs the same dual-write swap in reverse (without
// verification): the source is caught up from the live indexer's frontier
// recorded before the swap (positions:back: events it may have written
// only into the target), the tailer follows the log into the source, the
// alias moves back in one request, and a post-swap pass follows. A job
// stored by a version that froze writes has its block lifted on Run or
// Rollback. Rollback before the swap cancels the task and deletes the target; the
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
// and only a completed copy that was caught up and verified moves it; any
// failure before the `_aliases` request leaves it on the source.
package reindex
