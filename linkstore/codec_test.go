package linkstore

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestRoundTripGeneratedRecords(t *testing.T) {
	records := Generate(testSeed, 300)
	for name, c := range allCodecs(t) {
		t.Run(name, func(t *testing.T) {
			prefix := []byte("prefix")
			for i := range records {
				rec := &records[i]
				value, err := c.Encode(append([]byte(nil), prefix...), rec)
				if err != nil {
					t.Fatalf("record %d: encode: %v", i, err)
				}
				if !bytes.HasPrefix(value, prefix) {
					t.Fatalf("record %d: Encode did not append to dst", i)
				}
				got, err := c.Decode(value[len(prefix):])
				if err != nil {
					t.Fatalf("record %d: decode: %v", i, err)
				}
				want := rec.Normalized()
				assertRecordEqual(t, &want, got)
			}
		})
	}
}

// edgeRecords are hand-written records at the corners of the schema.
func edgeRecords() map[string]Record {
	long := "https://baedal.app/shop/1?q=" + strings.Repeat("가나다라마바사", 2000) // ~42 KB
	return map[string]Record{
		"empty":         {},
		"only click id": {ClickID: ClickID{15: 1}},
		"korean everywhere": {
			ClickID:      ClickID{1, 2, 3},
			TrackingLink: "https://trk.baedal.app/c/한글?키=값",
			Campaign:     NamedID{ID: 1, Name: "가정의달_🍗_치킨"},
			SubParams:    map[string]string{"키": "값", "": "empty key", "empty value": ""},
			DeepLinkURL:  "baedal://가게/1",
			Device:       Device{UserAgent: "카카오톡", Locale: "ko-KR", Timezone: "Asia/Seoul"},
			Referrer:     "네이버",
			UTM:          UTM{Term: "치킨 배달"},
		},
		"long url": {DeepLinkURL: long, FallbackURL: long[:1000]},
		"max ids and screen": {
			Campaign: NamedID{ID: ^uint64(0)}, Creative: NamedID{ID: 1 << 63},
			Device: Device{ScreenWidth: ^uint32(0), ScreenHeight: 1},
		},
		"ipv6 and ipv4-mapped": {Device: Device{IP: netip.MustParseAddr("::ffff:10.1.2.3"), AdvertisingID: ClickID{0: 0xff}}},
		"ipv4":                 {Device: Device{IP: netip.MustParseAddr("0.0.0.0")}},
		"times before 1970 and far future": {
			ClickedAt:  time.Date(1969, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
			ExpiresAt:  time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
			ReceivedAt: time.Date(2025, 5, 5, 12, 0, 0, 123_456_789, time.FixedZone("KST", 9*3600)),
		},
		"empty but non-nil sub params": {SubParams: map[string]string{}},
	}
}

func TestRoundTripEdgeCases(t *testing.T) {
	for name, c := range allCodecs(t) {
		for caseName, rec := range edgeRecords() {
			t.Run(name+"/"+caseName, func(t *testing.T) {
				value, err := c.Encode(nil, &rec)
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				got, err := c.Decode(value)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				want := rec.Normalized()
				assertRecordEqual(t, &want, got)
			})
		}
	}
}

func TestNormalizedTruncatesToMillisecondsUTC(t *testing.T) {
	kst := time.FixedZone("KST", 9*3600)
	rec := Record{
		ClickedAt: time.Date(2025, 5, 5, 9, 0, 0, 123_999_999, kst),
		ExpiresAt: time.Unix(0, 0),
		SubParams: map[string]string{},
	}
	n := rec.Normalized()
	if want := time.Date(2025, 5, 5, 0, 0, 0, 123_000_000, time.UTC); n.ClickedAt != want {
		t.Errorf("ClickedAt = %v, want %v", n.ClickedAt, want)
	}
	if !n.ExpiresAt.IsZero() {
		t.Errorf("Unix epoch should read as unset, got %v", n.ExpiresAt)
	}
	if n.SubParams != nil {
		t.Errorf("empty SubParams should become nil")
	}
}

func TestProtoWireLayoutIsStable(t *testing.T) {
	// Hand-computed: header {format 2, dict 0, flags 0}, then field 2
	// (tracking_link, wire type 2) = tag 0x12, length 3, "a&b"; then
	// field 11 (clicked_at_ms, varint) = tag 0x58, varint 1000 = e8 07.
	rec := Record{TrackingLink: "a&b", ClickedAt: time.UnixMilli(1000)}
	c, err := NewCodec(CodecProto, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Encode(nil, &rec)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x02, 0x00, 0x00, 0x12, 0x03, 'a', '&', 'b', 0x58, 0xe8, 0x07}
	if !bytes.Equal(got, want) {
		t.Fatalf("proto value = % x, want % x", got, want)
	}
}

func TestJSONFormsAsStoredToday(t *testing.T) {
	rec := Record{TrackingLink: "https://t.example/?a=1&b=2", Campaign: NamedID{ID: 7, Name: "치킨"}}
	raw, _ := NewCodec(CodecJSONRaw, Options{}, nil)
	withHeader, _ := NewCodec(CodecJSON, Options{}, nil)
	rawValue, err := raw.Encode(nil, &rec)
	if err != nil {
		t.Fatal(err)
	}
	if !IsRawJSON(rawValue) {
		t.Fatalf("raw JSON value starts with %q, want '{'", rawValue[:1])
	}
	for _, want := range []string{`"tracking_link":"https://t.example/?a=1&b=2"`, `"campaign":{"id":7,"name":"치킨"}`} {
		if !strings.Contains(string(rawValue), want) {
			t.Errorf("raw JSON %s does not contain %s", rawValue, want)
		}
	}
	headerValue, err := withHeader.Encode(nil, &rec)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(headerValue[:HeaderLen], []byte{1, 0, 0}) || !bytes.Equal(headerValue[HeaderLen:], rawValue) {
		t.Fatalf("json value = %q, want header 01 00 00 + raw JSON %q", headerValue, rawValue)
	}
	if _, err := withHeader.Decode(rawValue); !errors.Is(err, ErrWrongFormat) {
		t.Errorf("json codec decoding raw JSON: err = %v, want ErrWrongFormat", err)
	}
	if _, err := raw.Decode(headerValue); !errors.Is(err, ErrWrongFormat) {
		t.Errorf("json-raw codec decoding headed JSON: err = %v, want ErrWrongFormat", err)
	}
}

func TestHeaderBytesPerCodec(t *testing.T) {
	rec := Generate(testSeed, 1)[0]
	want := map[string][HeaderLen]byte{
		CodecJSON:          {1, 0, 0},
		CodecProto:         {2, 0, 0},
		CodecProtoBrotli:   {3, 0, 0},
		CodecProtoZstd:     {4, 0, 0},
		CodecProtoZstdDict: {5, 1, 0},
		CodecProtoS2Dict:   {6, 1, 0},
	}
	for name, c := range allCodecs(t) {
		if name == CodecJSONRaw {
			continue
		}
		value, err := c.Encode(nil, &rec)
		if err != nil {
			t.Fatal(err)
		}
		if got := [HeaderLen]byte(value[:HeaderLen]); got != want[name] {
			t.Errorf("%s header = % x, want % x", name, got, want[name])
		}
	}
}

func TestConsumedFlagDoesNotChangeRecord(t *testing.T) {
	rec := Generate(testSeed, 1)[0]
	want := rec.Normalized()
	for name, c := range allCodecs(t) {
		if name == CodecJSONRaw {
			continue
		}
		t.Run(name, func(t *testing.T) {
			value, err := c.Encode(nil, &rec)
			if err != nil {
				t.Fatal(err)
			}
			if consumed, err := IsConsumed(value); err != nil || consumed {
				t.Fatalf("fresh value: IsConsumed = %v, %v; want false, nil", consumed, err)
			}
			before := append([]byte(nil), value...)

			// What the store does: SETRANGE key FlagsOffset "\x01".
			setRange := append([]byte(nil), value...)
			copy(setRange[FlagsOffset:], []byte{0x01})
			// What SETBIT key ConsumedBitOffset 1 does: bits count from the MSB.
			setBit := append([]byte(nil), value...)
			setBit[ConsumedBitOffset/8] |= 0x80 >> (ConsumedBitOffset % 8)
			viaHelper, err := SetConsumed(append([]byte(nil), value...))
			if err != nil {
				t.Fatal(err)
			}
			for how, v := range map[string][]byte{"SETRANGE": setRange, "SETBIT": setBit, "SetConsumed": viaHelper} {
				if consumed, err := IsConsumed(v); err != nil || !consumed {
					t.Fatalf("%s: IsConsumed = %v, %v; want true, nil", how, consumed, err)
				}
				if diff := differingBytes(before, v); len(diff) != 1 || diff[0] != FlagsOffset {
					t.Fatalf("%s changed bytes at %v, want only offset %d", how, diff, FlagsOffset)
				}
				got, err := c.Decode(v)
				if err != nil {
					t.Fatalf("%s: decode consumed value: %v", how, err)
				}
				assertRecordEqual(t, &want, got)
			}
		})
	}
}

func differingBytes(a, b []byte) []int {
	var out []int
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			out = append(out, i)
		}
	}
	return out
}

