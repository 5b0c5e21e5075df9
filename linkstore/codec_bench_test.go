package linkstore

// Micro-benchmarks of every codec on generated records the dictionary was
// not trained on. Run (short, on a shared machine):
//
//	go test ./linkstore -run='^$' -bench='Encode|Decode' -benchtime=2000x -count=1
//
// Custom metrics: B/record is the average stored value size (header
// included), ratio_vs_json is that size over the raw JSON size of the same
// records. SetBytes uses the raw JSON size, so MB/s is comparable across
// codecs ("JSON-equivalent throughput").

import (
	"fmt"
	"testing"
)

const benchRecordCount = 1000

type benchCase struct {
	name string
	opts Options
}

func benchCases() []benchCase {
	return []benchCase{
		{"codec=json-raw", Options{}},
		{"codec=json", Options{}},
		{"codec=proto", Options{}},
		{"codec=proto+brotli/quality=5/lgwin=10", Options{BrotliQuality: 5, BrotliWindowBits: 10}},
		{"codec=proto+brotli/quality=5/lgwin=16", Options{BrotliQuality: 5, BrotliWindowBits: 16}},
		{"codec=proto+brotli/quality=11/lgwin=10", Options{BrotliQuality: 11, BrotliWindowBits: 10}},
		{"codec=proto+zstd/level=3", Options{ZstdLevel: 3}},
		{"codec=proto+zstd+dict/level=1", Options{ZstdLevel: 1}},
		{"codec=proto+zstd+dict/level=3", Options{ZstdLevel: 3}},
		{"codec=proto+zstd+dict/level=19", Options{ZstdLevel: 19}},
		{"codec=proto+s2+dict", Options{}},
	}
}

func (bc benchCase) codecName() string {
	var name string
	fmt.Sscanf(bc.name, "codec=%s", &name)
	for i := range name {
		if name[i] == '/' {
			return name[:i]
		}
	}
	return name
}

type benchSetup struct {
	codec     Codec
	records   []Record
	values    [][]byte
	jsonBytes int // total raw JSON size
	valBytes  int // total encoded size
}

func newBenchSetup(b *testing.B, bc benchCase) *benchSetup {
	b.Helper()
	dicts, err := NewDictionaries(testDictionary(b))
	if err != nil {
		b.Fatal(err)
	}
	codec, err := NewCodec(bc.codecName(), bc.opts, dicts)
	if err != nil {
		b.Fatal(err)
	}
	jsonCodec, _ := NewCodec(CodecJSONRaw, Options{}, nil)
	s := &benchSetup{codec: codec, records: Generate(testSeed, benchRecordCount)}
	for i := range s.records {
		j, err := jsonCodec.Encode(nil, &s.records[i])
		if err != nil {
			b.Fatal(err)
		}
		v, err := codec.Encode(nil, &s.records[i])
		if err != nil {
			b.Fatal(err)
		}
		s.jsonBytes += len(j)
		s.valBytes += len(v)
		s.values = append(s.values, v)
	}
	return s
}

func (s *benchSetup) report(b *testing.B) {
	b.ReportMetric(float64(s.valBytes)/float64(len(s.records)), "B/record")
	b.ReportMetric(float64(s.valBytes)/float64(s.jsonBytes), "ratio_vs_json")
}

func BenchmarkEncode(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			s := newBenchSetup(b, bc)
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
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			s := newBenchSetup(b, bc)
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
		})
	}
}

// go test ./linkstore -run='^$' -bench='Key' -benchtime=100000x -count=1
func BenchmarkAppendKey(b *testing.B) {
	id := NewGenerator(1).uuid()
	for _, f := range []KeyFormat{KeyText, KeyRaw, KeyASCII85} {
		b.Run("format="+f.String(), func(b *testing.B) {
			b.SetBytes(int64(f.Len()))
			b.ReportAllocs()
			buf := make([]byte, 0, 64)
			for b.Loop() {
				buf = AppendKey(buf[:0], f, id)
			}
		})
	}
}

func BenchmarkParseKey(b *testing.B) {
	id := NewGenerator(1).uuid()
	for _, f := range []KeyFormat{KeyText, KeyRaw, KeyASCII85} {
		key := Key(f, id)
		b.Run("format="+f.String(), func(b *testing.B) {
			b.SetBytes(int64(len(key)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseKey(f, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The hand-written wire codec against the generated code, same records:
//
//	go test ./linkstore -run='^$' -bench='ProtoImpl' -benchtime=3000x -count=3
func BenchmarkProtoImpl(b *testing.B) {
	records := Generate(testSeed, benchRecordCount)
	payloads := make([][]byte, len(records))
	for i := range records {
		payloads[i], _ = appendProto(nil, &records[i], nil)
	}
	impls := []struct {
		name   string
		encode func([]byte, *Record, *protoScratch) ([]byte, error)
		decode func([]byte) (*Record, error)
	}{
		{"generated", appendProtoGenerated, decodeProtoGenerated},
		{"wire", appendProto, decodeProto},
	}
	for _, impl := range impls {
		b.Run("op=encode/impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 4096)
			i := 0
			for b.Loop() {
				s := getProtoScratch()
				buf, _ = impl.encode(buf[:0], &records[i], s)
				putProtoScratch(s)
				if i++; i == len(records) {
					i = 0
				}
			}
		})
		b.Run("op=decode/impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := impl.decode(payloads[i]); err != nil {
					b.Fatal(err)
				}
				if i++; i == len(payloads) {
					i = 0
				}
			}
		})
	}
}
