package linkstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
)

// jsonCodec is the baseline: encoding/json of Record. With withHeader false
// (json-raw) the value is the bare JSON object, exactly as stored today; it
// cannot carry the consumed flag. With withHeader true (json) the JSON
// follows the 3-byte header like every other format.
type jsonCodec struct {
	maxSize    int
	withHeader bool
}

func newJSONCodec(opts Options, withHeader bool) *jsonCodec {
	return &jsonCodec{maxSize: opts.MaxDecodedSize, withHeader: withHeader}
}

func (c *jsonCodec) Name() string {
	if c.withHeader {
		return CodecJSON
	}
	return CodecJSONRaw
}

var jsonBufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Encode writes URLs as they are: no HTML escaping of '&', '<', '>' (which
// json.Marshal would turn into 6-byte \u0026 sequences and inflate the
// baseline).
func (c *jsonCodec) Encode(dst []byte, rec *Record) ([]byte, error) {
	buf := jsonBufferPool.Get().(*bytes.Buffer)
	defer jsonBufferPool.Put(buf)
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return dst, fmt.Errorf("%w: click %s: json marshal: %v", ErrInvalidRecord, rec.ClickID, err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if c.withHeader {
		dst = appendHeader(dst, Header{Format: FormatJSON})
	}
	return append(dst, b...), nil
}

func (c *jsonCodec) Decode(src []byte) (*Record, error) {
	payload := src
	if c.withHeader {
		var err error
		if _, payload, err = checkHeader(src, FormatJSON); err != nil {
			return nil, err
		}
	} else if !IsRawJSON(src) {
		return nil, fmt.Errorf("%w: raw JSON value must start with '{', got %d bytes starting %q", ErrWrongFormat, len(src), truncateForError(src[:min(len(src), 8)]))
	}
	if len(payload) > c.maxSize {
		return nil, errTooLarge(c.Name(), len(payload), c.maxSize)
	}
	rec := new(Record)
	if err := json.Unmarshal(payload, rec); err != nil {
		return nil, fmt.Errorf("%w: %s payload of %d bytes: %v", ErrCorrupt, c.Name(), len(payload), err)
	}
	*rec = rec.Normalized()
	return rec, nil
}

// protoCodec stores the protobuf encoding behind the header, uncompressed.
type protoCodec struct {
	maxSize int
}

func newProtoCodec(opts Options) *protoCodec { return &protoCodec{maxSize: opts.MaxDecodedSize} }

func (c *protoCodec) Name() string { return CodecProto }

func (c *protoCodec) Encode(dst []byte, rec *Record) ([]byte, error) {
	start := len(dst)
	dst = appendHeader(dst, Header{Format: FormatProto})
	s := getProtoScratch()
	defer putProtoScratch(s)
	out, err := appendProto(dst, rec, s)
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

func (c *protoCodec) Decode(src []byte) (*Record, error) {
	_, payload, err := checkHeader(src, FormatProto)
	if err != nil {
		return nil, err
	}
	if len(payload) > c.maxSize {
		return nil, errTooLarge(CodecProto, len(payload), c.maxSize)
	}
	return decodeProto(payload)
}
