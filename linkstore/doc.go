// Package linkstore is the pure core of the compact click / deferred-deep-link
// record store (SPEC §S4): the Record type and its protobuf schema (package
// linkpb), a deterministic generator of realistic ~1 KB records, value codecs
// (json, proto, proto+brotli, proto+zstd, proto+zstd+dict) with versioned,
// trained zstd dictionaries, and Redis key packing. It talks to no server; the
// Redis store calls these codecs and key functions.
//
// Main invariant: every value written by a Codec starts with a fixed,
// uncompressed 3-byte header
//
//	offset 0: format byte (FormatJSON, FormatProto, ...), never '{'
//	offset 1: dictionary version (0 unless the format uses a dictionary)
//	offset 2: flags byte (FlagConsumed = bit 0)
//
// and decoding never looks at the flags byte. So the store can mark a record
// consumed in place with Redis SETRANGE key FlagsOffset "\x01" (or
// SETBIT key ConsumedBitOffset 1), which keeps the TTL and does not rewrite or
// recompress the value, and the decoded Record is unchanged by it.
//
// The one value kind without a header is raw JSON (JSONRaw codec, the
// baseline "as stored today"): it starts with '{' and cannot carry flags.
//
// Bytes read back from Redis are untrusted: decoders cap the decoded size
// (Options.MaxDecodedSize, 64 KiB by default) and report corrupt, truncated
// or oversized values as errors wrapping the ErrCorrupt / ErrTooLarge
// sentinels, never as panics.
package linkstore
