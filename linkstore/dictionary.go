package linkstore

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Dictionary is one version of the dictionaries of proto+zstd+dict and
// proto+s2+dict: a zstd-format dictionary and raw s2 dictionary content,
// versioned together. Version 0 is reserved for "no dictionary"; versions
// are 1..255 and are written into byte 1 of every value encoded with it.
type Dictionary struct {
	version uint8
	zstd    []byte // zstd dictionary format (magic 0xEC30A437, id, tables, content)
	id      uint32
	s2raw   []byte   // s2 dictionary content (raw bytes matches may refer to)
	s2      *s2.Dict // built from s2raw
}

// NewDictionary wraps a zstd-format dictionary (as made by TrainDictionary,
// `zstd --train`, or read back from Dictionary.Bytes) as the given version.
// Its s2 dictionary is the zstd dictionary's content; TrainDictionary gives
// a better one (NewDictionaryWithS2).
func NewDictionary(version uint8, zstdDict []byte) (*Dictionary, error) {
	return NewDictionaryWithS2(version, zstdDict, nil)
}

// NewDictionaryWithS2 is NewDictionary with explicit s2 dictionary content
// (s2.MinDictSize..s2.MaxDictSize bytes); nil means the zstd content.
func NewDictionaryWithS2(version uint8, zstdDict, s2Content []byte) (*Dictionary, error) {
	if version == 0 {
		return nil, fmt.Errorf("%w: version 0 is reserved for values without a dictionary (use 1..255)", ErrInvalidDictionary)
	}
	info, err := zstd.InspectDictionary(zstdDict)
	if err != nil {
		return nil, fmt.Errorf("%w: version %d, %d bytes: %v", ErrInvalidDictionary, version, len(zstdDict), err)
	}
	if s2Content == nil {
		s2Content = info.Content()
		if len(s2Content) > s2.MaxDictSize {
			s2Content = s2Content[len(s2Content)-s2.MaxDictSize:]
		}
	}
	if len(s2Content) < s2.MinDictSize || len(s2Content) > s2.MaxDictSize {
		return nil, fmt.Errorf("%w: version %d: s2 dictionary content of %d bytes, want %d..%d", ErrInvalidDictionary, version, len(s2Content), s2.MinDictSize, s2.MaxDictSize)
	}
	s2raw := slices.Clone(s2Content)
	s2dict := s2.MakeDict(s2raw, nil)
	if s2dict == nil {
		return nil, fmt.Errorf("%w: version %d: s2 rejected %d bytes of dictionary content", ErrInvalidDictionary, version, len(s2raw))
	}
	return &Dictionary{version: version, zstd: slices.Clone(zstdDict), id: info.ID(), s2raw: s2raw, s2: s2dict}, nil
}

// Version is the dictionary version stored in value headers.
func (d *Dictionary) Version() uint8 { return d.version }

// Bytes returns the zstd-format dictionary. The caller must not modify it.
func (d *Dictionary) Bytes() []byte { return d.zstd }

// S2Bytes returns the s2 dictionary content. The caller must not modify it.
func (d *Dictionary) S2Bytes() []byte { return d.s2raw }

// MarshalBinary returns the version byte, the length of the zstd
// dictionary as a uvarint, the zstd dictionary and the s2 content. Store it
// (the Redis store keeps it under a key naming the version) and load it back
// with UnmarshalDictionary.
func (d *Dictionary) MarshalBinary() ([]byte, error) {
	out := make([]byte, 0, 1+binary.MaxVarintLen64+len(d.zstd)+len(d.s2raw))
	out = append(out, d.version)
	out = binary.AppendUvarint(out, uint64(len(d.zstd)))
	out = append(out, d.zstd...)
	return append(out, d.s2raw...), nil
}

