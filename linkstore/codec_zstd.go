package linkstore

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdMagic starts every zstd frame. Stored values omit it (4 bytes saved
// per record; the format byte already says "zstd") and decoders put it back.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// zstdCoders is one encoder/decoder pair. klauspost's Encoder.EncodeAll and
// Decoder.DecodeAll are safe for concurrent use and keep an internal pool of
// ZstdConcurrency block coders, so one pair per codec (and per dictionary)
// is the pool: the expensive state is built once, never per call, and unlike
// a sync.Pool it is not dropped at every GC.
type zstdCoders struct {
	enc     *zstd.Encoder
	dec     *zstd.Decoder
	maxSize int
}

// newZstdCoders builds the pair; dict is a zstd-format dictionary or nil.
func newZstdCoders(opts Options, dict []byte) (*zstdCoders, error) {
	encOpts := []zstd.EOption{
		zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(opts.ZstdLevel)),
		zstd.WithEncoderConcurrency(opts.ZstdConcurrency),
		zstd.WithEncoderCRC(false),     // 4 bytes per record; Redis does not flip bits, the protobuf decode still catches garbage
		zstd.WithSingleSegment(true),   // no window descriptor byte
		zstd.WithLowerEncoderMem(true), // records are tiny
		zstd.WithZeroFrames(true),      // an empty record is a real frame too, so an empty payload is always corrupt
	}
	decOpts := []zstd.DOption{
		zstd.WithDecoderConcurrency(opts.ZstdConcurrency),
		zstd.WithDecoderMaxMemory(uint64(opts.MaxDecodedSize)),
		zstd.WithDecoderMaxWindow(uint64(max(opts.MaxDecodedSize, zstd.MinWindowSize))),
	}
	if dict != nil {
		encOpts = append(encOpts, zstd.WithEncoderDict(dict))
		decOpts = append(decOpts, zstd.WithDecoderDicts(dict))
	}
	enc, err := zstd.NewWriter(nil, encOpts...)
	if err != nil {
		return nil, fmt.Errorf("linkstore: zstd encoder (level %d): %w", opts.ZstdLevel, err)
	}
	dec, err := zstd.NewReader(nil, decOpts...)
	if err != nil {
		enc.Close()
		return nil, fmt.Errorf("linkstore: zstd decoder: %w", err)
	}
	return &zstdCoders{enc: enc, dec: dec, maxSize: opts.MaxDecodedSize}, nil
}

// encode appends header and frame (without magic) for rec to dst.
func (z *zstdCoders) encode(dst []byte, rec *Record, h Header) ([]byte, error) {
	s := getProtoScratch()
	defer putProtoScratch(s)
	var err error
	if s.buf, err = appendProto(s.buf[:0], rec, s); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = appendHeader(dst, h)
	frameStart := len(dst)
	dst = z.enc.EncodeAll(s.buf, dst)
	if len(dst) < frameStart+len(zstdMagic) || !bytes.Equal(dst[frameStart:frameStart+len(zstdMagic)], zstdMagic) {
		return dst[:start], fmt.Errorf("linkstore: zstd frame does not start with the zstd magic")
	}
	n := copy(dst[frameStart:], dst[frameStart+len(zstdMagic):])
	return dst[:frameStart+n], nil
}

// decode decodes a frame without its magic.
func (z *zstdCoders) decode(payload []byte, codec string) (*Record, error) {
	if len(payload) == 0 {
		return nil, fmt.Errorf("%w: %s value has no zstd frame after the header", ErrCorrupt, codec)
	}
	s := getProtoScratch()
	defer putProtoScratch(s)
	s.buf = append(append(s.buf[:0], zstdMagic...), payload...)
	var err error
	s.out, err = z.dec.DecodeAll(s.buf, s.out[:0])
	if err != nil {
		if err == zstd.ErrDecoderSizeExceeded || err == zstd.ErrWindowSizeExceeded {
			return nil, fmt.Errorf("%w: %s: %v (MaxDecodedSize %d)", ErrTooLarge, codec, err, z.maxSize)
		}
		return nil, wrapCorrupt(codec, err)
	}
	if len(s.out) > z.maxSize {
		return nil, errTooLarge(codec, len(s.out), z.maxSize)
	}
	return decodeProto(s.out)
}

func (z *zstdCoders) close() {
	z.enc.Close()
	z.dec.Close()
}

func wrapCorrupt(codec string, err error) error {
	return fmt.Errorf("%w: %s payload: %v", ErrCorrupt, codec, err)
}

// zstdCodec stores the protobuf encoding as one zstd frame, no dictionary.
type zstdCodec struct{ coders *zstdCoders }

func newZstdCodec(opts Options) (*zstdCodec, error) {
	coders, err := newZstdCoders(opts, nil)
	if err != nil {
		return nil, err
	}
	return &zstdCodec{coders: coders}, nil
}

func (c *zstdCodec) Name() string { return CodecProtoZstd }

func (c *zstdCodec) Encode(dst []byte, rec *Record) ([]byte, error) {
	return c.coders.encode(dst, rec, Header{Format: FormatProtoZstd})
}

func (c *zstdCodec) Decode(src []byte) (*Record, error) {
	_, payload, err := checkHeader(src, FormatProtoZstd)
	if err != nil {
		return nil, err
	}
	return c.coders.decode(payload, CodecProtoZstd)
}

// zstdDictCodec encodes with the current dictionary of a Dictionaries set
// and decodes with whichever version the value's header names. Coders are
// built once per dictionary version, on first use.
type zstdDictCodec struct {
	opts  Options
	dicts *Dictionaries

	mu     sync.Mutex
	coders sync.Map // *Dictionary -> *zstdCoders
}

func newZstdDictCodec(opts Options, dicts *Dictionaries) *zstdDictCodec {
	return &zstdDictCodec{opts: opts, dicts: dicts}
}

func (c *zstdDictCodec) Name() string { return CodecProtoZstdDict }

func (c *zstdDictCodec) codersFor(d *Dictionary) (*zstdCoders, error) {
	if z, ok := c.coders.Load(d); ok {
		return z.(*zstdCoders), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if z, ok := c.coders.Load(d); ok {
		return z.(*zstdCoders), nil
	}
	z, err := newZstdCoders(c.opts, d.zstd)
	if err != nil {
		return nil, fmt.Errorf("%w: version %d: %v", ErrInvalidDictionary, d.version, err)
	}
	c.coders.Store(d, z)
	return z, nil
}

func (c *zstdDictCodec) Encode(dst []byte, rec *Record) ([]byte, error) {
	d := c.dicts.Current()
	if d == nil {
		return dst, fmt.Errorf("%w: no current dictionary to encode with", ErrUnknownDictionary)
	}
	z, err := c.codersFor(d)
	if err != nil {
		return dst, err
	}
	return z.encode(dst, rec, Header{Format: FormatProtoZstdDict, DictionaryVersion: d.version})
}

func (c *zstdDictCodec) Decode(src []byte) (*Record, error) {
	h, payload, err := checkHeader(src, FormatProtoZstdDict)
	if err != nil {
		return nil, err
	}
	d, err := c.dicts.Get(h.DictionaryVersion)
	if err != nil {
		return nil, err
	}
	z, err := c.codersFor(d)
	if err != nil {
		return nil, err
	}
	return z.decode(payload, CodecProtoZstdDict)
}
