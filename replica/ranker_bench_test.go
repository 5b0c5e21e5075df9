package replica

import (
	"fmt"
	"testing"
	"time"
)

// Run with:
//
//	go test ./replica/ -run '^$' -bench . -benchtime 200000x -count 1
//
// BenchmarkSelectDone measures the hot path a wrapper takes per request:
// Select (rank, start the best, pull the others toward it) and Done. It
// should report 0 allocs/op. BenchmarkSelectDoneParallel adds contention.
func BenchmarkSelectDone(b *testing.B) {
	for _, name := range PolicyNames {
		for _, replicas := range []int{3, 8} {
			b.Run(fmt.Sprintf("policy=%s/replicas=%d", name, replicas), func(b *testing.B) {
				clock := newFakeClock()
				p := newTestPolicy(b, replicas, Config{Policy: name, Now: clock.Now})
				for r := range replicas {
					complete(p, r, okWithServer(time.Duration(r+1)*time.Millisecond, time.Millisecond, 1))
				}
				buf := make([]int, 0, replicas)
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					buf = p.Select(buf)
					p.Done(buf[0], okWithServer(time.Duration(1+i%5)*time.Millisecond, time.Millisecond, float64(i%3)))
				}
			})
		}
	}
}

func BenchmarkPickDoneParallel(b *testing.B) {
	for _, name := range []PolicyName{PolicyC3, PolicyRoundRobin} {
		b.Run("policy="+string(name), func(b *testing.B) {
			p := newTestPolicy(b, 3, Config{Policy: name, Now: newFakeClock().Now})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r := p.Pick()
					p.Done(r, ok(time.Millisecond))
				}
			})
		})
	}
}