func TestCodecsDecodesEveryFormat(t *testing.T) {
	dicts, err := NewDictionaries(testDictionary(t))
	if err != nil {
		t.Fatal(err)
	}
	any, err := NewCodecs(Options{}, dicts)
	if err != nil {
		t.Fatal(err)
	}
	rec := Generate(testSeed, 1)[0]
	want := rec.Normalized()
	for name, c := range allCodecs(t) {
		value, err := c.Encode(nil, &rec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := any.Decode(value)
		if err != nil {
			t.Fatalf("%s value: Codecs.Decode: %v", name, err)
		}
		assertRecordEqual(t, &want, got)
	}
}

func TestUnknownCodecNameListsAllowed(t *testing.T) {
	_, err := NewCodec("proto+lz4", Options{}, nil)
	if !errors.Is(err, ErrUnknownCodec) {
		t.Fatalf("err = %v, want ErrUnknownCodec", err)
	}
	msg := err.Error()
	for _, want := range []string{`"proto+lz4"`, "json", "proto+brotli", "proto+zstd+dict", "linkstore:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
}

func TestDictCodecNeedsDictionary(t *testing.T) {
	if _, err := NewCodec(CodecProtoZstdDict, Options{}, nil); !errors.Is(err, ErrInvalidDictionary) {
		t.Fatalf("err = %v, want ErrInvalidDictionary", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := []Options{
		{MaxDecodedSize: -1}, {BrotliQuality: 12}, {BrotliWindowBits: 9},
		{BrotliWindowBits: 25}, {ZstdLevel: 23}, {ZstdConcurrency: -1},
	}
	for _, o := range bad {
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidOptions", o, err)
		}
		if _, err := NewCodec(CodecProto, o, nil); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("NewCodec with %+v: err = %v, want ErrInvalidOptions", o, err)
		}
	}
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("zero Options: %v", err)
	}
}

func TestWrongFormatIsRejected(t *testing.T) {
	codecs := allCodecs(t)
	rec := Generate(testSeed, 1)[0]
	for writer, wc := range codecs {
		value, err := wc.Encode(nil, &rec)
		if err != nil {
			t.Fatal(err)
		}
		for reader, rc := range codecs {
			if reader == writer {
				continue
			}
			if _, err := rc.Decode(value); !errors.Is(err, ErrWrongFormat) {
				t.Errorf("%s decoding a %s value: err = %v, want ErrWrongFormat", reader, writer, err)
			}
		}
	}
}

func TestDecodeCapsSize(t *testing.T) {
	rec := Record{DeepLinkURL: strings.Repeat("a", 10_000)} // compresses to almost nothing
	dicts, _ := NewDictionaries(testDictionary(t))
	for _, name := range CodecNames() {
		big, err := NewCodec(name, Options{}, dicts)
		if err != nil {
			t.Fatal(err)
		}
		small, err := NewCodec(name, Options{MaxDecodedSize: 4096}, dicts)
		if err != nil {
			t.Fatal(err)
		}
		value, err := big.Encode(nil, &rec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := big.Decode(value); err != nil {
			t.Fatalf("%s: default cap: %v", name, err)
		}
		_, err = small.Decode(value)
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: 10 KB payload with 4 KiB cap: err = %v, want ErrTooLarge", name, err)
		}
	}
}

func TestCorruptValuesGiveErrors(t *testing.T) {
	rec := Generate(testSeed, 1)[0]
	for name, c := range allCodecs(t) {
		t.Run(name, func(t *testing.T) {
			value, err := c.Encode(nil, &rec)
			if err != nil {
				t.Fatal(err)
			}
			// Every strict prefix must fail, except that proto has no end marker,
			// so a proto value cut at a field boundary decodes to a shorter record.
			failures := 0
			for n := 0; n < len(value); n++ {
				got, err := c.Decode(value[:n])
				if err == nil {
					if name != CodecProto || n < HeaderLen {
						t.Fatalf("truncated to %d of %d bytes: no error, got %+v", n, len(value), got)
					}
					continue
				}
				failures++
				if !strings.HasPrefix(err.Error(), "linkstore:") {
					t.Fatalf("truncated to %d bytes: error %q lacks the linkstore: prefix", n, err)
				}
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrWrongFormat) {
					t.Fatalf("truncated to %d bytes: err = %v, want ErrCorrupt or ErrWrongFormat", n, err)
				}
			}
			if failures < len(value)/2 {
				t.Fatalf("only %d of %d truncations failed", failures, len(value))
			}
			// Flipping payload bytes must never panic; most flips must fail or
			// change the record.
			for i := HeaderLen; i < len(value); i++ {
				bad := append([]byte(nil), value...)
				bad[i] ^= 0xa5
				_, _ = c.Decode(bad)
			}
		})
	}
}

