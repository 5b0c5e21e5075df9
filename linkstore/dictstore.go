package linkstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Dictionary keys in Redis, under the store's namespace:
//
//	<ns>linkstore:dict:<version>  Dictionary.MarshalBinary, no TTL
//	<ns>linkstore:dict:current    the version new values are encoded with
//
// A version's bytes never change once written (SET NX), so every process
// decodes a value the same way; old versions stay until removed, so records
// written before a rotation stay readable.
const (
	dictKeyPrefix     = "linkstore:dict:"
	dictCurrentSuffix = "current"
	// bootstrapSeed seeds the generated records a first dictionary is
	// trained on when Redis holds none (see EnsureDictionary).
	bootstrapSeed    = 4242
	bootstrapSamples = 2000
)

// DictionaryKey returns the Redis key of a dictionary version.
func (s *Store) DictionaryKey(version uint8) string {
	return s.cfg.Namespace + dictKeyPrefix + strconv.Itoa(int(version))
}

func (s *Store) currentDictionaryKey() string {
	return s.cfg.Namespace + dictKeyPrefix + dictCurrentSuffix
}

// ReloadDictionaries loads every stored version this process lacks and the
// current version from Redis. Call it at start and on rotation (the Service
// does it every refresh interval, and decoding does it once on an unknown
// version).
func (s *Store) ReloadDictionaries(ctx context.Context) error {
	keys := make([]string, 0, 256)
	keys = append(keys, s.currentDictionaryKey())
	for v := 1; v <= 255; v++ {
		keys = append(keys, s.DictionaryKey(uint8(v)))
	}
	values, err := getValues(ctx, s.primary, keys)
	if err != nil {
		return fmt.Errorf("linkstore: load dictionaries (MGET %s*): %w", s.cfg.Namespace+dictKeyPrefix, err)
	}
	for i, raw := range values[1:] {
		str, ok := raw.(string)
		if !ok {
			continue
		}
		version := uint8(i + 1)
		if have, err := s.dicts.Get(version); err == nil {
			if mine, _ := have.MarshalBinary(); bytes.Equal(mine, []byte(str)) {
				continue
			}
		}
		d, err := UnmarshalDictionary([]byte(str))
		if err != nil {
			return fmt.Errorf("linkstore: dictionary key %s: %w", keys[i+1], err)
		}
		if d.Version() != version {
			return fmt.Errorf("%w: key %s holds version %d", ErrInvalidDictionary, keys[i+1], d.Version())
		}
		if err := s.dicts.Add(d); err != nil {
			return err
		}
	}
	current, ok := values[0].(string)
	if !ok {
		return nil
	}
	v, err := strconv.Atoi(current)
	if err != nil || v < 1 || v > 255 {
		return fmt.Errorf("%w: key %s holds %q, want 1..255", ErrInvalidDictionary, keys[0], current)
	}
	return s.dicts.SetCurrent(uint8(v))
}

// EnsureDictionary loads the dictionaries and, when Redis holds none, trains
// a bootstrap version 1 on generated records and publishes it, so a fresh
// deployment can encode at once. Retrain on real traffic soon after with
// TrainFromStore. Concurrent callers agree: only one version 1 is stored.
func (s *Store) EnsureDictionary(ctx context.Context) error {
	if err := s.ReloadDictionaries(ctx); err != nil {
		return err
	}
	if s.dicts.Len() > 0 {
		return nil
	}
	d, err := TrainDictionary(1, Generate(bootstrapSeed, bootstrapSamples), TrainOptions{ZstdLevel: s.cfg.Codecs.ZstdLevel})
	if err != nil {
		return fmt.Errorf("linkstore: bootstrap dictionary: %w", err)
	}
	err = s.PublishDictionary(ctx, d)
	if errors.Is(err, ErrInvalidDictionary) {
		// Another process published its own version 1 first: use it.
		return s.ReloadDictionaries(ctx)
	}
	return err
}

// PublishDictionary stores d (SET NX: a version is written once) and makes
// it the current version in Redis and in this process.
func (s *Store) PublishDictionary(ctx context.Context, d *Dictionary) error {
	blob, _ := d.MarshalBinary()
	key := s.DictionaryKey(d.Version())
	created, err := s.primary.SetNX(ctx, key, blob, 0).Result()
	if err != nil {
		return fmt.Errorf("linkstore: store dictionary %s: %w", key, err)
	}
	if !created {
		have, err := s.primary.Get(ctx, key).Bytes()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("linkstore: read dictionary %s: %w", key, err)
		}
		if !bytes.Equal(have, blob) {
			return fmt.Errorf("%w: %s already holds a different version %d; pick a new version", ErrInvalidDictionary, key, d.Version())
		}
	}
	if err := s.primary.Set(ctx, s.currentDictionaryKey(), strconv.Itoa(int(d.Version())), 0).Err(); err != nil {
		return fmt.Errorf("linkstore: set current dictionary: %w", err)
	}
	return s.dicts.Add(d)
}

// RotateDictionary trains the next version on samples and publishes it.
// New values use it at once in this process and after the next reload in
// others; values written with older versions stay readable.
func (s *Store) RotateDictionary(ctx context.Context, samples []Record, opts TrainOptions) (*Dictionary, error) {
	if err := s.ReloadDictionaries(ctx); err != nil {
		return nil, err
	}
	next := 1
	if versions := s.dicts.Versions(); len(versions) > 0 {
		next = int(versions[len(versions)-1]) + 1
	}
	if next > 255 {
		return nil, fmt.Errorf("%w: versions 1..255 are all used; remove expired versions first", ErrInvalidDictionary)
	}
	if opts.ZstdLevel == 0 {
		opts.ZstdLevel = s.cfg.Codecs.ZstdLevel
	}
	d, err := TrainDictionary(uint8(next), samples, opts)
	if err != nil {
		return nil, err
	}
	if err := s.PublishDictionary(ctx, d); err != nil {
		return nil, err
	}
	return d, nil
}

// TrainFromStore samples up to sampleSize live records from Redis (SCAN)
// and rotates to a dictionary trained on them.
func (s *Store) TrainFromStore(ctx context.Context, sampleSize int) (*Dictionary, error) {
	var samples []Record
	err := s.Scan(ctx, sampleSize, func(key string, value []byte) error {
		rec, err := s.codecs.Decode(value)
		if err != nil {
			s.log.Warn("skip undecodable record while sampling", "key", fmt.Sprintf("%q", key), "err", err)
			return nil
		}
		samples = append(samples, *rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(samples) < MinTrainingSamples {
		return nil, fmt.Errorf("%w: found %d live records to train on, need at least %d", ErrInvalidDictionary, len(samples), MinTrainingSamples)
	}
	return s.RotateDictionary(ctx, samples, TrainOptions{})
}
