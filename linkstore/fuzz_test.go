package linkstore

// Fuzz targets. Each one is also run on its seed corpus by plain `go test`.
// To fuzz one for real (one target per invocation):
//
//	go test ./linkstore -run='^$' -fuzz='^FuzzDecodeProtoZstdDict$' -fuzztime=20s

import (
	"reflect"
	"strings"
	"testing"
)

// fuzzDecode checks, for arbitrary bytes, that Decode never panics, that a
// successful decode gives a normalized record, and that the record survives
// another encode/decode round trip unchanged.
func fuzzDecode(f *testing.F, name string) {
	codec := allCodecs(f)[name]
	records := Generate(testSeed, 8)
	for _, r := range edgeRecords() {
		records = append(records, r)
	}
	for i := range records {
		v, err := codec.Encode(nil, &records[i])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v)
		if len(v) > 10 {
			f.Add(v[:len(v)/2])
		}
	}
	f.Add([]byte{})
	f.Add([]byte("{}"))
	f.Add([]byte{byte(FormatProto), 0, 0, 0x0a, 0x10})
	f.Add([]byte{byte(FormatProtoZstdDict), 1, 1})

	f.Fuzz(func(t *testing.T, value []byte) {
		rec, err := codec.Decode(value)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "linkstore:") {
				t.Fatalf("error %q lacks the linkstore: prefix", err)
			}
			return
		}
		if normalized := rec.Normalized(); !reflect.DeepEqual(&normalized, rec) {
			t.Fatalf("decoded record is not normalized: %+v", rec)
		}
		again, err := codec.Encode(nil, rec)
		if err != nil {
			// A decoded record always re-encodes with its own codec.
			t.Fatalf("re-encode decoded record: %v", err)
		}
		rec2, err := codec.Decode(again)
		if err != nil {
			t.Fatalf("decode re-encoded record: %v", err)
		}
		if !reflect.DeepEqual(rec, rec2) {
			t.Fatalf("round trip changed the record\nfirst  %+v\nsecond %+v", rec, rec2)
		}
	})
}

func FuzzDecodeJSONRaw(f *testing.F)       { fuzzDecode(f, CodecJSONRaw) }
func FuzzDecodeJSON(f *testing.F)          { fuzzDecode(f, CodecJSON) }
func FuzzDecodeProto(f *testing.F)         { fuzzDecode(f, CodecProto) }
func FuzzDecodeProtoBrotli(f *testing.F)   { fuzzDecode(f, CodecProtoBrotli) }
func FuzzDecodeProtoZstd(f *testing.F)     { fuzzDecode(f, CodecProtoZstd) }
func FuzzDecodeProtoZstdDict(f *testing.F) { fuzzDecode(f, CodecProtoZstdDict) }
func FuzzDecodeProtoS2Dict(f *testing.F)   { fuzzDecode(f, CodecProtoS2Dict) }

// FuzzParseKey checks that ParseKey never panics and that a parsed key
// formats back to the same bytes (the text form up to hex case).
func FuzzParseKey(f *testing.F) {
	for _, id := range []ClickID{{}, {0: 0xff, 15: 1}, NewGenerator(1).uuid()} {
		for _, format := range []KeyFormat{KeyText, KeyRaw, KeyASCII85} {
			f.Add(uint8(format), Key(format, id))
		}
	}
	f.Add(uint8(KeyASCII85), "c:uuuuuuuuuuuuuuuuuuuu")
	f.Add(uint8(KeyText), "123E4567-E89B-42D3-A456-426614174000")
	f.Fuzz(func(t *testing.T, format uint8, key string) {
		f := KeyFormat(format % 4)
		id, err := ParseKey(f, key)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "linkstore:") {
				t.Fatalf("error %q lacks the linkstore: prefix", err)
			}
			return
		}
		back := Key(f, id)
		if f == KeyText {
			if !strings.EqualFold(back, key) {
				t.Fatalf("ParseKey(%s, %q) = %x formats back to %q", f, key, id, back)
			}
			return
		}
		if back != key {
			t.Fatalf("ParseKey(%s, %q) = %x formats back to %q", f, key, id, back)
		}
	})
}
