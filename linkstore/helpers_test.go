package linkstore

import (
	"reflect"
	"sync"
	"testing"
	"time"
)

// Seeds: training data and test data never overlap, so measured ratios are
// not flattered by a dictionary that has seen the very records.
const (
	trainSeed = 1001
	testSeed  = 7
)

var (
	testDictOnce sync.Once
	testDict     *Dictionary
	testDictErr  error
)

// testDictionary is version 1, trained once per test binary on 2000 records.
func testDictionary(tb testing.TB) *Dictionary {
	tb.Helper()
	testDictOnce.Do(func() {
		testDict, testDictErr = TrainDictionary(1, Generate(trainSeed, 2000), TrainOptions{})
	})
	if testDictErr != nil {
		tb.Fatalf("train dictionary: %v", testDictErr)
	}
	return testDict
}

// allCodecs returns every registered codec, keyed by name.
func allCodecs(tb testing.TB) map[string]Codec {
	tb.Helper()
	dicts, err := NewDictionaries(testDictionary(tb))
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]Codec{}
	for _, name := range CodecNames() {
		c, err := NewCodec(name, Options{}, dicts)
		if err != nil {
			tb.Fatalf("NewCodec(%q): %v", name, err)
		}
		if c.Name() != name {
			tb.Fatalf("NewCodec(%q).Name() = %q", name, c.Name())
		}
		out[name] = c
	}
	return out
}

func assertRecordEqual(tb testing.TB, want, got *Record) {
	tb.Helper()
	if !reflect.DeepEqual(want, got) {
		tb.Fatalf("record mismatch\nwant %+v\n got %+v", *want, *got)
	}
}

// liveRecords returns Generate(seed, n) with expires_at one hour from now:
// Generate's clock is fixed in 2025, so its records read as expired
// (ErrExpired) and Create refuses them.
func liveRecords(seed uint64, n int) []Record {
	recs := Generate(seed, n)
	expiresAt := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	for i := range recs {
		recs[i].ExpiresAt = expiresAt
	}
	return recs
}