// UnmarshalDictionary is the inverse of Dictionary.MarshalBinary.
func UnmarshalDictionary(b []byte) (*Dictionary, error) {
	if len(b) < 1 {
		return nil, fmt.Errorf("%w: empty serialized dictionary", ErrInvalidDictionary)
	}
	zlen, n := binary.Uvarint(b[1:])
	if n <= 0 || zlen > uint64(len(b)-1-n) {
		return nil, fmt.Errorf("%w: serialized dictionary of %d bytes has a bad zstd length", ErrInvalidDictionary, len(b))
	}
	rest := b[1+n:]
	return NewDictionaryWithS2(b[0], rest[:zlen], rest[zlen:])
}

// TrainOptions configures TrainDictionary. Zero values mean the defaults.
type TrainOptions struct {
	// MaxDictSize is the dictionary content size in bytes (default 16 KiB).
	MaxDictSize int
	// HashBytes is the shortest match the trainer indexes, 4..8 (default 6).
	HashBytes int
	// ZstdLevel is the zstd level the dictionary tables are tuned for
	// (default DefaultZstdLevel); use the level of the codec.
	ZstdLevel int
	// S2DictSize is the s2 dictionary size in bytes, at most
	// s2.MaxDictSize (default 32 KiB): the last S2DictSize bytes of the
	// concatenated protobuf samples. s2 matches whole runs of earlier
	// records best; 32 KiB measured ~0.23 of JSON at ~3 µs per encode,
	// 64 KiB ~0.22 but nearly twice as slow.
	S2DictSize int
}

// Default training options.
const (
	DefaultDictSize      = 16 << 10
	DefaultDictHashBytes = 6
	DefaultS2DictSize    = 32 << 10
	MinTrainingSamples   = 32
)

