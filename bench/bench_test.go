package bench

import (
	"testing"
	"time"
)

// Micro-benchmarks of the measuring machinery itself: recording must cost
// far less than the operations it measures.
//
//	go test -run '^$' -bench . -benchtime 200ms ./bench/

func BenchmarkLatencyRecorderRecord(b *testing.B) {
	r := NewLatencyRecorder()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Record(time.Duration(i%100_000) * time.Microsecond)
	}
}

func BenchmarkLatencyRecorderRecordParallel(b *testing.B) {
	r := NewLatencyRecorder()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r.Record(time.Duration(i%100_000) * time.Microsecond)
			i++
		}
	})
}

func BenchmarkLatencyRecorderSummary(b *testing.B) {
	r := NewLatencyRecorder()
	for i := range 100_000 {
		r.Record(time.Duration(i) * time.Microsecond)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Summary()
	}
}

func BenchmarkRenderCDFChart(b *testing.B) {
	base, ours := sampleRecorders()
	c := LatencyCDF("latency", []string{"baseline", "ours"}, []*LatencyRecorder{base, ours})
	b.ReportAllocs()
	for b.Loop() {
		_ = renderSVG(c)
	}
}
