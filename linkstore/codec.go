package linkstore

import (
	"flag"
	"fmt"
	"runtime"
	"strings"
)

// Codec names, as used in configuration and flags.
const (
	CodecJSONRaw       = "json-raw" // baseline as stored today: plain JSON, no header
	CodecJSON          = "json"
	CodecProto         = "proto"
	CodecProtoBrotli   = "proto+brotli"
	CodecProtoZstd     = "proto+zstd"
	CodecProtoZstdDict = "proto+zstd+dict"
	CodecProtoS2Dict   = "proto+s2+dict"
)

// CodecNames lists every codec name, baseline first.
func CodecNames() []string {
	return []string{CodecJSONRaw, CodecJSON, CodecProto, CodecProtoBrotli, CodecProtoZstd, CodecProtoZstdDict, CodecProtoS2Dict}
}

// Codec turns a Record into a stored value and back.
//
// Encode appends the value to dst and returns the extended slice; on error
// dst is returned unchanged in length. Decode treats src as untrusted: it
// returns errors wrapping ErrCorrupt, ErrTooLarge, ErrWrongFormat or
// ErrUnknownDictionary, never panics, and does not retain src. Decoded
// records are normalized (see Record.Normalized). Codecs are safe for
// concurrent use.
type Codec interface {
	Name() string
	Encode(dst []byte, rec *Record) ([]byte, error)
	Decode(src []byte) (*Record, error)
}

// Default option values.
const (
	DefaultMaxDecodedSize   = 64 << 10
	DefaultBrotliQuality    = 5
	DefaultBrotliWindowBits = 10 // smallest brotli window (1 KiB - 16 B): records are ~1 KB
	DefaultZstdLevel        = 3
)

// Options configures the codecs. Zero values mean the defaults.
type Options struct {
	// MaxDecodedSize caps the payload size a decoder accepts or produces
	// (bytes after decompression). Values from Redis are untrusted.
	MaxDecodedSize int
	// BrotliQuality is the brotli quality, 1..11 (0 means DefaultBrotliQuality).
	BrotliQuality int
	// BrotliWindowBits is brotli's lgwin, 10..24 (0 means DefaultBrotliWindowBits).
	BrotliWindowBits int
	// ZstdLevel is a zstd level 1..22, mapped to the nearest level the
	// klauspost encoder implements (fastest, default, better, best);
	// 0 means DefaultZstdLevel.
	ZstdLevel int
	// ZstdConcurrency is how many zstd encoders/decoders each codec keeps
	// (0 means GOMAXPROCS). Calls beyond it wait for a free coder.
	ZstdConcurrency int
}

// WithDefaults returns o with zero fields set to their defaults.
func (o Options) WithDefaults() Options {
	if o.MaxDecodedSize == 0 {
		o.MaxDecodedSize = DefaultMaxDecodedSize
	}
	if o.BrotliQuality == 0 {
		o.BrotliQuality = DefaultBrotliQuality
	}
	if o.BrotliWindowBits == 0 {
		o.BrotliWindowBits = DefaultBrotliWindowBits
	}
	if o.ZstdLevel == 0 {
		o.ZstdLevel = DefaultZstdLevel
	}
	if o.ZstdConcurrency == 0 {
		o.ZstdConcurrency = runtime.GOMAXPROCS(0)
	}
	return o
}

// Validate checks o after defaults are applied.
func (o Options) Validate() error {
	o = o.WithDefaults()
	switch {
	case o.MaxDecodedSize < 1 || o.MaxDecodedSize > 1<<30:
		return fmt.Errorf("%w: MaxDecodedSize %d not in 1..%d", ErrInvalidOptions, o.MaxDecodedSize, 1<<30)
	case o.BrotliQuality < 1 || o.BrotliQuality > 11:
		return fmt.Errorf("%w: BrotliQuality %d not in 1..11", ErrInvalidOptions, o.BrotliQuality)
	case o.BrotliWindowBits < 10 || o.BrotliWindowBits > 24:
		return fmt.Errorf("%w: BrotliWindowBits %d not in 10..24", ErrInvalidOptions, o.BrotliWindowBits)
	case o.ZstdLevel < 1 || o.ZstdLevel > 22:
		return fmt.Errorf("%w: ZstdLevel %d not in 1..22", ErrInvalidOptions, o.ZstdLevel)
	case o.ZstdConcurrency < 1:
		return fmt.Errorf("%w: ZstdConcurrency %d < 1", ErrInvalidOptions, o.ZstdConcurrency)
	}
	return nil
}

