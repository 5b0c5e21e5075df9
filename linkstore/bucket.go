package linkstore

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/redisscan"
	"github.com/baedal/baedal/internal/redisslot"
)

// Layout names: how a store lays its records out in Redis.
const (
	// LayoutKeys is one Redis string per record (SET key value NX PXAT).
	LayoutKeys = "keys"
	// LayoutBucketed keeps records as fields of small hashes, one hash per
	// (time bucket, shard), in Redis's compact listpack encoding. The
	// per-key cost of Redis (dict entry, key string, expires entry, object
	// header: ~190 B) is then paid once per bucket instead of once per
	// record.
	LayoutBucketed = "bucketed"
)

// Field expiry modes of the bucketed layout.
const (
	// FieldExpiryAuto uses per-field expiry (HPEXPIREAT) when the server
	// has it (Redis >= 7.4, Valkey >= 9), detected at start.
	FieldExpiryAuto = "auto"
	// FieldExpiryOn requires it: the store does not start without it.
	FieldExpiryOn = "on"
	// FieldExpiryOff never uses it: a bucket expires as a whole.
	FieldExpiryOff = "off"
)

// BucketConfig configures the bucketed layout. Zero fields take the
// defaults.
//
// Sizing: a bucket holds the clicks of one Width in one of Shards shards,
// so about clicks_per_second × Width / Shards records. Keep that well
// under BucketRedisSettings' hash-max-listpack-entries (1,024), and above
// ~20 so the bucket's own key cost is spread over enough records: the
// defaults (1 minute, 64 shards) suit ~20 to ~500 clicks per second. Shards
// is part of where a record is: changing it (or Width) makes the records
// written before unreachable, so change it only through a migration to a
// store with the new setting (--links-migrate, another --links-namespace).
type BucketConfig struct {
	// Width is the time span of one bucket (default 1m).
	Width time.Duration
	// Shards is the number of buckets per Width (default 64). Each shard's
	// buckets share one Redis Cluster slot, and the shards' slots are
	// spread evenly over the 16,384 slots.
	Shards int
	// FieldExpiry is auto, on or off (default auto).
	FieldExpiry string
}

// Bucket defaults.
const (
	DefaultBucketWidth  = time.Minute
	DefaultBucketShards = 64
	// MaxBucketShards is the number of Redis Cluster slots.
	MaxBucketShards = redisslot.Count
)

// BucketRedisSettings are the Redis settings the bucketed layout needs: a
// hash stays a listpack while it has at most hash-max-listpack-entries
// fields and each field and value has at most hash-max-listpack-value
// bytes (Redis's defaults, 128 and 64, would turn every bucket into a hash
// table). The local stack sets them; serve warns where a server has less.
var BucketRedisSettings = []RedisSetting{
	{Name: "hash-max-listpack-entries", Value: 1024},
	{Name: "hash-max-listpack-value", Value: 4096},
}

// BucketRedisArgs are BucketRedisSettings as redis-server command-line
// arguments ("--name value"), for a server started for one run or test.
func BucketRedisArgs() []string {
	var args []string
	for _, st := range BucketRedisSettings {
		args = append(args, "--"+st.Name, strconv.FormatInt(st.Value, 10))
	}
	return args
}

// RedisSetting is one server setting and the least value it needs.
type RedisSetting struct {
	Name  string
	Value int64
}

// WithDefaults returns c with zero fields set.
func (c BucketConfig) WithDefaults() BucketConfig {
	if c.Width == 0 {
		c.Width = DefaultBucketWidth
	}
	if c.Shards == 0 {
		c.Shards = DefaultBucketShards
	}
	if c.FieldExpiry == "" {
		c.FieldExpiry = FieldExpiryAuto
	}
	return c
}

// Validate names the first invalid field with its allowed values.
func (c BucketConfig) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Width < time.Second || c.Width > time.Hour || c.Width%time.Second != 0:
		return fmt.Errorf("bucket-width: got %s, allowed: whole seconds in 1s..1h", c.Width)
	case c.Shards < 1 || c.Shards > MaxBucketShards:
		return fmt.Errorf("bucket-shards: got %d, allowed: 1..%d", c.Shards, MaxBucketShards)
	case c.FieldExpiry != FieldExpiryAuto && c.FieldExpiry != FieldExpiryOn && c.FieldExpiry != FieldExpiryOff:
		return fmt.Errorf("field-expiry: got %q, allowed: %s, %s, %s", c.FieldExpiry, FieldExpiryAuto, FieldExpiryOn, FieldExpiryOff)
	}
	return nil
}

