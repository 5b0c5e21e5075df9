package feed

import (
	"fmt"
	"testing"
)

// BenchmarkMergeNewest measures the read-time merge: pull merges one list
// per followee (user A: 10,001), hybrid merges the timeline with the few
// pulled celebrities.
//
//	go test ./feed -run '^$' -bench MergeNewest -benchmem
func BenchmarkMergeNewest(b *testing.B) {
	for _, lists := range []int{2, 100, 10_001} {
		b.Run(fmt.Sprintf("lists=%d", lists), func(b *testing.B) {
			in := make([][]int64, lists)
			for i := range in {
				in[i] = make([]int64, 20)
				for j := range in[i] {
					in[i][j] = int64((20-j)*lists + i) // interleaved, descending
				}
			}
			work := make([][]int64, lists)
			b.ReportAllocs()
			b.SetBytes(int64(lists * 20 * 8))
			for b.Loop() {
				copy(work, in)
				if got := mergeNewest(work, 20); len(got) != 20 {
					b.Fatalf("merged %d ids", len(got))
				}
			}
		})
	}
}
