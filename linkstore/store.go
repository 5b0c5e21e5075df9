package linkstore

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/baedal/baedal/internal/redisscan"
	"github.com/baedal/baedal/internal/rediswait"
	"github.com/redis/go-redis/v9"
)

// ErrNotFound: no record is stored under the click id (never written, or
// expired).
var ErrNotFound = errors.New("linkstore: click not found")

// Reader reads one value by key; a missing key is ErrNotFound. The store
// reads through it, so reads can go to a replica chosen by the S3 selector
// (replica/redisread) instead of the primary. Writes and Resolve always go
// to the primary.
type Reader interface {
	Get(ctx context.Context, key string) ([]byte, error)
}

// ReaderFunc adapts a function to Reader.
type ReaderFunc func(ctx context.Context, key string) ([]byte, error)

// Get calls f.
func (f ReaderFunc) Get(ctx context.Context, key string) ([]byte, error) { return f(ctx, key) }

// FieldReader is a Reader that also reads one field of a hash: the
// bucketed layout's reads of version 7 ids go through it. A Reader without
// it has those reads go to the primary.
type FieldReader interface {
	HGet(ctx context.Context, key, field string) ([]byte, error)
}

// ClientReader reads with one go-redis client (the primary, or one replica).
type ClientReader struct{ Client redis.Cmdable }

// Get implements Reader.
func (r ClientReader) Get(ctx context.Context, key string) ([]byte, error) {
	return notFound(r.Client.Get(ctx, key).Bytes())
}

// HGet implements FieldReader.
func (r ClientReader) HGet(ctx context.Context, key, field string) ([]byte, error) {
	return notFound(r.Client.HGet(ctx, key, field).Bytes())
}

// DoReader reads through a function that runs a read on a client it picks
// (the S3 replica selector's Do).
type DoReader func(ctx context.Context, read func(context.Context, redis.Cmdable) error) error

// Get implements Reader.
func (d DoReader) Get(ctx context.Context, key string) ([]byte, error) {
	return d.read(ctx, func(ctx context.Context, c redis.Cmdable) *redis.StringCmd { return c.Get(ctx, key) })
}

// HGet implements FieldReader.
func (d DoReader) HGet(ctx context.Context, key, field string) ([]byte, error) {
	return d.read(ctx, func(ctx context.Context, c redis.Cmdable) *redis.StringCmd { return c.HGet(ctx, key, field) })
}

func (d DoReader) read(ctx context.Context, cmd func(context.Context, redis.Cmdable) *redis.StringCmd) ([]byte, error) {
	var v []byte
	err := d(ctx, func(ctx context.Context, c redis.Cmdable) error {
		var err error
		v, err = cmd(ctx, c).Bytes()
		return err
	})
	return notFound(v, err)
}

// notFound turns redis.Nil into ErrNotFound.
func notFound(v []byte, err error) ([]byte, error) {
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	return v, err
}

// StoreConfig configures one Store: where its keys live and how values are
// written. Zero fields take the defaults.
type StoreConfig struct {
	// Codec writes new values (CodecNames). A json-raw store reads raw JSON
	// values only; any other store reads values of every header format (so
	// a codec switch keeps earlier values readable) and never raw JSON. A
	// value of the other family is corrupt (ErrWrongFormat).
	Codec string
	// KeyFormat is text, raw or ascii85.
	KeyFormat string
	// Namespace prefixes every key of this store (records, dictionaries,
	// migration state), e.g. "old:" or a test's namespace. May be empty.
	Namespace string
	// TTL is the lifetime of a record written by Put, and of a click created
	// without expires_at. Create sets the Redis expiry to the record's
	// ExpiresAt instead.
	TTL time.Duration
	// Codecs configures the codecs.
	Codecs Options
	// WaitReplicas, when above 0, makes Create return only after that many
	// replicas of the key's primary have the click (WAIT behind the SET on
	// its connection), so a click answered 201 survives the death of its
	// primary. WaitTimeout bounds the wait (default 1s); fewer replicas in
	// time is a NotReplicatedError (503 with Retry-After).
	WaitReplicas int
	WaitTimeout  time.Duration
	// Layout is keys (one Redis string per record, the default) or
	// bucketed (records as fields of small hashes; see BucketConfig). The
	// bucketed layout needs a header codec (not json-raw) and Redis >= 7.0.
	Layout string
	// Buckets configures the bucketed layout.
	Buckets BucketConfig
	// MaxLifetime is the latest expires_at, from now, of a record whose id
	// carries no time (UUIDv4) in the bucketed layout: a read looks that far
	// back for it, and a create refuses a later expires_at (0: TTL).
	// Config.Open sets it from --links-max-lifetime.
	MaxLifetime time.Duration
}