// Flags binds the configuration under prefix ("links-" or "links-old-").
func (c *BucketConfig) Flags(fs *flag.FlagSet, prefix string) {
	*c = c.WithDefaults()
	fs.DurationVar(&c.Width, prefix+"bucket-width", c.Width, "bucketed layout: time span of one bucket (changing it moves every record: migrate)")
	fs.IntVar(&c.Shards, prefix+"bucket-shards", c.Shards, "bucketed layout: buckets per bucket width; aim at clicks/s × width / shards of 20..500 records per bucket (changing it moves every record: migrate)")
	fs.StringVar(&c.FieldExpiry, prefix+"field-expiry", c.FieldExpiry, "bucketed layout: per-record expiry with HPEXPIREAT: auto (when Redis >= 7.4 or Valkey >= 9 has it), on (required) or off")
}

// bucketLayout is where the bucketed layout keeps a record. A record is
// the field <16 raw id bytes> of the hash
//
//	<namespace>b:{<tag>}<bucket index, 5 bytes big-endian>
//
// where the bucket index is the record's time over Width and tag is 2
// bytes that hash to its shard's Redis Cluster slot. The shard is a hash
// of the id modulo Shards. A version 7 id carries its time (V7Time), so
// its bucket follows from the id alone. Any other id (a client's UUIDv4)
// goes to the bucket of the time it was created at; a read then probes
// the buckets of its shard back over the longest lifetime (probeKeys),
// and a create checks them all, so it is never stored twice. All buckets
// of one shard are in one slot, so one script can touch them on a Redis
// Cluster too.
type bucketLayout struct {
	prefix      string // <namespace>b:
	width       time.Duration
	shards      uint64
	tags        [][2]byte
	lookback    time.Duration // the longest lifetime of a record
	fieldExpiry bool
}

// bucketKeyPrefix starts every bucket key after the namespace.
const bucketKeyPrefix = "b:"

// bucketKeyLen is the length of a bucket key after the namespace.
const bucketKeyLen = len(bucketKeyPrefix) + 4 + 5

func newBucketLayout(namespace string, c BucketConfig, lookback time.Duration) *bucketLayout {
	c = c.WithDefaults()
	b := &bucketLayout{prefix: namespace + bucketKeyPrefix, width: c.Width, shards: uint64(c.Shards), lookback: lookback}
	b.tags = make([][2]byte, c.Shards)
	for shard := range c.Shards {
		// The middle slot of the shard's equal share of the slots.
		slot := uint16((shard*MaxBucketShards + MaxBucketShards/2) / c.Shards)
		b.tags[shard] = slotTag(slot)
	}
	return b
}

// shard of an id: FNV-1a of its 16 bytes, so ids a client numbers in
// sequence spread too.
func (b *bucketLayout) shard(id ClickID) int {
	h := fnv.New64a()
	_, _ = h.Write(id[:])
	return int(h.Sum64() % b.shards)
}

// index is the bucket index of a time.
func (b *bucketLayout) index(t time.Time) int64 {
	return max(t.UnixMilli(), 0) / b.width.Milliseconds()
}

// key returns the bucket key of a shard and index.
func (b *bucketLayout) key(shard int, index int64) string {
	buf := make([]byte, 0, len(b.prefix)+bucketKeyLen-len(bucketKeyPrefix))
	buf = append(buf, b.prefix...)
	buf = append(buf, '{', b.tags[shard][0], b.tags[shard][1], '}')
	var ix [8]byte
	binary.BigEndian.PutUint64(ix[:], uint64(index))
	return string(append(buf, ix[3:]...))
}

// field is the hash field of a record: the id's 16 bytes.
func field(id ClickID) string { return string(id[:]) }

// placement is where a create puts a record: the bucket, and the other
// buckets that may hold the same id already (none for a version 7 id).
type placement struct {
	key    string
	others []string
}

