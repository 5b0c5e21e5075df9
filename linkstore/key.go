package linkstore

import (
	"fmt"
	"strings"
)

// KeyFormat is how a click id becomes a Redis key.
type KeyFormat uint8

// Key formats.
const (
	// KeyText is the baseline "as stored today": the 36-byte text UUID, no prefix.
	KeyText KeyFormat = iota
	// KeyRaw is KeyPrefix + the 16 raw UUID bytes (18 bytes). Smallest, but
	// not printable.
	KeyRaw
	// KeyASCII85 is KeyPrefix + 20 printable ascii85 characters (22 bytes).
	// Unlike encoding/ascii85 it never abbreviates zero groups to 'z', so
	// every key has the same length.
	KeyASCII85
)

// KeyPrefix starts every compact key, so click keys have their own
// namespace in a shared Redis.
const KeyPrefix = "c:"

// Key lengths in bytes, prefix included.
const (
	KeyTextLen    = UUIDTextLen
	KeyRawLen     = len(KeyPrefix) + 16
	KeyASCII85Len = len(KeyPrefix) + 20
)

// Key format names, as used in configuration and flags.
const (
	KeyFormatNameText    = "text"
	KeyFormatNameRaw     = "raw"
	KeyFormatNameASCII85 = "ascii85"
)

// String returns the key format name.
func (f KeyFormat) String() string {
	switch f {
	case KeyText:
		return KeyFormatNameText
	case KeyRaw:
		return KeyFormatNameRaw
	case KeyASCII85:
		return KeyFormatNameASCII85
	}
	return fmt.Sprintf("KeyFormat(%d)", uint8(f))
}

// ParseKeyFormat parses a key format name.
func ParseKeyFormat(name string) (KeyFormat, error) {
	switch name {
	case KeyFormatNameText:
		return KeyText, nil
	case KeyFormatNameRaw:
		return KeyRaw, nil
	case KeyFormatNameASCII85:
		return KeyASCII85, nil
	}
	return 0, fmt.Errorf("%w: unknown key format %q (allowed: %s, %s, %s)", ErrInvalidKey, name, KeyFormatNameText, KeyFormatNameRaw, KeyFormatNameASCII85)
}

// Len is the length of every key in this format.
func (f KeyFormat) Len() int {
	switch f {
	case KeyRaw:
		return KeyRawLen
	case KeyASCII85:
		return KeyASCII85Len
	}
	return KeyTextLen
}

// AppendKey appends the key of id in format f to dst. Unknown formats
// append the text form.
func AppendKey(dst []byte, f KeyFormat, id ClickID) []byte {
	switch f {
	case KeyRaw:
		dst = append(dst, KeyPrefix...)
		return append(dst, id[:]...)
	case KeyASCII85:
		dst = append(dst, KeyPrefix...)
		return appendASCII85(dst, id)
	}
	return id.AppendText(dst)
}

// Key returns the key of id in format f.
func Key(f KeyFormat, id ClickID) string {
	var buf [KeyTextLen]byte
	return string(AppendKey(buf[:0], f, id))
}

// ParseKey parses a key in format f back to the click id.
func ParseKey(f KeyFormat, key string) (ClickID, error) {
	var id ClickID
	switch f {
	case KeyText:
		parsed, err := ParseClickID(key)
		if err != nil {
			return id, fmt.Errorf("%w: text key: %w", ErrInvalidKey, err)
		}
		return parsed, nil
	case KeyRaw, KeyASCII85:
		if len(key) != f.Len() || !strings.HasPrefix(key, KeyPrefix) {
			return id, fmt.Errorf("%w: %s key %q: want %d bytes starting %q, got %d bytes", ErrInvalidKey, f, truncateForError([]byte(key)), f.Len(), KeyPrefix, len(key))
		}
		body := key[len(KeyPrefix):]
		if f == KeyRaw {
			copy(id[:], body)
			return id, nil
		}
		return parseASCII85(body)
	}
	return id, fmt.Errorf("%w: unknown key format %d", ErrInvalidKey, uint8(f))
}

// appendASCII85 encodes 16 bytes as 4 groups of 5 characters '!'..'u',
// most significant digit first (Adobe ascii85 without the 'z' shortcut).
func appendASCII85(dst []byte, id ClickID) []byte {
	for g := 0; g < 16; g += 4 {
		v := uint32(id[g])<<24 | uint32(id[g+1])<<16 | uint32(id[g+2])<<8 | uint32(id[g+3])
		var digits [5]byte
		for i := 4; i >= 0; i-- {
			digits[i] = byte(v%85) + '!'
			v /= 85
		}
		dst = append(dst, digits[:]...)
	}
	return dst
}

func parseASCII85(body string) (ClickID, error) {
	var id ClickID
	for g := 0; g < 4; g++ {
		var v uint64
		for i := 0; i < 5; i++ {
			c := body[g*5+i]
			if c < '!' || c > 'u' {
				return ClickID{}, fmt.Errorf("%w: ascii85 key %q: byte 0x%02x at offset %d is outside '!'..'u'", ErrInvalidKey, body, c, len(KeyPrefix)+g*5+i)
			}
			v = v*85 + uint64(c-'!')
		}
		if v > 0xffffffff {
			return ClickID{}, fmt.Errorf("%w: ascii85 key %q: group %d overflows 32 bits", ErrInvalidKey, body, g)
		}
		id[g*4] = byte(v >> 24)
		id[g*4+1] = byte(v >> 16)
		id[g*4+2] = byte(v >> 8)
		id[g*4+3] = byte(v)
	}
	return id, nil
}