// Store defaults.
const (
	DefaultTTL       = time.Hour
	DefaultCodec     = CodecProtoS2Dict
	DefaultKeyFormat = KeyFormatNameRaw
)

// WithDefaults returns c with zero fields set.
func (c StoreConfig) WithDefaults() StoreConfig {
	if c.Codec == "" {
		c.Codec = DefaultCodec
	}
	if c.KeyFormat == "" {
		c.KeyFormat = DefaultKeyFormat
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.WaitTimeout == 0 {
		c.WaitTimeout = time.Second
	}
	if c.Layout == "" {
		c.Layout = LayoutKeys
	}
	if c.MaxLifetime == 0 {
		c.MaxLifetime = c.TTL
	}
	c.Buckets = c.Buckets.WithDefaults()
	c.Codecs = c.Codecs.WithDefaults()
	return c
}

// Validate names the first invalid field with its allowed values.
func (c StoreConfig) Validate() error {
	c = c.WithDefaults()
	if !isCodecName(c.Codec) {
		return fmt.Errorf("codec: got %q, allowed: %s", c.Codec, strings.Join(CodecNames(), ", "))
	}
	if _, err := ParseKeyFormat(c.KeyFormat); err != nil {
		return fmt.Errorf("key-format: %w", err)
	}
	if c.TTL < time.Second || c.TTL > 30*24*time.Hour {
		return fmt.Errorf("ttl: got %s, allowed: 1s..720h", c.TTL)
	}
	if len(c.Namespace) > 128 {
		return fmt.Errorf("namespace: %d bytes, at most 128", len(c.Namespace))
	}
	if c.WaitReplicas < 0 || c.WaitReplicas > 8 {
		return fmt.Errorf("wait-replicas: got %d, allowed: 0..8", c.WaitReplicas)
	}
	if c.WaitTimeout < time.Millisecond || c.WaitTimeout > time.Minute {
		return fmt.Errorf("wait-timeout: got %s, allowed: 1ms..1m", c.WaitTimeout)
	}
	switch c.Layout {
	case LayoutKeys:
	case LayoutBucketed:
		if c.Codec == CodecJSONRaw {
			return fmt.Errorf("layout: %s needs a codec with a header, got codec %s; allowed codecs: %s", LayoutBucketed, CodecJSONRaw, strings.Join(slices.DeleteFunc(CodecNames(), func(n string) bool { return n == CodecJSONRaw }), ", "))
		}
		if c.MaxLifetime < time.Second || c.MaxLifetime > 30*24*time.Hour {
			return fmt.Errorf("max-lifetime: got %s, allowed: 1s..720h", c.MaxLifetime)
		}
		if err := c.Buckets.Validate(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("layout: got %q, allowed: %s, %s", c.Layout, LayoutKeys, LayoutBucketed)
	}
	return c.Codecs.Validate()
}

// Flags binds the configuration under prefix (e.g. "links-" or
// "links-old-"); the current values are the flags' defaults.
func (c *StoreConfig) Flags(fs *flag.FlagSet, prefix string) {
	*c = c.WithDefaults()
	fs.StringVar(&c.Codec, prefix+"codec", c.Codec, "value codec: "+strings.Join(CodecNames(), ", "))
	fs.StringVar(&c.KeyFormat, prefix+"key-format", c.KeyFormat, "key format: text, raw or ascii85")
	fs.StringVar(&c.Namespace, prefix+"namespace", c.Namespace, "prefix of every key of this store")
	fs.DurationVar(&c.TTL, prefix+"ttl", c.TTL, "time to live of a click record created without expires_at")
	fs.IntVar(&c.WaitReplicas, prefix+"wait-replicas", c.WaitReplicas, "answer a created click only after this many replicas of its primary have it (Redis WAIT; 0: do not wait)")
	fs.DurationVar(&c.WaitTimeout, prefix+"wait-timeout", c.WaitTimeout, "how long a click creation waits for the replicas before it fails with 503")
	fs.StringVar(&c.Layout, prefix+"layout", c.Layout, "record layout in Redis: keys (one string per record) or bucketed (records as fields of small time-bucketed hashes; needs Redis >= 7.0 and a header codec)")
	c.Buckets.Flags(fs, prefix)
	c.Codecs.RegisterFlags(fs, prefix)
}

func isCodecName(name string) bool {
	for _, n := range CodecNames() {
		if n == name {
			return true
		}
	}
	return false
}

// Store keeps click records in one Redis: SET key value NX PXAT expires_at
// with a packed key and a codec's value; reads go through a Reader. The
// dictionaries of the dictionary codecs are kept in the same Redis (see
// DictionaryKeys). Safe for concurrent use.
type Store struct {
	cfg       StoreConfig
	keyFormat KeyFormat
	primary   redis.Cmdable
	reader    Reader
	dicts     *Dictionaries
	codec     Codec
	codecs    *Codecs
	buckets   *bucketLayout // nil in the keys layout
	log       *slog.Logger
	now       func() time.Time // the clock of expires_at checks; tests move it
}

// NewStore builds a store on an open Redis client. reader may be nil (read
// from primary). It loads the dictionaries from Redis; a dictionary codec
// with no dictionary stored yet gets a bootstrap one (see
// EnsureDictionary).
func NewStore(ctx context.Context, cfg StoreConfig, primary redis.Cmdable, reader Reader, log *slog.Logger) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if reader == nil {
		reader = ClientReader{Client: primary}
	}
	keyFormat, _ := ParseKeyFormat(cfg.KeyFormat)
	dicts, _ := NewDictionaries()
	s := &Store{cfg: cfg, keyFormat: keyFormat, primary: primary, reader: reader, dicts: dicts, log: log, now: time.Now}
	if cfg.Layout == LayoutBucketed {
		if err := s.openBuckets(ctx); err != nil {
			return nil, err
		}
	}
	if cfg.Codec == CodecProtoZstdDict || cfg.Codec == CodecProtoS2Dict {
		if err := s.EnsureDictionary(ctx); err != nil {
			return nil, err
		}
	} else if err := s.ReloadDictionaries(ctx); err != nil {
		return nil, err
	}
	var err error
	if s.codec, err = NewCodec(cfg.Codec, cfg.Codecs, dicts); err != nil {
		return nil, err
	}
	if s.codecs, err = NewCodecs(cfg.Codecs, dicts); err != nil {
		return nil, err
	}
	return s, nil
}

// Config returns the store's configuration with defaults applied.
func (s *Store) Config() StoreConfig { return s.cfg }

// Dictionaries returns the loaded dictionary set.
func (s *Store) Dictionaries() *Dictionaries { return s.dicts }

// openBuckets sets up the bucketed layout: per-field expiry as
// configured and detected, and a warning for each listpack setting that is
// too low.
func (s *Store) openBuckets(ctx context.Context) error {
	s.buckets = newBucketLayout(s.cfg.Namespace, s.cfg.Buckets, s.cfg.MaxLifetime)
	if s.cfg.Buckets.FieldExpiry != FieldExpiryOff {
		has, err := hasFieldExpiry(ctx, s.primary)
		if err != nil {
			return err
		}
		if !has && s.cfg.Buckets.FieldExpiry == FieldExpiryOn {
			return fmt.Errorf("field-expiry: %s, but the Redis has no HPEXPIREAT (Redis >= 7.4 or Valkey >= 9 has it); allowed here: %s, %s", FieldExpiryOn, FieldExpiryAuto, FieldExpiryOff)
		}
		s.buckets.fieldExpiry = has
		if has {
			encoding, err := fieldExpiryEncoding(ctx, s.primary, s.cfg.Namespace)
			switch {
			case err != nil:
				s.log.Warn("links store: cannot tell how this Redis encodes a small hash with field expiries; per-field expiry is used only with field-expiry on", "err", err)
				s.buckets.fieldExpiry = s.cfg.Buckets.FieldExpiry == FieldExpiryOn
			case encoding == "hashtable" && s.cfg.Buckets.FieldExpiry == FieldExpiryAuto:
				// Valkey 9 turns a hash with a field expiry into a hash
				// table: the buckets would lose what they are for.
				s.log.Warn("links store: this Redis turns a small hash with a field expiry into a hash table; buckets expire as a whole instead (field-expiry on forces per-field expiry)")
				s.buckets.fieldExpiry = false
			case encoding == "hashtable":
				s.log.Warn("links store: field-expiry on: this Redis turns every bucket into a hash table, which takes more memory than whole-bucket expiry")
			}
		}
	}
	CheckRedisSettings(ctx, s.primary, s.log)
	s.log.Info("links store: bucketed layout", "namespace", s.cfg.Namespace, "bucket_width", s.cfg.Buckets.Width, "bucket_shards", s.cfg.Buckets.Shards, "field_expiry", s.buckets.fieldExpiry)
	return nil
}

// FieldExpiry reports whether a bucketed store expires each record's field
// itself (HPEXPIREAT); false in the keys layout.
func (s *Store) FieldExpiry() bool { return s.buckets != nil && s.buckets.fieldExpiry }

// Key returns the Redis key of a click id in the keys layout.
func (s *Store) Key(id ClickID) string {
	buf := make([]byte, 0, len(s.cfg.Namespace)+KeyTextLen)
	buf = append(buf, s.cfg.Namespace...)
	return string(AppendKey(buf, s.keyFormat, id))
}

// Encode encodes rec with the store's codec.
func (s *Store) Encode(dst []byte, rec *Record) ([]byte, error) { return s.codec.Encode(dst, rec) }

// Put stores rec under its click id with the configured TTL, replacing any
// earlier value. The click id must be set. It is for loads, tools and
// tests; clicks from clients go through Create, which never replaces.
func (s *Store) Put(ctx context.Context, rec *Record) error {
	if rec.ClickID == (ClickID{}) {
		return fmt.Errorf("%w: click_id is the zero UUID", ErrInvalidRecord)
	}
	value, err := s.codec.Encode(nil, rec)
	if err != nil {
		return err
	}
	return s.PutValue(ctx, rec.ClickID, value)
}

// PutValue stores an already encoded value (any format) with the TTL,
// replacing any earlier value.
func (s *Store) PutValue(ctx context.Context, id ClickID, value []byte) error {
	if s.buckets != nil {
		return s.bucketCreate(ctx, id, value, s.now().Add(s.cfg.TTL), true)
	}
	if err := s.primary.Set(ctx, s.Key(id), value, s.cfg.TTL).Err(); err != nil {
		return fmt.Errorf("linkstore: SET click %s: %w", id, err)
	}
	return nil
}

// setNX is SET key value NX PXAT expiresAt (redis.Nil when the key
// exists). With WaitReplicas a WAIT follows it on the same connection of the
// key's primary (rediswait).
func (s *Store) setNX(ctx context.Context, key string, value []byte, expiresAt time.Time) error {
	args := redis.SetArgs{Mode: "NX", ExpireAt: expiresAt}
	if s.cfg.WaitReplicas == 0 {
		return s.primary.SetArgs(ctx, key, value, args).Err()
	}
	var set *redis.StatusCmd
	if err := redisWaitPipelines(ctx, s, key, func(pipe redis.Pipeliner) {
		set = pipe.SetArgs(ctx, key, value, args)
	}); err != nil {
		return err
	}
	return set.Err() // redis.Nil: the click exists
}

// redisWaitPipelines runs add's commands on the connection of key's
// primary, then WAITs for WaitReplicas replicas (rediswait).
func redisWaitPipelines(ctx context.Context, s *Store, key string, add func(pipe redis.Pipeliner)) error {
	return rediswait.Pipelines(ctx, s.primary, s.cfg.WaitReplicas, s.cfg.WaitTimeout, []string{key}, func(pipe redis.Pipeliner, _ int) { add(pipe) })
}

// NotReplicatedError: a click reached its primary but not WaitReplicas
// replicas within WaitTimeout (or the cluster's slot map was moving). It
// was not acknowledged: the caller answers 503 with Retry-After
// (api.BackendUnavailable). The click may be stored; a retry of the create
// then finds it (ErrExists), and GET shows it.
type NotReplicatedError = rediswait.NotReplicatedError

// Create stores rec under its click id unless a record is stored there
// already (ErrExists): one SET NX, so of concurrent creates of one id
// exactly one succeeds, and an existing record is never replaced. The
// Redis expiry is rec.ExpiresAt (PXAT), which must be set and in the
// future (ErrInvalidRecord); it is kept at millisecond precision.
func (s *Store) Create(ctx context.Context, rec *Record) error {
	_, err := s.create(ctx, rec)
	return err
}

// create is Create, returning the stored value.
func (s *Store) create(ctx context.Context, rec *Record) ([]byte, error) {
	if rec.ClickID == (ClickID{}) {
		return nil, fmt.Errorf("%w: click_id is the zero UUID", ErrInvalidRecord)
	}
	expiresAt := rec.ExpiresAt.Truncate(time.Millisecond)
	if now := s.now(); !expiresAt.After(now) {
		return nil, fmt.Errorf("%w: click %s: expires_at %s is not after now (%s)", ErrInvalidRecord, rec.ClickID, rec.ExpiresAt.Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
	}
	value, err := s.codec.Encode(nil, rec)
	if err != nil {
		return nil, err
	}
	if s.buckets != nil {
		_, carriesTime := rec.ClickID.V7Time()
		if latest := s.now().Add(s.cfg.MaxLifetime); !carriesTime && expiresAt.After(latest) {
			return nil, fmt.Errorf("%w: click %s: expires_at %s is after now + the longest lifetime %s, so a read of an id without a time (not a UUIDv7) would not find it", ErrInvalidRecord, rec.ClickID, rec.ExpiresAt.Format(time.RFC3339Nano), s.cfg.MaxLifetime)
		}
		err = s.bucketCreate(ctx, rec.ClickID, value, expiresAt, false)
	} else {
		err = s.setNX(ctx, s.Key(rec.ClickID), value, expiresAt)
	}
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: %s", ErrExists, rec.ClickID)
	}
	if err != nil {
		return nil, fmt.Errorf("linkstore: SET NX click %s: %w", rec.ClickID, err)
	}
	return value, nil
}

// deleteIfUnchangedScript deletes KEYS[1] if it still holds ARGV[1] or
// ARGV[2] (the same value marked consumed).
var deleteIfUnchangedScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] or v == ARGV[2] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// deleteIfUnchanged undoes a create of value: it deletes the click's key
// only if it still holds value, consumed or not, and not a record that
// another create wrote after this one expired.
func (s *Store) deleteIfUnchanged(ctx context.Context, id ClickID, value []byte) error {
	if s.buckets != nil {
		return s.bucketDeleteIfUnchanged(ctx, id, value)
	}
	if err := deleteIfUnchangedScript.Run(ctx, s.primary, []string{s.Key(id)}, value, consumedValue(value)).Err(); err != nil {
		return fmt.Errorf("linkstore: undo create of click %s: %w", id, err)
	}
	return nil
}

