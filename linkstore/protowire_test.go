package linkstore

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// The hand-written wire codec must produce the generated code's bytes and
// decode like it: a differential test on generated and edge-case records.
func TestWireCodecMatchesGeneratedCode(t *testing.T) {
	records := Generate(testSeed, 500)
	for _, r := range edgeRecords() {
		records = append(records, r)
	}
	records = append(records, Record{SubParams: map[string]string{"": "", "k": ""}})
	records = append(records, Record{SubParams: map[string]string{"b": "2", "a": "1", "c": ""}, Device: Device{ScreenWidth: 1}})
	for i := range records {
		want, werr := appendProtoGenerated(nil, &records[i], getProtoScratch())
		got, gerr := appendProto(nil, &records[i], nil)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("record %d: generated err %v, wire err %v", i, werr, gerr)
		}
		if werr != nil {
			continue
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("record %d: wire encoding differs\n got % x\nwant % x", i, got, want)
		}
		wantRec, err := decodeProtoGenerated(want)
		if err != nil {
			t.Fatal(err)
		}
		gotRec, err := decodeProto(want)
		if err != nil {
			t.Fatalf("record %d: decode: %v", i, err)
		}
		if !reflect.DeepEqual(gotRec, wantRec) {
			t.Fatalf("record %d: decoded records differ\n got %+v\nwant %+v", i, gotRec, wantRec)
		}
	}
}

func TestWireCodecRejectsInvalidUTF8(t *testing.T) {
	rec := Record{Device: Device{UserAgent: "a\xffb"}}
	_, err := appendProto(nil, &rec, nil)
	if !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("err = %v, want ErrInvalidRecord", err)
	}
	if want := "device.user_agent"; !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Fatalf("error %q does not name %s", err, want)
	}
	// A sub_params value is checked while the map is written; the error
	// names it and nothing is appended.
	rec = Record{TrackingLink: "https://t.example/", SubParams: map[string]string{"a": "ok", "k": "x\xff"}}
	dst := []byte("prefix")
	got, err := appendProto(dst, &rec, nil)
	if !errors.Is(err, ErrInvalidRecord) || !bytes.Contains([]byte(err.Error()), []byte("sub_params.k")) {
		t.Fatalf("invalid sub_params value: err = %v, want ErrInvalidRecord naming sub_params.k", err)
	}
	if string(got) != "prefix" {
		t.Fatalf("invalid record: appendProto returned %q, want dst unchanged", got)
	}
	if err := validateRecordStrings(&rec); err == nil {
		t.Fatal("validateRecordStrings accepted an invalid sub_params value")
	}
	// tracking_link (field 2) = "\xff"
	if _, err := decodeProto([]byte{0x12, 0x01, 0xff}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("decode invalid UTF-8: err = %v, want ErrCorrupt", err)
	}
}

// FuzzWireDecodeMatchesGenerated: on any bytes, the wire decoder accepts
// exactly what the generated decoder accepts and yields the same record.
//
//	go test ./linkstore -run='^$' -fuzz='^FuzzWireDecodeMatchesGenerated$' -fuzztime=20s
func FuzzWireDecodeMatchesGenerated(f *testing.F) {
	for i, r := range Generate(testSeed, 4) {
		b, _ := appendProto(nil, &r, nil)
		f.Add(b)
		f.Add(b[:len(b)/(i+2)])
	}
	f.Add([]byte{0x3a, 0x04, 0x0a, 0x00, 0x12, 0x00})             // map entry with empty key and value
	f.Add([]byte{0x1a, 0x02, 0x08, 0x01, 0x1a, 0x02, 0x08, 0x02}) // repeated message: merge
	f.Add([]byte{0x58, 0x01, 0x58, 0x02})                         // repeated scalar: last wins
	f.Add([]byte{0x5a, 0x00})                                     // clicked_at_ms with the wrong wire type: skipped
	f.Fuzz(func(t *testing.T, payload []byte) {
		want, werr := decodeProtoGenerated(payload)
		got, gerr := decodeProto(payload)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("generated err %v, wire err %v", werr, gerr)
		}
		if gerr != nil {
			if !errors.Is(gerr, ErrCorrupt) {
				t.Fatalf("wire error %v does not wrap ErrCorrupt", gerr)
			}
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("records differ\n got %+v\nwant %+v", got, want)
		}
	})
}
