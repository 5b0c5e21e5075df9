package linkstore

import (
	"fmt"

	"github.com/klauspost/compress/s2"
)

// s2DictCodec stores the protobuf encoding as one s2 block compressed
// against the current dictionary's s2 content, and decodes with whichever
// version the value's header names. s2 (klauspost's Snappy extension) with
// a 32 KiB dictionary of recent records compresses a 1 KB record about as
// well as zstd with a trained dictionary (~0.23 vs ~0.24 of its JSON size)
// at a fraction of the time (~3 µs vs ~25-30 µs on the reference
// machine), because s2 has no entropy stage and no per-call state to reset
// beyond its hash table. The block starts with the uvarint decoded length,
// which Decode checks against MaxDecodedSize before decompressing.
type s2DictCodec struct {
	maxSize int
	dicts   *Dictionaries
}

func newS2DictCodec(opts Options, dicts *Dictionaries) *s2DictCodec {
	return &s2DictCodec{maxSize: opts.MaxDecodedSize, dicts: dicts}
}

func (c *s2DictCodec) Name() string { return CodecProtoS2Dict }

func (c *s2DictCodec) Encode(dst []byte, rec *Record) ([]byte, error) {
	d := c.dicts.Current()
	if d == nil {
		return dst, fmt.Errorf("%w: no current dictionary to encode with", ErrUnknownDictionary)
	}
	s := getProtoScratch()
	defer putProtoScratch(s)
	var err error
	if s.buf, err = appendProto(s.buf[:0], rec, s); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = appendHeader(dst, Header{Format: FormatProtoS2Dict, DictionaryVersion: d.version})
	need := s2.MaxEncodedLen(len(s.buf))
	if need < 0 {
		return dst[:start], fmt.Errorf("%w: protobuf payload of %d bytes is too large for s2", ErrInvalidRecord, len(s.buf))
	}
	if cap(dst)-len(dst) < need {
		grown := make([]byte, len(dst), len(dst)+need)
		copy(grown, dst)
		dst = grown
	}
	block := d.s2.Encode(dst[len(dst):len(dst)+need], s.buf)
	return dst[:len(dst)+len(block)], nil
}

func (c *s2DictCodec) Decode(src []byte) (*Record, error) {
	h, payload, err := checkHeader(src, FormatProtoS2Dict)
	if err != nil {
		return nil, err
	}
	d, err := c.dicts.Get(h.DictionaryVersion)
	if err != nil {
		return nil, err
	}
	if len(payload) == 0 {
		return nil, fmt.Errorf("%w: %s value has no s2 block after the header", ErrCorrupt, CodecProtoS2Dict)
	}
	n, err := s2.DecodedLen(payload)
	if err != nil {
		return nil, wrapCorrupt(CodecProtoS2Dict, err)
	}
	if n > c.maxSize {
		return nil, errTooLarge(CodecProtoS2Dict, n, c.maxSize)
	}
	// Decompress into a buffer of its own that the Record's strings then
	// share (decodeProtoOwned): one allocation and no copy, where a pooled
	// buffer would need a second allocation to copy the strings out of.
	out, err := d.s2.Decode(make([]byte, n), payload)
	if err != nil {
		return nil, wrapCorrupt(CodecProtoS2Dict, err)
	}
	return decodeProtoOwned(out)
}