// consumedValue returns a copy of value as markConsumedScript leaves it.
func consumedValue(value []byte) []byte {
	if IsRawJSON(value) {
		if strings.HasPrefix(string(value), rawJSONConsumedMarker) {
			return bytes.Clone(value)
		}
		rest := value[1:]
		out := append([]byte(rawJSONConsumedMarker), ',')
		if len(rest) > 0 && rest[0] == '}' {
			out = out[:len(out)-1]
		}
		return append(out, rest...)
	}
	out := bytes.Clone(value)
	if len(out) >= HeaderLen {
		out[FlagsOffset] |= FlagConsumed
	}
	return out
}

// GetValue returns the stored bytes of a click through the Reader. A key
// that holds another Redis type than a string is ErrCorrupt.
func (s *Store) GetValue(ctx context.Context, id ClickID) ([]byte, error) {
	if s.buckets != nil {
		_, v, err := s.bucketFind(ctx, id, true)
		return v, err
	}
	v, err := s.reader.Get(ctx, s.Key(id))
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, getError(id, err)
	}
	return v, nil
}

// getError wraps a failed GET of a click's key. WRONGTYPE means the key
// holds a list, hash, ...: the record is corrupt, Redis is fine.
func getError(id ClickID, err error) error {
	if redis.HasErrorPrefix(err, "WRONGTYPE") {
		return fmt.Errorf("%w: click %s: the key holds a non-string Redis value: %v", ErrCorrupt, id, err)
	}
	return fmt.Errorf("linkstore: GET click %s: %w", id, err)
}