// place returns the create's placement at time now.
func (b *bucketLayout) place(id ClickID, now time.Time) placement {
	if t, ok := id.V7Time(); ok {
		return placement{key: b.key(b.shard(id), b.index(t))}
	}
	keys := b.probeKeys(id, now)
	target := b.key(b.shard(id), b.index(now))
	for i, k := range keys {
		if k == target {
			return placement{key: target, others: append(keys[:i:i], keys[i+1:]...)}
		}
	}
	return placement{key: target, others: keys}
}

// homeKey is the bucket of a version 7 id; ok is false for other ids.
func (b *bucketLayout) homeKey(id ClickID) (string, bool) {
	t, ok := id.V7Time()
	if !ok {
		return "", false
	}
	return b.key(b.shard(id), b.index(t)), true
}

// probeKeys are the buckets that may hold a live record of an id without
// a time, newest first: its shard's buckets from one width after now (a
// server whose clock is ahead) back to lookback plus one width before now.
// That is lookback/width + 3 buckets: 63 with the defaults.
func (b *bucketLayout) probeKeys(id ClickID, now time.Time) []string {
	shard := b.shard(id)
	newest, oldest := b.index(now.Add(b.width)), b.index(now.Add(-b.lookback-b.width))
	keys := make([]string, 0, newest-oldest+1)
	for ix := newest; ix >= oldest; ix-- {
		keys = append(keys, b.key(shard, ix))
	}
	return keys
}

// bucketCreateScript stores a record as a field of its bucket.
//
//	KEYS[1]      the bucket the record goes to
//	KEYS[2..n]   other buckets that may hold the id (an id without a time)
//	ARGV[1]      the field (16 id bytes)
//	ARGV[2]      the value
//	ARGV[3]      expires_at, Unix ms
//	ARGV[4]      '1': also expire the field itself (HPEXPIREAT)
//	ARGV[5]      '1': replace an existing field (Put), else never (Create)
//
// It returns 0 when the id exists (nothing is written), else 1. The
// bucket's expiry is raised to the record's expires_at (PEXPIREAT GT, so
// it never drops): a bucket is deleted when its last possible record has
// expired.
var bucketCreateScript = redis.NewScript(`
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
else
  for i = 2, #KEYS do
    if redis.call('HEXISTS', KEYS[i], ARGV[1]) == 1 then return 0 end
  end
  if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
end
if redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
else
  redis.call('PEXPIREAT', KEYS[1], ARGV[3], 'GT')
end
if ARGV[4] == '1' then
  redis.call('HPEXPIREAT', KEYS[1], ARGV[3], 'FIELDS', 1, ARGV[1])
end
return 1
`)

// bucketProbeScript returns {i, value} for the first of KEYS that holds
// the field ARGV[1], or nil.
var bucketProbeScript = redis.NewScript(`
for i = 1, #KEYS do
  local v = redis.call('HGET', KEYS[i], ARGV[1])
  if v then return {i, v} end
end
return false
`)

// bucketResolveScript finds and marks a record in one step: for the
// first of KEYS that holds the field ARGV[1] (one bucket for a version 7
// id, the probe buckets newest first for any other id), it sets
// FlagConsumed in the value's flags byte (byte 3) and returns {i, old
// bit, value as read}. A value without a header of this store (shorter
// than HeaderLen, or a first byte outside 1..ARGV[2], the last Format) is
// not touched and answers {i, -1, value}: the caller's decode names its
// fault. nil when no bucket holds the field. A field has no SETBIT: the
// value is written back with one byte changed, same length, so the
// listpack entry is overwritten in place. With per-field expiry (ARGV[3]
// '1') the field's expiry is read first and set again, since HSET clears
// it.
//
// Reading and marking in one script is one round trip and one search of
// the bucket's listpack fewer than a read and then a compare-and-set
// (which the keys layout does): a bucket holds hundreds of records, and
// each search walks its listpack. A value that then does not decode, or
// has expired, is restored by bucketUnmarkScript before Resolve returns.
var bucketResolveScript = redis.NewScript(`
for i = 1, #KEYS do
  local v = redis.call('HGET', KEYS[i], ARGV[1])
  if v then
    local format = string.byte(v, 1)
    if #v < 3 or format < 1 or format > tonumber(ARGV[2]) then return {i, -1, v} end
    local flags = string.byte(v, 3)
    if flags % 2 == 1 then return {i, 1, v} end
    local at = 0
    if ARGV[3] == '1' then at = redis.call('HPEXPIRETIME', KEYS[i], 'FIELDS', 1, ARGV[1])[1] end
    redis.call('HSET', KEYS[i], ARGV[1], string.sub(v, 1, 2) .. string.char(flags + 1) .. string.sub(v, 4))
    if at > 0 then redis.call('HPEXPIREAT', KEYS[i], at, 'FIELDS', 1, ARGV[1]) end
    return {i, 0, v}
  end
end
return false
`)