// TrainDictionary builds dictionary version from sample records, which
// should be a recent random sample of real traffic (a few thousand records).
// It trains on the protobuf encoding, since that is what the codec
// compresses. The zstd dictionary ID is the version, so frames spend one
// byte on it.
func TrainDictionary(version uint8, samples []Record, opts TrainOptions) (*Dictionary, error) {
	if version == 0 {
		return nil, fmt.Errorf("%w: version 0 is reserved for values without a dictionary (use 1..255)", ErrInvalidDictionary)
	}
	if len(samples) < MinTrainingSamples {
		return nil, fmt.Errorf("%w: %d training samples, need at least %d", ErrInvalidDictionary, len(samples), MinTrainingSamples)
	}
	if opts.MaxDictSize == 0 {
		opts.MaxDictSize = DefaultDictSize
	}
	if opts.HashBytes == 0 {
		opts.HashBytes = DefaultDictHashBytes
	}
	if opts.ZstdLevel == 0 {
		opts.ZstdLevel = DefaultZstdLevel
	}
	if opts.S2DictSize == 0 {
		opts.S2DictSize = DefaultS2DictSize
	}
	if opts.S2DictSize < s2.MinDictSize || opts.S2DictSize > s2.MaxDictSize {
		return nil, fmt.Errorf("%w: S2DictSize %d not in %d..%d", ErrInvalidOptions, opts.S2DictSize, s2.MinDictSize, s2.MaxDictSize)
	}
	if opts.HashBytes < 4 || opts.HashBytes > 8 {
		return nil, fmt.Errorf("%w: HashBytes %d not in 4..8", ErrInvalidOptions, opts.HashBytes)
	}
	if opts.MaxDictSize < 256 || opts.MaxDictSize > 1<<20 {
		return nil, fmt.Errorf("%w: MaxDictSize %d not in 256..%d", ErrInvalidOptions, opts.MaxDictSize, 1<<20)
	}
	inputs := make([][]byte, 0, len(samples))
	var all []byte
	for i := range samples {
		start := len(all)
		var err error
		if all, err = appendProto(all, &samples[i], nil); err != nil {
			return nil, fmt.Errorf("training sample %d: %w", i, err)
		}
		inputs = append(inputs, all[start:len(all):len(all)])
	}
	s2Content := all[max(0, len(all)-opts.S2DictSize):]
	raw, err := dict.BuildZstdDict(inputs, dict.Options{
		MaxDictSize: opts.MaxDictSize,
		HashBytes:   opts.HashBytes,
		ZstdDictID:  uint32(version),
		ZstdLevel:   zstd.EncoderLevelFromZstd(opts.ZstdLevel),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: train version %d on %d samples: %v", ErrInvalidDictionary, version, len(samples), err)
	}
	return NewDictionaryWithS2(version, raw, s2Content)
}

// Dictionaries is a versioned set of dictionaries: the current one encodes,
// every one in the set decodes. Keep old versions for at least one record
// TTL after a rotation so that their records stay readable. Safe for
// concurrent use; readers never block.
type Dictionaries struct {
	mu   sync.Mutex // serializes writers
	snap atomic.Pointer[dictSnapshot]
}

type dictSnapshot struct {
	byVersion [256]*Dictionary
	current   *Dictionary
	count     int
}

// NewDictionaries returns a set holding dicts, added in order, so the last
// one is current.
func NewDictionaries(dicts ...*Dictionary) (*Dictionaries, error) {
	ds := &Dictionaries{}
	ds.snap.Store(&dictSnapshot{})
	for _, d := range dicts {
		if err := ds.Add(d); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

// Add adds d and makes it current (a rotation). Re-adding the same version
// with the same bytes is a no-op apart from making it current; the same
// version with different bytes is an error, since old values would then
// decode with the wrong dictionary.
func (ds *Dictionaries) Add(d *Dictionary) error {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	old := ds.snap.Load()
	next := *old
	if have := old.byVersion[d.version]; have != nil {
		if !slices.Equal(have.zstd, d.zstd) || !slices.Equal(have.s2raw, d.s2raw) {
			return fmt.Errorf("%w: version %d is already loaded with different bytes (zstd %d vs %d bytes, s2 %d vs %d bytes); pick a new version", ErrInvalidDictionary, d.version, len(have.zstd), len(d.zstd), len(have.s2raw), len(d.s2raw))
		}
		d = have
	} else {
		next.byVersion[d.version] = d
		next.count++
	}
	next.current = d
	ds.snap.Store(&next)
	return nil
}

// SetCurrent makes a loaded version the one used to encode.
func (ds *Dictionaries) SetCurrent(version uint8) error {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	old := ds.snap.Load()
	d := old.byVersion[version]
	if d == nil {
		return ds.unknown(old, version)
	}
	next := *old
	next.current = d
	ds.snap.Store(&next)
	return nil
}

// Remove drops a version that is not current (its records must have expired).
func (ds *Dictionaries) Remove(version uint8) error {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	old := ds.snap.Load()
	d := old.byVersion[version]
	if d == nil {
		return ds.unknown(old, version)
	}
	if d == old.current {
		return fmt.Errorf("%w: version %d is current; rotate first", ErrInvalidDictionary, version)
	}
	next := *old
	next.byVersion[version] = nil
	next.count--
	ds.snap.Store(&next)
	return nil
}

// Current returns the dictionary used to encode, or nil when empty.
func (ds *Dictionaries) Current() *Dictionary { return ds.snap.Load().current }

// Get returns the given version.
func (ds *Dictionaries) Get(version uint8) (*Dictionary, error) {
	snap := ds.snap.Load()
	if d := snap.byVersion[version]; d != nil {
		return d, nil
	}
	return nil, ds.unknown(snap, version)
}

// Len is the number of loaded versions.
func (ds *Dictionaries) Len() int { return ds.snap.Load().count }

// Versions lists the loaded versions in ascending order.
func (ds *Dictionaries) Versions() []uint8 {
	snap := ds.snap.Load()
	var out []uint8
	for v, d := range snap.byVersion {
		if d != nil {
			out = append(out, uint8(v))
		}
	}
	return out
}

func (ds *Dictionaries) unknown(snap *dictSnapshot, version uint8) error {
	var loaded []uint8
	for v, d := range snap.byVersion {
		if d != nil {
			loaded = append(loaded, uint8(v))
		}
	}
	return fmt.Errorf("%w: version %d (loaded: %v)", ErrUnknownDictionary, version, loaded)
}