// Stored is a decoded record with its consumed state.
type Stored struct {
	Record   *Record
	Consumed bool
}

// Get reads and decodes a record. A record that is past its expires_at is
// ErrExpired; a value that is not a record of this store is ErrCorrupt,
// ErrWrongFormat, ErrTooLarge or ErrUnknownDictionary (see unreadable).
func (s *Store) Get(ctx context.Context, id ClickID) (Stored, error) {
	if s.buckets != nil {
		key, v, err := s.bucketFind(ctx, id, true)
		if err != nil {
			return Stored{}, err
		}
		st, err := s.decodeStored(ctx, id, v)
		if err != nil {
			return Stored{}, errBucketCorrupt(key, id, err)
		}
		return st, nil
	}
	v, err := s.GetValue(ctx, id)
	if err != nil {
		return Stored{}, err
	}
	return s.decodeStored(ctx, id, v)
}

// decodeStored decodes the value stored under id and checks that it is a
// live record of this store: of this store's format family (see
// StoreConfig.Codec), the record of id with its required fields, and not
// past its expires_at (ErrExpired). A dictionary version this process has
// not loaded yet (another process rotated) triggers one reload.
func (s *Store) decodeStored(ctx context.Context, id ClickID, v []byte) (Stored, error) {
	if wantRaw := s.cfg.Codec == CodecJSONRaw; IsRawJSON(v) != wantRaw {
		return Stored{}, fmt.Errorf("%w: click %s: %s store holds a value of %d bytes starting %q", ErrWrongFormat, id, s.cfg.Codec, len(v), v[:min(len(v), 3)])
	}
	rec, err := s.codecs.Decode(v)
	if errors.Is(err, ErrUnknownDictionary) {
		if rerr := s.ReloadDictionaries(ctx); rerr != nil {
			return Stored{}, fmt.Errorf("click %s: reload dictionaries after %v: %w", id, err, rerr)
		}
		rec, err = s.codecs.Decode(v)
	}
	if err != nil {
		return Stored{}, fmt.Errorf("click %s: %w", id, err)
	}
	// A value that decodes can still be someone else's record, or a
	// truncated one whose cut fell between two protobuf fields.
	switch {
	case rec.ClickID != id:
		return Stored{}, fmt.Errorf("%w: click %s: the value holds click_id %s", ErrCorrupt, id, rec.ClickID)
	case rec.DeepLinkURL == "" || rec.ClickedAt.IsZero():
		return Stored{}, fmt.Errorf("%w: click %s: the value has no deep_link_url or clicked_at", ErrCorrupt, id)
	}
	if now := s.now(); !rec.ExpiresAt.IsZero() && !now.Before(rec.ExpiresAt) {
		return Stored{}, fmt.Errorf("%w: click %s expired at %s", ErrExpired, id, rec.ExpiresAt.Format(time.RFC3339Nano))
	}
	return Stored{Record: rec, Consumed: valueConsumed(v)}, nil
}

