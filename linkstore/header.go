package linkstore

import "fmt"

// Format identifies the codec that wrote a value. It is byte 0 of the header.
// Values are never '{' (0x7b), so a header-less raw JSON value is told apart
// by its first byte.
type Format uint8

// Formats. The numbers are stored in Redis: never renumber them.
const (
	FormatJSON          Format = 1 // JSON payload behind a header
	FormatProto         Format = 2 // protobuf
	FormatProtoBrotli   Format = 3 // protobuf, brotli stream
	FormatProtoZstd     Format = 4 // protobuf, zstd frame without its 4-byte magic
	FormatProtoZstdDict Format = 5 // as FormatProtoZstd, with the dictionary named by byte 1
	FormatProtoS2Dict   Format = 6 // protobuf, s2 block with the dictionary named by byte 1

	lastFormat = FormatProtoS2Dict
)

// Header layout. The header is never compressed, so the store can change the
// flags byte in place (Redis SETRANGE/SETBIT) without touching the payload.
const (
	FormatOffset            = 0 // byte offset of the Format
	DictionaryVersionOffset = 1 // byte offset of the dictionary version (0 = none)
	FlagsOffset             = 2 // byte offset of the flags byte
	HeaderLen               = 3 // payload starts here

	// FlagConsumed is set once the deep link was handed out.
	FlagConsumed byte = 1 << 0

	// ConsumedBitOffset is the bit offset of FlagConsumed for Redis SETBIT
	// and GETBIT, which number bits from the most significant bit of byte 0:
	//	SETBIT key ConsumedBitOffset 1
	ConsumedBitOffset = FlagsOffset*8 + 7

	// rawJSONFirstByte starts every header-less (JSONRaw) value.
	rawJSONFirstByte = '{'
)

// Header is the decoded fixed header of a stored value.
type Header struct {
	Format            Format
	DictionaryVersion uint8
	Flags             byte
}

// Consumed reports whether FlagConsumed is set.
func (h Header) Consumed() bool { return h.Flags&FlagConsumed != 0 }

// appendHeader appends the 3 header bytes to dst.
func appendHeader(dst []byte, h Header) []byte {
	return append(dst, byte(h.Format), h.DictionaryVersion, h.Flags)
}

// String returns the codec name of the format, or "format(N)".
func (f Format) String() string {
	switch f {
	case FormatJSON:
		return CodecJSON
	case FormatProto:
		return CodecProto
	case FormatProtoBrotli:
		return CodecProtoBrotli
	case FormatProtoZstd:
		return CodecProtoZstd
	case FormatProtoZstdDict:
		return CodecProtoZstdDict
	case FormatProtoS2Dict:
		return CodecProtoS2Dict
	}
	return fmt.Sprintf("format(%d)", uint8(f))
}

func (f Format) valid() bool { return f >= FormatJSON && f <= lastFormat }

// usesDictionary reports whether byte 1 of the header names a dictionary.
func (f Format) usesDictionary() bool { return f == FormatProtoZstdDict || f == FormatProtoS2Dict }

// ParseHeader reads the fixed header of a stored value. It checks only the
// header: the format byte must be known, and the dictionary version must be
// non-zero exactly when the format uses a dictionary. A raw JSON value (first
// byte '{') has no header and gives an error wrapping ErrWrongFormat; use
// IsRawJSON first when both kinds can occur.
func ParseHeader(value []byte) (Header, error) {
	if len(value) < HeaderLen {
		return Header{}, fmt.Errorf("%w: value has %d bytes, header needs %d", ErrCorrupt, len(value), HeaderLen)
	}
	h := Header{
		Format:            Format(value[FormatOffset]),
		DictionaryVersion: value[DictionaryVersionOffset],
		Flags:             value[FlagsOffset],
	}
	if value[0] == rawJSONFirstByte {
		return Header{}, fmt.Errorf("%w: value starts with '{': raw JSON without header", ErrWrongFormat)
	}
	if !h.Format.valid() {
		return Header{}, fmt.Errorf("%w: unknown format byte 0x%02x (known 1..%d)", ErrCorrupt, value[FormatOffset], lastFormat)
	}
	usesDict := h.Format.usesDictionary()
	if usesDict && h.DictionaryVersion == 0 {
		return Header{}, fmt.Errorf("%w: format %s with dictionary version 0", ErrCorrupt, h.Format)
	}
	if !usesDict && h.DictionaryVersion != 0 {
		return Header{}, fmt.Errorf("%w: format %s with dictionary version %d, want 0", ErrCorrupt, h.Format, h.DictionaryVersion)
	}
	return h, nil
}

// IsRawJSON reports whether value is a header-less raw JSON value (JSONRaw).
func IsRawJSON(value []byte) bool {
	return len(value) > 0 && value[0] == rawJSONFirstByte
}

// Flags returns the flags byte of a value with a header.
func Flags(value []byte) (byte, error) {
	h, err := ParseHeader(value)
	if err != nil {
		return 0, err
	}
	return h.Flags, nil
}

// IsConsumed reports whether the consumed flag of a value is set.
func IsConsumed(value []byte) (bool, error) {
	h, err := ParseHeader(value)
	if err != nil {
		return false, err
	}
	return h.Consumed(), nil
}

// SetConsumed sets the consumed flag of value in place, exactly as
// `SETRANGE key FlagsOffset <flags|FlagConsumed>` does in Redis. The payload
// is not touched. It returns the value for convenience.
func SetConsumed(value []byte) ([]byte, error) {
	if _, err := ParseHeader(value); err != nil {
		return value, err
	}
	value[FlagsOffset] |= FlagConsumed
	return value, nil
}