func TestGarbageGivesErrors(t *testing.T) {
	garbage := [][]byte{
		nil, {}, {0}, {0, 0, 0}, {2}, {5, 0, 0}, {4, 1, 0}, {9, 0, 0, 1}, {'{'}, {'{', '"'},
		{4, 0, 0, 0xff, 0xff, 0xff, 0xff},
		{3, 0, 0, 0xff, 0xff, 0xff, 0xff},
		{5, 200, 0, 1, 2, 3},
		append([]byte{2, 0, 0}, bytes.Repeat([]byte{0xff}, 20)...),
	}
	for name, c := range allCodecs(t) {
		for _, g := range garbage {
			if got, err := c.Decode(g); err == nil {
				t.Errorf("%s.Decode(% x) = %+v, want error", name, g, got)
			}
		}
	}
}

func TestUnknownDictionaryVersionNamesLoaded(t *testing.T) {
	c := allCodecs(t)[CodecProtoZstdDict]
	value, err := c.Encode(nil, &Record{TrackingLink: "x"})
	if err != nil {
		t.Fatal(err)
	}
	value[DictionaryVersionOffset] = 9
	_, err = c.Decode(value)
	if !errors.Is(err, ErrUnknownDictionary) || !strings.Contains(err.Error(), "version 9") || !strings.Contains(err.Error(), "[1]") {
		t.Fatalf("err = %v, want ErrUnknownDictionary naming version 9 and loaded [1]", err)
	}
}

func TestParseHeader(t *testing.T) {
	h, err := ParseHeader([]byte{5, 7, 0x81, 0xde})
	if err != nil {
		t.Fatal(err)
	}
	if h != (Header{Format: FormatProtoZstdDict, DictionaryVersion: 7, Flags: 0x81}) || !h.Consumed() {
		t.Fatalf("ParseHeader = %+v", h)
	}
	for _, bad := range [][]byte{{2, 0}, {2, 1, 0}, {5, 0, 0}, {0, 0, 0}, {6, 0, 0}, {'{', 0, 0}} {
		if _, err := ParseHeader(bad); err == nil {
			t.Errorf("ParseHeader(% x): no error", bad)
		}
	}
	if _, err := SetConsumed([]byte("{}")); err == nil {
		t.Errorf("SetConsumed on raw JSON: no error")
	}
}
