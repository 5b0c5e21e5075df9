package linkstore

// Focused micro-benchmarks of the best codec, proto+s2+dict, for tuning it
// against its speed targets. Compare before/after with the same command:
//
//	go test ./linkstore -run '^$' -bench 'S2Dict' -benchtime 20000x -count 5

import "testing"

func BenchmarkS2DictEncode(b *testing.B) {
	s := newBenchSetup(b, benchCase{name: "codec=" + CodecProtoS2Dict})
	b.SetBytes(int64(s.jsonBytes / len(s.records)))
	b.ReportAllocs()
	buf := make([]byte, 0, 4096)
	var err error
	i := 0
	for b.Loop() {
		if buf, err = s.codec.Encode(buf[:0], &s.records[i]); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(s.records) {
			i = 0
		}
	}
	s.report(b)
}

func BenchmarkS2DictDecode(b *testing.B) {
	s := newBenchSetup(b, benchCase{name: "codec=" + CodecProtoS2Dict})
	b.SetBytes(int64(s.jsonBytes / len(s.records)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.codec.Decode(s.values[i]); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(s.values) {
			i = 0
		}
	}
	s.report(b)
}
