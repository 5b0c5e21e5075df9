package linkstore

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

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

// ClientReader reads with one go-redis client (the primary, or one replica).
type ClientReader struct{ Client redis.Cmdable }

// Get implements Reader.
func (r ClientReader) Get(ctx context.Context, key string) ([]byte, error) {
	v, err := r.Client.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	return v, err
}

// StoreConfig configures one Store: where its keys live and how values are
// written. Zero fields take the defaults.
type StoreConfig struct {
	// Codec writes new values (CodecNames). Values of every format are read.
	Codec string
	// KeyFormat is text, raw or ascii85.
	KeyFormat string
	// Namespace prefixes every key of this store (records, dictionaries,
	// migration state), e.g. "old:" or a test's namespace. May be empty.
	Namespace string
	// TTL of every record.
	TTL time.Duration
	// Codecs configures the codecs.
	Codecs Options
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
	return c.Codecs.Validate()
}

// Flags binds the configuration under prefix (e.g. "links-" or
// "links-old-"); the current values are the flags' defaults.
func (c *StoreConfig) Flags(fs *flag.FlagSet, prefix string) {
	*c = c.WithDefaults()
	fs.StringVar(&c.Codec, prefix+"codec", c.Codec, "value codec: "+strings.Join(CodecNames(), ", "))
	fs.StringVar(&c.KeyFormat, prefix+"key-format", c.KeyFormat, "key format: text, raw or ascii85")
	fs.StringVar(&c.Namespace, prefix+"namespace", c.Namespace, "prefix of every key of this store")
	fs.DurationVar(&c.TTL, prefix+"ttl", c.TTL, "time to live of every click record")
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

// Store keeps click records in one Redis: SET key value EX ttl with a packed
// key and a codec's value; reads go through a Reader. The dictionaries of the
// dictionary codecs are kept in the same Redis (see DictionaryKeys).
// Safe for concurrent use.
type Store struct {
	cfg       StoreConfig
	keyFormat KeyFormat
	primary   redis.Cmdable
	reader    Reader
	dicts     *Dictionaries
	codec     Codec
	codecs    *Codecs
	log       *slog.Logger
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
	s := &Store{cfg: cfg, keyFormat: keyFormat, primary: primary, reader: reader, dicts: dicts, log: log}
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

// Key returns the Redis key of a click id.
func (s *Store) Key(id ClickID) string {
	buf := make([]byte, 0, len(s.cfg.Namespace)+KeyTextLen)
	buf = append(buf, s.cfg.Namespace...)
	return string(AppendKey(buf, s.keyFormat, id))
}

// Encode encodes rec with the store's codec.
func (s *Store) Encode(dst []byte, rec *Record) ([]byte, error) { return s.codec.Encode(dst, rec) }

// Put stores rec under its click id with the configured TTL, replacing any
// earlier value. The click id must be set.
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

// PutValue stores an already encoded value (any format) with the TTL.
func (s *Store) PutValue(ctx context.Context, id ClickID, value []byte) error {
	if err := s.primary.Set(ctx, s.Key(id), value, s.cfg.TTL).Err(); err != nil {
		return fmt.Errorf("linkstore: SET click %s: %w", id, err)
	}
	return nil
}

// GetValue returns the stored bytes of a click through the Reader.
func (s *Store) GetValue(ctx context.Context, id ClickID) ([]byte, error) {
	v, err := s.reader.Get(ctx, s.Key(id))
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("linkstore: GET click %s: %w", id, err)
	}
	return v, nil
}

// Stored is a decoded record with its consumed state.
type Stored struct {
	Record   *Record
	Consumed bool
}

// Get reads and decodes a record.
func (s *Store) Get(ctx context.Context, id ClickID) (Stored, error) {
	v, err := s.GetValue(ctx, id)
	if err != nil {
		return Stored{}, err
	}
	return s.decodeStored(ctx, id, v)
}

// decodeStored decodes a value of any format. A dictionary version this
// process has not loaded yet (another process rotated) triggers one reload.
func (s *Store) decodeStored(ctx context.Context, id ClickID, v []byte) (Stored, error) {
	rec, err := s.codecs.Decode(v)
	if errors.Is(err, ErrUnknownDictionary) {
		if rerr := s.ReloadDictionaries(ctx); rerr != nil {
			return Stored{}, errors.Join(err, rerr)
		}
		rec, err = s.codecs.Decode(v)
	}
	if err != nil {
		return Stored{}, fmt.Errorf("click %s: %w", id, err)
	}
	return Stored{Record: rec, Consumed: valueConsumed(v)}, nil
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

// resolveScript marks a click consumed and returns {old consumed bit,
// value}, atomically, or nil when the key does not exist (it never creates
// a key, so a record that expired is not resurrected without a TTL).
//
//   - Header formats (first byte 1..6, at least 3 bytes): SETBIT key
//     ConsumedBitOffset 1, whose reply is the old bit. The value is not
//     rewritten and the TTL is untouched.
//   - Raw JSON (first byte '{'): the baseline. If it does not start with the
//     marker, SET key <marker + rest> KEEPTTL.
//   - Anything else: returned as is, for the decoder to report.
var resolveScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return false end
local first = string.byte(v, 1)
if first == 123 then
  local marker = ARGV[2]
  if string.sub(v, 1, #marker) == marker then return {1, v} end
  local rest = string.sub(v, 2)
  if string.sub(rest, 1, 1) ~= '}' then rest = ',' .. rest end
  local nv = marker .. rest
  redis.call('SET', KEYS[1], nv, 'KEEPTTL')
  return {0, nv}
end
if #v >= 3 and first >= 1 and first <= tonumber(ARGV[3]) then
  local old = redis.call('SETBIT', KEYS[1], tonumber(ARGV[1]), 1)
  return {old, redis.call('GET', KEYS[1])}
end
return {0, v}
`)

// Resolution is the outcome of Resolve.
type Resolution struct {
	Record *Record
	// AlreadyConsumed is true when an earlier Resolve marked it.
	AlreadyConsumed bool
}

// Resolve marks the click consumed on the primary and returns its record
// and whether it was consumed before, in one atomic step (a Lua script
// around SETBIT, whose reply is the old bit). The value is not rewritten or
// recompressed and the TTL is not touched, except for the json-raw
// baseline (see rawJSONConsumedMarker).
func (s *Store) Resolve(ctx context.Context, id ClickID) (Resolution, error) {
	res, err := resolveScript.Run(ctx, s.primary, []string{s.Key(id)}, ConsumedBitOffset, rawJSONConsumedMarker, int(lastFormat)).Slice()
	if errors.Is(err, redis.Nil) {
		return Resolution{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Resolution{}, fmt.Errorf("linkstore: resolve click %s: %w", id, err)
	}
	if len(res) != 2 {
		return Resolution{}, fmt.Errorf("linkstore: resolve click %s: script returned %d values, want 2", id, len(res))
	}
	oldBit, _ := res[0].(int64)
	value, _ := res[1].(string)
	st, err := s.decodeStored(ctx, id, []byte(value))
	if err != nil {
		return Resolution{}, err
	}
	return Resolution{Record: st.Record, AlreadyConsumed: oldBit == 1}, nil
}

// Scan calls fn with up to limit stored values of this store (SCAN over its
// key pattern), e.g. to sample records for TrainDictionary.
func (s *Store) Scan(ctx context.Context, limit int, fn func(key string, value []byte) error) error {
	pattern := escapeGlob(s.cfg.Namespace)
	if s.keyFormat != KeyText {
		pattern += KeyPrefix
	}
	pattern += "*"
	var cursor uint64
	seen := 0
	for {
		keys, next, err := s.primary.Scan(ctx, cursor, pattern, 500).Result()
		if err != nil {
			return fmt.Errorf("linkstore: SCAN %q: %w", pattern, err)
		}
		if len(keys) > 0 {
			values, err := s.primary.MGet(ctx, keys...).Result()
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
			return nil
		}
	}
}

func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