// unreadable reports whether err says that a stored value is not a record
// this store can serve (corrupt, truncated, wrong format or Redis type, too
// large, or naming a dictionary that is not in Redis): a fault of the
// stored data, not of Redis or of the request.
func unreadable(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrWrongFormat) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrUnknownDictionary)
}

// valueConsumed reads the consumed state of a value of any format. A raw
// JSON value (the baseline) is consumed when the baseline marker starts it.
func valueConsumed(v []byte) bool {
	if IsRawJSON(v) {
		return strings.HasPrefix(string(v), rawJSONConsumedMarker)
	}
	consumed, _ := IsConsumed(v)
	return consumed
}

// rawJSONConsumedMarker is how the json-raw baseline records "consumed":
// the value is rewritten as {"consumed":true,<the other fields>} with SET
// KEEPTTL. Decoding ignores the unknown field. That rewrite of the whole
// value is what stores without a header do today; the header formats flip
// one bit instead.
const rawJSONConsumedMarker = `{"consumed":true`

// markConsumedScript marks a click consumed if its value is still ARGV[1],
// the value the caller read and decoded, and returns the old consumed bit;
// -1 when the value changed since (the caller reads again); nil when the
// key does not exist (it never creates a key, so a record that expired is
// not resurrected without a TTL). So a value that does not decode is never
// marked, and check-and-set stays one atomic step.
//
//   - Raw JSON (first byte '{'): the baseline. If it does not start with
//     the marker (ARGV[3]), SET key <marker + rest> KEEPTTL.
//   - Header formats: SETBIT key ConsumedBitOffset (ARGV[2]) 1, whose reply
//     is the old bit. The value is not rewritten and the TTL is untouched.
var markConsumedScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return false end
if v ~= ARGV[1] then return -1 end
if string.byte(v, 1) == 123 then
  local marker = ARGV[3]
  if string.sub(v, 1, #marker) == marker then return 1 end
  local rest = string.sub(v, 2)
  if string.sub(rest, 1, 1) ~= '}' then rest = ',' .. rest end
  redis.call('SET', KEYS[1], marker .. rest, 'KEEPTTL')
  return 0
end
return redis.call('SETBIT', KEYS[1], tonumber(ARGV[2]), 1)
`)

// maxResolveAttempts bounds the reads of one Resolve. A value changes under
// a Resolve only when another Resolve marks it (once) or it expires and is
// created again, so two attempts almost always suffice.
const maxResolveAttempts = 4

// Resolution is the outcome of Resolve.
type Resolution struct {
	Record *Record
	// AlreadyConsumed is true when an earlier Resolve marked it.
	AlreadyConsumed bool
}

// Resolve marks the click consumed on the primary and returns its record
// and whether it was consumed before. It reads the value and decodes and
// checks it as Get does first: a corrupt or expired record is an error and
// is left unchanged. Then markConsumedScript sets the consumed bit only if
// the value is still the one decoded, and returns the old bit, so of
// concurrent Resolves exactly one sees AlreadyConsumed false. The value is
// not rewritten or recompressed and the TTL is not touched, except for the
// json-raw baseline (see rawJSONConsumedMarker).
func (s *Store) Resolve(ctx context.Context, id ClickID) (Resolution, error) {
	if s.buckets != nil {
		return s.bucketResolve(ctx, id)
	}
	key := s.Key(id)
	for range maxResolveAttempts {
		value, err := s.primary.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			return Resolution{}, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		if err != nil {
			return Resolution{}, getError(id, err)
		}
		st, err := s.decodeStored(ctx, id, value)
		if err != nil {
			return Resolution{}, err
		}
		oldBit, err := markConsumedScript.Run(ctx, s.primary, []string{key}, value, ConsumedBitOffset, rawJSONConsumedMarker).Int64()
		switch {
		case errors.Is(err, redis.Nil):
			return Resolution{}, fmt.Errorf("%w: %s", ErrNotFound, id)
		case redis.HasErrorPrefix(err, "WRONGTYPE"):
			return Resolution{}, getError(id, err) // replaced by a list, hash, ... since the read
		case err != nil:
			return Resolution{}, fmt.Errorf("linkstore: resolve click %s: %w", id, err)
		case oldBit == -1:
			continue // changed since the read: decode the new value
		}
		return Resolution{Record: st.Record, AlreadyConsumed: oldBit == 1}, nil
	}
	return Resolution{}, fmt.Errorf("linkstore: resolve click %s: the value changed under each of %d attempts", id, maxResolveAttempts)
}

// Scan calls fn with up to limit stored values of this store (SCAN over its
// key pattern), e.g. to sample records for TrainDictionary. On a Redis
// Cluster it scans each master in turn (SCAN sees one node's keys).
func (s *Store) Scan(ctx context.Context, limit int, fn func(key string, value []byte) error) error {
	if s.buckets != nil {
		return s.bucketScan(ctx, limit, fn)
	}
	pattern := redisscan.EscapeGlob(s.cfg.Namespace)
	if s.keyFormat != KeyText {
		pattern += KeyPrefix
	}
	pattern += "*"
	nodes, err := redisscan.Nodes(ctx, s.primary)
	if err != nil {
		return fmt.Errorf("linkstore: list the cluster's masters to SCAN %q: %w", pattern, err)
	}
	seen := 0
	for _, node := range nodes {
		var cursor uint64
		for {
			keys, next, err := node.Scan(ctx, cursor, pattern, 500).Result()
			if err != nil {
				return fmt.Errorf("linkstore: SCAN %q: %w", pattern, err)
			}
			if len(keys) > 0 {
				values, err := getValues(ctx, s.primary, keys)
				if err != nil {
					return fmt.Errorf("linkstore: MGET %d keys: %w", len(keys), err)
				}
				for i, v := range values {
					str, ok := v.(string)
					if !ok || len(keys[i]) != len(s.cfg.Namespace)+s.keyFormat.Len() {
						continue // expired meanwhile, or not a record key (dictionaries, mode)
					}
					if err := fn(keys[i], []byte(str)); err != nil {
						return err
					}
					if seen++; seen >= limit {
						return nil
					}
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return nil
}

// getValues reads the string values of keys, in order (nil where there is
// none): one MGET on a single Redis; on a Redis Cluster, where the keys hash
// to many slots and one MGET would fail with CROSSSLOT, one single-key MGET
// each in one pipeline (the cluster client sends each node its share in one
// round trip).
func getValues(ctx context.Context, rc redis.Cmdable, keys []string) ([]any, error) {
	if _, cluster := rc.(*redis.ClusterClient); !cluster {
		return rc.MGet(ctx, keys...).Result()
	}
	pipe := rc.Pipeline()
	cmds := make([]*redis.SliceCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.MGet(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	values := make([]any, len(keys))
	for i, c := range cmds {
		if v := c.Val(); len(v) == 1 {
			values[i] = v[0]
		}
	}
	return values, nil
}
