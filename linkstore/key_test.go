package linkstore

import (
	"encoding/ascii85"
	"errors"
	"strings"
	"testing"
)

func TestClickIDText(t *testing.T) {
	const text = "123e4567-e89b-42d3-a456-426614174000"
	want := ClickID{0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x42, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00}
	id, err := ParseClickID(text)
	if err != nil || id != want {
		t.Fatalf("ParseClickID = %x, %v; want %x", id, err, want)
	}
	if id.String() != text {
		t.Fatalf("String() = %q, want %q", id.String(), text)
	}
	upper, err := ParseClickID(strings.ToUpper(text))
	if err != nil || upper != want {
		t.Fatalf("upper-case parse = %x, %v", upper, err)
	}
	for _, bad := range []string{"", text[:35], text + "0", strings.Replace(text, "-", "x", 1), "123e4567-e89b-42d3-a456-42661417400g", "123e4567e-89b-42d3-a456-426614174000"} {
		if _, err := ParseClickID(bad); !errors.Is(err, ErrInvalidUUID) {
			t.Errorf("ParseClickID(%q): err = %v, want ErrInvalidUUID", bad, err)
		}
	}
}

func TestKeyVectors(t *testing.T) {
	id := ClickID{'M', 'a', 'n', ' ', 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1}
	cases := []struct {
		format KeyFormat
		want   string
	}{
		{KeyText, "4d616e20-0000-0000-ffff-ffff00000001"},
		{KeyRaw, "c:Man \x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x01"},
		// "Man " is the classic ascii85 example "9jqo^"; zero group is "!!!!!" (no 'z').
		{KeyASCII85, "c:9jqo^!!!!!s8W-!!!!!\""},
	}
	for _, tc := range cases {
		got := Key(tc.format, id)
		if got != tc.want {
			t.Errorf("Key(%s) = %q, want %q", tc.format, got, tc.want)
		}
		if len(got) != tc.format.Len() {
			t.Errorf("%s key has %d bytes, Len() says %d", tc.format, len(got), tc.format.Len())
		}
		back, err := ParseKey(tc.format, got)
		if err != nil || back != id {
			t.Errorf("ParseKey(%s, %q) = %x, %v; want %x", tc.format, got, back, err, id)
		}
	}
	if KeyTextLen != 36 || KeyRawLen != 18 || KeyASCII85Len != 22 {
		t.Errorf("key lengths %d/%d/%d, want 36/18/22", KeyTextLen, KeyRawLen, KeyASCII85Len)
	}
}

// The ascii85 key body must match the standard library's encoder whenever
// that encoder does not use its 'z' shortcut (no all-zero 4-byte group).
func TestASCII85MatchesStandardLibrary(t *testing.T) {
	g := NewGenerator(3)
	for range 1000 {
		id := g.uuid()
		std := make([]byte, ascii85.MaxEncodedLen(16))
		std = std[:ascii85.Encode(std, id[:])]
		if strings.Contains(string(std), "z") {
			continue
		}
		if got := Key(KeyASCII85, id)[len(KeyPrefix):]; got != string(std) {
			t.Fatalf("ascii85 of %x = %q, standard library %q", id, got, std)
		}
	}
}

func TestParseKeyRejects(t *testing.T) {
	cases := []struct {
		format KeyFormat
		key    string
	}{
		{KeyRaw, "c:short"},
		{KeyRaw, "x:0123456789abcdef"},
		{KeyASCII85, "c:9jqo^!!!!!s8W-!!!!!"},    // 19 chars
		{KeyASCII85, "c:9jqo^!!!!!s8W-!!!!!\"x"}, // 21 chars
		{KeyASCII85, "c:zzzzzzzzzzzzzzzzzzzz"},   // 'z' is outside '!'..'u'
		{KeyASCII85, "c:9jqo^ !!!!s8W-!!!!!\""},  // space
		{KeyASCII85, "c:uuuuu!!!!!!!!!!!!!!!"},   // 85^5-1 overflows 32 bits
		{KeyASCII85, "c:s8W-\"!!!!!!!!!!!!!!!"},  // 2^32 exactly
		{KeyText, "c:not-a-uuid"},
		{KeyFormat(9), "anything"},
	}
	for _, tc := range cases {
		if id, err := ParseKey(tc.format, tc.key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseKey(%s, %q) = %x, %v; want ErrInvalidKey", tc.format, tc.key, id, err)
		}
	}
}

func TestParseKeyFormat(t *testing.T) {
	for _, f := range []KeyFormat{KeyText, KeyRaw, KeyASCII85} {
		got, err := ParseKeyFormat(f.String())
		if err != nil || got != f {
			t.Errorf("ParseKeyFormat(%q) = %v, %v", f.String(), got, err)
		}
	}
	_, err := ParseKeyFormat("base64")
	if !errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), "ascii85") {
		t.Errorf("ParseKeyFormat(base64) = %v, want ErrInvalidKey listing allowed names", err)
	}
}
