// Package feed is the follow feed (SPEC §S5): users, follows and posts in
// PostgreSQL, timelines in Redis, and three delivery strategies selectable per
// deployment:
//
//   - pull: a read merges the recent posts of every followee (per-author
//     sorted sets in Redis);
//   - push: a post is written into every follower's timeline (one capped
//     sorted set per user) by asynchronous fan-out workers;
//   - hybrid (default): push for authors under Config.CelebrityThreshold
//     followers, pull for celebrities, merged at read time.
//
// Data flow of a post: one PostgreSQL transaction inserts the post and an
// outbox row; after the commit the post's payload and the author's recent-posts
// set are written to Redis and a fan-out job is appended to a Redis Stream.
// Workers in a consumer group page the author's followers from PostgreSQL and
// ZADD the post id into their timelines in pipelined batches, then delete the
// outbox row and acknowledge the job. A relay re-publishes outbox rows that
// stay too long (the process died between commit and XADD, or Redis lost the
// job); XAUTOCLAIM hands jobs pending on a dead worker to a live one. With
// Config.WaitReplicas a worker deletes the outbox row only after that many
// replicas of each primary it wrote have the job's timeline entries and the
// author's recent-post entry (rediswait: a WAIT behind the writes, one
// pipeline per master), so a failover after the job finished loses none of
// them (TestNoAcknowledgedPostIsLostWhenAMasterDies).
//
// A read finds the page's post ids, then their payloads. Hybrid reads its ids
// in one pipeline of plain commands (readPage): the timeline range, the
// celebrity set's version and which of the celebrities (this process's copy
// of the set, loaded again when the version moved) the user follows
// (SMISMEMBER on the user's followee set), and the ranges of the celebrities
// the user followed at the last read (a guess, checked by the same
// pipeline; a miss costs a second round trip), merged in Go. Push reads its timeline range;
// pull pipelines its reads. The payloads
// (json.Marshal of a Post) come from an in-process cache when it has them
// (posts are never edited, so a cached payload never goes stale), the others
// from one MGET: they are checked for the Post layout and the id asked for,
// cached, and spliced into the response as they are; any other payload is
// replaced by the post from PostgreSQL. With a warm cache a push or hybrid
// read is one Redis round trip. Concurrent reads share those round trips:
// their commands (the hybrid ranges, the push range, the MGET) queue in a
// batcher that sends whatever is queued as one pipeline through the ReadFunc
// while the previous one is on the wire (readBatcher, Config.ReadBatch), so
// a lone read goes out at once and busy ones cost Redis and this process one
// socket write and read per batch instead of per read.
//
// # Redis Cluster
//
// Every command of the package touches one key, except the script that
// changes the celebrity set and sets its version (celebs and
// {<prefix>celebs}:v, one slot by the hash tag; see keys). Reads of many
// keys are pipelines, which a cluster client splits per node: a page's
// payloads are one MGET on a single Redis and one single-key MGET each on a
// cluster (posts hash to many slots). The hybrid read used to SINTER the
// global celebrity set with the user's followees, two keys in two slots;
// it asks SMISMEMBER of the followee set instead. No key was renamed; the
// version key is new (a missing one is a version too: the set as it is).
//
// Two keys are read by every hybrid reader of a celebrity: the set's version
// and the celebrity's recent posts. On a cluster they are copied
// (Config.HotKeyCopies, 12 by default) under names spread evenly over the
// slots, and each user reads one copy, so no master serves more of the
// reads than its share of the slots (hotcopies.go has the protocol that
// keeps the copies from ever serving a set older than the last completed
// change).
//
// Main invariant: a post accepted by Post (its transaction committed) reaches
// every follower's timeline at least once, whatever process dies when; and
// because a timeline is a sorted set keyed by post id, delivering it again
// changes nothing, so each follower has it exactly once.
//
// Post ids are 53-bit integers, milliseconds since 2025-01-01 UTC shifted
// left by 12 bits plus a 12-bit sequence (see NewIDGenerator), so they sort by
// time, and a float64 (a Redis score, a JSON number) holds them exactly.
package feed
