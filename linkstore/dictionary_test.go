package linkstore

import (
	"bytes"
	"errors"
	"testing"
)

func TestDictionaryRotationKeepsOldRecordsReadable(t *testing.T) {
	v1 := testDictionary(t)
	dicts, err := NewDictionaries(v1)
	if err != nil {
		t.Fatal(err)
	}
	codec, err := NewCodec(CodecProtoZstdDict, Options{}, dicts)
	if err != nil {
		t.Fatal(err)
	}
	records := Generate(testSeed, 50)
	var oldValues [][]byte
	for i := range records {
		v, err := codec.Encode(nil, &records[i])
		if err != nil {
			t.Fatal(err)
		}
		if v[DictionaryVersionOffset] != 1 {
			t.Fatalf("value encoded before rotation names dictionary %d, want 1", v[DictionaryVersionOffset])
		}
		oldValues = append(oldValues, v)
	}

	// Retrain on different traffic and rotate, through the serialized form
	// as the store would load it from Redis.
	v2, err := TrainDictionary(2, Generate(trainSeed+1, 1000), TrainOptions{MaxDictSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(v1.Bytes(), v2.Bytes()) {
		t.Fatal("v1 and v2 dictionaries are identical; the test would prove nothing")
	}
	serialized, _ := v2.MarshalBinary()
	loaded, err := UnmarshalDictionary(serialized)
	if err != nil || loaded.Version() != 2 || !bytes.Equal(loaded.Bytes(), v2.Bytes()) {
		t.Fatalf("UnmarshalDictionary: version %d, err %v", loaded.Version(), err)
	}
	if err := dicts.Add(loaded); err != nil {
		t.Fatal(err)
	}
	if dicts.Current().Version() != 2 {
		t.Fatalf("current = %d after Add(v2), want 2", dicts.Current().Version())
	}

	for i, v := range oldValues {
		got, err := codec.Decode(v)
		if err != nil {
			t.Fatalf("v1 value %d after rotation: %v", i, err)
		}
		want := records[i].Normalized()
		assertRecordEqual(t, &want, got)
	}
	newValue, err := codec.Encode(nil, &records[0])
	if err != nil {
		t.Fatal(err)
	}
	if newValue[DictionaryVersionOffset] != 2 {
		t.Fatalf("value encoded after rotation names dictionary %d, want 2", newValue[DictionaryVersionOffset])
	}

	// A v2 value must not decode with the v1 dictionary: relabel it as v1.
	relabeled := append([]byte(nil), newValue...)
	relabeled[DictionaryVersionOffset] = 1
	if _, err := codec.Decode(relabeled); err == nil {
		t.Fatal("v2 frame decoded with the v1 dictionary; frame dictionary IDs are not checked")
	}

	// Dropping v1 makes its values fail with a clear error.
	if err := dicts.Remove(2); err == nil {
		t.Fatal("removing the current dictionary should fail")
	}
	if err := dicts.Remove(1); err != nil {
		t.Fatal(err)
	}
	if _, err := codec.Decode(oldValues[0]); !errors.Is(err, ErrUnknownDictionary) {
		t.Fatalf("v1 value after removing v1: err = %v, want ErrUnknownDictionary", err)
	}
	if got := dicts.Versions(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("Versions() = %v, want [2]", got)
	}
}

func TestDictionarySetRejectsConflictingVersion(t *testing.T) {
	v1 := testDictionary(t)
	other, err := TrainDictionary(1, Generate(trainSeed+2, 500), TrainOptions{MaxDictSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	dicts, _ := NewDictionaries(v1)
	if err := dicts.Add(other); !errors.Is(err, ErrInvalidDictionary) {
		t.Fatalf("second version 1 with other bytes: err = %v, want ErrInvalidDictionary", err)
	}
	if err := dicts.Add(v1); err != nil {
		t.Fatalf("re-adding identical v1: %v", err)
	}
	if err := dicts.SetCurrent(7); !errors.Is(err, ErrUnknownDictionary) {
		t.Fatalf("SetCurrent(7): err = %v", err)
	}
}

func TestDictionaryValidation(t *testing.T) {
	if _, err := NewDictionary(0, testDictionary(t).Bytes()); !errors.Is(err, ErrInvalidDictionary) {
		t.Errorf("version 0: err = %v", err)
	}
	if _, err := NewDictionary(3, []byte("not a zstd dictionary")); !errors.Is(err, ErrInvalidDictionary) {
		t.Errorf("garbage bytes: err = %v", err)
	}
	if _, err := UnmarshalDictionary(nil); !errors.Is(err, ErrInvalidDictionary) {
		t.Errorf("empty serialized: err = %v", err)
	}
	if _, err := TrainDictionary(1, Generate(1, 5), TrainOptions{}); !errors.Is(err, ErrInvalidDictionary) {
		t.Errorf("5 samples: err = %v", err)
	}
}

// The point of a dictionary: on ~1 KB records it must beat plain zstd by a
// wide margin, on records it was not trained on.
func TestDictionaryShrinksValues(t *testing.T) {
	codecs := allCodecs(t)
	records := Generate(testSeed, 500)
	size := func(name string) int {
		total := 0
		for i := range records {
			v, err := codecs[name].Encode(nil, &records[i])
			if err != nil {
				t.Fatal(err)
			}
			total += len(v)
		}
		return total
	}
	jsonSize, zstdSize, dictSize := size(CodecJSONRaw), size(CodecProtoZstd), size(CodecProtoZstdDict)
	t.Logf("bytes/record: json %d, proto+zstd %d, proto+zstd+dict %d", jsonSize/len(records), zstdSize/len(records), dictSize/len(records))
	if dictSize*10 > zstdSize*8 {
		t.Errorf("dictionary saves too little: %d vs %d bytes", dictSize, zstdSize)
	}
	if float64(dictSize) > 0.45*float64(jsonSize) {
		t.Errorf("proto+zstd+dict is %.1f%% of JSON, target < 45%%", 100*float64(dictSize)/float64(jsonSize))
	}
}