// bucketUnmarkScript undoes bucketResolveScript's mark: if the field
// ARGV[1] of KEYS[1] still holds ARGV[2] (the value as the mark left it),
// it writes back ARGV[3] (the value as read), keeping the field's expiry
// (ARGV[4] '1'), and returns 1; else 0 (another request changed it since).
var bucketUnmarkScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
local at = 0
if ARGV[4] == '1' then at = redis.call('HPEXPIRETIME', KEYS[1], 'FIELDS', 1, ARGV[1])[1] end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
if at > 0 then redis.call('HPEXPIREAT', KEYS[1], at, 'FIELDS', 1, ARGV[1]) end
return 1
`)

// bucketDeleteIfUnchangedScript deletes the field ARGV[1] of KEYS[1] if it
// still holds ARGV[2] or ARGV[3] (the same value marked consumed).
var bucketDeleteIfUnchangedScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v == ARGV[2] or v == ARGV[3] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
`)

// errBucketCorrupt names the bucket and field of a value that is not a
// record of this store.
func errBucketCorrupt(key string, id ClickID, err error) error {
	return fmt.Errorf("field %s of bucket %q: %w", id, key, err)
}

// bucketCreate is create for the bucketed layout: one script, so of
// concurrent creates of one id exactly one stores it.
func (s *Store) bucketCreate(ctx context.Context, id ClickID, value []byte, expiresAt time.Time, replace bool) error {
	p := s.buckets.place(id, s.now())
	keys := append([]string{p.key}, p.others...)
	args := []any{field(id), value, expiresAt.UnixMilli(), boolArg(s.buckets.fieldExpiry), boolArg(replace)}
	var created int64
	if s.cfg.WaitReplicas == 0 || replace {
		var err error
		if created, err = bucketCreateScript.Run(ctx, s.primary, keys, args...).Int64(); err != nil {
			return fmt.Errorf("linkstore: create click %s in bucket %q: %w", id, p.key, err)
		}
	} else {
		var cmd *redis.Cmd
		if err := redisWaitPipelines(ctx, s, p.key, func(pipe redis.Pipeliner) {
			cmd = bucketCreateScript.Eval(ctx, pipe, keys, args...)
		}); err != nil {
			return err
		}
		var err error
		if created, err = cmd.Int64(); err != nil {
			return fmt.Errorf("linkstore: create click %s in bucket %q: %w", id, p.key, err)
		}
	}
	if created == 0 {
		return redis.Nil
	}
	return nil
}

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// bucketFind returns the bucket and value of a record, through rc (the
// Reader for Get, the primary for Resolve): one HGET for a version 7 id,
// one probe script over probeKeys on the primary for any other id.
func (s *Store) bucketFind(ctx context.Context, id ClickID, viaReader bool) (string, []byte, error) {
	f := field(id)
	if key, ok := s.buckets.homeKey(id); ok {
		var v []byte
		var err error
		if fr, ok := s.reader.(FieldReader); ok && viaReader {
			v, err = fr.HGet(ctx, key, f)
		} else {
			v, err = s.primary.HGet(ctx, key, f).Bytes()
			if errors.Is(err, redis.Nil) {
				err = ErrNotFound
			}
		}
		if errors.Is(err, ErrNotFound) {
			return "", nil, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		if err != nil {
			return "", nil, bucketReadError(id, key, err)
		}
		return key, v, nil
	}
	keys := s.buckets.probeKeys(id, s.now())
	res, err := bucketProbeScript.Run(ctx, s.primary, keys, f).Slice()
	if errors.Is(err, redis.Nil) {
		return "", nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return "", nil, bucketReadError(id, keys[0], err)
	}
	i, _ := res[0].(int64)
	v, _ := res[1].(string)
	if i < 1 || int(i) > len(keys) {
		return "", nil, fmt.Errorf("linkstore: probe for click %s answered bucket %d of %d", id, i, len(keys))
	}
	return keys[i-1], []byte(v), nil
}

// bucketReadError wraps a failed read of a bucket. WRONGTYPE means the key
// holds a string, list, ...: the record is corrupt, Redis is fine.
func bucketReadError(id ClickID, key string, err error) error {
	if redis.HasErrorPrefix(err, "WRONGTYPE") {
		return fmt.Errorf("%w: click %s: bucket %q holds a non-hash Redis value: %v", ErrCorrupt, id, key, err)
	}
	return fmt.Errorf("linkstore: HGET click %s from bucket %q: %w", id, key, err)
}

// bucketResolve is Resolve for the bucketed layout: one script finds the
// field and marks it consumed (bucketResolveScript), then the value is
// decoded. A value that does not decode, or has expired, is an error
// naming the click and its bucket, and the mark this call made is undone
// before it returns, so a failed Resolve leaves the bucket as it was.
func (s *Store) bucketResolve(ctx context.Context, id ClickID) (Resolution, error) {
	var keys []string
	if key, ok := s.buckets.homeKey(id); ok {
		keys = []string{key}
	} else {
		keys = s.buckets.probeKeys(id, s.now())
	}
	res, err := bucketResolveScript.Run(ctx, s.primary, keys, field(id), int(lastFormat), boolArg(s.buckets.fieldExpiry)).Slice()
	switch {
	case errors.Is(err, redis.Nil):
		return Resolution{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	case redis.HasErrorPrefix(err, "WRONGTYPE"):
		return Resolution{}, bucketReadError(id, keys[0], err)
	case err != nil:
		return Resolution{}, fmt.Errorf("linkstore: resolve click %s in bucket %q: %w", id, keys[0], err)
	case len(res) != 3:
		return Resolution{}, fmt.Errorf("linkstore: resolve click %s: the script answered %d values, want 3", id, len(res))
	}
	i, _ := res[0].(int64)
	oldBit, _ := res[1].(int64)
	v, _ := res[2].(string)
	if i < 1 || int(i) > len(keys) {
		return Resolution{}, fmt.Errorf("linkstore: resolve click %s: the script answered bucket %d of %d", id, i, len(keys))
	}
	key, value := keys[i-1], []byte(v)
	st, err := s.decodeStored(ctx, id, value)
	if err == nil && oldBit == -1 {
		err = fmt.Errorf("%w: click %s: the value's header is not one this store writes", ErrCorrupt, id)
	}
	if err != nil {
		err = errBucketCorrupt(key, id, err)
		if oldBit == 0 {
			if uerr := bucketUnmarkScript.Run(ctx, s.primary, []string{key}, field(id), consumedValue(value), value, boolArg(s.buckets.fieldExpiry)).Err(); uerr != nil {
				return Resolution{}, fmt.Errorf("%w; and undoing its consumed mark failed: %v", err, uerr)
			}
		}
		return Resolution{}, err
	}
	return Resolution{Record: st.Record, AlreadyConsumed: oldBit == 1}, nil
}

// bucketDeleteIfUnchanged is deleteIfUnchanged for the bucketed layout.
func (s *Store) bucketDeleteIfUnchanged(ctx context.Context, id ClickID, value []byte) error {
	key, _, err := s.bucketFind(ctx, id, false)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := bucketDeleteIfUnchangedScript.Run(ctx, s.primary, []string{key}, field(id), value, consumedValue(value)).Err(); err != nil {
		return fmt.Errorf("linkstore: undo create of click %s in bucket %q: %w", id, key, err)
	}
	return nil
}

// bucketScan is Scan for the bucketed layout: SCAN the bucket keys of
// every master, HGETALL each bucket (a bucket is small). key is the bucket
// key followed by the field.
func (s *Store) bucketScan(ctx context.Context, limit int, fn func(key string, value []byte) error) error {
	pattern := redisscan.EscapeGlob(s.buckets.prefix) + "*"
	nodes, err := redisscan.Nodes(ctx, s.primary)
	if err != nil {
		return fmt.Errorf("linkstore: list the cluster's masters to SCAN %q: %w", pattern, err)
	}
	seen := 0
	for _, node := range nodes {
		iter := node.Scan(ctx, 0, pattern, 100).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			if len(key) != len(s.buckets.prefix)+bucketKeyLen-len(bucketKeyPrefix) {
				continue
			}
			fields, err := node.HGetAll(ctx, key).Result()
			if redis.HasErrorPrefix(err, "WRONGTYPE") {
				continue
			}
			if err != nil {
				return fmt.Errorf("linkstore: HGETALL bucket %q: %w", key, err)
			}
			for f, v := range fields {
				if err := fn(key+f, []byte(v)); err != nil {
					return err
				}
				if seen++; seen >= limit {
					return nil
				}
			}
		}
		if err := iter.Err(); err != nil {
			return fmt.Errorf("linkstore: SCAN %q: %w", pattern, err)
		}
	}
	return nil
}

// hasFieldExpiry reports whether the server knows HPEXPIREAT (Redis >=
// 7.4, Valkey >= 9): COMMAND INFO answers nil for a command it lacks.
func hasFieldExpiry(ctx context.Context, rdb redis.Cmdable) (bool, error) {
	doer, ok := rdb.(interface {
		Do(ctx context.Context, args ...any) *redis.Cmd
	})
	if !ok {
		return false, nil
	}
	res, err := doer.Do(ctx, "COMMAND", "INFO", "HPEXPIREAT").Slice()
	if err != nil {
		return false, fmt.Errorf("linkstore: COMMAND INFO HPEXPIREAT: %w", err)
	}
	return len(res) == 1 && res[0] != nil, nil
}

// fieldExpiryEncoding reports how the server encodes a small hash once one
// of its fields has an expiry: Valkey 9.1 turns it into a hashtable (Redis
// 7.4 documents a compact listpackex). It writes one short-lived probe key
// of its own in the namespace and deletes it.
func fieldExpiryEncoding(ctx context.Context, rdb redis.Cmdable, namespace string) (string, error) {
	key := namespace + "field-expiry-probe:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	defer rdb.Del(context.WithoutCancel(ctx), key)
	if err := rdb.HSet(ctx, key, "a", "1", "b", "2").Err(); err != nil {
		return "", fmt.Errorf("linkstore: field expiry probe: %w", err)
	}
	if err := rdb.PExpire(ctx, key, time.Minute).Err(); err != nil {
		return "", fmt.Errorf("linkstore: field expiry probe: %w", err)
	}
	if err := rdb.HPExpire(ctx, key, time.Minute, "a").Err(); err != nil {
		return "", fmt.Errorf("linkstore: field expiry probe: HPEXPIRE: %w", err)
	}
	encoding, err := rdb.ObjectEncoding(ctx, key).Result()
	if err != nil {
		return "", fmt.Errorf("linkstore: field expiry probe: OBJECT ENCODING: %w", err)
	}
	return encoding, nil
}

// CheckRedisSettings compares the bucketed layout's BucketRedisSettings
// with every master's CONFIG GET and logs a warning for each setting below
// them, where a bucket would fall back from a listpack to a hash table
// (still correct, ~70 B more per record). Where CONFIG is not allowed (many
// managed services) it logs that it could not check; docs/deploy.md says
// what to set in the service's parameter group. It returns the settings
// found too low, as "name=value (want >= N) on node", for tests and tools.
func CheckRedisSettings(ctx context.Context, rdb redis.Cmdable, log *slog.Logger) []string {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	nodes, err := redisscan.Nodes(ctx, rdb)
	if err != nil {
		log.Info("links bucketed layout: could not list the Redis masters to check the listpack settings", "err", err)
		return nil
	}
	var low []string
	for i, node := range nodes {
		for _, want := range BucketRedisSettings {
			got, err := node.ConfigGet(ctx, want.Name).Result()
			if err != nil {
				log.Info("links bucketed layout: CONFIG GET is not allowed here; make sure the server's parameter group sets the listpack settings (docs/deploy.md)",
					"setting", want.Name, "want_at_least", want.Value, "err", err)
				return low
			}
			v, err := strconv.ParseInt(got[want.Name], 10, 64)
			if err != nil || v < want.Value {
				low = append(low, fmt.Sprintf("%s=%s (want >= %d) on master %d", want.Name, got[want.Name], want.Value, i))
				log.Warn("links bucketed layout: a Redis setting is too low; buckets past it fall back from listpacks to hash tables and take ~70 B more per record",
					"setting", want.Name, "value", got[want.Name], "want_at_least", want.Value, "master", i)
			}
		}
	}
	return low
}

// slotTag returns 2 bytes that hash to slot as a Redis Cluster hash tag
// ({tag}): CRC-16 is a bijection on 2-byte inputs, so each slot has 4 of
// them (the slot is the CRC's low 14 bits); the first in byte order
// without '{' or '}' is taken, so every process picks the same.
func slotTag(slot uint16) [2]byte { return slotTags()[slot] }

var slotTags = sync.OnceValue(func() *[MaxBucketShards][2]byte {
	var tags [MaxBucketShards][2]byte
	var found [MaxBucketShards]bool
	for v := range 1 << 16 {
		tag := [2]byte{byte(v >> 8), byte(v)}
		if tag[0] == '{' || tag[0] == '}' || tag[1] == '{' || tag[1] == '}' {
			continue
		}
		slot := redisslot.CRC16(string(tag[:])) % MaxBucketShards
		if !found[slot] {
			tags[slot], found[slot] = tag, true
		}
	}
	return &tags
})

// CreateValues stores already encoded values in pipelines of up to 1,000,
// never replacing a record, without Create's checks and without WAIT: for
// loads and benchmarks (`bench links`). Record i expires at expiresAt[i].
// It returns how many ids were stored already.
func (s *Store) CreateValues(ctx context.Context, ids []ClickID, values [][]byte, expiresAt []time.Time) (int, error) {
	if len(values) != len(ids) || len(expiresAt) != len(ids) {
		return 0, fmt.Errorf("linkstore: CreateValues: %d ids, %d values, %d expiry times", len(ids), len(values), len(expiresAt))
	}
	if s.buckets != nil {
		if err := bucketCreateScript.Load(ctx, s.primary).Err(); err != nil {
			return 0, fmt.Errorf("linkstore: SCRIPT LOAD: %w", err)
		}
	}
	existed := 0
	now := s.now()
	for start := 0; start < len(ids); start += 1000 {
		end := min(start+1000, len(ids))
		pipe := s.primary.Pipeline()
		cmds := make([]redis.Cmder, 0, end-start)
		for i := start; i < end; i++ {
			if s.buckets == nil {
				cmds = append(cmds, pipe.SetArgs(ctx, s.Key(ids[i]), values[i], redis.SetArgs{Mode: "NX", ExpireAt: expiresAt[i]}))
				continue
			}
			p := s.buckets.place(ids[i], now)
			keys := append([]string{p.key}, p.others...)
			cmds = append(cmds, bucketCreateScript.EvalSha(ctx, pipe, keys, field(ids[i]), values[i], expiresAt[i].UnixMilli(), boolArg(s.buckets.fieldExpiry), "0"))
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return existed, fmt.Errorf("linkstore: pipelined create of %d records: %w", end-start, err)
		}
		for _, c := range cmds {
			switch c := c.(type) {
			case *redis.StatusCmd:
				if errors.Is(c.Err(), redis.Nil) {
					existed++
				}
			case *redis.Cmd:
				if n, _ := c.Int64(); n == 0 {
					existed++
				}
			}
		}
	}
	return existed, nil
}

// BucketKeys returns the number of bucket keys of a bucketed store and the
// Redis encodings of up to sample of them (listpack, listpackex,
// hashtable): the benchmark's evidence that buckets stayed compact.
func (s *Store) BucketKeys(ctx context.Context, sample int) (int64, map[string]int, error) {
	if s.buckets == nil {
		return 0, nil, errors.New("linkstore: BucketKeys of a store in the keys layout")
	}
	nodes, err := redisscan.Nodes(ctx, s.primary)
	if err != nil {
		return 0, nil, err
	}
	var n int64
	encodings := map[string]int{}
	pattern := redisscan.EscapeGlob(s.buckets.prefix) + "*"
	for _, node := range nodes {
		iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			n++
			if sample > 0 {
				sample--
				enc, err := node.ObjectEncoding(ctx, iter.Val()).Result()
				if err != nil {
					return 0, nil, fmt.Errorf("linkstore: OBJECT ENCODING %q: %w", iter.Val(), err)
				}
				encodings[enc]++
			}
		}
		if err := iter.Err(); err != nil {
			return 0, nil, fmt.Errorf("linkstore: SCAN %q: %w", pattern, err)
		}
	}
	return n, encodings, nil
}
