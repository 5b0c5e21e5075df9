// Package linkstore is the compact click / deferred-deep-link record store
// (SPEC §S4), in two layers.
//
// The pure core talks to no server: the Record type and its protobuf schema
// (package linkpb; protowire.go is a hand-written encoder/decoder for it that
// matches the generated code byte for byte and is 2-3x faster), a
// deterministic generator of realistic ~1 KB records, value codecs (json-raw,
// json, proto, proto+brotli, proto+zstd, proto+zstd+dict, proto+s2+dict)
// with versioned, trained dictionaries, and Redis key packing (text, raw,
// ascii85).
//
// The Redis layer: Store (Create is SET key value NX PXAT expires_at, so a
// click is never replaced; reads go through a pluggable Reader so the S3
// replica selector can serve them, and a record past its expires_at reads
// as ErrExpired before Redis evicts it; Resolve decodes and checks the
// value, then marks it consumed with SETBIT in a compare-and-set Lua
// script, so a value that does not decode is never changed), dictionaries
// stored versioned in Redis (<ns>linkstore:dict:<version>,
// <ns>linkstore:dict:current), the migration Service (old-only → dual-write → shadow-read → new-only, mode
// and report in Redis), and the HTTP routes (RegisterRoutes).
//
// Main invariant: every value written by a Codec starts with a fixed,
// uncompressed 3-byte header
//
//	offset 0: format byte (FormatJSON, FormatProto, ...), never '{'
//	offset 1: dictionary version (0 unless the format uses a dictionary)
//	offset 2: flags byte (FlagConsumed = bit 0)
//
// and decoding never looks at the flags byte. So the store marks a record
// consumed in place with Redis SETBIT key ConsumedBitOffset 1 (whose reply
// is the old bit; the script runs it only if the value is still the one
// decoded, so check-and-set is one atomic step), which keeps the TTL and
// does not rewrite or recompress the value, and the decoded Record is
// unchanged by it.
//
// The one value kind without a header is raw JSON (JSONRaw codec, the
// baseline "as stored today"): it starts with '{' and cannot carry flags.
// The store marks it consumed the way header-less stores do today: it
// rewrites the whole value as {"consumed":true,...} with SET KEEPTTL.
//
// Two layouts (StoreConfig.Layout, docs/links.md): keys, one Redis string
// per record as above, and bucketed (bucket.go), where a record is the field
// <16 id bytes> of a hash <ns>b:{<tag>}<bucket index>, one hash per time
// bucket and shard, kept in Redis's listpack encoding, which removes
// Redis's per-key cost from each record. New click ids are UUIDv7, so the
// bucket follows from the id; a client's UUIDv4 goes to the bucket of its
// creation time and is found by probing its shard's buckets over the
// longest lifetime. Create is HSETNX in a script (never replaced), Resolve
// one script that reads the field and rewrites it with the flags byte
// changed (undone if the value then does not decode or has expired), and
// a bucket expires when its last record has. All buckets of a
// shard share one slot, so those scripts work on a Redis Cluster.
//
// On a Redis Cluster (backend --redis-cluster-mode), in the keys layout,
// every command touches one key: Create, Get and the Resolve and delete scripts work on the click's key
// alone, so no two keys need to share a slot and no key has a hash tag (none
// was renamed). The reads of many keys, the dictionaries at load
// (<ns>linkstore:dict:*, 256 keys) and Scan's values, are one MGET on a
// single Redis and single-key MGETs in one pipeline on a cluster
// (getValues); Scan walks every master; ResetReport deletes the report and
// its samples with two DELs. With StoreConfig.WaitReplicas, Create returns
// only after that many replicas of the key's primary have the click (WAIT).
//
// Bytes read back from Redis are untrusted: decoders cap the decoded size
// (Options.MaxDecodedSize, 64 KiB by default) and report corrupt, truncated
// or oversized values as errors wrapping the ErrCorrupt / ErrTooLarge
// sentinels, never as panics. The store also refuses a value of the other
// format family (raw JSON in a header store and the reverse), a key of
// another Redis type, and a record whose click id is not the key's.
package linkstore