// RegisterFlags binds the options to fs, with names under prefix
// (for example "linkstore.").
func (o *Options) RegisterFlags(fs *flag.FlagSet, prefix string) {
	fs.IntVar(&o.MaxDecodedSize, prefix+"max-decoded-size", DefaultMaxDecodedSize, "largest decoded record payload in bytes")
	fs.IntVar(&o.BrotliQuality, prefix+"brotli-quality", DefaultBrotliQuality, "brotli quality 1..11")
	fs.IntVar(&o.BrotliWindowBits, prefix+"brotli-window-bits", DefaultBrotliWindowBits, "brotli lgwin 10..24")
	fs.IntVar(&o.ZstdLevel, prefix+"zstd-level", DefaultZstdLevel, "zstd level 1..22")
	fs.IntVar(&o.ZstdConcurrency, prefix+"zstd-concurrency", 0, "zstd coders per codec (0 = GOMAXPROCS)")
}

// NewCodec returns the codec with the given name. dicts is used only by
// proto+zstd+dict, which needs at least one dictionary and encodes with
// dicts.Current(); it may be nil for the other codecs.
func NewCodec(name string, opts Options, dicts *Dictionaries) (Codec, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	switch name {
	case CodecJSONRaw:
		return newJSONCodec(opts, false), nil
	case CodecJSON:
		return newJSONCodec(opts, true), nil
	case CodecProto:
		return newProtoCodec(opts), nil
	case CodecProtoBrotli:
		return newBrotliCodec(opts), nil
	case CodecProtoZstd:
		return newZstdCodec(opts)
	case CodecProtoZstdDict:
		if dicts == nil || dicts.Len() == 0 {
			return nil, fmt.Errorf("%w: codec %s needs at least one dictionary (train one with TrainDictionary)", ErrInvalidDictionary, name)
		}
		return newZstdDictCodec(opts, dicts), nil
	case CodecProtoS2Dict:
		if dicts == nil || dicts.Len() == 0 {
			return nil, fmt.Errorf("%w: codec %s needs at least one dictionary (train one with TrainDictionary)", ErrInvalidDictionary, name)
		}
		return newS2DictCodec(opts, dicts), nil
	}
	return nil, fmt.Errorf("%w %q (allowed: %s)", ErrUnknownCodec, name, strings.Join(CodecNames(), ", "))
}

// Codecs decodes a value written by any codec, dispatching on its header
// (or on the leading '{' of a raw JSON value). The store uses it to read
// during a migration, when old and new formats coexist.
type Codecs struct {
	rawJSON Codec
	byFmt   [lastFormat + 1]Codec
}

// NewCodecs builds every codec. dicts may be nil or empty; then
// proto+zstd+dict values fail to decode with ErrUnknownDictionary.
func NewCodecs(opts Options, dicts *Dictionaries) (*Codecs, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.WithDefaults()
	zstdCodec, err := newZstdCodec(opts)
	if err != nil {
		return nil, err
	}
	if dicts == nil {
		dicts, _ = NewDictionaries() // empty set: cannot fail
	}
	c := &Codecs{rawJSON: newJSONCodec(opts, false)}
	c.byFmt[FormatJSON] = newJSONCodec(opts, true)
	c.byFmt[FormatProto] = newProtoCodec(opts)
	c.byFmt[FormatProtoBrotli] = newBrotliCodec(opts)
	c.byFmt[FormatProtoZstd] = zstdCodec
	c.byFmt[FormatProtoZstdDict] = newZstdDictCodec(opts, dicts)
	c.byFmt[FormatProtoS2Dict] = newS2DictCodec(opts, dicts)
	return c, nil
}

// Decode decodes a value of any format.
func (c *Codecs) Decode(src []byte) (*Record, error) {
	if IsRawJSON(src) {
		return c.rawJSON.Decode(src)
	}
	h, err := ParseHeader(src)
	if err != nil {
		return nil, err
	}
	return c.byFmt[h.Format].Decode(src)
}

// checkHeader validates the header of src for a codec of format want and
// returns the payload behind it.
func checkHeader(src []byte, want Format) (Header, []byte, error) {
	h, err := ParseHeader(src)
	if err != nil {
		return h, nil, err
	}
	if h.Format != want {
		return h, nil, fmt.Errorf("%w: value has format %s, codec reads %s", ErrWrongFormat, h.Format, want)
	}
	return h, src[HeaderLen:], nil
}

// errTooLarge formats the size-cap error.
func errTooLarge(codec string, size, limit int) error {
	return fmt.Errorf("%w: %s payload of at least %d bytes exceeds MaxDecodedSize %d", ErrTooLarge, codec, size, limit)
}
