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
// job); XAUTOCLAIM hands jobs pending on a dead worker to a live one.
//
// A read of a push or hybrid feed is one round trip: a read-only Lua script
// (readScript, run with EVALSHA_RO through the replica selector's ReadFunc)
// reads the timeline range, the recent posts of the celebrities the user
// follows, merges them newest first and returns the ids with their payloads.
// Pull pipelines its reads. The stored payloads (json.Marshal of a Post) are
// checked for the Post layout and the id asked for, then spliced into the
// response as they are; any other payload is replaced by the post from
// PostgreSQL.
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
