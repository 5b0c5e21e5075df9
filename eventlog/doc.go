// Package eventlog is baedal's durable log of catalog change events, kept in
// Redis Streams: producers append (POST /v1/events, `baedal load`), indexers
// consume through consumer groups, acknowledge, re-read what they had not
// acknowledged, and dead-letter what they cannot apply.
//
// # Layout in Redis
//
//   - P partitions (Config.Partitions, default 4). Partition p is the stream
//     {<prefix>events:<p>}; an event goes to p = shop id mod P, so every event of
//     one shop aggregate is in one partition, in append order.
//   - Each entry has two fields: "e", the event's JSON (catalog wire form), and
//     "t", the append time in unix milliseconds (for freshness metrics).
//   - {<prefix>events:<p>}:dead is partition p's dead-letter stream: the raw
//     entry, its source stream and id, the reason and the delivery count. The
//     dead-letter API reads the P streams and merges them by id.
//   - Streams are trimmed approximately (XADD MAXLEN ~ Config.MaxLen, default
//     5,000,000 per partition). The cap is large on purpose: a live reindex
//     replays from a recorded stream position, so entries must outlive it.
//
// # Slots (Redis Cluster)
//
// The braces are a hash tag: a partition stream and its dead-letter stream
// share one slot, so DeadLetter (XADD dead + XACK) and ReplayDeadLetter
// (XADD + XDEL) stay one MULTI/EXEC in a cluster; different partitions have
// different tags, so a cluster spreads them over its masters. No other
// command spans keys. On a single Redis the braces change nothing.
//
// Before the hash tags the keys were <prefix>events:<p> and one
// <prefix>events:dead; [Log.MigrateLegacyKeys] (run by serve and the
// indexer at start) moves such a log to today's keys on a single Redis.
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
// acknowledged appends; a consumer crash loses nothing. With
// Config.WaitReplicas, Append returns only after that many replicas have the
// appends (WAIT), so the death of a primary whose replica takes over loses
// no acknowledged append either (TestNoAcknowledgedEventIsLostWhenAMasterDies).
package eventlog
