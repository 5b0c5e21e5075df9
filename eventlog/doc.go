// Package eventlog is baedal's durable log of catalog change events, kept in
// Redis Streams: producers append (POST /v1/events, `baedal load`), indexers
// consume through consumer groups, acknowledge, re-read what they had not
// acknowledged, and dead-letter what they cannot apply.
//
// # Layout in Redis
//
//   - P partitions (Config.Partitions, default 4). Partition p is the stream
//     <prefix>events:<p>; an event goes to p = shop id mod P, so every event of
//     one shop aggregate is in one partition, in append order.
//   - Each entry has two fields: "e", the event's JSON (catalog wire form), and
//     "t", the append time in unix milliseconds (for freshness metrics).
//   - <prefix>events:dead is the dead-letter stream: the raw entry, its source
//     stream and id, the reason and the delivery count.
//   - Streams are trimmed approximately (XADD MAXLEN ~ Config.MaxLen, default
//     5,000,000 per partition). The cap is large on purpose: a live reindex
//     replays from a recorded stream position, so entries must outlive it.
//
// # Consumers
//
// A consumer group reads a partition; every layout has its own group, so the
// layouts are fed independently from the same streams. A [Consumer] is one
// (group, partition) pair with a stable consumer name, so a restarted worker
// first re-reads its own pending entries (ID 0) and then new ones (">").
// Redis counts deliveries of a pending entry, including re-reads after a
// restart, so a poison entry that crashes its worker is eventually
// dead-lettered by the caller (see indexer).
//
// Main invariant: Append returns only after Redis acknowledged every XADD, and
// an entry leaves the pending list only through Ack or DeadLetter (which adds
// it to the dead-letter stream and acknowledges it in one MULTI/EXEC), so an
// accepted event is never dropped silently. Redis runs with AOF
// (appendfsync everysec): a Redis crash may lose up to one second of
// acknowledged appends; a consumer crash loses nothing.
package eventlog
